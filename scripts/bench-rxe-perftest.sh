#!/usr/bin/env bash
# rdmalab against perftest on the same Soft-RoCE device, in one VM boot (a benchmark, not a test).
#
#   scripts/bench-rxe-perftest.sh [ROUNDS [CASE]]     CASE: run only the cases whose name contains it
#                                                     ('|' between alternatives: "checks off|A/A")
#
# For each case (ib_write_bw, ib_read_bw, ib_send_bw at 64 KiB and over a sweep; ib_write_lat,
# ib_send_lat at 8 B; all_reduce busbw against ib_write_bw) it runs perftest and rdmalab's same workload with the same parameters,
# alternating (the order flips every round; each program gets a quiet second first), ROUNDS times
# (default 3), and prints the medians and the best of the rounds with the ratios rdmalab/perftest,
# the median of the rounds' own ratios, and each round's figures. An A/A case (perftest against
# itself, the same way) shows how far apart two runs of one program land on this device.
# Under emulation the absolute figures are small; compare the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
[[ "$rounds" =~ ^[1-9][0-9]{0,3}$ ]] || { echo "bench-rxe-perftest.sh: ROUNDS must be a whole number from 1 to 9999, got '$rounds'" >&2; exit 2; }
[ -x build/bin/rdmalab ] || scripts/setup.sh build
# A round of every case takes about 260 s here (8 rounds: 2 051 s): room for that and a slow boot.
exec scripts/rxe-vm.sh --timeout $((900 + rounds * 400)) -- python3 scripts/bench_rxe_perftest.py "$rounds" "${2:-}"
