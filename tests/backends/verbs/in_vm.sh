#!/bin/sh
# Runs one part of the verbs test suite inside the Soft-RoCE VM (scripts/rxe-vm.sh calls it).
#   in_vm.sh BUILD_DIR conformance|perftest|collectives|cli [RESULTS_DIR]
# Exits non-zero when anything failed; prints what ran. With RESULTS_DIR (a folder the VM can
# write: rxe-vm.sh's --out) each test's result is also left there — the gtest XML of each test
# program, check-NAME.txt for each check below — for ctest's per-test entries (tests/CMakeLists.txt).
set -u
build=$1
part=$2
results=${3:-}
if [ -n "$results" ]; then rm -f "$results"/*.xml "$results"/check-*.txt; fi
# gtest PROGRAM FILTER: runs the verbs cases of a test program.
gtest() {
  if [ -n "$results" ]; then
    "$build/tests/$1" --gtest_filter="$2" --gtest_output="xml:$results/$1.xml"
  else
    "$build/tests/$1" --gtest_filter="$2"
  fi
}
rdmalab=$build/bin/rdmalab
scenario=$(dirname "$0")/../../../scenarios/write-bw-64k.yaml
fail=0
# check NAME WANT_STATUS PATTERN COMMAND...: the command exits WANT_STATUS and, unless PATTERN is
# empty, its output contains PATTERN.
check() {
  name=$1; want=$2; pattern=$3; shift 3
  out=$("$@" 2>&1); got=$?
  if [ "$got" -ne "$want" ]; then
    verdict="[ FAIL ] $name: exit $got, wanted $want"; fail=1
  elif [ -n "$pattern" ] && ! printf '%s' "$out" | grep -q -- "$pattern"; then
    verdict="[ FAIL ] $name: the output does not say '$pattern'"; fail=1
  else
    verdict="[ PASS ] $name"
  fi
  { echo "$verdict"; printf '%s\n' "$out" | sed 's/^/    /'; } | tee ${results:+"$results/check-$(slug "$name").txt"}
}
# The file name of a check: its name with everything but letters and digits as '_'.
slug() { printf '%s' "$1" | tr -c 'A-Za-z0-9' '_'; }
case "$part" in
  conformance)
    gtest backends_conformance_test '*verbs*' || fail=1 ;;
  perftest)
    gtest core_perftest_test '*verbs*' || fail=1
    gtest core_staged_test '*verbs*' || fail=1 ;;
  collectives)
    gtest core_collectives_test '*verbs*' || fail=1
    gtest core_training_test '*OnEveryBackend*:*ArriveExact*' || fail=1
    gtest core_trace_test '*verbs*' || fail=1
    # Event-driven waits: 5 busy-polling ranks on the VM's 2 emulated CPUs would starve each other.
    check "all_reduce sweep on verbs, 5 ranks, nccl-tests columns" 0 "busbw" "$rdmalab" run "$scenario" --backend verbs \
      --set fabric.nodes=5 --set workload.type=all_reduce --set workload.sizes=8B..1MiB --set workload.iterations=3 \
      --set workload.warmup=1 --set verbs.wait=event
    check "train_dp and train_pp on verbs" 0 "exposed" "$rdmalab" run "$scenario" --backend verbs --set fabric.nodes=4 \
      --set workload.type=train_dp --set training.model=custom --set 'training.layers=[200000,300000]' --set training.batch=2 \
      --set training.bucket=1MB --set verbs.wait=event
    check "train_pp on verbs" 0 "bubble" "$rdmalab" run "$scenario" --backend verbs --set fabric.nodes=3 --set workload.type=train_pp \
      --set training.model=custom --set 'training.layers=[1000,1000,1000]' --set training.activation=256KB --set verbs.wait=event
    check "train_fsdp on verbs, shards checked" 0 "full_shard" "$rdmalab" run "$scenario" --backend verbs --set fabric.nodes=3 \
      --set workload.type=train_fsdp --set training.model=custom --set 'training.layers=[200000,300001,1000]' --set training.batch=2 \
      --set workload.dtype=bf16 --set verbs.wait=event ;;
  cli)
    check "devices lists rxe0 with its RoCE v2 GID" 0 "RoCE v2" "$rdmalab" devices
    check "devices --json" 0 '"device": "rxe0"' "$rdmalab" devices --json
    check "write_bw on verbs, payload checked" 0 "errors" "$rdmalab" run "$scenario" --backend verbs --set workload.iterations=500
    check "send_bw sweep on verbs, event-driven waits" 0 "65536" "$rdmalab" run "$scenario" --backend verbs --set verbs.wait=event \
      --set workload.type=send_bw --set workload.sizes=2B..64KiB --set workload.iterations=100
    check "an unknown device lists the ones present" 2 "present: rxe0" "$rdmalab" run "$scenario" --backend verbs --set verbs.device=mlx5_9
    # The run forks its local ranks: killed at random moments, it leaves no process and no
    # half-written --json (issue: numbers a user can trust and runs that fail cleanly).
    check "verbs runs killed at random leave no process and no half-written output" 0 "PASS" \
      "$(dirname "$0")/../../cli/kill_at_random.sh" "$rdmalab" "$scenario" 6 "" verbs
    # rxe-vm.sh shares the current directory writable: --json lands where the user ran it.
    check "a --json into the current directory" 0 "" sh -c "f=rxe-vm-cwd-check.\$\$.json; \"$rdmalab\" run \"$scenario\" --backend verbs \
      --set workload.iterations=20 --quiet --json \$f && test -s \$f && rm \$f"
    # rxe measures, the model is calibrated from it, and predicts another measurement of this boot.
    check "a write_bw sweep on Soft-RoCE calibrates the model, which predicts read_bw" 0 "PASS" \
      "$(dirname "$0")/calibrate_loop.sh" "$rdmalab" "$(dirname "$0")/../../../scenarios/labs/11-predict-measure.yaml"
    # The kernel TCP baseline: tcp_bw and tcp_lat beside sockperf (the same path measured two
    # ways), and their CPU per GB beside write_bw's on rxe.
    check "tcp_bw and tcp_lat agree with sockperf run beside them, and report CPU per GB as write_bw does" 0 "PASS" \
      "$(dirname "$0")/tcp_beside_sockperf.sh" "$rdmalab" "$scenario"
    # Monitoring a real run: --record on verbs (completions, CPU per rank process, rxe's counters).
    check "a recorded verbs run carries each rank's bytes, CPU and the port's counters" 0 "PASS" \
      "$(dirname "$0")/record_check.sh" "$rdmalab" "$scenario"
    check "--trace given to rank 0 of two --bootstrap processes: the file has both ranks' tracks" 0 "PASS" sh -c "f=\$(mktemp -d); \
      \"$rdmalab\" run \"$scenario\" --backend verbs --quiet --bootstrap 127.0.0.1:18520 --rank 1 --size 2 --token t > /dev/null & \
      \"$rdmalab\" run \"$scenario\" --backend verbs --quiet --bootstrap 127.0.0.1:18520 --rank 0 --size 2 --token t --trace \$f/t.json > /dev/null && \
      wait \$! && grep -q '\"name\":\"rank 1\"' \$f/t.json && grep -q '\"tid\":1,\"cat\":\"workload\"' \$f/t.json && echo PASS; rm -rf \$f"
    check "--record with one rank per process is refused" 2 "one rank per process" "$rdmalab" run "$scenario" --backend verbs \
      --bootstrap 127.0.0.1:18519 --rank 0 --size 2 --token t --record rxe-vm-record-refused.rec
    # The course's Soft-RoCE parts (docs/labs): the labs' own scenarios on the kernel's rxe.
    labs=$(dirname "$0")/../../../scenarios/labs
    check "lab 2: read latency on Soft-RoCE" 0 "t_typical" "$rdmalab" run "$labs/02-operations.yaml" --backend verbs \
      --set workload.type=read_lat --set workload.iterations=200
    check "a latency test on Soft-RoCE in the VM says what its figures are" 0 "compare them with each other, not with hardware" \
      "$rdmalab" run "$labs/02-operations.yaml" --backend verbs --set workload.iterations=50
    check "lab 4: a wrong rkey on Soft-RoCE" 0 "IBV_WC_REM_ACCESS_ERR" "$rdmalab" run "$labs/04-access-errors.yaml" --backend verbs
    check "lab 4: a write outside the region on Soft-RoCE" 0 "IBV_WC_REM_ACCESS_ERR" "$rdmalab" run "$labs/04-access-errors.yaml" \
      --backend verbs --set workload.provoke=outside_region
    check "lab 4: a write without remote-write access on Soft-RoCE" 0 "IBV_WC_REM_ACCESS_ERR" "$rdmalab" run "$labs/04-access-errors.yaml" \
      --backend verbs --set workload.provoke=no_remote_write
    check "lab 5: a send without a receive on Soft-RoCE" 0 "IBV_WC_RNR_RETRY_EXC_ERR" "$rdmalab" run "$labs/05-rnr.yaml" --backend verbs \
      --set workload.min_rnr_timer=1
    check "lab 5: one receive posted on Soft-RoCE runs dry but delivers" 0 "65536" "$rdmalab" run "$labs/05-shallow-rq.yaml" --backend verbs \
      --set workload.rx_depth=1 --set workload.iterations=50
    check "lab 11: the measurement on Soft-RoCE" 0 "1048576" "$rdmalab" run "$labs/11-predict-measure.yaml" --backend verbs \
      --set workload.iterations=100
    # Two processes through the TCP rendezvous.
    T=0123456789abcdef
    "$rdmalab" run "$scenario" --backend verbs --bootstrap 127.0.0.1:18515 --rank 1 --size 2 --token $T --quiet --set workload.iterations=300 &
    p1=$!
    check "two processes via --bootstrap" 0 "65536" "$rdmalab" run "$scenario" --backend verbs --bootstrap 127.0.0.1:18515 --rank 0 --size 2 \
      --token $T --set workload.iterations=300
    wait $p1 || { echo "[ FAIL ] rank 1 of the --bootstrap run"; fail=1; }
    # A peer killed mid-run stops the other within a bounded time, naming it.
    "$rdmalab" run "$scenario" --backend verbs --bootstrap 127.0.0.1:18516 --rank 1 --size 2 --token $T --quiet \
      --set workload.type=send_lat --set workload.iterations=100000000 > /dev/null 2>&1 &
    p1=$!
    # Kill rank 1 once it has joined (an established connection to rank 0's port 18516 = 0x4854 in
    # /proc/net/tcp), then 2 s into the run: a loaded machine may take many seconds to start it.
    killed_at=$(mktemp)
    ( for _ in $(seq 1 600); do
        awk '$4 == "01" && ($2 ~ /:4854$/ || $3 ~ /:4854$/) { found = 1 } END { exit !found }' /proc/net/tcp && break
        sleep 0.1
      done
      sleep 2; date +%s > "$killed_at"; kill -9 $p1 ) &
    check "a killed peer stops rank 0 with its rank named" 1 "rank 1" "$rdmalab" run "$scenario" --backend verbs --bootstrap 127.0.0.1:18516 \
      --rank 0 --size 2 --token $T --set workload.type=send_lat --set workload.iterations=100000000 --set workload.timeout=60s
    k=$(cat "$killed_at" 2>/dev/null); took=$(( $(date +%s) - ${k:-0} ))
    if [ "$took" -gt 30 ]; then echo "[ FAIL ] rank 0 took ${took}s to notice the kill"; fail=1; else echo "[ PASS ] noticed ${took}s after the kill"; fi
    # A rank with the wrong token is dropped; rank 0 gives up naming the rank that never joined.
    "$rdmalab" run "$scenario" --backend verbs --bootstrap 127.0.0.1:18517 --rank 1 --size 2 --token wrong --quiet > /dev/null 2>&1 &
    p1=$!
    check "a rank with the wrong token is dropped" 1 "ranks 1 did not join" env RDMALAB_TOKEN=$T "$rdmalab" run "$scenario" --backend verbs \
      --bootstrap 127.0.0.1:18517 --rank 0 --size 2
    kill $p1 2>/dev/null; wait $p1 2>/dev/null
    # Under mpirun: ranks, size and the allgather come from MPI (Open MPI, shared memory in the VM).
    if command -v mpirun > /dev/null; then
      # The VM boots without a host name ("(none)"), which Open MPI refuses as a node name.
      [ "$(hostname)" = "(none)" ] && hostname rdmalab-vm
      mpi="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader"
      check "write_bw, two ranks under mpirun" 0 "65536" $mpi -np 2 "$rdmalab" run "$scenario" --backend verbs --set workload.iterations=300
      check "all_reduce, three ranks under mpirun" 0 "busbw" $mpi -np 3 "$rdmalab" run "$scenario" --backend verbs --set fabric.nodes=3 \
        --set workload.type=all_reduce --set workload.sizes=8B..256KiB --set workload.iterations=3 --set verbs.wait=event
      check "mpirun -np 3 against fabric.nodes=2 is refused" 1 "mpirun started 3 ranks" $mpi -np 3 "$rdmalab" run "$scenario" --backend verbs
    else
      echo "[ SKIP ] mpirun launch: no mpirun here (apt-get install openmpi-bin libopenmpi-dev)"
    fi
    check "--bootstrap without a token is refused" 2 "token" "$rdmalab" run "$scenario" --backend verbs --bootstrap 127.0.0.1:18518 --rank 0 --size 2
    ;;
  *) echo "in_vm.sh: unknown part '$part'"; exit 2 ;;
esac
exit $fail
