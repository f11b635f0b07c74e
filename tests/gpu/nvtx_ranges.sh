#!/bin/sh
# --trace's spans as NVTX ranges (docs/trace.md), seen through a minimal NVTX tool attached the
# way Nsight Systems attaches (NVTX_INJECTION64_PATH). Needs no GPU: the ranges are pushed by the
# CUDA build's NVTX layer whether or not a GPU is present.
#   nvtx_ranges.sh RDMALAB PROBE_SO SCENARIO
set -u
rdmalab=$1 probe=$2 scenario=$3
[ -f "$probe" ] || { echo "FAIL: no NVTX tool at $probe"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
NVTX_INJECTION64_PATH=$probe RDMALAB_NVTX_LOG=$dir/nvtx.log "$rdmalab" run "$scenario" --backend loopback --quiet \
  --set workload.sizes=4KiB..8KiB --set workload.iterations=100 --trace "$dir/t.json" > /dev/null || { echo "FAIL: the run failed"; exit 1; }
[ -s "$dir/nvtx.log" ] || { echo "FAIL: no NVTX range was pushed"; exit 1; }
pushes=$(grep -c '^push ' "$dir/nvtx.log"); pops=$(grep -c '^pop$' "$dir/nvtx.log")
echo "NVTX: $pushes pushes, $pops pops; $(sort "$dir/nvtx.log" | uniq -c | sort -rn | head -5 | tr '\n' ';')"
[ "$pushes" -eq "$pops" ] || { echo "FAIL: pushes and pops do not balance"; exit 1; }
for want in "push write_bw" "push write_bw 4KiB" "push write_bw 8KiB"; do
  grep -qx "$want" "$dir/nvtx.log" || { echo "FAIL: no '$want'"; exit 1; }
done
# Without --trace nothing is pushed: the ranges cost nothing in a plain run.
NVTX_INJECTION64_PATH=$probe RDMALAB_NVTX_LOG=$dir/plain.log "$rdmalab" run "$scenario" --backend loopback --quiet > /dev/null
[ ! -s "$dir/plain.log" ] || { echo "FAIL: ranges pushed without --trace"; exit 1; }
echo PASS
