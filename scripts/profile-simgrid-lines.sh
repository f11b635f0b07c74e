#!/usr/bin/env bash
# Where rdmalab's SimGrid ring misses the cache, line by line: runs the ring benchmark's rdmalab
# program under callgrind with a 1 MiB last-level cache and per-instruction counts, then charges
# each instruction's last-level misses to the line of rdmalab's own source it comes from — through
# inlining: a miss in an inlined std::vector or boost::intrusive_ptr member is charged to the
# backend line that called it, with the library line in brackets. Per transfer, largest first.
# scripts/bench-simgrid-cachegrind.sh gives the totals; this says where they go
# (docs/backends/simgrid.md, "Scale").
#
#   scripts/profile-simgrid-lines.sh [RANKS] [BUILD_DIR] [LINES]     (defaults: 512, build, 40)
#
# About 5 minutes at 512 ranks (callgrind runs about 150× slower than the program). Misses in
# libsimgrid, libc and libstdc++ are totalled per library, not per line: they have no line
# information in Debian's packages. Callgrind lists some of SimGrid's actor switch (ActorImpl::yield,
# the stack reloaded after a context switch) under the program rather than libsimgrid: those show
# as "(no line information)" (checked by address at 512 ranks: about 11.7 lines per transfer).
set -euo pipefail
ranks=${1:-512}
build=${2:-build}
lines=${3:-40}
if ! [[ $ranks =~ ^[0-9]+$ ]] || ((ranks < 2)); then
  echo "profile-simgrid-lines.sh: RANKS must be a whole number of at least 2 (got '$ranks')" >&2
  exit 2
fi
if ! [[ $lines =~ ^[0-9]+$ ]]; then
  echo "profile-simgrid-lines.sh: LINES must be a whole number (got '$lines')" >&2
  exit 2
fi
bench=$build/bench/simgrid_ring_bench
if [[ ! -x $bench ]]; then
  echo "profile-simgrid-lines.sh: $bench is not built (scripts/setup.sh $build builds it)" >&2
  exit 2
fi
for tool in valgrind addr2line; do
  if ! command -v $tool >/dev/null; then
    echo "profile-simgrid-lines.sh: $tool is not installed (apt-get install valgrind binutils)" >&2
    exit 2
  fi
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# A copy of the binary: the line information must match the run even if the build changes meanwhile.
cp "$bench" "$out/bench"
if ! valgrind --tool=callgrind --cache-sim=yes --LL=1048576,8,64 --dump-instr=yes --trace-children=yes \
  --callgrind-out-file="$out/cg.%p" "$out/bench" "$ranks" "${ranks}MiB" rdmalab >"$out/log" 2>&1; then
  echo "profile-simgrid-lines.sh: the run failed:" >&2
  tail -20 "$out/log" >&2
  exit 1
fi
python3 - "$out" "$ranks" "$lines" "$(pwd)/" <<'EOF'
import collections, glob, os, re, subprocess, sys
out, ranks, top, root = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
transfers = 2 * (ranks - 1) * ranks
# The simulation's process is the largest output.
f = max(glob.glob(f"{out}/cg.*"), key=os.path.getsize)
names, obj = {}, None
misses = collections.Counter()  # (object, instruction address) -> last-level misses
last = [0, 0]
skip = False
events = None
def position(tok, i):
    if tok == "*": return last[i]
    if tok[0] == "+": return last[i] + int(tok[1:], 0)
    if tok[0] == "-": return last[i] - int(tok[1:], 0)
    return int(tok, 0)
for line in open(f):
    c = line[0]
    if c.isdigit() or c in "+-*":
        parts = line.split()
        last[0], last[1] = position(parts[0], 0), position(parts[1], 1)
        if skip:  # the cost of a call, inclusive: not this instruction's own
            skip = False
            continue
        ev = dict(zip(events, (int(x) for x in parts[2:])))
        m = ev.get("DLmr", 0) + ev.get("DLmw", 0)
        if m: misses[(obj, last[0])] += m
    elif line.startswith("events:"):
        events = line.split()[1:]
    elif line.startswith(("ob=", "cob=")):
        m = re.match(r"c?ob=\((\d+)\)(?: (.*))?", line.strip())
        if m.group(2): names[m.group(1)] = m.group(2)
        if line.startswith("ob="): obj = names[m.group(1)]
    elif line.startswith("calls="):
        skip = True
per_obj = collections.Counter()
for (o, _), m in misses.items(): per_obj[o] += m
exe = f"{out}/bench"
print(f"rdmalab ring over {ranks} ranks, {transfers} transfers, under callgrind (1 MiB last-level cache)")
print(f"last-level misses per transfer: {sum(per_obj.values()) / transfers:.1f}")
for o, m in per_obj.most_common(5):
    print(f"  {m / transfers:7.1f}  {'rdmalab and the benchmark' if o == exe else o}")
addrs = sorted(a for (o, a) in misses if o == exe)
text = subprocess.run(["addr2line", "-a", "-i", "-C", "-e", exe] + [hex(a) for a in addrs],
                      capture_output=True, text=True, check=True).stdout.split("\n")
chains, cur = {}, None
for t in text:
    if re.fullmatch(r"0x[0-9a-f]+", t):
        cur = int(t, 16)
        chains[cur] = []
    elif t and cur is not None:
        chains[cur].append(t.split(" (discriminator")[0])
site = collections.Counter()
for a in addrs:
    chain = chains.get(a) or ["??:0"]
    ours = next((loc for loc in chain if loc.startswith(root)), None)
    inner = os.path.basename(chain[0])
    key = (ours[len(root):] if ours else "(no line information)") + ("" if ours == chain[0] else f"  [{inner}]")
    site[key] += misses[(exe, a)]
print(f"\nrdmalab's own lines (and the library code inlined there, in brackets), top {top}:")
for k, m in site.most_common(top):
    print(f"  {m / transfers:6.2f}  {k}")
EOF
