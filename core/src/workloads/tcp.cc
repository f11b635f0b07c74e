// The kernel's TCP between the same pairs of ranks as the perftest set (tcp_bw, tcp_lat): the
// baseline that makes "RDMA frees the CPU" a measurement (docs/workloads.md, "Kernel TCP
// baseline"). sockperf's throughput and ping-pong tests are the model: one TCP connection per
// pair with TCP_NODELAY, messages of `size` bytes, and here every received message checked
// against the sender's pattern, with the same result columns (CPU seconds per GB included) as the
// RDMA workloads. The ranks must run on real CPUs: the model has no kernel to measure.
#include "rdmalab/workloads/tcp.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "rdmalab/bootstrap.h"
#include "rdmalab/memory.h"
#include "rdmalab/progress.h"
#include "rdmalab/units.h"
#include "rdmalab/workloads/common.h"

namespace rdmalab::workloads {
namespace {

// What a server publishes for its client: its port, its host's name and IPv4 addresses.
struct Endpoint {
  std::uint16_t port = 0;
  char host[64] = {};
  std::uint32_t addrs[4] = {};  // network order; 0: none
};

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

Status sys_error(const std::string& what) { return Status(Errc::io, fmt::format("{}: {}", what, std::strerror(errno))); }

// Waits until fd is ready for `events`, up to `timeout_s`.
Status wait_fd(int fd, short events, double timeout_s, const char* what) {
  pollfd p{fd, events, 0};
  const int r = ::poll(&p, 1, static_cast<int>(std::ceil(timeout_s * 1000)));
  if (r < 0) return sys_error(what);
  if (r == 0) return Status(Errc::timeout, fmt::format("{}: nothing within {} s (workload.timeout)", what, timeout_s));
  return Status::ok();
}

Status send_all(int fd, const std::uint8_t* p, std::size_t n, double timeout_s) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= static_cast<std::size_t>(k);
    } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      RDMALAB_TRY(wait_fd(fd, POLLOUT, timeout_s, "sending on the TCP connection"));
    } else if (k < 0 && errno != EINTR) {
      return sys_error("sending on the TCP connection");
    }
  }
  return Status::ok();
}

Status recv_all(int fd, std::uint8_t* p, std::size_t n, double timeout_s) {
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= static_cast<std::size_t>(k);
    } else if (k == 0) {
      return Status(Errc::io, "the peer closed the TCP connection");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      RDMALAB_TRY(wait_fd(fd, POLLIN, timeout_s, "receiving on the TCP connection"));
    } else if (errno != EINTR) {
      return sys_error("receiving on the TCP connection");
    }
  }
  return Status::ok();
}

void no_delay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as sockperf: every message leaves at once
}

Result<Fd> listen_any(std::uint16_t& port) {
  Fd l(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (l.get() < 0) return sys_error("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  if (::bind(l.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return sys_error("bind");
  if (::listen(l.get(), 1) != 0) return sys_error("listen");
  if (::getsockname(l.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) return sys_error("getsockname");
  port = ntohs(a.sin_port);
  return l;
}

Endpoint local_endpoint(std::uint16_t port) {
  Endpoint e;
  e.port = port;
  ::gethostname(e.host, sizeof e.host - 1);
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    int n = 0;
    for (ifaddrs* i = list; i && n < 4; i = i->ifa_next)
      if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !(i->ifa_flags & 0x8 /* IFF_LOOPBACK */)) {
        e.addrs[n++] = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
      }
    ::freeifaddrs(list);
  }
  return e;
}

// The client's connection: to 127.0.0.1 when the server is on this host, else to the server's
// addresses in turn. `where` says which one answered.
Result<Fd> connect_to(const Endpoint& e, double timeout_s, std::string& where) {
  char host[64] = {};
  ::gethostname(host, sizeof host - 1);
  std::vector<std::uint32_t> tries;
  if (std::strncmp(host, e.host, sizeof host) == 0) tries.push_back(htonl(INADDR_LOOPBACK));
  for (auto a : e.addrs)
    if (a) tries.push_back(a);
  std::string tried;
  for (std::uint32_t addr : tries) {
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (s.get() < 0) return sys_error("socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(e.port);
    a.sin_addr.s_addr = addr;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    tried += (tried.empty() ? "" : ", ") + std::string(text);
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) continue;
    if (!wait_fd(s.get(), POLLOUT, std::min(timeout_s, 5.0), "connecting")) continue;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) continue;
    no_delay(s.get());
    where = fmt::format("{}:{}", text, e.port);
    return s;
  }
  return Status(Errc::io, fmt::format("could not connect to the server's TCP port {} on {} (tried {})", e.port, e.host, tried.empty() ? "no address" : tried));
}

Result<Fd> accept_one(const Fd& l, double timeout_s) {
  RDMALAB_TRY(wait_fd(l.get(), POLLIN, timeout_s, "waiting for the client's TCP connection"));
  Fd s(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (s.get() < 0) return sys_error("accept");
  no_delay(s.get());
  return s;
}

struct Params {
  std::vector<std::uint64_t> sizes;
  std::uint64_t iterations = 0, warmup = 0;
  bool verify = true;
  double timeout = 30;
  std::uint64_t seed = 1;
};

Params read_tcp_params(const Scenario& sc) {
  Params p;
  p.sizes = sc.is_set("workload.sizes") ? sc.get_sizes("workload.sizes") : std::vector<std::uint64_t>{sc.get_size("workload.size")};
  p.iterations = static_cast<std::uint64_t>(sc.get_int("workload.iterations"));
  p.warmup = static_cast<std::uint64_t>(sc.get_int("workload.warmup"));
  p.verify = sc.get_bool("workload.verify");
  p.timeout = sc.get_time("workload.timeout");
  p.seed = static_cast<std::uint64_t>(sc.get_int("seed"));
  return p;
}

// A sender's messages: `slots` buffers of the largest size, slot k filled with the pattern of
// (sender, k); message m carries slot m % slots (at most 16 MiB of them, as the RDMA tests').
struct Slots {
  std::uint64_t count = 1, size = 0;
  std::vector<std::uint8_t> bytes;
  Slots(std::uint64_t seed, int sender, std::uint64_t max_size) : size(std::max<std::uint64_t>(max_size, 1)) {
    count = std::clamp<std::uint64_t>((16u << 20) / size, 1, 64);
    bytes.resize(count * size);
    for (std::uint64_t k = 0; k < count; ++k) {
      const std::uint64_t s = stream_seed(seed, sender, static_cast<int>(k));
      for (std::uint64_t i = 0; i < size; ++i) bytes[k * size + i] = pattern_byte(s, i);
    }
  }
  const std::uint8_t* slot(std::uint64_t m) const { return bytes.data() + (m % count) * size; }
};

std::uint64_t wrong_bytes(const std::uint8_t* got, const std::uint8_t* want, std::uint64_t n) {
  if (std::memcmp(got, want, n) == 0) return 0;
  std::uint64_t w = 0;
  for (std::uint64_t i = 0; i < n; ++i) w += got[i] != want[i];
  return w;
}

struct Report {
  double elapsed = 0;
  std::uint64_t bytes = 0, errors = 0;
  bool initiator = false;
  CpuSpan cpu;
};

// The transport as the rows name it: kernel TCP, or through libvma where it is preloaded.
std::string socket_library() {
  const char* pre = std::getenv("LD_PRELOAD");
  if (pre && std::strstr(pre, "libvma")) return fmt::format("libvma (LD_PRELOAD={})", pre);
  return "kernel TCP";
}

Status run_tcp(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows, bool latency, const char* name) {
  const Params p = read_tcp_params(sc);
  const int half = env.size / 2;
  const bool client = env.rank < half;
  const int peer = client ? env.rank + half : env.rank - half;
  // The connection: each server listens and publishes its endpoint; each client connects to its own.
  Fd listener, conn;
  Endpoint mine;
  if (!client) {
    std::uint16_t port = 0;
    RDMALAB_ASSIGN(listener, listen_any(port));
    mine = local_endpoint(port);
  }
  RDMALAB_ASSIGN(auto all, allgather_value(env.boot, mine));
  std::string where;
  if (client) {
    RDMALAB_ASSIGN(conn, connect_to(all[static_cast<std::size_t>(peer)], p.timeout, where));
  } else {
    RDMALAB_ASSIGN(conn, accept_one(listener, p.timeout));
    listener.reset();
  }
  const std::uint64_t max_size = *std::max_element(p.sizes.begin(), p.sizes.end());
  // The client's messages; the server checks against the same slots (it knows the client's
  // pattern) and, in tcp_lat, echoes what it received, which the client checks in turn.
  const Slots slots(p.seed, client ? env.rank : peer, max_size);
  std::vector<std::uint8_t> rx(static_cast<std::size_t>(std::max<std::uint64_t>(max_size, 1)));
  const int fd = conn.get();
  if (env.rank == 0 && !latency) {
    work_meter().reset();
    for (std::uint64_t size : p.sizes) work_meter().plan((p.warmup + p.iterations) * size);
  }

  for (std::uint64_t size : p.sizes) {
    Report rep;
    rep.initiator = client;
    std::vector<double> samples;
    for (int phase = 0; phase < 2; ++phase) {
      const bool timed = phase == 1;
      const std::uint64_t count = timed ? p.iterations : p.warmup;
      if (count == 0) continue;
      RDMALAB_TRY(env.boot.barrier());
      const double t0 = env.rt.now();
      if (timed) rep.cpu.start(env.rt);
      for (std::uint64_t m = 0; m < count; ++m) {
        const std::uint8_t* msg = slots.slot(m);
        if (latency) {
          if (client) {
            const double t = env.rt.now();
            RDMALAB_TRY(send_all(fd, msg, size, p.timeout));
            RDMALAB_TRY(recv_all(fd, rx.data(), size, p.timeout));
            if (timed) samples.push_back((env.rt.now() - t) * 1e6 / 2);  // half the round trip, as sockperf
            if (p.verify && timed) rep.errors += wrong_bytes(rx.data(), msg, size);
          } else {
            RDMALAB_TRY(recv_all(fd, rx.data(), size, p.timeout));
            if (p.verify && timed) rep.errors += wrong_bytes(rx.data(), msg, size);
            RDMALAB_TRY(send_all(fd, rx.data(), size, p.timeout));
          }
        } else if (client) {
          RDMALAB_TRY(send_all(fd, msg, size, p.timeout));
          if (env.rank == 0) work_meter().sent(size);
        } else {
          RDMALAB_TRY(recv_all(fd, rx.data(), size, p.timeout));
          if (p.verify) rep.errors += timed ? wrong_bytes(rx.data(), msg, size) : 0;
          if (timed) rep.bytes += size;
        }
      }
      // The receiver's clock: its last byte is when the data has arrived (a sender's send()
      // returns once the kernel holds the bytes).
      if (timed) rep.elapsed = env.rt.now() - t0;
      RDMALAB_TRY(env.boot.barrier());
      if (timed) rep.cpu.stop(env.rt);
    }
    RDMALAB_ASSIGN(auto reports, allgather_value(env.boot, rep));
    if (env.rank != 0) continue;
    ResultRow row;
    row.workload = name;
    row.bytes = size;
    row.ranks = env.size;
    row.iterations = p.iterations;
    for (const auto& r : reports) row.errors += r.errors;
    if (latency) {
      LatencyStats st = latency_stats(samples);
      row.lat = st;
      row.time_s = st.avg_us * 1e-6;
      row.msg_rate_mpps = st.avg_us > 0 ? 1.0 / st.avg_us : 0;
    } else {
      double bytes_per_s = 0;
      for (const auto& r : reports)
        if (!r.initiator && r.elapsed > 0) bytes_per_s += static_cast<double>(r.bytes) / r.elapsed;
      row.bw_gbps = bytes_per_s * 8 / 1e9;
      row.bw_peak_gbps = row.bw_gbps;  // a byte stream has no completions per message to take windows between
      row.msg_rate_mpps = size ? bytes_per_s / static_cast<double>(size) / 1e6 : 0;
      row.time_s = row.msg_rate_mpps > 0 ? 1e-6 / row.msg_rate_mpps : 0;
      row.extra["pairs"] = half;
      add_cpu_per_gb(row, reports);  // the client (sender) is the initiator
    }
    row.notes["verify"] = p.verify ? "on" : "off";
    row.notes["data_path"] = fmt::format("{} to {}, TCP_NODELAY, host memory", socket_library(), where);
    rows.push_back(std::move(row));
  }
  return Status::ok();
}

Status check_tcp(const Scenario& sc, const Capabilities& caps, int ranks, const char* name) {
  if (caps.models_time)
    return sc.error("workload.type", fmt::format("{} measures the kernel's TCP between processes on real CPUs; this backend models time and has "
                                                 "no kernel to measure: run it on loopback or verbs", name));
  if (ranks < 2 || ranks % 2 != 0)
    return sc.error("fabric.nodes", fmt::format("{} runs between pairs of ranks: needs an even number of ranks, 2 or more (is {})", name, ranks));
  if (sc.is_set("workload.size") && sc.is_set("workload.sizes"))
    return sc.error("workload.sizes", "give either workload.size or workload.sizes, not both");
  auto sizes = sc.is_set("workload.sizes") ? sc.get_sizes("workload.sizes") : std::vector<std::uint64_t>{sc.get_size("workload.size")};
  for (auto s : sizes)
    if (s == 0 || s > (1u << 30))
      return sc.error(sc.is_set("workload.sizes") ? "workload.sizes" : "workload.size",
                      fmt::format("{}: a message of 1 B to 1 GiB", units::format_size(s)));
  return Status::ok();
}

void add(WorkloadRegistry& reg, const char* name, const char* desc, bool latency) {
  WorkloadInfo w;
  w.name = name;
  w.description = desc;
  w.kind = latency ? WorkloadKind::latency : WorkloadKind::bandwidth;
  w.check = [name](const Scenario& sc, const Capabilities& caps, int ranks) { return check_tcp(sc, caps, ranks, name); };
  w.reads = {"workload.size", "workload.sizes", "workload.iterations", "workload.warmup", "workload.verify", "workload.timeout"};
  w.run = [latency, name](RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) { return run_tcp(env, sc, rows, latency, name); };
  reg.add(std::move(w));
}

}  // namespace

void register_tcp(WorkloadRegistry& reg) {
  add(reg, "tcp_bw", "kernel TCP bandwidth between the same pairs, the RDMA tests' baseline (sockperf throughput)", false);
  add(reg, "tcp_lat", "kernel TCP ping-pong latency, half round trip (sockperf ping-pong)", true);
}

}  // namespace rdmalab::workloads
