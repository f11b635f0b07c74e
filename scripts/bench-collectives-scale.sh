#!/usr/bin/env bash
# The collectives' scale benchmark (issue: predictions that match real clusters): wall time and
# peak memory of a 1 GiB all-reduce, the algorithm NCCL's rule picks, on rail-optimized H100-class
# nodes of 8 GPUs and 8 NICs (scenarios/scale/all-reduce-1gib-1024-gpus.yaml).
# Usage: scripts/bench-collectives-scale.sh [GPUS...]   (default: 1024 8192; multiples of 8)
# On a terminal each run shows rdmalab's progress line; each ends with its busbw row.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/rdmalab ] || { echo "build first: scripts/setup.sh build" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time: apt-get install time" >&2; exit 2; }
[ $# -gt 0 ] || set -- 1024 8192
for gpus in "$@"; do
  if (( gpus % 8 != 0 || gpus < 16 )); then echo "$gpus GPUs: give a multiple of 8, 16 or more" >&2; exit 2; fi
  echo "== $gpus GPUs ($((gpus / 8)) nodes of 8)"
  /usr/bin/time -f "wall %e s, peak memory %M KiB" build/bin/rdmalab run scenarios/scale/all-reduce-1gib-1024-gpus.yaml \
    --set fabric.nodes=$((gpus / 8))
done
