#!/usr/bin/env bash
# Stopping a run (issue 27: "killing a run leaves no process behind and no half-written output"):
#  - SIGTERM to `rdmalab run` on simgrid (a forked simulation process): exit 143, the simulation
#    process gone, --json and --record written whole with the outcome "cancelled", no *.tmp left;
#  - SIGKILL to it: the simulation process dies with it (nothing can clean up after kill -9
#    but the kernel: the parent-death signal);
#  - SIGINT to a loopback run (ranks are threads): exit 130 within a second or two.
#   tests/cli/stop_run.sh RDMALAB SCENARIO      SCENARIO: a simgrid one that runs for > 10 s
set -euo pipefail
rdmalab=$1
scenario=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
child_of() { pgrep -P "$1" || true; }
wait_child() {  # parent pid -> the simulation process's pid, once it is there
  for _ in $(seq 100); do
    c=$(child_of "$1")
    [ -n "$c" ] && { echo "$c"; return; }
    sleep 0.1
  done
  fail "no simulation process appeared under $1"
}
gone_within() {  # pid seconds
  for _ in $(seq $((${2} * 10))); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}

# 1. SIGTERM: a clean stop.
"$rdmalab" run "$scenario" --quiet --set workload.iterations=1000000 --json "$dir/r.json" --record "$dir/r.rec" >"$dir/out" 2>"$dir/err" &
p=$!
c=$(wait_child $p)
sleep 1  # samples are being written to the record
kill -TERM $p
rc=0; wait $p || rc=$?
[ $rc -eq 143 ] || fail "SIGTERM: exit status $rc, expected 143; stderr: $(cat "$dir/err")"
gone_within "$c" 2 || fail "SIGTERM: the simulation process $c is still running"
grep -q 'stopped by SIGTERM' "$dir/err" || fail "SIGTERM: no 'stopped by SIGTERM' on stderr: $(cat "$dir/err")"
grep -q '"status": "cancelled"' "$dir/r.json" || fail "SIGTERM: --json does not say cancelled: $(head -c 300 "$dir/r.json")"
[ "$(tail -n 1 "$dir/r.rec")" = '{"status":"cancelled","type":"end"}' ] || fail "SIGTERM: the record does not end with a cancelled end line: $(tail -c 200 "$dir/r.rec")"
python3 - "$dir/r.rec" <<'PY' || fail "SIGTERM: the record has a line that is not JSON"
import json, sys
for n, line in enumerate(open(sys.argv[1]), 1):
    json.loads(line)
PY
ls "$dir"/*.tmp >/dev/null 2>&1 && fail "SIGTERM: a temporary file was left: $(ls "$dir")"

# 2. SIGKILL: nothing runs on.
"$rdmalab" run "$scenario" --quiet --set workload.iterations=1000000 >/dev/null 2>&1 &
p=$!
c=$(wait_child $p)
kill -KILL $p
wait $p || true
gone_within "$c" 5 || fail "SIGKILL: the simulation process $c outlived its parent"

# 3. SIGINT to loopback: its ranks are threads, woken by the stop.
"$rdmalab" run "$scenario" --backend loopback --quiet --set workload.iterations=100000000 >/dev/null 2>"$dir/err" &
p=$!
sleep 1
t0=$EPOCHREALTIME
kill -INT $p
rc=0; wait $p || rc=$?
[ $rc -eq 130 ] || fail "SIGINT on loopback: exit status $rc, expected 130; stderr: $(cat "$dir/err")"
python3 -c "import sys; sys.exit(0 if $EPOCHREALTIME - $t0 < 3 else 1)" || fail "SIGINT on loopback: took more than 3 s to stop"
echo "PASS: stopped cleanly by SIGTERM (simgrid), SIGKILL (simgrid), SIGINT (loopback)"
