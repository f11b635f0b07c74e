#!/usr/bin/env bash
# The SimGrid ring benchmark's programs — plain s4u put/get, plain s4u waited on as a completion
# queue must be (wait_any: SimGrid's own floor under rdmalab) and rdmalab — under cachegrind:
# instructions, L1 data misses and misses of a 1 MiB last-level cache (this build machine's L2)
# per transfer, and their ratios to put/get. Wall times on a shared machine move by 20 % or more
# from run to run; these counts do not, and at thousands of ranks, where every cache line a rank
# touches in a step has been evicted by the other ranks in between, the last-level misses are what
# the wall time follows (docs/backends/simgrid.md, "Scale").
#
#   scripts/bench-simgrid-cachegrind.sh [RANKS] [BUILD_DIR]     (defaults: 256, build)
#
# Under a minute per program at 256 ranks (cachegrind runs 50-100× slower than the program).
set -euo pipefail
ranks=${1:-256}
build=${2:-build}
if ! [[ $ranks =~ ^[0-9]+$ ]] || ((ranks < 2)); then
  echo "bench-simgrid-cachegrind.sh: RANKS must be a whole number of at least 2 (got '$ranks')" >&2
  exit 2
fi
bench=$build/bench/simgrid_ring_bench
if [[ ! -x $bench ]]; then
  echo "bench-simgrid-cachegrind.sh: $bench is not built (scripts/setup.sh $build builds it)" >&2
  exit 2
fi
if ! command -v valgrind >/dev/null; then
  echo "bench-simgrid-cachegrind.sh: valgrind is not installed (apt-get install valgrind)" >&2
  exit 2
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for side in plain waitany rdmalab; do
  # Each program runs in a child process of the benchmark: one cachegrind file per process.
  if ! valgrind --tool=cachegrind --cache-sim=yes --LL=1048576,8,64 --trace-children=yes \
    --cachegrind-out-file="$out/$side.%p" "$bench" "$ranks" "${ranks}MiB" "$side" >"$out/$side.log" 2>&1; then
    echo "bench-simgrid-cachegrind.sh: the $side run failed:" >&2
    tail -20 "$out/$side.log" >&2
    exit 1
  fi
done
python3 - "$out" "$ranks" <<'EOF'
import glob, sys
out, ranks = sys.argv[1], int(sys.argv[2])
transfers = 2 * (ranks - 1) * ranks
def counts(side):
    # The simulation's process is the one that ran the most instructions.
    best = None
    for f in glob.glob(f"{out}/{side}.[0-9]*"):
        ev = v = None
        for line in open(f):
            if line.startswith("events:"): ev = line.split()[1:]
            if line.startswith("summary:"): v = [int(x) for x in line.split()[1:]]
        d = dict(zip(ev, v))
        if best is None or d["Ir"] > best["Ir"]: best = d
    return (best["Ir"] / transfers, (best["D1mr"] + best["D1mw"]) / transfers, (best["DLmr"] + best["DLmw"]) / transfers)
plain = counts("plain")
print(f"ring exchange over {ranks} ranks, {transfers} transfers, under cachegrind (1 MiB last-level cache)")
print(f"{'per transfer':<22}{'instructions':>14}{'L1d misses':>12}{'LL misses':>11}   ratios to put/get")
for side, name in (("plain", "s4u put/get"), ("waitany", "s4u wait_any (floor)"), ("rdmalab", "rdmalab")):
    c = counts(side)
    ratios = "" if side == "plain" else f"   {c[0] / plain[0]:.2f}x {c[1] / plain[1]:.2f}x {c[2] / plain[2]:.2f}x"
    print(f"{name:<22}{c[0]:>14.0f}{c[1]:>12.1f}{c[2]:>11.1f}{ratios}")
EOF
