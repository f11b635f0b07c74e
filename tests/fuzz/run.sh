#!/usr/bin/env bash
# Builds a libFuzzer target with clang (AddressSanitizer and UBSan) and runs it for a fixed time
# after every kept reproducer. Any crash, hang (10 s per input), leak or memory blow-up (2 GiB)
# fails. Usage: run.sh SECONDS SRC BUILD [TARGET]
#   scenario    the scenario reader (tests/fuzz/scenario_fuzz.cc), seeded with the shipped
#               scenarios and tests/fuzz/corpus
#   rendezvous  the TCP rendezvous's checks on what strangers and peers send
#               (tests/fuzz/rendezvous_fuzz.cc), seeded with tests/fuzz/rendezvous-corpus
set -euo pipefail
seconds=${1:-60}
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
out=${3:-$src/build}/fuzz
target=${4:-scenario}
if ! command -v clang++ >/dev/null; then
  echo "SKIP: clang++ not installed (scripts/setup.sh installs it): the $target fuzzer needs libFuzzer"
  exit 77
fi
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I "$src/core/include")
case $target in
  scenario)
    sources=("$src/core/src/scenario.cc" "$src/core/src/units.cc" "$src/core/src/status.cc" "$src/core/src/schema_core.cc")
    libs=(-lyaml-cpp -lfmt)
    kept=("$src"/tests/fuzz/corpus/*)
    seeds=("$src"/scenarios/*.yaml "$src"/scenarios/*/*.yaml "$src"/tests/validation/*.yaml "${kept[@]}")
    max_len=4096 ;;
  rendezvous)
    sources=("$src/core/src/rendezvous_wire.cc" "$src/core/src/status.cc")
    libs=(-lfmt)
    kept=("$src"/tests/fuzz/rendezvous-corpus/*)
    seeds=("${kept[@]}")
    max_len=2048 ;;
  *) echo "run.sh: unknown target '$target' (scenario, rendezvous)" >&2; exit 2 ;;
esac
mkdir -p "$out/work-$target"
clang++ "${flags[@]}" "$src/tests/fuzz/${target}_fuzz.cc" "${sources[@]}" "${libs[@]}" -o "$out/${target}_fuzz"
cd "$out/work-$target"
rm -rf corpus && mkdir corpus && cp "${seeds[@]}" corpus/
# Every kept reproducer once, then the fuzzer for the given time (a fresh corpus each run: the
# same inputs each CI run start it, and new ones it finds stay in this build folder).
"$out/${target}_fuzz" -timeout=10 -rss_limit_mb=2048 "${kept[@]}"
"$out/${target}_fuzz" -max_total_time="$seconds" -max_len=$max_len -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 corpus 2>&1 | tail -20
