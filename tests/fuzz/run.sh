#!/usr/bin/env bash
# Builds the scenario reader's libFuzzer target with clang (AddressSanitizer and UBSan) and runs it
# for a fixed time over the shipped scenarios and the kept reproducers (tests/fuzz/corpus). Any
# crash, hang (10 s per input), leak or memory blow-up (2 GiB) fails. Usage: run.sh SECONDS SRC BUILD
set -euo pipefail
seconds=${1:-60}
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
out=${3:-$src/build}/fuzz
if ! command -v clang++ >/dev/null; then
  echo "SKIP: clang++ not installed (scripts/setup.sh installs it): the scenario fuzzer needs libFuzzer"
  exit 77
fi
mkdir -p "$out/work"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I "$src/core/include" \
  "$src/tests/fuzz/scenario_fuzz.cc" "$src/core/src/scenario.cc" "$src/core/src/units.cc" "$src/core/src/status.cc" \
  "$src/core/src/schema_core.cc" -lyaml-cpp -lfmt -o "$out/scenario_fuzz"
rm -rf "$out/work/corpus" && mkdir -p "$out/work/corpus"
cp "$src"/scenarios/*.yaml "$src"/scenarios/*/*.yaml "$src"/tests/validation/*.yaml "$src"/tests/fuzz/corpus/* "$out/work/corpus/"
cd "$out/work"
# Every kept reproducer once, then the fuzzer for the given time (a fresh corpus each run: the
# same inputs each CI run start it, and new ones it finds stay in this build folder).
"$out/scenario_fuzz" -timeout=10 -rss_limit_mb=2048 "$src"/tests/fuzz/corpus/*
"$out/scenario_fuzz" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 corpus 2>&1 | tail -20
