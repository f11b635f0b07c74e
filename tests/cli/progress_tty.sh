#!/usr/bin/env bash
# A long run's progress line on stderr (issue 3: "off when output is not a terminal or with
# --quiet"): run on a pseudo-terminal (util-linux's `script`) it is shown, and not with --quiet
# added; into a pipe it is not shown. The command must run for more than a second (the line is
# written once a second).
#   tests/cli/progress_tty.sh MARKER COMMAND [ARG...]     MARKER: a grep pattern of the line
set -euo pipefail
if (($# < 2)); then
  echo "usage: progress_tty.sh MARKER COMMAND [ARG...]" >&2
  exit 2
fi
marker=$1
shift
cmd=("$@")
if ! command -v script >/dev/null; then
  echo "SKIP: util-linux's script is not installed (apt-get install bsdutils): no pseudo-terminal to run on"
  exit 77
fi
if ! probe=$(script -qec true /dev/null 2>&1); then
  echo "SKIP: script cannot open a pseudo-terminal here: $probe"
  exit 77
fi
on_tty() { script -qec "$(printf '%q ' "${cmd[@]}" "$@")" /dev/null; }
failed() {  # which run, its output
  echo "FAIL: the command failed $1; its output ended:"
  tail -5 <<<"$2"
  exit 1
}
t0=$EPOCHREALTIME
shown=$(on_tty) || failed "on a terminal" "$shown"
t1=$EPOCHREALTIME
ms=$(((${t1//[.,]/} - ${t0//[.,]/}) / 1000))  # microseconds (the locale's decimal mark) to ms
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
quiet=$(on_tty --quiet) || failed "on a terminal with --quiet" "$quiet"
if grep -q "$marker" <<<"$quiet"; then
  echo "FAIL: a progress line on a terminal with --quiet"
  exit 1
fi
piped=$("${cmd[@]}" 2>&1) || failed "into a pipe" "$piped"
if grep -q "$marker" <<<"$piped"; then
  echo "FAIL: a progress line into a pipe"
  exit 1
fi
# --progress forces the lines into a pipe (one every 2 s there).
forced=$("${cmd[@]}" --progress 2>&1) || failed "into a pipe with --progress" "$forced"
if ((ms >= 2500)) && ! grep -q "$marker" <<<"$forced"; then
  echo "FAIL: no progress line into a pipe with --progress in a run of about $ms ms; its output ended:"
  tail -5 <<<"$forced"
  exit 1
fi
echo "progress line: shown on a terminal (a run of $ms ms), not with --quiet, not into a pipe, into a pipe with --progress"
