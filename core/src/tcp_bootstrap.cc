#include "rdmalab/tcp_bootstrap.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "rendezvous_wire.h"

namespace rdmalab {
namespace {

using namespace rendezvous;
constexpr std::size_t kMaxPending = 64;  // connections waiting to say hello at once

using Clock = std::chrono::steady_clock;
Clock::time_point deadline_in(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}
int ms_left(Clock::time_point d) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(std::min<long long>(ms, 1 << 30));
}

Status io_all(int fd, void* buf, std::size_t n, Clock::time_point deadline, bool reading, const std::string& who) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    pollfd pfd{fd, static_cast<short>(reading ? POLLIN : POLLOUT), 0};
    int pr = ::poll(&pfd, 1, ms_left(deadline));
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) return Status(Errc::timeout, fmt::format("bootstrap: {} did not answer in time", who));
    ssize_t k = reading ? ::recv(fd, p, n, 0) : ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k == 0 && reading) return Status(Errc::bootstrap, fmt::format("bootstrap: {} closed the connection (did it die?)", who));
    if (k < 0) return Status(Errc::bootstrap, fmt::format("bootstrap: connection to {} failed: {}", who, std::strerror(errno)));
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return Status::ok();
}

Status send_msg(int fd, std::uint16_t type, std::span<const std::byte> body, Clock::time_point deadline, const std::string& who) {
  unsigned char h[kHeaderBytes];
  encode_header(h, type, static_cast<std::uint32_t>(body.size()));
  RDMALAB_TRY(io_all(fd, h, sizeof h, deadline, false, who));
  if (!body.empty()) RDMALAB_TRY(io_all(fd, const_cast<std::byte*>(body.data()), body.size(), deadline, false, who));
  return Status::ok();
}

// Reads one message; the header is checked before the body is read.
Result<std::pair<std::uint16_t, std::vector<std::byte>>> recv_msg(int fd, Clock::time_point deadline, const std::string& who) {
  unsigned char h[kHeaderBytes];
  RDMALAB_TRY(io_all(fd, h, sizeof h, deadline, true, who));
  const Header hd = decode_header(h);
  RDMALAB_TRY(check_header(hd, who));
  const std::uint32_t l = hd.len;
  std::vector<std::byte> body(l);
  if (l) RDMALAB_TRY(io_all(fd, body.data(), l, deadline, true, who));
  return std::make_pair(hd.type, std::move(body));
}

// A peer's text (an abort's reason), bounded and without raw control characters.
std::string text_of(const std::vector<std::byte>& b) {
  return printable(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

Result<addrinfo*> resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) return Status(Errc::invalid_argument, fmt::format("bootstrap: cannot resolve '{}': {}", host, gai_strerror(rc)));
  return res;
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

Result<std::pair<std::string, int>> parse_host_port(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    return Status(Errc::invalid_argument, fmt::format("'{}' is not HOST:PORT (e.g. 10.0.0.1:18515)", text));
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = 0;
  try {
    std::size_t pos = 0;
    port = std::stoi(text.substr(colon + 1), &pos);
    if (pos != text.size() - colon - 1) port = -1;
  } catch (...) {
    port = -1;
  }
  if (port < 1 || port > 65535) return Status(Errc::invalid_argument, fmt::format("'{}': the port must be 1..65535", text));
  return std::make_pair(host, port);
}

TcpBootstrap::~TcpBootstrap() {
  // A rank that ends normally says so, so that peers still finishing do not take the closed
  // connection for a death.
  for (int fd : peers_)
    if (fd >= 0 && !failed_) (void)send_msg(fd, kBye, {}, deadline_in(0.5), "a peer");
  for (int fd : peers_)
    if (fd >= 0) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

Result<std::unique_ptr<TcpBootstrap>> TcpBootstrap::listen(const TcpBootstrapOptions& opt) {
  if (opt.size < 1 || opt.rank < 0 || opt.rank >= opt.size)
    return Status(Errc::invalid_argument, fmt::format("bootstrap: rank {} is not in 0..{}", opt.rank, opt.size - 1));
  if (opt.token.size() > kMaxToken)
    return Status(Errc::invalid_argument, fmt::format("bootstrap: the run token has {} bytes; at most {}", opt.token.size(), kMaxToken));
  std::unique_ptr<TcpBootstrap> b(new TcpBootstrap(opt));
  b->port_ = opt.port;
  if (opt.rank != 0) return b;
  RDMALAB_ASSIGN(addrinfo * res, resolve(opt.host, opt.port, true));
  Status last(Errc::io, "bootstrap: no address to listen on");
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
      b->port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
      b->listen_fd_ = fd;
      break;
    }
    last = Status(Errc::io, fmt::format("bootstrap: cannot listen on {}:{}: {}", opt.host, opt.port, std::strerror(errno)));
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (b->listen_fd_ < 0) return last;
  return b;
}

Status TcpBootstrap::connect() {
  const auto deadline = deadline_in(opt_.connect_timeout_s);
  if (opt_.rank == 0) {
    peers_.assign(static_cast<std::size_t>(opt_.size), -1);
    // Connections are served side by side: each has a few seconds to send its hello, read
    // without blocking, so idle or slow strangers cannot hold up the ranks that join.
    struct Pending {
      int fd;
      std::string who;
      std::vector<unsigned char> buf;
      Clock::time_point until;
    };
    std::vector<Pending> pending;
    auto drop = [&](std::size_t i, const std::string& why, bool tell) {
      if (tell) {
        const std::string t = why;
        (void)send_msg(pending[i].fd, kAbort, std::as_bytes(std::span<const char>(t.data(), t.size())), deadline_in(1), pending[i].who);
      }
      std::fprintf(stderr, "rdmalab bootstrap: dropped %s: %s\n", pending[i].who.c_str(), why.c_str());
      ::close(pending[i].fd);
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    };
    auto close_pending = [&] {
      for (auto& pc : pending) ::close(pc.fd);
      pending.clear();
    };
    int joined = 1;
    while (joined < opt_.size) {
      if (Clock::now() >= deadline) {
        close_pending();
        std::string missing;
        for (int r = 1; r < opt_.size; ++r)
          if (peers_[static_cast<std::size_t>(r)] < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        abort(fmt::format("ranks {} did not join within {}s", missing, opt_.connect_timeout_s));
        return Status(Errc::timeout, fmt::format("bootstrap: ranks {} did not join {}:{} within {}s", missing, opt_.host, port_, opt_.connect_timeout_s));
      }
      std::vector<pollfd> pfds{{listen_fd_, POLLIN, 0}};
      Clock::time_point wake = deadline;
      for (const auto& pc : pending) {
        pfds.push_back({pc.fd, POLLIN, 0});
        wake = std::min(wake, pc.until);
      }
      int pr = ::poll(pfds.data(), pfds.size(), ms_left(wake));
      if (pr < 0 && errno != EINTR) {
        close_pending();
        return Status(Errc::io, fmt::format("bootstrap: poll failed: {}", std::strerror(errno)));
      }
      // Strangers whose time is up.
      for (std::size_t i = pending.size(); i-- > 0;)
        if (Clock::now() >= pending[i].until) drop(i, "no hello within 5s", false);
      if (pr <= 0) continue;
      // Hellos arriving (pfds[k + 1] is pending[k] as it was before the drops above: match by fd).
      for (std::size_t k = 1; k < pfds.size(); ++k) {
        if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        std::size_t i = 0;
        while (i < pending.size() && pending[i].fd != pfds[k].fd) ++i;
        if (i == pending.size()) continue;
        Pending& pc = pending[i];
        unsigned char chunk[512];
        const ssize_t got = ::recv(pc.fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (got <= 0) {
          drop(i, got == 0 ? "closed before its hello" : std::strerror(errno), false);
          continue;
        }
        pc.buf.insert(pc.buf.end(), chunk, chunk + got);
        std::vector<bool> in_run(peers_.size());
        for (std::size_t r = 0; r < peers_.size(); ++r) in_run[r] = peers_[r] >= 0;
        const HelloVerdict hv = check_hello(pc.buf, opt_.token, opt_.size, in_run);
        if (hv.kind == HelloVerdict::need_more) continue;
        if (hv.kind == HelloVerdict::drop) {
          drop(i, hv.why, hv.tell);
          if (!hv.fatal) continue;
          close_pending();
          abort(hv.why);
          return Status(Errc::bootstrap, "bootstrap: " + hv.why);
        }
        const std::uint32_t r = hv.rank;
        peers_[r] = pc.fd;
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        ++joined;
      }
      if (pfds[0].revents & POLLIN) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
        if (fd < 0) continue;
        if (pending.size() >= kMaxPending) {  // a flood: the oldest stranger makes room
          drop(0, "too many connections waiting to say hello", false);
        }
        set_nodelay(fd);
        char who_buf[INET6_ADDRSTRLEN] = "?";
        if (ss.ss_family == AF_INET) ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, who_buf, sizeof who_buf);
        if (ss.ss_family == AF_INET6) ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, who_buf, sizeof who_buf);
        pending.push_back({fd, fmt::format("a connection from {}", who_buf), {}, std::min(deadline, deadline_in(5))});
      }
    }
    close_pending();
    for (int r = 1; r < opt_.size; ++r)
      RDMALAB_TRY(send_msg(peers_[static_cast<std::size_t>(r)], kWelcome, {}, deadline, fmt::format("rank {}", r)));
    return Status::ok();
  }
  // Other ranks: keep trying until rank 0 listens.
  Status last(Errc::timeout, "bootstrap: no attempt made");
  while (true) {
    RDMALAB_ASSIGN(addrinfo * res, resolve(opt_.host, opt_.port, false));
    int fd = -1;
    for (addrinfo* ai = res; ai && fd < 0; ai = ai->ai_next) {
      int s = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (s < 0) continue;
      if (::connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
        fd = s;
      } else {
        last = Status(Errc::bootstrap, fmt::format("bootstrap: cannot reach rank 0 at {}:{}: {}", opt_.host, opt_.port, std::strerror(errno)));
        ::close(s);
      }
    }
    ::freeaddrinfo(res);
    if (fd >= 0) {
      set_nodelay(fd);
      peers_.assign(1, fd);
      break;
    }
    if (Clock::now() > deadline) return Status(Errc::timeout, last.message() + fmt::format(" (gave up after {}s)", opt_.connect_timeout_s));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto body = hello_body(opt_.rank, opt_.size, opt_.token);
  RDMALAB_TRY(send_msg(peers_[0], kHello, body, deadline, "rank 0"));
  RDMALAB_ASSIGN(auto reply, recv_msg(peers_[0], deadline, "rank 0"));
  if (reply.first == kAbort) return Status(Errc::bootstrap, "bootstrap: rank 0 refused this rank: " + text_of(reply.second));
  if (reply.first != kWelcome) return Status(Errc::bootstrap, "bootstrap: rank 0 answered the hello with an unexpected message");
  return Status::ok();
}

Status TcpBootstrap::barrier() { return allgather({}).status(); }

Result<std::vector<std::byte>> TcpBootstrap::allgather(std::span<const std::byte> mine) {
  if (failed_) return Status(Errc::bootstrap, failure_);
  const auto deadline = deadline_in(opt_.step_timeout_s);
  auto fail = [&](Status st) {
    failed_ = true;
    failure_ = st.message();
    abort(st.message());
    return st;
  };
  if (opt_.size == 1) return std::vector<std::byte>(mine.begin(), mine.end());
  if (opt_.rank != 0) {
    if (peers_.empty() || peers_[0] < 0) return fail(Status(Errc::bootstrap, "rank 0 has ended"));
    Status st = send_msg(peers_[0], kData, mine, deadline, "rank 0");
    if (!st) return fail(st);
    auto reply = recv_msg(peers_[0], deadline, "rank 0");
    if (!reply) return fail(reply.status());
    if (reply->first == kBye) return fail(Status(Errc::bootstrap, "rank 0 ended without joining this collective"));
    if (reply->first == kAbort) {
      failed_ = true;
      failure_ = text_of(reply->second);
      return Status(Errc::bootstrap, failure_);
    }
    if (reply->first != kData || reply->second.size() != mine.size() * static_cast<std::size_t>(opt_.size))
      return fail(Status(Errc::bootstrap, "bootstrap: rank 0 sent a malformed allgather result"));
    return std::move(reply->second);
  }
  std::vector<std::byte> all(mine.size() * static_cast<std::size_t>(opt_.size));
  if (!mine.empty()) std::memcpy(all.data(), mine.data(), mine.size());  // a barrier gathers nothing
  for (int r = 1; r < opt_.size; ++r) {
    if (peers_[static_cast<std::size_t>(r)] < 0) return fail(Status(Errc::bootstrap, fmt::format("rank {} has ended", r)));
    auto m = recv_msg(peers_[static_cast<std::size_t>(r)], deadline, fmt::format("rank {}", r));
    if (!m) return fail(Status(Errc::bootstrap, fmt::format("rank {} is gone: {}", r, m.status().message())));
    if (m->first == kAbort) return fail(Status(Errc::bootstrap, fmt::format("rank {} stopped: {}", r, text_of(m->second))));
    if (m->first == kBye) return fail(Status(Errc::bootstrap, fmt::format("rank {} ended without joining this collective", r)));
    if (m->first != kData) return fail(Status(Errc::bootstrap, fmt::format("rank {} sent an unexpected message", r)));
    if (m->second.size() != mine.size())
      return fail(Status(Errc::invalid_argument, fmt::format("allgather: rank {} contributed {} bytes, rank 0 {}", r, m->second.size(), mine.size())));
    if (!mine.empty()) std::memcpy(all.data() + mine.size() * static_cast<std::size_t>(r), m->second.data(), mine.size());
  }
  for (int r = 1; r < opt_.size; ++r) {
    Status st = send_msg(peers_[static_cast<std::size_t>(r)], kData, all, deadline, fmt::format("rank {}", r));
    if (!st) return fail(st);
  }
  return all;
}

Status TcpBootstrap::health() {
  if (failed_) return Status(Errc::bootstrap, failure_);
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    int fd = peers_[i];
    if (fd < 0) continue;
    const std::string who = opt_.rank == 0 ? fmt::format("rank {}", i) : std::string("rank 0");
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 0) <= 0) continue;
    unsigned char h[kHeaderBytes];
    ssize_t k = ::recv(fd, h, sizeof h, MSG_PEEK | MSG_DONTWAIT);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
      failed_ = true;
      failure_ = fmt::format("{} is gone (its connection closed: did it die?)", who);
      abort(failure_);
      return Status(Errc::bootstrap, failure_);
    }
    if (k < static_cast<ssize_t>(sizeof h)) continue;
    const std::uint16_t t = decode_header(h).type;
    if (t == kBye) {  // that peer finished normally: stop watching it
      (void)recv_msg(fd, deadline_in(1), who);
      ::close(fd);
      peers_[i] = -1;
      continue;
    }
    if (t != kAbort) continue;  // a peer early in the next allgather: leave it for allgather
    auto m = recv_msg(fd, deadline_in(1), who);
    failed_ = true;
    failure_ = m ? text_of(m->second) : m.status().message();
    if (opt_.rank == 0) abort(failure_);
    return Status(Errc::bootstrap, failure_);
  }
  return Status::ok();
}

void TcpBootstrap::abort(const std::string& reason) {
  std::string text = fmt::format("rank {} stopped: {}", opt_.rank, reason);
  auto body = std::as_bytes(std::span<const char>(text.data(), text.size()));
  for (std::size_t i = 0; i < peers_.size(); ++i)
    if (peers_[i] >= 0) (void)send_msg(peers_[i], kAbort, body, deadline_in(0.5), "a peer");
}

}  // namespace rdmalab
