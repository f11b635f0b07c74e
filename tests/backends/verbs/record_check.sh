#!/bin/sh
# A recorded verbs run on Soft-RoCE, in the VM (in_vm.sh): `rdmalab run --record` on the verbs
# backend samples the ranks it forks (docs/record.md), and the record says what happened.
#   record_check.sh RDMALAB SCENARIO
# Passes when, for a 2-rank write_bw sweep:
# - the record is complete (header, topology, a monitor line naming rxe0's port and its hw_counters,
#   samples, the rows, end ok), and replays through `rdmalab compare` like a results file;
# - the bytes its samples carry for rank 0 (rate x interval, summed) are the bytes the rows say rank 0
#   wrote, to 0.1 % (the completion meter counts every completed request once), and rank 1, the
#   target of RDMA writes, sent nothing;
# - rank 0's process used CPU and the target's used (almost) none: the lesson of one-sided writes;
# - the port's counters moved (sent_pkts);
# and a 3-rank all_reduce's record has every rank sending.
set -u
rdmalab=$1
scenario=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$rdmalab" run "$scenario" --backend verbs --quiet --set workload.sizes=64KiB..256KiB --set workload.iterations=1000 \
  --record "$dir/w.rec" > /dev/null || { echo "FAIL: the recorded write_bw run failed"; exit 1; }
"$rdmalab" run "$scenario" --backend verbs --quiet --set fabric.nodes=3 --set workload.type=all_reduce --set workload.sizes=1MiB..4MiB \
  --set workload.iterations=5 --set verbs.wait=event --set record.interval=50ms --record "$dir/a.rec" > /dev/null ||
  { echo "FAIL: the recorded all_reduce run failed"; exit 1; }
"$rdmalab" compare "$dir/w.rec" "$dir/w.rec" > /dev/null || { echo "FAIL: compare does not read the record"; exit 1; }
python3 - "$dir/w.rec" "$dir/a.rec" <<'PY'
import json, sys
def load(path):
    lines = [json.loads(l) for l in open(path)]
    kinds = [l["type"] for l in lines]
    for k in ("header", "topology", "monitor", "sample", "rows", "end"):
        assert k in kinds, f"{path}: no {k} line"
    samples = [l for l in lines if l["type"] == "sample"]
    sent = [0.0] * len(samples[0]["rank_tx_Bps"])
    t0 = 0.0
    for s in samples:
        assert s["t"] > t0, f"{path}: sample times do not increase ({s['t']} after {t0})"
        for r, v in enumerate(s["rank_tx_Bps"]):
            sent[r] += v * (s["t"] - t0)
        t0 = s["t"]
    by = lambda k: next(l for l in lines if l["type"] == k)
    return by("header"), by("monitor"), samples, by("rows")["rows"], by("end")["status"], sent
header, mon, samples, rows, status, sent = load(sys.argv[1])
print(f"write_bw: {len(samples)} samples every {header['interval_s']} s; monitor: {mon}")
assert header["backend"] == "verbs" and status == "ok", (header, status)
assert mon["port"].startswith("rxe0:"), mon
assert "hw_counters" in mon["counters"], mon
wrote = sum(r["bytes"] * r["iterations"] for r in rows)
print(f"rank 0 sent {sent[0]:.0f} bytes by the samples, {wrote} by the rows; rank 1 {sent[1]:.0f}")
assert abs(sent[0] - wrote) <= 1e-3 * wrote, "rank 0's sampled bytes are not the bytes it wrote"
assert sent[1] == 0, "the target of RDMA writes sent payload"
busy = [s for s in samples if s["rank_tx_Bps"][0] > 0]
cpu0 = sum(s["rank_cpu"][0] for s in busy) / len(busy)
cpu1 = sum(s["rank_cpu"][1] for s in busy) / len(busy)
print(f"CPU while writing: rank 0 {cpu0:.2f} cores, rank 1 (the target) {cpu1:.2f}")
assert cpu0 > 0.2 and cpu1 < 0.2 * cpu0, "the initiator should spin, the target of one-sided writes idle"
assert any(s.get("port", {}).get("sent_pkts", 0) > 0 for s in samples), "rxe's sent_pkts never moved"
header, mon, samples, rows, status, sent = load(sys.argv[2])
print(f"all_reduce: {len(samples)} samples; bytes sent by rank: {[round(x) for x in sent]}")
assert status == "ok" and len(sent) == 3 and min(sent) > 0, "every rank of a ring all_reduce sends"
print("PASS")
PY
