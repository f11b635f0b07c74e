#!/usr/bin/env bash
# rdmalab against perftest on the same Soft-RoCE device, in one VM boot (a benchmark, not a test).
#
#   scripts/bench-rxe-perftest.sh [ROUNDS [CASE]]     CASE: run only the cases whose name contains it
#
# For each case (ib_write_bw, ib_read_bw, ib_send_bw at 64 KiB and over a sweep; ib_write_lat,
# ib_send_lat at 8 B; all_reduce busbw against ib_write_bw) it runs perftest and rdmalab's same workload with the same parameters,
# alternating, ROUNDS times (default 3), and prints the medians and the best of the rounds, with the ratios rdmalab/perftest.
# Under emulation the absolute figures are small; compare the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
[ -x build/bin/rdmalab ] || scripts/setup.sh build
exec scripts/rxe-vm.sh --timeout 3000 -- python3 scripts/bench_rxe_perftest.py "$rounds" "${2:-}"
