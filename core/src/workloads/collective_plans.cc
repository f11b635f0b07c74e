// The per-rank plans of every collective algorithm. Pure functions of (collective, algorithm,
// rank, ranks, root, count, element size, in-place): no transport here, so they are unit tested
// directly and every backend runs exactly the same transfers.
#include <algorithm>
#include <bit>

#include "rdmalab/workloads/collectives.h"

namespace rdmalab::workloads {

const char* collective_name(Collective c) noexcept {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
    case Collective::all_to_all: return "all_to_all";
    case Collective::sendrecv: return "sendrecv";
  }
  return "?";
}

bool switched(Algorithm a) noexcept { return a == Algorithm::nvls || a == Algorithm::nvls_tree || a == Algorithm::collnet; }

const char* algorithm_name(Algorithm a) noexcept {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::rhd: return "rhd";
    case Algorithm::chain: return "chain";
    case Algorithm::binomial: return "binomial";
    case Algorithm::pairwise: return "pairwise";
    case Algorithm::nvls: return "nvls";
    case Algorithm::nvls_tree: return "nvls_tree";
    case Algorithm::collnet: return "collnet";
  }
  return "?";
}

std::vector<Algorithm> algorithms_for(Collective c) {
  switch (c) {
    case Collective::all_reduce: return {Algorithm::ring, Algorithm::tree, Algorithm::rhd, Algorithm::nvls, Algorithm::nvls_tree, Algorithm::collnet};
    case Collective::all_gather:
    case Collective::reduce_scatter: return {Algorithm::ring, Algorithm::nvls};
    case Collective::broadcast:
    case Collective::reduce: return {Algorithm::chain, Algorithm::binomial};
    case Collective::all_to_all:
    case Collective::sendrecv: return {Algorithm::pairwise};
  }
  return {};
}

Algorithm default_algorithm(Collective c, std::uint64_t bytes, int ranks) {
  if (c == Collective::all_reduce) {
    // Latency-bound sizes go to halving-doubling (2 lg p steps instead of the ring's 2(p-1)); on
    // a power of two it also moves the least data, up to about 1 MiB on the model's fabrics.
    // Measured on SimGrid, 16 ranks (docs/collectives.md): the double binary tree never beat
    // one of these two, so it is there to be chosen, not picked.
    const bool pow2 = (ranks & (ranks - 1)) == 0;
    if (bytes <= 64 * 1024 || (pow2 && bytes <= 1024 * 1024)) return Algorithm::rhd;
    return Algorithm::ring;
  }
  if ((c == Collective::broadcast || c == Collective::reduce) && bytes <= 64 * 1024) return Algorithm::binomial;
  return algorithms_for(c).front();
}

double busbw_factor(Collective c, int n) {
  if (n <= 1) return c == Collective::all_reduce || c == Collective::all_gather || c == Collective::reduce_scatter ||
                             c == Collective::all_to_all
                         ? 0.0
                         : 1.0;
  switch (c) {
    case Collective::all_reduce: return 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

std::vector<int> ring_order(int ranks, int ranks_per_node, int channel) {
  std::vector<int> order(static_cast<std::size_t>(ranks));
  const int g = ranks_per_node;
  for (int r = 0; r < ranks; ++r) order[static_cast<std::size_t>(r)] = r;
  if (g <= 1 || ranks % g != 0) return order;
  const int c = ((channel % g) + g) % g;
  for (int node = 0; node < ranks / g; ++node)
    for (int k = 0; k < g; ++k) order[static_cast<std::size_t>(node * g + k)] = node * g + (c + k) % g;
  return order;
}

int auto_channels(int ranks, int ranks_per_node, int nics_per_node) {
  const bool several_nodes = ranks_per_node >= 1 && ranks > ranks_per_node;
  return several_nodes && nics_per_node > 1 ? nics_per_node : 1;
}

bool uses_channels(Collective c, Algorithm a) {
  if (a == Algorithm::tree) return c == Collective::all_reduce;
  return a == Algorithm::ring && (c == Collective::all_reduce || c == Collective::all_gather || c == Collective::reduce_scatter);
}

namespace {

// In-order binary tree on "virtual" ranks 0..p-1 rooted at 0 (NCCL's btree): a node's parent
// clears its lowest set bit and sets the next one up, or just clears it when that leaves the
// range. Every node has at most two children; the depth is about log2(p).
int bt_parent(int v, int p) {
  if (v == 0) return -1;
  int bit = v & -v;
  int up = (v ^ bit) | (bit << 1);
  return up >= p ? (v ^ bit) : up;
}

std::vector<int> bt_children(int v, int p) {
  std::vector<int> out;
  if (v == 0) {
    if (p > 1) out.push_back(static_cast<int>(std::bit_floor(static_cast<unsigned>(p - 1))));
    return out;
  }
  int bit = v & -v;
  if (bit > 1) out.push_back(v - bit / 2);  // left: always in range
  for (int b = bit / 2; b >= 1; b /= 2)     // right: v + bit/2, or the largest in-range step
    if (v + b < p && bt_parent(v + b, p) == v) {
      out.push_back(v + b);
      break;
    }
  return out;
}

}  // namespace

TreeNode btree_node(int rank, int p, int which) {
  // Tree 1 mirrors tree 0 (even p) or shifts it by one (odd p), so the leaves of one tree are
  // the inner nodes of the other, as in NCCL's double binary tree.
  auto to_v = [&](int r) { return which == 0 ? r : (p % 2 == 0 ? p - 1 - r : (r - 1 + p) % p); };
  auto to_r = [&](int v) { return which == 0 ? v : (p % 2 == 0 ? p - 1 - v : (v + 1) % p); };
  TreeNode n;
  int v = to_v(rank);
  int par = bt_parent(v, p);
  n.parent = par < 0 ? -1 : to_r(par);
  for (int c : bt_children(v, p)) n.children.push_back(to_r(c));
  return n;
}

namespace {

struct Builder {
  const CollectiveArgs& a;
  Plan plan;
  std::uint64_t es;
  explicit Builder(const CollectiveArgs& args) : a(args), es(args.elem) {}

  int send(int peer, int chan, Ref src, std::uint64_t len, int dep = -1, bool chunkwise = false, bool serial = false) {
    if (len == 0) return -1;
    plan.sends.push_back(SendOp{peer, chan, src, len, dep, chunkwise, serial});
    return static_cast<int>(plan.sends.size()) - 1;
  }
  int recv_copy(int peer, int chan, Ref dst, std::uint64_t len, int after = -1, bool after_whole = false) {
    if (len == 0) return -1;
    plan.recvs.push_back(RecvOp{peer, chan, dst, len, false, Ref{}, after, after_whole});
    return static_cast<int>(plan.recvs.size()) - 1;
  }
  int recv_reduce(int peer, int chan, Ref dst, Ref operand, std::uint64_t len, int after = -1, bool after_whole = false) {
    if (len == 0) return -1;
    plan.recvs.push_back(RecvOp{peer, chan, dst, len, true, operand, after, after_whole});
    return static_cast<int>(plan.recvs.size()) - 1;
  }
  void copy(Ref dst, Ref src, std::uint64_t len) {
    if (len == 0 || (dst.buf == src.buf && dst.off == src.off)) return;
    plan.pre.push_back(LocalCopy{dst, src, len});
  }
  static Ref at(Ref r, std::uint64_t add) { return Ref{r.buf, r.off + add}; }
  // Balanced block b of n elements over p parts, in bytes: [first, first+len).
  std::uint64_t block_first(std::uint64_t n, int p, int b) const { return n * static_cast<std::uint64_t>(b) / static_cast<std::uint64_t>(p) * es; }
  std::uint64_t block_len(std::uint64_t n, int p, int b) const { return block_first(n, p, b + 1) - block_first(n, p, b); }
  int mod(int x) const { return ((x % a.ranks) + a.ranks) % a.ranks; }
};

// One channel's ring: the ranks in the order data flows, and where this rank stands in it.
struct Ring {
  std::vector<int> order;
  int pos = 0, chan = 0;
  Ring(const CollectiveArgs& a, int channel) : order(ring_order(a.ranks, a.ranks_per_node, channel)), chan(channel) {
    pos = static_cast<int>(std::find(order.begin(), order.end(), a.rank) - order.begin());
  }
  int p() const { return static_cast<int>(order.size()); }
  // The rank k places after this one (k < 0: before).
  int at(int k) const { return order[static_cast<std::size_t>(((pos + k) % p() + p()) % p())]; }
  int next() const { return at(1); }
  int prev() const { return at(-1); }
};

// Channel c's share of n elements: [first, first + len) elements, balanced.
std::uint64_t share_first(std::uint64_t n, int channels, int c) { return n * static_cast<std::uint64_t>(c) / static_cast<std::uint64_t>(channels); }
std::uint64_t share_len(std::uint64_t n, int channels, int c) { return share_first(n, channels, c + 1) - share_first(n, channels, c); }

// The ring over one channel's slice [lo, lo + n) elements of the vector.
void all_reduce_ring_channel(Builder& b, const Ring& ring, std::uint64_t lo, std::uint64_t n) {
  const auto& a = b.a;
  const int p = ring.p(), r = ring.pos, next = ring.next(), prev = ring.prev(), ch = ring.chan;
  const Ref in = Builder::at(a.in_place ? Ref{Buf::out, 0} : Ref{Buf::in, 0}, lo * b.es);
  const Ref out{Buf::out, lo * b.es};
  // Reduce-scatter: at step s send block r-s (own input at s=0, then what was just reduced) and
  // reduce block r-s-1 arriving from prev. After p-1 steps block r+1 is complete here. Blocks
  // are numbered by place in the ring.
  std::vector<int> rs(static_cast<std::size_t>(p - 1), -1);
  for (int s = 0; s < p - 1; ++s) {
    int sb = b.mod(r - s), rb = b.mod(r - s - 1);
    b.send(next, ch, Builder::at(s == 0 ? in : out, b.block_first(n, p, sb)), b.block_len(n, p, sb), s == 0 ? -1 : rs[static_cast<std::size_t>(s - 1)], true);
    rs[static_cast<std::size_t>(s)] = b.recv_reduce(prev, ch, Builder::at(out, b.block_first(n, p, rb)), Builder::at(in, b.block_first(n, p, rb)),
                                                    b.block_len(n, p, rb));
  }
  // All-gather: pass the complete blocks around.
  int last = rs.back();
  for (int s = 0; s < p - 1; ++s) {
    int sb = b.mod(r + 1 - s), rb = b.mod(r - s);
    b.send(next, ch, Builder::at(out, b.block_first(n, p, sb)), b.block_len(n, p, sb), last, true);
    last = b.recv_copy(prev, ch, Builder::at(out, b.block_first(n, p, rb)), b.block_len(n, p, rb));
  }
}

Plan all_reduce_ring(Builder& b) {
  const auto& a = b.a;
  if (a.ranks == 1) {
    b.copy(Ref{Buf::out, 0}, a.in_place ? Ref{Buf::out, 0} : Ref{Buf::in, 0}, a.count * b.es);
    return b.plan;
  }
  for (int c = 0; c < a.channels; ++c)
    if (share_len(a.count, a.channels, c) > 0) all_reduce_ring_channel(b, Ring(a, c), share_first(a.count, a.channels, c), share_len(a.count, a.channels, c));
  return b.plan;
}

// Where a rank sits in channel c's tree. One rank per node: NCCL's double binary tree over all
// ranks, tree c % 2. Several ranks per node (NCCL's layout): a chain through the node's ranks in
// the channel's ring order, whose head (local rank c) is the node's place in the double binary
// tree between nodes, tree c % 2: heads talk to heads, so a channel crosses between nodes on one
// rail.
TreeNode tree_place(const CollectiveArgs& a, int c) {
  const int g = a.ranks_per_node, p = a.ranks;
  if (g <= 1 || p % g != 0) return btree_node(a.rank, p, c % 2);
  const std::vector<int> order = ring_order(p, g, c);
  const int node = a.rank / g, nodes = p / g;
  const int k = static_cast<int>(std::find(order.begin() + node * g, order.begin() + (node + 1) * g, a.rank) - (order.begin() + node * g));
  auto at = [&](int n, int i) { return order[static_cast<std::size_t>(n * g + i)]; };
  TreeNode t;
  if (k + 1 < g) t.children.push_back(at(node, k + 1));
  if (k > 0) {
    t.parent = at(node, k - 1);
    return t;
  }
  const TreeNode between = btree_node(node, nodes, c % 2);
  t.parent = between.parent < 0 ? -1 : at(between.parent, 0);
  for (int child : between.children) t.children.push_back(at(child, 0));
  return t;
}

Plan all_reduce_tree(Builder& b) {
  const auto& a = b.a;
  const int p = a.ranks;
  const Ref in = a.in_place ? Ref{Buf::out, 0} : Ref{Buf::in, 0};
  const Ref out{Buf::out, 0};
  if (p == 1) {
    b.copy(out, in, a.count * b.es);
    return b.plan;
  }
  // At least the double binary tree's two trees, each channel carrying its share of the data:
  // reduce up, broadcast down, chunk by chunk.
  const int channels = std::max(2, a.channels);
  for (int t = 0; t < channels; ++t) {
    const std::uint64_t first = share_first(a.count, channels, t) * b.es;
    const std::uint64_t len = share_len(a.count, channels, t) * b.es;
    if (len == 0) continue;
    TreeNode node = tree_place(a, t);
    const Ref tin = Builder::at(in, first), tout = Builder::at(out, first);
    int last = -1;
    for (std::size_t i = 0; i < node.children.size(); ++i)
      last = b.recv_reduce(node.children[i], t, tout, i == 0 ? tin : tout, len, last);
    int down = last;
    if (node.parent >= 0) {
      b.send(node.parent, t, node.children.empty() ? tin : tout, len, last, true);
      down = b.recv_copy(node.parent, t, tout, len);
    }
    for (int c : node.children) b.send(c, t, tout, len, down, true);
  }
  return b.plan;
}

// Recursive halving (reduce-scatter) then recursive doubling (all-gather), Rabenseifner's
// algorithm; a non-power-of-two count of ranks first folds the extra ranks into their
// neighbours and unfolds them at the end (Thakur, Rabenseifner and Gropp 2005).
Plan all_reduce_rhd(Builder& b) {
  const auto& a = b.a;
  const int p = a.ranks, r = a.rank;
  const Ref in = a.in_place ? Ref{Buf::out, 0} : Ref{Buf::in, 0};
  const Ref out{Buf::out, 0};
  const std::uint64_t n = a.count * b.es;
  if (p == 1) {
    b.copy(out, in, n);
    return b.plan;
  }
  const int pw = static_cast<int>(std::bit_floor(static_cast<unsigned>(p)));
  const int rem = p - pw;
  int nr;
  int last = -1;
  if (r < 2 * rem) {
    if (r % 2 == 0) {  // folded away: hand the input to r+1, take the result back at the end
      int s = b.send(r + 1, 0, in, n);
      (void)s;
      b.recv_copy(r + 1, 0, out, n);
      return b.plan;
    }
    nr = r / 2;
    last = b.recv_reduce(r - 1, 0, out, in, n);
  } else {
    nr = r - rem;
    b.copy(out, in, n);
  }
  auto real = [&](int v) { return v < rem ? 2 * v + 1 : v + rem; };
  std::uint64_t lo = 0, hi = a.count;  // elements
  struct Window {
    std::uint64_t lo, hi, mid;
    bool lower;  // this rank kept [lo, mid); else [mid, hi)
  };
  std::vector<Window> windows;
  for (int d = pw / 2; d >= 1; d /= 2) {
    const int partner = real(nr ^ d);
    const std::uint64_t mid = lo + (hi - lo) / 2;
    const bool lower = (nr & d) == 0;
    const std::uint64_t klo = lower ? lo : mid, khi = lower ? mid : hi;
    const std::uint64_t slo = lower ? mid : lo, shi = lower ? hi : mid;
    b.send(partner, 0, Builder::at(out, slo * b.es), (shi - slo) * b.es, last, false);
    // Each step reduces into part of what the previous one produced: after all of it.
    int rv = b.recv_reduce(partner, 0, Builder::at(out, klo * b.es), Builder::at(out, klo * b.es), (khi - klo) * b.es, last, true);
    if (rv >= 0) last = rv;
    windows.push_back(Window{lo, hi, mid, lower});
    lo = klo;
    hi = khi;
  }
  for (int d = 1; d < pw; d *= 2) {
    const int partner = real(nr ^ d);
    const Window w = windows.back();
    windows.pop_back();
    // The partner holds the other half of the window.
    const std::uint64_t olo = w.lower ? w.mid : w.lo, ohi = w.lower ? w.hi : w.mid;
    b.send(partner, 0, Builder::at(out, lo * b.es), (hi - lo) * b.es, last, false);
    // After the previous step's copy too: the next send forwards both, and the partners of
    // different steps do not wait for each other, so their data can arrive out of step order.
    int rv = b.recv_copy(partner, 0, Builder::at(out, olo * b.es), (ohi - olo) * b.es, last, true);
    if (rv >= 0) last = rv;
    lo = w.lo;
    hi = w.hi;
  }
  if (r < 2 * rem) b.send(r - 1, 0, out, n, last, false, true);
  return b.plan;
}

// Each rank's block (count / ranks elements) is split over the channels: channel c carries
// share c of every block, around its own ring. Blocks keep their place in the buffer (block q is
// rank q's), so a ring in another order still leaves the output in rank order.
Plan all_gather_ring(Builder& b) {
  const auto& a = b.a;
  const std::uint64_t blk = a.count / static_cast<std::uint64_t>(a.ranks);  // elements per rank
  const std::uint64_t c = blk * b.es;                                        // bytes per rank
  const Ref out{Buf::out, 0};
  const Ref in = a.in_place ? Ref{Buf::out, static_cast<std::uint64_t>(a.rank) * c} : Ref{Buf::in, 0};
  b.copy(Builder::at(out, static_cast<std::uint64_t>(a.rank) * c), in, c);
  for (int ch = 0; ch < a.channels && a.ranks > 1; ++ch) {
    const std::uint64_t first = share_first(blk, a.channels, ch) * b.es, len = share_len(blk, a.channels, ch) * b.es;
    if (len == 0) continue;
    const Ring ring(a, ch);
    auto block = [&](int q) { return Builder::at(out, static_cast<std::uint64_t>(q) * c + first); };
    int last = -1;
    for (int s = 0; s < a.ranks - 1; ++s) {
      b.send(ring.next(), ch, s == 0 ? Builder::at(in, first) : block(ring.at(-s)), len, last, true);
      last = b.recv_copy(ring.prev(), ch, block(ring.at(-s - 1)), len);
    }
  }
  return b.plan;
}

Plan reduce_scatter_ring(Builder& b) {
  const auto& a = b.a;
  const int p = a.ranks;
  const std::uint64_t blk = a.count / static_cast<std::uint64_t>(p);
  const std::uint64_t c = blk * b.es;
  const Ref in = a.in_place ? Ref{Buf::out, 0} : Ref{Buf::in, 0};
  const Ref out = a.in_place ? Ref{Buf::out, static_cast<std::uint64_t>(a.rank) * c} : Ref{Buf::out, 0};
  const Ref scr{Buf::scratch, 0};
  if (p == 1) {
    b.copy(out, in, c);
    return b.plan;
  }
  b.plan.scratch_bytes = c * static_cast<std::uint64_t>(p);
  for (int ch = 0; ch < a.channels; ++ch) {
    const std::uint64_t first = share_first(blk, a.channels, ch) * b.es, len = share_len(blk, a.channels, ch) * b.es;
    if (len == 0) continue;
    const Ring ring(a, ch);
    auto boff = [&](int q) { return static_cast<std::uint64_t>(q) * c + first; };
    // At step s this rank sends the partial sum of the block of the rank s+1 places before it,
    // and reduces into the block of the rank s+2 places before; the last step's is its own.
    int last = -1;
    for (int s = 0; s < p - 1; ++s) {
      int sb = ring.at(-s - 1), rb = ring.at(-s - 2);
      b.send(ring.next(), ch, Builder::at(s == 0 ? in : scr, boff(sb)), len, last, true);
      if (s == p - 2)
        last = b.recv_reduce(ring.prev(), ch, Builder::at(out, first), Builder::at(in, boff(rb)), len);
      else
        last = b.recv_reduce(ring.prev(), ch, Builder::at(scr, boff(rb)), Builder::at(in, boff(rb)), len);
    }
  }
  return b.plan;
}

Plan broadcast_plan(Builder& b, bool chain) {
  const auto& a = b.a;
  const int p = a.ranks;
  const int v = b.mod(a.rank - a.root);
  auto real = [&](int x) { return b.mod(x + a.root); };
  const std::uint64_t n = a.count * b.es;
  const Ref out{Buf::out, 0};
  const Ref in = a.in_place ? out : Ref{Buf::in, 0};
  if (v == 0) b.copy(out, in, n);
  int got = -1;
  if (chain) {
    if (v > 0) got = b.recv_copy(real(v - 1), 0, out, n);
    if (v + 1 < p) b.send(real(v + 1), 0, v == 0 ? in : out, n, got, true);
    return b.plan;
  }
  int mask = 1;
  while (mask < p) {
    if (v & mask) {
      got = b.recv_copy(real(v - mask), 0, out, n);
      break;
    }
    mask <<= 1;
  }
  // One child after the other, as in the binomial algorithm (each send completes before the next
  // starts), so the farthest subtree gets the data first.
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < p) b.send(real(v + mask), 0, v == 0 ? in : out, n, got, true, true);
  return b.plan;
}

Plan reduce_plan(Builder& b, bool chain) {
  const auto& a = b.a;
  const int p = a.ranks;
  const int v = b.mod(a.rank - a.root);
  auto real = [&](int x) { return b.mod(x + a.root); };
  const std::uint64_t n = a.count * b.es;
  const Ref out{Buf::out, 0};
  const Ref in = a.in_place ? out : Ref{Buf::in, 0};
  std::vector<int> children;
  int parent = -1;
  if (chain) {
    if (v + 1 < p) children.push_back(v + 1);
    if (v > 0) parent = v - 1;
  } else {
    int mask = 1;
    while (mask < p) {
      if (v & mask) {
        parent = v - mask;
        break;
      }
      if (v + mask < p) children.push_back(v + mask);
      mask <<= 1;
    }
  }
  if (children.empty() && parent < 0) b.copy(out, in, n);
  int last = -1;
  for (std::size_t i = 0; i < children.size(); ++i) last = b.recv_reduce(real(children[i]), 0, out, i == 0 ? in : out, n, last);
  if (parent >= 0) b.send(real(parent), 0, children.empty() ? in : out, n, last, true);
  return b.plan;
}

Plan all_to_all_pairwise(Builder& b) {
  const auto& a = b.a;
  const int p = a.ranks, r = a.rank;
  const std::uint64_t c = a.count / static_cast<std::uint64_t>(p) * b.es;
  const Ref in{Buf::in, 0}, out{Buf::out, 0};
  b.copy(Builder::at(out, static_cast<std::uint64_t>(r) * c), Builder::at(in, static_cast<std::uint64_t>(r) * c), c);
  int last = -1;
  for (int k = 1; k < p; ++k) {
    int to = b.mod(r + k), from = b.mod(r - k);
    b.send(to, 0, Builder::at(in, static_cast<std::uint64_t>(to) * c), c, last, false);
    last = b.recv_copy(from, 0, Builder::at(out, static_cast<std::uint64_t>(from) * c), c);
  }
  return b.plan;
}

Plan sendrecv_plan(Builder& b) {
  const auto& a = b.a;
  const std::uint64_t n = a.count * b.es;
  const Ref in{Buf::in, 0}, out{Buf::out, 0};
  if (a.ranks == 1) {
    b.copy(out, in, n);
    return b.plan;
  }
  b.send(b.mod(a.rank + 1), 0, in, n);
  b.recv_copy(b.mod(a.rank - 1), 0, out, n);
  return b.plan;
}

}  // namespace

Plan build_plan(const CollectiveArgs& a) {
  Builder b(a);
  const std::uint64_t n = a.count * a.elem;
  const auto p = static_cast<std::uint64_t>(a.ranks);
  Plan plan;
  if (switched(a.algo)) {  // the switches move the data (Device::switch_collective): buffers only
    plan.in_bytes = a.coll == Collective::all_gather ? n / p : n;
    plan.out_bytes = a.coll == Collective::reduce_scatter && !a.in_place ? n / p : n;
    if (a.in_place) plan.in_bytes = 0;
    return plan;
  }
  switch (a.coll) {
    case Collective::all_reduce:
      plan = a.algo == Algorithm::tree ? all_reduce_tree(b) : a.algo == Algorithm::rhd ? all_reduce_rhd(b) : all_reduce_ring(b);
      plan.in_bytes = n;
      plan.out_bytes = n;
      break;
    case Collective::all_gather:
      plan = all_gather_ring(b);
      plan.in_bytes = n / p;
      plan.out_bytes = n;
      break;
    case Collective::reduce_scatter:
      plan = reduce_scatter_ring(b);
      plan.in_bytes = n;
      plan.out_bytes = a.in_place ? n : n / p;
      break;
    case Collective::broadcast:
      plan = broadcast_plan(b, a.algo == Algorithm::chain);
      plan.in_bytes = n;
      plan.out_bytes = n;
      break;
    case Collective::reduce:
      plan = reduce_plan(b, a.algo == Algorithm::chain);
      plan.in_bytes = n;
      plan.out_bytes = n;
      break;
    case Collective::all_to_all:
      plan = all_to_all_pairwise(b);
      plan.in_bytes = n;
      plan.out_bytes = n;
      break;
    case Collective::sendrecv:
      plan = sendrecv_plan(b);
      plan.in_bytes = n;
      plan.out_bytes = n;
      break;
  }
  if (a.in_place) plan.in_bytes = 0;  // the input lives in the output buffer
  return plan;
}

}  // namespace rdmalab::workloads
