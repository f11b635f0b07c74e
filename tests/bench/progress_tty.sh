#!/usr/bin/env bash
# The ring benchmark's progress line (issue 3: "off when output is not a terminal or with
# --quiet"): run on a pseudo-terminal (util-linux's `script`) it is shown, and not with --quiet;
# into a pipe it is not shown.
#   tests/bench/progress_tty.sh BENCH
set -euo pipefail
bench=${1:?usage: progress_tty.sh BENCH}
if ! command -v script >/dev/null; then
  echo "SKIP: util-linux's script is not installed (apt-get install bsdutils): no pseudo-terminal to run on"
  exit 77
fi
if ! probe=$(script -qec true /dev/null 2>&1); then
  echo "SKIP: script cannot open a pseudo-terminal here: $probe"
  exit 77
fi
marker='\[plain\] simulated'
# The put/get program alone, long enough (several seconds) for the line, rewritten once a second.
args=(768 768MiB plain)
on_tty() { script -qec "$(printf '%q ' "$bench" "${args[@]}" "$@")" /dev/null; }
t0=$EPOCHREALTIME
shown=$(on_tty)
t1=$EPOCHREALTIME
ms=$(((${t1/./} - ${t0/./}) / 1000))
if ! grep -q "$marker" <<<"$shown"; then
  if ((ms < 1500)); then
    echo "SKIP: the run took $ms ms, too short for a progress line (one a second)"
    exit 77
  fi
  echo "FAIL: no progress line on a terminal in a run of $ms ms; its output ended:"
  tail -5 <<<"$shown"
  exit 1
fi
# (Whole outputs, then grep: `grep -q` in a pipeline ends it early, and with pipefail the
# writer's SIGPIPE would read as no match.)
quiet=$(on_tty --quiet)
if grep -q "$marker" <<<"$quiet"; then
  echo "FAIL: a progress line on a terminal with --quiet"
  exit 1
fi
piped=$("$bench" "${args[@]}" 2>&1)
if grep -q "$marker" <<<"$piped"; then
  echo "FAIL: a progress line into a pipe"
  exit 1
fi
echo "progress line: shown on a terminal (a run of $ms ms), not with --quiet, not into a pipe"
