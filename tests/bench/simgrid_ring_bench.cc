// Scale of the SimGrid backend: a ring exchange of BYTES over P ranks on a two-level fat tree,
// 2(P-1) steps of BYTES/P chunks (as a ring all-reduce moves data), run four ways in the same
// benchmark: through rdmalab's contract (write with immediate, phantom memory), and as three plain
// s4u programs making the same transfers with no rdmalab in between: one with mailbox
// rendezvous (put/get), one with host-to-host transfers (Comm::sendto_async, a semaphore per rank
// to learn that the incoming transfer exists), and one with mailbox rendezvous waited on as a
// completion queue must be (wait_any over the transfer, a receive posted ahead and a wake-up
// Exec). Prints wall time, transfers per second, peak memory and the ratios.
//
// Why these: SimGrid 3.32 detaches every sendto_async transfer into one engine-wide list that is
// searched linearly whenever a transfer ends, so its cost per transfer grows with the number in
// flight (about one per rank here); mailbox transfers do not pay that. rdmalab sends a ring's
// requests through mailboxes (each rank's inbox), so the put/get row is the one to compare with
// (the target); the sendto row shows what the other primitive would cost; the wait_any row is
// SimGrid's own cost of the way rdmalab has to wait, with none of rdmalab's state (the floor).
//
//   build/bench/simgrid_ring_bench [RANKS [BYTES [PROGRAMS]]] [--progress | --quiet] [--rounds N]
//   PROGRAMS: all (the default), pair (plain,rdmalab), or a comma-separated list of plain,
//             sendto, waitany and rdmalab
//   e.g. 1024 1GiB, 8192 1GiB rdmalab, 1024 1GiB plain,waitany,rdmalab --rounds 5
//
// Running one program alone is for profiling, and for scales where the sendto program is too
// slow to wait for. Progress (simulated time reached, transfers, rate since the start) is
// written to stderr about once a second when stderr is a terminal and --quiet is not given, or
// always with --progress.
// --rounds N runs the chosen programs N times, alternating, and prints the minimum and median of
// each (this machine's timings swing by 20 % and more from run to run: only runs made side by side
// are compared).
#include <fmt/format.h>
#include <simgrid/s4u.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>

#include "backends.h"
#include "rdmalab/run.h"
#include "rdmalab/units.h"
#include "simgrid/platform.h"

namespace sg4 = simgrid::s4u;
using namespace rdmalab;

namespace {

// Nodes per leaf of the benchmark's fat tree: the least power of two whose square covers the ranks.
int leaf_size(int ranks) {
  int leaf = 1;
  while (leaf * leaf < ranks) leaf *= 2;
  return leaf;
}

// A two-level fat tree for P ranks: leaves of L nodes with L uplinks (1:1), P/L leaves.
std::string fabric_yaml(int ranks) {
  const int leaf = leaf_size(ranks);
  int leaves = ranks / leaf;
  return fmt::format(
      "backend: simgrid\nfabric:\n  topology: fat_tree\n  nodes: {}\n  model: alpha_beta\n  link: {{ bandwidth: 400Gbps, latency: 1us }}\n"
      "  fat_tree: {{ levels: 2, down: [{}, {}], up: [1, {}], parallel: [1, 1] }}\n",
      ranks, leaf, leaves, leaves);
}

struct Outcome {
  double simulated_s = 0;
  std::uint64_t transfers = 0;
  double exchange_wall_s = 0;  // wall time of the transfers alone (from the first step to the last)
};

double wall_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

bool g_progress = false;
int g_rounds = 1;

// A command-line count: all of `text` a decimal number that fits an int.
bool whole_number(const char* text, int& out) {
  const char* end = text + std::strlen(text);
  auto [at, ec] = std::from_chars(text, end, out);
  return ec == std::errc() && at == end && at != text;
}

// The plain programs' progress line, in the backend's format.
void plain_progress(const char* name, const std::uint64_t& transfers) {
  if (!g_progress) return;
  auto wall0 = std::chrono::steady_clock::now();
  auto last = wall0;
  sg4::Engine::on_time_advance_cb([name, &transfers, wall0, last](double) mutable {
    auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::seconds(1)) return;
    last = now;
    const double wall = std::chrono::duration<double>(now - wall0).count();
    std::fprintf(stderr, "\r[%s] simulated %.6f s, %llu transfers, %.0f transfers/s   ", name, sg4::Engine::get_clock(),
                 static_cast<unsigned long long>(transfers), static_cast<double>(transfers) / wall);
    std::fflush(stderr);
  });
}

Outcome run_rdmalab(const Scenario& sc, int ranks, std::uint64_t chunk) {
  auto backend = all_backends().make("simgrid");
  Outcome out;
  LaunchSpec spec;
  spec.ranks = ranks;
  spec.scenario = &sc;
  spec.progress = g_progress;
  spec.export_state = [&] { return std::string(reinterpret_cast<const char*>(&out), sizeof out); };
  spec.import_state = [&](const std::string& s) {
    if (s.size() == sizeof out) std::memcpy(&out, s.data(), sizeof out);
  };
  struct Hello {
    QpEndpoint to_next, from_prev;
    RemoteBuffer rb;
  };
  Status st = (*backend)->launch(spec, [&](RankEnv& env) -> Status {
    MemoryProvider& mem = phantom_memory();
    RDMALAB_ASSIGN(auto pd, env.dev.alloc_pd());
    RDMALAB_ASSIGN(auto cq, env.dev.create_cq(64));
    RDMALAB_ASSIGN(auto buf, mem.allocate(2 * chunk));
    RDMALAB_ASSIGN(auto mr, pd->register_memory(buf.data(), 2 * chunk, kAccessLocalWrite | kAccessRemoteWrite, MemoryKind::phantom));
    RDMALAB_ASSIGN(auto to_next, pd->create_qp(*cq, *cq, QpCaps{}));
    const int ahead = leaf_size(ranks);  // receives kept posted (below)
    QpCaps deep;
    deep.max_recv_wr = static_cast<std::uint32_t>(ahead) + 1;
    RDMALAB_ASSIGN(auto from_prev, pd->create_qp(*cq, *cq, deep));
    RDMALAB_TRY(to_next->to_init());
    RDMALAB_TRY(from_prev->to_init());
    RDMALAB_ASSIGN(auto all, allgather_value(env.boot, Hello{to_next->endpoint(), from_prev->endpoint(), mr->remote()}));
    const int next = (env.rank + 1) % ranks, prev = (env.rank + ranks - 1) % ranks;
    QpConnectAttr a;
    a.remote = all[static_cast<std::size_t>(next)].from_prev;
    RDMALAB_TRY(to_next->to_rtr(a));
    RDMALAB_TRY(to_next->to_rts());
    a.remote = all[static_cast<std::size_t>(prev)].to_next;
    RDMALAB_TRY(from_prev->to_rtr(a));
    RDMALAB_TRY(from_prev->to_rts());
    const RemoteBuffer dst = all[static_cast<std::size_t>(next)].rb;
    // Every rank holds everyone's endpoints only until connected: p ranks × p entries would be
    // the largest thing in the simulation's memory at scale (it grows as p squared).
    std::vector<Hello>().swap(all);
    RDMALAB_TRY(env.boot.barrier());
    Sge sge{mr->addr(), static_cast<std::uint32_t>(chunk), mr->lkey()};
    Sge rsge{mr->addr() + chunk, 0, mr->lkey()};
    RecvWr rwr{1, {&rsge, 1}};
    std::array<Completion, 4> wc{};
    const int steps = 2 * (ranks - 1);
    // Receives are posted ahead, as a real ring's credits are, far enough that no write meets an
    // empty receive queue: one that did would be receiver-not-ready, wait out the RNR timer and be
    // sent again — a transfer the plain programs do not make (their puts wait for the matching
    // get). A rank is held back by the slowest link after it, the one leaving its leaf, so the
    // ranks of a leaf run up to about a leaf's width ahead of the ones after them: with one
    // receive ahead, 4 % of the transfers of a 1024-rank ring of 128 KiB chunks were sent twice
    // (the simulated time 4.9 % longer), and with 8 still 0.4 %; with a leaf's width none
    // (counted in the backend, 256 to 2048 ranks).
    for (int i = 0; i < ahead; ++i) RDMALAB_TRY(from_prev->post_recv(std::span<const RecvWr>(&rwr, 1)));
    RDMALAB_TRY(env.boot.barrier());
    const double t0 = wall_now();
    // A step ends when its own send has completed and its receive has arrived, as in the plain
    // programs (counting any two completions would let a rank whose next receive came early start
    // its next send before its last one ended: another timeline, with more transfers at once).
    int sent = 0, received = 0;
    for (int step = 0; step < steps; ++step) {
      if (step + ahead < steps) RDMALAB_TRY(from_prev->post_recv(std::span<const RecvWr>(&rwr, 1)));
      SendWr wr;
      wr.opcode = SendOpcode::rdma_write_with_imm;
      wr.sg_list = {&sge, 1};
      wr.remote_addr = dst.addr + chunk;
      wr.rkey = dst.rkey;
      wr.imm = static_cast<std::uint32_t>(step);
      RDMALAB_TRY(to_next->post_send(std::span<const SendWr>(&wr, 1)));
      while (sent <= step || received <= step) {
        RDMALAB_ASSIGN(std::size_t n, cq->wait(wc, 3600.0));
        for (std::size_t i = 0; i < n; ++i) {
          if (wc[i].status != WcStatus::success) return Status(Errc::transport, wc_status_str(wc[i].status));
          ++(wc[i].opcode == WcOpcode::recv_rdma_with_imm ? received : sent);
        }
      }
    }
    RDMALAB_TRY(env.boot.barrier());
    if (env.rank == 0) {
      out.exchange_wall_s = wall_now() - t0;
      out.simulated_s = env.rt.now();
      out.transfers = static_cast<std::uint64_t>(steps) * static_cast<std::uint64_t>(ranks);
    }
    return Status::ok();
  });
  if (!st) fmt::print(stderr, "rdmalab ring failed: {}\n", st.to_string());
  return out;
}

// A plain s4u program: an engine with the scenario's platform, one actor per rank running
// `setup(hosts)`'s step function `step(rank, step)` for the ring's 2(p-1) steps.
template <typename Setup>
Outcome run_plain(const Scenario& sc, int ranks, const char* name, Setup setup) {
  std::vector<std::string> args_s = sim::engine_args(name);
  std::vector<char*> args;
  for (auto& a : args_s) args.push_back(a.data());
  args.push_back(nullptr);
  int argc = static_cast<int>(args_s.size());
  sg4::Engine engine(&argc, args.data());
  sim::FabricModel model = sim::read_model(sc);
  auto hosts = sim::build_platform(sc, model);
  auto step = setup(hosts);
  Outcome out;
  std::uint64_t done = 0;
  plain_progress(name, done);
  const int steps = 2 * (ranks - 1);
  double t0 = 0;
  for (int r = 0; r < ranks; ++r) {
    sg4::Actor::create(fmt::format("rank-{}", r), hosts[static_cast<std::size_t>(r)].gpu, [&, r] {
      RDMALAB_SIM_COLOUR_STACK(r);  // as rdmalab's backend does for its ranks (platform.h)
      if (r == 0) t0 = wall_now();
      for (int k = 0; k < steps; ++k) {
        step(r, k);
        ++done;
      }
      if (r == 0) {
        out.exchange_wall_s = wall_now() - t0;
        out.simulated_s = sg4::Engine::get_clock();
        out.transfers = static_cast<std::uint64_t>(steps) * static_cast<std::uint64_t>(ranks);
      }
    });
  }
  engine.run();
  if (g_progress) std::fprintf(stderr, "\n");
  return out;
}

// Mailbox rendezvous: put to the next rank's mailbox, get from one's own.
Outcome run_plain_s4u(const Scenario& sc, int ranks, std::uint64_t chunk) {
  return run_plain(sc, ranks, "plain", [&](const std::vector<sim::RankEndpoints>&) {
    auto boxes = std::make_shared<std::vector<sg4::Mailbox*>>();
    for (int r = 0; r < ranks; ++r) boxes->push_back(sg4::Mailbox::by_name(fmt::format("ring-{}", r)));
    return [boxes, ranks, chunk](int r, int) {
      static int token = 0;
      sg4::CommPtr s = (*boxes)[static_cast<std::size_t>((r + 1) % ranks)]->put_async(&token, chunk);
      (*boxes)[static_cast<std::size_t>(r)]->get<int>();
      s->wait();
    };
  });
}

// Mailbox rendezvous waited on the way rdmalab's backend has to wait for a completion queue, with
// none of rdmalab's state: SimGrid 3.32's own cost of that wait, the floor under rdmalab's. A rank
// keeps one receive posted ahead (a request can arrive before its CQ is waited on), and each wait is
// one wait_any over its transfer in flight, that receive and a suspended Exec by which another rank
// could wake it (no one does here); a step ends when its send has ended and one transfer has
// arrived, as a CQ wait returns each completion as it comes. Four simcalls per step, as both the
// other programs make.
Outcome run_plain_waitany(const Scenario& sc, int ranks, std::uint64_t chunk) {
  return run_plain(sc, ranks, "plain-waitany", [&](const std::vector<sim::RankEndpoints>&) {
    struct Rank {
      sg4::Mailbox* box = nullptr;
      sg4::CommPtr ahead;  // the receive posted ahead
      sg4::ExecPtr wake;
      int arrived = 0;  // transfers arrived and not yet counted by a step
    };
    auto rs = std::make_shared<std::vector<Rank>>(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) (*rs)[static_cast<std::size_t>(r)].box = sg4::Mailbox::by_name(fmt::format("ring-{}", r));
    const int steps = 2 * (ranks - 1);
    return [rs, ranks, chunk, steps](int r, int step) {
      static int token = 0;
      static void* sink = nullptr;
      Rank& me = (*rs)[static_cast<std::size_t>(r)];
      if (!me.wake) {
        me.wake = sg4::this_actor::exec_init(0);
        me.wake->start();
        me.wake->suspend();
      }
      if (!me.ahead) me.ahead = me.box->get_async(&sink);
      sg4::CommPtr s = (*rs)[static_cast<std::size_t>((r + 1) % ranks)].box->put_async(&token, chunk);
      std::vector<sg4::ActivityPtr> set;
      while (s || me.arrived == 0) {
        set.clear();
        if (s) set.push_back(s);
        if (me.ahead) set.push_back(me.ahead);
        set.push_back(me.wake);
        const auto i = static_cast<std::size_t>(sg4::Activity::wait_any(set));
        if (set[i] == s) {
          s = nullptr;
        } else if (set[i] == me.ahead) {
          ++me.arrived;
          // The next step's receive, unless this rank has received its last transfer.
          me.ahead = step + me.arrived < steps ? me.box->get_async(&sink) : nullptr;
        }
      }
      --me.arrived;
      if (step + 1 == steps) {
        me.wake->cancel();
        me.wake = nullptr;
      }
    };
  });
}

// Host-to-host transfers, as rdmalab's backend makes them; incoming[r][step % 2] is the transfer
// rank r-1 started to r at that step, and arrived[r] counts them.
Outcome run_plain_sendto(const Scenario& sc, int ranks, std::uint64_t chunk) {
  return run_plain(sc, ranks, "plain-sendto", [&](const std::vector<sim::RankEndpoints>& hosts) {
    struct Shared {
      std::vector<std::array<sg4::CommPtr, 2>> incoming;
      std::vector<sg4::SemaphorePtr> arrived;
    };
    auto sh = std::make_shared<Shared>();
    sh->incoming.resize(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) sh->arrived.push_back(sg4::Semaphore::create(0));
    return [sh, &hosts, ranks, chunk](int r, int step) {
      const auto next = static_cast<std::size_t>((r + 1) % ranks);
      const auto me = static_cast<std::size_t>(r);
      const auto slot = static_cast<std::size_t>(step % 2);
      sg4::CommPtr s = sg4::Comm::sendto_async(hosts[me].gpu, hosts[next].gpu, chunk);
      sh->incoming[next][slot] = s;
      sh->arrived[next]->release();
      sh->arrived[me]->acquire();
      sg4::CommPtr in = sh->incoming[me][slot];
      s->wait();
      in->wait();
    };
  });
}

struct Measured {
  Outcome o;
  double wall_s = 0;
  double peak_mib = 0;
};

// Runs `f` in a child process (one SimGrid engine per process), returns its outcome, wall time
// and peak resident memory.
template <typename F>
Measured in_child(F f) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  auto t0 = std::chrono::steady_clock::now();
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Outcome o = f();
    if (write(fds[1], &o, sizeof o) != static_cast<ssize_t>(sizeof o)) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  Measured m;
  if (read(fds[0], &m.o, sizeof m.o) != static_cast<ssize_t>(sizeof m.o)) m.o = {};
  close(fds[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.peak_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  return m;
}

}  // namespace

int main(int argc_in, char** argv_in) {
  std::vector<char*> pos;
  bool progress = false, quiet = false;
  for (int i = 0; i < argc_in; ++i) {
    if (std::strcmp(argv_in[i], "--progress") == 0) {
      progress = true;
    } else if (std::strcmp(argv_in[i], "--quiet") == 0) {
      quiet = true;
    } else if (std::strcmp(argv_in[i], "--rounds") == 0) {
      if (i + 1 >= argc_in || !whole_number(argv_in[i + 1], g_rounds) || g_rounds < 1) {
        fmt::print(stderr, "simgrid_ring_bench: --rounds takes a whole number of at least 1, got '{}'\n", i + 1 < argc_in ? argv_in[i + 1] : "");
        return 2;
      }
      ++i;
    } else
      pos.push_back(argv_in[i]);
  }
  if (progress && quiet) {
    fmt::print(stderr, "simgrid_ring_bench: --progress and --quiet contradict each other: give one\n");
    return 2;
  }
  g_progress = progress || (!quiet && isatty(STDERR_FILENO) != 0);
  const int argc = static_cast<int>(pos.size());
  char** argv = pos.data();
  int ranks = 1024;
  if (argc > 1 && !whole_number(argv[1], ranks)) {
    fmt::print(stderr, "simgrid_ring_bench: RANKS must be a whole number, got '{}'\n", argv[1]);
    return 2;
  }
  std::uint64_t bytes = 1ull << 30;
  if (argc > 2) {
    auto b = units::parse_size(argv[2]);
    if (!b) {
      fmt::print(stderr, "simgrid_ring_bench: {}\n", b.status().message());
      return 2;
    }
    bytes = *b;
  }
  if (ranks < 2) {
    fmt::print(stderr, "simgrid_ring_bench: RANKS must be at least 2\n");
    return 2;
  }
  const std::uint64_t chunk = bytes / static_cast<std::uint64_t>(ranks);
  auto sc = parse_scenario(fabric_yaml(ranks), "ring.yaml", {}, full_schema(all_backends()));
  if (!sc) {
    fmt::print(stderr, "simgrid_ring_bench: {}\n", sc.status().message());
    return 2;
  }
  auto row = [](const char* name, const Measured& m) {
    fmt::print("  {:<12} simulated {:>10.6f} s   wall {:>8.2f} s (exchange {:>8.2f} s)   {:>10.0f} transfers/s   peak RSS {:>8.1f} MiB\n", name,
               m.o.simulated_s, m.wall_s, m.o.exchange_wall_s, m.wall_s > 0 ? static_cast<double>(m.o.transfers) / m.wall_s : 0.0, m.peak_mib);
  };
  // The programs, in the order each round runs them: the key that names one on the command line,
  // the name it is printed with, and how it runs.
  struct Side {
    const char* key;
    const char* name;
    std::function<Outcome()> run;
    std::vector<Measured> got;
  };
  std::vector<Side> programs = {
      {"plain", "s4u put/get", [&] { return run_plain_s4u(*sc, ranks, chunk); }, {}},
      {"sendto", "s4u sendto", [&] { return run_plain_sendto(*sc, ranks, chunk); }, {}},
      {"waitany", "s4u wait_any", [&] { return run_plain_waitany(*sc, ranks, chunk); }, {}},
      {"rdmalab", "rdmalab", [&] { return run_rdmalab(*sc, ranks, chunk); }, {}},
  };
  // Which of them run: all, pair (plain,rdmalab), or a comma-separated list of keys.
  std::string which = argc > 3 ? argv[3] : "all";
  if (which == "pair") which = "plain,rdmalab";
  std::vector<std::string> chosen;
  for (std::size_t at = 0; which != "all" && at <= which.size();) {
    const std::size_t comma = std::min(which.find(',', at), which.size());
    chosen.push_back(which.substr(at, comma - at));
    at = comma + 1;
  }
  std::vector<Side> sides;
  std::string keys;
  for (const auto& p : programs) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", p.key);
  for (const auto& key : chosen)
    if (std::none_of(programs.begin(), programs.end(), [&](const Side& p) { return key == p.key; })) {
      fmt::print(stderr, "simgrid_ring_bench: the third argument is all, pair, or a comma-separated list of {}; '{}' is none of them\n", keys, key);
      return 2;
    }
  for (auto& p : programs)
    if (chosen.empty() || std::find(chosen.begin(), chosen.end(), p.key) != chosen.end()) sides.push_back(std::move(p));

  fmt::print("ring exchange of {} over {} ranks: {} steps of {} chunks, {} transfers, two-level fat tree 400Gbps 1us\n",
             units::format_size(bytes), ranks, 2 * (ranks - 1), units::format_size(chunk),
             2ull * static_cast<std::uint64_t>(ranks - 1) * static_cast<std::uint64_t>(ranks));
  bool ok = true;
  for (int round = 0; round < g_rounds; ++round) {
    // The order flips every round (ABBA): a drift in the machine's speed weighs on every program alike.
    std::vector<Side*> order;
    for (auto& side : sides) order.push_back(&side);
    if (round % 2 == 1) std::reverse(order.begin(), order.end());
    std::string line;
    for (Side* side : order) {
      side->got.push_back(in_child(side->run));
      if (g_rounds == 1) row(side->name, side->got.back());
      line += fmt::format("   {} {:.3f} s", side->name, side->got.back().o.exchange_wall_s);
      ok = ok && side->got.back().o.transfers > 0;
    }
    if (g_rounds > 1) fmt::print("  round {:>3} (exchange):{}\n", round + 1, line);
  }
  // The ratios compare the same transfers on the same timeline: every program must reach the same
  // simulated time (the model is deterministic; a difference means one program's ranks moved on
  // other dependencies than the ring's, and its wall time would be measured on another workload).
  const double reference = sides.front().got.front().o.simulated_s;
  for (const auto& side : sides)
    for (const auto& m : side.got)
      if (ok && std::abs(m.o.simulated_s - reference) > 1e-12) {
        fmt::print(stderr, "simgrid_ring_bench: {} reached {:.9f} s of simulated time, {} {:.9f} s: not the same timeline\n", side.name,
                   m.o.simulated_s, sides.front().name, reference);
        ok = false;
      }
  // Minimum and median of the exchange's and the whole run's wall time, over the rounds.
  auto stat = [](const Side& side, auto field) {
    std::vector<double> v;
    for (const auto& m : side.got) v.push_back(field(m));
    std::sort(v.begin(), v.end());
    return std::pair<double, double>{v.front(), v[(v.size() - 1) / 2]};
  };
  auto exchange = [](const Measured& m) { return m.o.exchange_wall_s; };
  auto whole = [](const Measured& m) { return m.wall_s; };
  if (g_rounds > 1)
    for (const auto& side : sides) {
      auto [emin, emed] = stat(side, exchange);
      auto [wmin, wmed] = stat(side, whole);
      fmt::print("  {:<12} {} rounds: exchange min {:>8.3f} s  median {:>8.3f} s   whole run min {:>8.3f} s  median {:>8.3f} s   peak RSS {:>8.1f} MiB\n",
                 side.name, g_rounds, emin, emed, wmin, wmed, side.got.back().peak_mib);
    }
  auto find = [&](const char* key) -> const Side* {
    for (const auto& side : sides)
      if (std::strcmp(side.key, key) == 0) return &side;
    return nullptr;
  };
  const Side* put_get = find("plain");
  const Side* ours = find("rdmalab");
  // `side` against `ref`: wall time of the whole run and of the exchange, min and median.
  auto ratio = [&](const Side* side, const Side* ref, const char* label, const char* note) {
    if (!ref || !side || !ok) return;
    auto [omin, omed] = stat(*side, whole);
    auto [rmin, rmed] = stat(*ref, whole);
    auto [oemin, oemed] = stat(*side, exchange);
    auto [remin, remed] = stat(*ref, exchange);
    if (g_rounds == 1) {
      fmt::print("  {} wall time: {:.3f}x (exchange {:.3f}x){}\n", label, omin / rmin, oemin / remin, note);
      return;
    }
    // Paired: each round's own ratio (the two ran back to back), the steadiest figure on a noisy host.
    std::vector<double> paired;
    for (std::size_t i = 0; i < side->got.size(); ++i) paired.push_back(side->got[i].o.exchange_wall_s / ref->got[i].o.exchange_wall_s);
    std::sort(paired.begin(), paired.end());
    fmt::print("  {} wall time: min {:.3f}x median {:.3f}x (exchange: min {:.3f}x median {:.3f}x; paired median {:.3f}x, {:.3f}-{:.3f}x){}\n",
               label, omin / rmin, omed / rmed, oemin / remin, oemed / remed, paired[(paired.size() - 1) / 2], paired.front(), paired.back(), note);
  };
  ratio(ours, put_get, "rdmalab / s4u put/get", "   (rdmalab's overhead over plain s4u; target <= 1.25)");
  ratio(ours, find("sendto"), "rdmalab / s4u sendto ", "");
  ratio(find("waitany"), put_get, "s4u wait_any / put/get", "   (SimGrid's own cost of waiting as a CQ must: the floor under rdmalab)");
  ratio(ours, find("waitany"), "rdmalab / s4u wait_any", "   (rdmalab's own state and bookkeeping)");
  return ok ? 0 : 1;
}
