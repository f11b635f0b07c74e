#!/usr/bin/env bash
# Kills runs at random moments with random signals (issue 27: "killing a run leaves no process
# behind and no half-written output"), on what forks here: `rdmalab run` on the SimGrid backend
# (a simulation process) and `rdmalab sweep` (a process per point, and the plotter). Each trial
# starts the command in a session of its own, waits 0-2.5 s (start-up, the fork, the run,
# writing outputs), sends SIGTERM, SIGINT or SIGKILL, then checks:
#  - within 5 s no process of that session is left;
#  - the final outputs are absent or whole: --json a JSON document whose status is ok or
#    cancelled, --record JSON lines ending with the end line, sweep.csv/sweep.json whole;
#  - no temporary file is left after SIGTERM or SIGINT (after SIGKILL nothing can clean up, but
#    a temporary never has the final name);
# and at the end a run to the same paths finishes whole (a leftover of a killed run is never read
# as or mixed into a later run's output).
# With BACKEND (verbs, in the Soft-RoCE VM: tests/backends/verbs/in_vm.sh) only the runs are killed,
# on that backend, whose local ranks are processes forked by the run.
#   tests/cli/kill_at_random.sh RDMALAB SCENARIO [TRIALS] [SEED] [BACKEND]
set -euo pipefail
rdmalab=$1
scenario=$2
trials=${3:-12}
seed=${4:-$(date +%s)}
backend=${5:-}
RANDOM=$seed
echo "seed $seed (rerun with the same seed to repeat the same kills)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL (seed $seed): $*"; exit 1; }
signals=(TERM INT KILL)

left_in_session() { ps -e -o sid=,pid=,args= | awk -v s="$1" '$1 == s { $1 = ""; print }'; }
wait_session_gone() {  # sid what
  for _ in $(seq 50); do
    [ -z "$(left_in_session "$1")" ] && return 0
    sleep 0.1
  done
  fail "$2: processes left: $(left_in_session "$1")"
}
check_json() {  # file what
  [ -e "$1" ] || return 0
  python3 - "$1" <<'PY' || fail "$2: $1 is not a whole results file: $(head -c 300 "$1")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d.get("status") in ("ok", "cancelled"), d.get("status")
PY
}
check_record() {  # file what
  [ -e "$1" ] || return 0
  python3 - "$1" <<'PY' || fail "$2: $1 is not a whole record: $(tail -c 300 "$1")"
import json, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
assert lines[-1] == b"", "no newline at the end"
recs = [json.loads(l) for l in lines[:-1]]
assert recs and recs[0]["type"] == "header" and recs[-1]["type"] == "end", "no header or no end line"
PY
}
check_no_tmp() {  # folder signal what
  local tmps
  tmps=$(find "$1" -name '*.tmp*' 2>/dev/null || true)
  if [ "$2" != KILL ] && [ -n "$tmps" ]; then fail "$3: temporary files left: $tmps"; fi
  return 0
}
# A command this (non-interactive) shell starts in the background begins with SIGINT ignored, as
# bash does for background jobs without job control; a user's Ctrl-C reaches a foreground
# command whose SIGINT is the default. So each command starts with SIGINT set back to the default
# (before rdmalab installs its own handlers, an early SIGINT then ends it, as at a terminal).
start() {  # command... -> pid (= its session id)
  setsid python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    "$@" >"$dir/out" 2>"$dir/err" &
  p=$!
}

# The backend named (one that cannot record: verbs), or the scenario's with a record.
on_backend=() record=(--record "$dir/run/r.rec")
if [ -n "$backend" ]; then on_backend=(--backend "$backend") record=(); fi

# 1. rdmalab run on the model.
for t in $(seq "$trials"); do
  sig=${signals[$((RANDOM % 3))]}
  delay=$(printf '%d.%02d' $((RANDOM % 3)) $((RANDOM % 100)))
  rm -rf "$dir/run" && mkdir "$dir/run"
  start "$rdmalab" run "$scenario" "${on_backend[@]}" --quiet --set workload.iterations=$((200 + RANDOM % 4000)) \
    --json "$dir/run/r.json" "${record[@]}"
  sleep "$delay"
  kill -"$sig" "$p" 2>/dev/null || true
  rc=0; wait "$p" || rc=$?
  what="run trial $t: SIG$sig after ${delay}s (exit $rc)"
  echo "  $what"
  wait_session_gone "$p" "$what"
  check_json "$dir/run/r.json" "$what"
  check_record "$dir/run/r.rec" "$what"
  check_no_tmp "$dir/run" "$sig" "$what"
done
# A whole run to the same paths after the last kill.
"$rdmalab" run "$scenario" "${on_backend[@]}" --quiet --set workload.iterations=100 --json "$dir/run/r.json" "${record[@]}" \
  >/dev/null 2>"$dir/err" || fail "a run after the kills failed: $(cat "$dir/err")"
grep -q '"status": "ok"' "$dir/run/r.json" || fail "the run after the kills does not say ok: $(head -c 300 "$dir/run/r.json")"
check_record "$dir/run/r.rec" "the run after the kills"
if [ -n "$backend" ]; then
  echo "PASS: $trials $backend runs killed at random; no process left, every output whole"
  exit 0
fi

# 2. rdmalab sweep: points as processes, two at a time.
for t in $(seq $(((trials + 1) / 2))); do
  sig=${signals[$((RANDOM % 3))]}
  delay=$(printf '%d.%02d' $((RANDOM % 3)) $((RANDOM % 100)))
  start "$rdmalab" sweep "$scenario" --vary workload.iterations=$((100 + RANDOM % 500)),$((600 + RANDOM % 500)),$((1100 + RANDOM % 500)) \
    -j 2 --out "$dir/sweep" --quiet
  sleep "$delay"
  kill -"$sig" "$p" 2>/dev/null || true
  rc=0; wait "$p" || rc=$?
  what="sweep trial $t: SIG$sig after ${delay}s (exit $rc)"
  echo "  $what"
  wait_session_gone "$p" "$what"
  check_json_doc() { [ -e "$1" ] || return 0; python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$1" || fail "$what: $1 is not whole"; }
  check_json_doc "$dir/sweep/sweep.json"
  if [ -e "$dir/sweep/sweep.csv" ]; then
    python3 - "$dir/sweep/sweep.csv" <<'PY' || fail "$what: sweep.csv is not whole"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows and all(len(r) == len(rows[0]) for r in rows)
PY
  fi
  for f in "$dir"/sweep/points/*.json; do [ -e "$f" ] && check_json "$f" "$what"; done
  check_no_tmp "$dir/sweep" "$sig" "$what"
done
# 3. rdmalab labs check: a process per lab step (which may fork a simulation of its own).
labs_dir=$(cd "$(dirname "$0")/../../scenarios/labs" && pwd)
for t in $(seq $(((trials + 3) / 4))); do
  sig=${signals[$((RANDOM % 3))]}
  # From 0.1 s: past the wrapper's start (above), so a SIGINT is never ignored and the check never
  # runs every lab to its end (minutes under the sanitizers).
  delay=$(printf '0.%02d' $((10 + RANDOM % 90)))
  start "$rdmalab" labs check --dir "$labs_dir"
  sleep "$delay"
  kill -"$sig" "$p" 2>/dev/null || true
  rc=0; wait "$p" || rc=$?
  what="labs trial $t: SIG$sig after ${delay}s (exit $rc)"
  echo "  $what"
  wait_session_gone "$p" "$what"
done
echo "PASS: $trials runs, $(((trials + 1) / 2)) sweeps and $(((trials + 3) / 4)) lab checks killed at random; no process left, every output whole"
