#!/usr/bin/env bash
# Runs every shipped scenario (scenarios/ and tests/validation/) on the SimGrid model and keeps its
# table and JSON, so that a change meant to leave behaviour alone can be shown to: run it before and
# after, then compare.
#
#   scripts/model-results.sh DIR [--quick] [-j N]   # writes DIR/<scenario path>.{txt,json}, DIR/wall.tsv
#   scripts/model-results.sh --compare DIR_A DIR_B  # byte-for-byte; exit 1 and the differences if any
#
# --quick leaves out the 1024-GPU scenarios (scenarios/scale, scenarios/training: minutes each).
# Wall times go to wall.tsv, which --compare does not compare (they differ from run to run).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--compare" ]; then
  [ $# -eq 3 ] || { echo "usage: $0 --compare DIR_A DIR_B" >&2; exit 2; }
  a="$2" b="$3"
  if diff -r -q -x wall.tsv "$a" "$b" >/dev/null; then
    echo "model-results: identical ($(find "$a" -name '*.json' | wc -l) scenarios)"
    exit 0
  fi
  echo "model-results: DIFFERENT" >&2
  diff -r -x wall.tsv "$a" "$b" | head -60 >&2
  exit 1
fi

[ $# -ge 1 ] || { echo "usage: $0 DIR [--quick] [-j N] | --compare DIR_A DIR_B" >&2; exit 2; }
out="$1"
shift
quick=0 jobs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    -j) jobs="$2"; shift ;;
    *) echo "model-results: unknown argument '$1' (allowed: --quick, -j N)" >&2; exit 2 ;;
  esac
  shift
done
bin="${RDMALAB:-build/bin/rdmalab}"
[ -x "$bin" ] || { echo "model-results: $bin is not built (scripts/setup.sh)" >&2; exit 2; }
mkdir -p "$out"

mapfile -t files < <(find scenarios tests/validation -name '*.yaml' | sort)
if [ "$quick" = 1 ]; then
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -v -e '^scenarios/scale/' -e '^scenarios/training/')
fi

run_one() {
  local f="$1" out="$2" bin="$3"
  local key="${f//\//_}"
  key="${key%.yaml}"
  local t0 t1
  t0=$(date +%s%N)
  "$bin" run "$f" --backend simgrid --json "$out/$key.json" >"$out/$key.txt" 2>"$out/$key.err" || echo "exit=$?" >>"$out/$key.txt"
  t1=$(date +%s%N)
  awk -v f="$f" -v t="$(( (t1 - t0) / 1000000 ))" 'BEGIN { printf "%s\t%.2f\n", f, t / 1000 }' >>"$out/wall.tsv"
  # stderr holds the progress line only where it is a terminal; keep it out of the comparison
  rm -f "$out/$key.err"
}
export -f run_one
: >"$out/wall.tsv"
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} "$out" "$bin"
sort -o "$out/wall.tsv" "$out/wall.tsv"
echo "model-results: ${#files[@]} scenarios in $out (wall times in $out/wall.tsv)"
