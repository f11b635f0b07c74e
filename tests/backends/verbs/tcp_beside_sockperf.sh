#!/bin/sh
# The kernel TCP baseline beside sockperf, and beside RDMA, in the Soft-RoCE VM (in_vm.sh):
#   tcp_beside_sockperf.sh RDMALAB SCENARIO
# Runs, turn by turn (this machine's figures move between runs, so only runs made side by side
# compare): sockperf's throughput test and rdmalab's tcp_bw at 16 KiB, sockperf's ping-pong and
# rdmalab's tcp_lat at 64 B, each over TCP on 127.0.0.1, three times; then write_bw on rxe at the
# same 16 KiB. Prints every figure and the CPU seconds per GB of tcp_bw and write_bw.
# Passes when the best turn of tcp_bw and of sockperf's bandwidth (the highest), and of tcp_lat's
# and sockperf's median latency (the lowest), are within a factor of 2 of each other (the same
# kernel path measured two ways), and both tcp_bw and write_bw report their CPU per GB. The best
# turn, not the median: the VM's emulated CPUs are shared with the host's other work, and one boot
# saw turns of 1.2-2.6 Gb/s beside sockperf's 1.7-4.5 (medians 0.44 apart, best turns 0.59).
set -u
rdmalab=$1
scenario=$2
command -v sockperf > /dev/null || { echo "FAIL: sockperf is not installed (scripts/setup.sh installs it)"; exit 1; }
dir=$(mktemp -d)
port=17371
sockperf server --tcp -i 127.0.0.1 -p $port > "$dir/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$dir"' EXIT
sleep 1
highest() { sort -g | tail -n 1; }
lowest() { sort -g | head -n 1; }
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(r$2)" "$1"; }
for i in 1 2 3; do
  # sockperf: "BandWidth is 1285.516 MBps (10284.125 Mbps)": the Mb/s figure, in Gb/s.
  sockperf throughput --tcp -i 127.0.0.1 -p $port -m 16384 -t 2 2>&1 | sed -n 's/.*BandWidth is .*(\([0-9.]*\) Mbps).*/\1/p' |
    awk '{print $1 / 1000}' >> "$dir/sp-bw"
  "$rdmalab" run "$scenario" --backend verbs --set workload.type=tcp_bw --set workload.size=16KiB --set workload.iterations=40000 \
    --quiet --json "$dir/tcp-bw.json" > /dev/null || { echo "FAIL: tcp_bw did not run"; exit 1; }
  field "$dir/tcp-bw.json" "['bw_gbps']" >> "$dir/rl-bw"
  # sockperf: "---> percentile 50.000 =   10.148" (µs, half the round trip).
  sockperf ping-pong --tcp -i 127.0.0.1 -p $port -m 64 -t 2 2>&1 | sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' >> "$dir/sp-lat"
  "$rdmalab" run "$scenario" --backend verbs --set workload.type=tcp_lat --set workload.size=64B --set workload.iterations=5000 \
    --quiet --json "$dir/tcp-lat.json" > /dev/null || { echo "FAIL: tcp_lat did not run"; exit 1; }
  field "$dir/tcp-lat.json" "['lat_us']['typical']" >> "$dir/rl-lat"
done
"$rdmalab" run "$scenario" --backend verbs --set workload.size=16KiB --set workload.iterations=40000 --quiet --json "$dir/write-bw.json" \
  > /dev/null || { echo "FAIL: write_bw did not run"; exit 1; }
for f in sp-bw rl-bw sp-lat rl-lat; do
  [ "$(wc -l < "$dir/$f")" -eq 3 ] || { echo "FAIL: $f has $(wc -l < "$dir/$f") figures, not 3: $(cat "$dir/$f")"; exit 1; }
done
echo "tcp_bw 16 KiB [Gb/s]:     rdmalab $(tr '\n' ' ' < "$dir/rl-bw")  sockperf $(tr '\n' ' ' < "$dir/sp-bw")"
echo "tcp_lat 64 B median [us]: rdmalab $(tr '\n' ' ' < "$dir/rl-lat")  sockperf $(tr '\n' ' ' < "$dir/sp-lat")"
for w in tcp-bw write-bw; do
  echo "$w 16 KiB: $(field "$dir/$w.json" "['bw_gbps']") Gb/s; CPU s/GB initiator $(field "$dir/$w.json" "['cpu_initiator_s_per_gb']")" \
    "target $(field "$dir/$w.json" "['cpu_target_s_per_gb']") machine $(field "$dir/$w.json" ".get('cpu_machine_s_per_gb', -1)")"
done
python3 - "$(highest < "$dir/rl-bw")" "$(highest < "$dir/sp-bw")" "$(lowest < "$dir/rl-lat")" "$(lowest < "$dir/sp-lat")" <<'PY' || exit 1
import sys
bw, sbw, lat, slat = map(float, sys.argv[1:])
ok = True
for what, a, b in (("bandwidth", bw, sbw), ("latency", lat, slat)):
    r = a / b if b > 0 else float("inf")
    print(f"{what}: rdmalab / sockperf = {r:.2f} (best turns {a:.3f} and {b:.3f})")
    ok = ok and 0.5 <= r <= 2.0
print("PASS" if ok else "FAIL: rdmalab's TCP figures are more than a factor of 2 from sockperf's")
sys.exit(0 if ok else 1)
PY
