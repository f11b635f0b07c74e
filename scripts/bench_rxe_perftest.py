#!/usr/bin/env python3
"""Runs inside the Soft-RoCE VM (scripts/bench-rxe-perftest.sh): perftest and rdmalab, alternating."""
import json, re, statistics, subprocess, sys, time
rounds = int(sys.argv[1])
dev = ["-d", "rxe0", "-x", "1", "-F"]
def perftest(tool, args):
    srv = subprocess.Popen([tool] + dev + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1.0)
    cli = subprocess.run([tool] + dev + args + ["127.0.0.1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    srv.wait(timeout=600)
    return cli.stdout
def rdmalab(workload, sets):
    time.sleep(1.0)  # the same quiet second perftest's client gets while its server starts
    out = "/tmp/rdmalab-bench.json"
    cmd = ["build/bin/rdmalab", "run", "scenarios/write-bw-64k.yaml", "--backend", "verbs", "--quiet", "--json", out,
           "--set", "workload.type=" + workload] + sum([["--set", s] for s in sets], [])
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=600)
    return json.load(open(out))["results"]
def perftest_bw(text):  # rows: bytes iters peak avg msgrate; avg in MiB/s (finer than --report_gbits' 0.01 Gb/s), as Gb/s
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0].isdigit() and f[1].isdigit():
            rows[int(f[0])] = float(f[3]) * 1048576 * 8 / 1e9
    return rows
def perftest_rate(text):  # the single size's bandwidth
    return list(perftest_bw(text).values())[0]
def perftest_lat(text):  # t_typical is the 5th column of the result line
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0].isdigit() and f[1].isdigit():
            return float(f[4])
    raise RuntimeError("no latency line in:\n" + text)
cases = [
    ("ib_write_bw 64KiB", "ib_write_bw", ["-s", "65536", "-n", "3000"], "write_bw", ["workload.size=64KiB", "workload.iterations=3000"], "bw"),
    ("ib_read_bw 64KiB", "ib_read_bw", ["-s", "65536", "-n", "3000"], "read_bw", ["workload.size=64KiB", "workload.iterations=3000"], "bw"),
    ("ib_send_bw 64KiB", "ib_send_bw", ["-s", "65536", "-n", "3000"], "send_bw", ["workload.size=64KiB", "workload.iterations=3000"], "bw"),
    # perftest checks nothing: the like-for-like figure is rdmalab with its checks off (then, as
    # perftest reuses one buffer, every workload reuses two message slots per QP, a send's
    # receives included, instead of one per request or receive in flight).
    ("ib_write_bw 64KiB, rdmalab checks off", "ib_write_bw", ["-s", "65536", "-n", "3000"], "write_bw", ["workload.size=64KiB", "workload.iterations=3000", "workload.verify=false"], "bw"),
    ("ib_read_bw 64KiB, rdmalab checks off", "ib_read_bw", ["-s", "65536", "-n", "3000"], "read_bw", ["workload.size=64KiB", "workload.iterations=3000", "workload.verify=false"], "bw"),
    ("ib_send_bw 64KiB, rdmalab checks off", "ib_send_bw", ["-s", "65536", "-n", "3000"], "send_bw", ["workload.size=64KiB", "workload.iterations=3000", "workload.verify=false"], "bw"),
    # The method's own noise: perftest against itself, in the same alternation. A ratio of the
    # others inside the spread of this one is as close to 1.00 as this device can tell.
    ("A/A: ib_write_bw 64KiB against itself", "ib_write_bw", ["-s", "65536", "-n", "3000"], None, None, "bw"),
    ("ib_write_bw sweep 2B..8MiB (sum)", "ib_write_bw", ["-a", "-n", "300"], "write_bw", ["workload.sizes=2B..8MiB", "workload.iterations=300"], "sweep"),
    ("ib_write_lat 8B t_typical", "ib_write_lat", ["-s", "8", "-n", "3000", "-I", "64"], "write_lat", ["workload.size=8B", "workload.iterations=3000", "workload.inline=64B"], "lat"),
    ("ib_send_lat 8B t_typical", "ib_send_lat", ["-s", "8", "-n", "3000", "-I", "64"], "send_lat", ["workload.size=8B", "workload.iterations=3000", "workload.inline=64B"], "lat"),
    # The collectives' ceiling on this device: all_reduce busbw (2 ranks, ring, 512 KiB chunks) in
    # Gb/s against ib_write_bw with 512 KiB messages.
    ("all_reduce 16MiB busbw vs ib_write_bw 512KiB", "ib_write_bw", ["-s", "524288", "-n", "500"], "all_reduce",
     ["workload.size=16MiB", "workload.algorithm=ring", "workload.iterations=20", "workload.placement=out_of_place"], "busbw"),
]
only = sys.argv[2] if len(sys.argv) > 2 else ""
names = [c[0] for c in cases]
wanted = only.split("|")  # several substrings: the cases that contain any of them
cases = [c for c in cases if any(w in c[0] for w in wanted)]
if not cases:
    print(f"bench_rxe_perftest.py: no case name contains '{only}' ('|' separates alternatives); the cases are:\n  " + "\n  ".join(names), file=sys.stderr)
    sys.exit(2)
# Medians, the best of the rounds (highest bandwidth, lowest latency), and the median of the
# rounds' own ratios (paired: the two programs of a round ran back to back). Under emulation a
# run now and then goes at a fraction of the rate (the machine under the VM, or rxe
# retransmitting), whichever program it falls on; the best shows each program's rate without one.
print(f"{'case':<46} {'perftest':>12} {'rdmalab':>12} {'ratio':>8} {'best p':>9} {'best r':>9} {'ratio':>7} {'paired':>7}")
for name, tool, pargs, wl, sets, kind in cases:
    p, r = [], []
    # The program compared with perftest: rdmalab, or (the A/A case) perftest again, as a row.
    second = (lambda: rdmalab(wl, sets)) if wl else (lambda: [{"bw_gbps": perftest_rate(perftest(tool, pargs))}])
    for i in range(rounds):
        # ABBA: the order flips every round, so a drift in the machine's speed (or the tail of
        # the previous program's teardown) weighs on both programs alike.
        if i % 2 == 0:
            t = perftest(tool, pargs); rows = second()
        else:
            rows = second(); t = perftest(tool, pargs)
        if kind == "bw":
            p.append(perftest_rate(t)); r.append(rows[0]["bw_gbps"])
        elif kind == "busbw":
            p.append(perftest_rate(t)); r.append(rows[0]["busbw_gbps"] * 8)
        elif kind == "sweep":
            pr = perftest_bw(t); rr = {x["bytes"]: x["bw_gbps"] for x in rows}
            common = sorted(set(pr) & set(rr))
            p.append(sum(pr[s] for s in common)); r.append(sum(rr[s] for s in common))
        else:
            p.append(perftest_lat(t)); r.append(rows[0]["lat_us"]["typical"])
    pm, rm = statistics.median(p), statistics.median(r)
    pb, rb = (min(p), min(r)) if kind == "lat" else (max(p), max(r))
    paired = statistics.median(b / a for a, b in zip(p, r))  # each round's ratio: the two ran back to back
    unit = "us" if kind == "lat" else "Gb/s"
    print(f"{name:<46} {pm:>9.3f} {unit:<2} {rm:>9.3f} {unit:<2} {rm / pm:>8.3f} {pb:>9.3f} {rb:>9.3f} {rb / pb:>7.3f} {paired:>7.3f}", flush=True)
    print(f"{'  rounds':<46} " + " ".join(f"{a:.3f}/{b:.3f}" for a, b in zip(p, r)), flush=True)
