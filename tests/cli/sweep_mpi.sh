#!/bin/sh
# `mpirun -np 2 rdmalab sweep`: the points are dealt out over the two ranks, rank 0 gathers them,
# and the table is the one a sweep in one process writes (the same bytes).
#   sweep_mpi.sh RDMALAB SCENARIO
# Exits 77 (skipped, with the reason) where there is no mpirun.
set -u
rdmalab=$1
scenario=$2
command -v mpirun > /dev/null || { echo "skipped: no mpirun here (apt-get install openmpi-bin libopenmpi-dev)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
vary="--vary workload.algorithm=ring,tree --vary fabric.link.bandwidth=100Gbps,200Gbps,400Gbps --set workload.sizes=[1MiB,16MiB] --no-plots"
# shellcheck disable=SC2086
"$rdmalab" sweep "$scenario" $vary --quiet --out "$dir/one" || { echo "FAIL: the sweep in one process failed"; exit 1; }
[ "$(hostname)" = "(none)" ] && hostname rdmalab-test
# shellcheck disable=SC2086
out=$(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np 2 "$rdmalab" sweep "$scenario" $vary --out "$dir/mpi" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 3
[ $rc -eq 0 ] || { echo "FAIL: mpirun -np 2 rdmalab sweep exited $rc"; printf '%s\n' "$out"; exit 1; }
printf '%s\n' "$out" | grep -q "# 6 points (6 run, 0 cached, 0 failed)" || { echo "FAIL: rank 0 does not count the 6 points"; exit 1; }
[ "$(printf '%s\n' "$out" | grep -c '^# 6 points')" -eq 1 ] || { echo "FAIL: more than rank 0 printed the table"; exit 1; }
cmp "$dir/one/sweep.csv" "$dir/mpi/sweep.csv" || { echo "FAIL: the tables differ"; diff "$dir/one/sweep.csv" "$dir/mpi/sweep.csv"; exit 1; }
echo "PASS: 6 points over 2 MPI ranks, the same table as one process"
