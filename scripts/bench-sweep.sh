#!/usr/bin/env bash
# The sweep's parallel speed-up (issue: capacity planning): the same 24 points of
# scenarios/all-reduce-sweep.yaml (4 spine widths x 3 link rates x 2 algorithms, 8 B..64 MiB each)
# run one after the other (-j 1) and two at a time (-j 2), each into a fresh folder (no cache),
# and the ratio of the wall times. The target: -j 2 at most 0.6x of -j 1 on a 2-core machine.
# Usage: scripts/bench-sweep.sh [JOBS]   (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/rdmalab ] || { echo "build first: scripts/setup.sh build" >&2; exit 2; }
jobs="${1:-2}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vary=(--vary 'fabric.fat_tree.up=[1,1],[1,2],[1,3],[1,4]' --vary fabric.link.bandwidth=100Gbps,200Gbps,400Gbps
      --vary workload.algorithm=ring,tree)
wall() {  # seconds of one sweep
  local t0 t1
  t0=$(date +%s%N)
  build/bin/rdmalab sweep scenarios/all-reduce-sweep.yaml "${vary[@]}" -j "$1" --out "$2" --quiet --no-plots
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 ))
}
serial=$(wall 1 "$work/serial")
parallel=$(wall "$jobs" "$work/parallel")
cmp -s "$work/serial/sweep.csv" "$work/parallel/sweep.csv" || { echo "the two tables differ" >&2; exit 1; }
points=$(( $(wc -l < "$work/serial/sweep.csv") - 1 ))
printf 'sweep of 24 points (%d table rows), %d cores\n' "$points" "$(nproc)"
awk -v s="$serial" -v p="$parallel" -v j="$jobs" 'BEGIN {
  printf "  -j 1:  %6.2f s\n  -j %d:  %6.2f s\n  ratio: %.3f (target <= 0.6); the tables are identical\n", s / 1000, j, p / 1000, p / s }'
