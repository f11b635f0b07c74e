#include "common/child_process.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace rdmalab {
namespace {

bool write_all(int fd, const void* p, std::size_t n) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = ::write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

void write_string(int fd, const std::string& s) {
  std::uint64_t n = s.size();
  write_all(fd, &n, sizeof n);
  write_all(fd, s.data(), s.size());
}

}  // namespace

Result<std::pair<pid_t, int>> fork_child(const std::function<ChildOutcome()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return Status(Errc::io, fmt::format("pipe: {}", std::strerror(errno)));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return Status(Errc::io, fmt::format("fork: {}", std::strerror(err)));
  }
  if (pid == 0) {
    // The child does not outlive its parent: killed with it whatever ends the parent (a signal,
    // a crash, a kill -9), so a stopped run leaves no simulation or rank running. (Linux: the
    // signal comes when the thread that forked ends, which waits for this child in
    // collect_child.) A parent already gone before this line: leave at once.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::close(fds[0]);
    ChildOutcome out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out.status = Status(Errc::internal, fmt::format("uncaught exception: {}", e.what()));
    }
    std::int32_t code = static_cast<std::int32_t>(out.status.code());
    write_all(fds[1], &code, sizeof code);
    write_string(fds[1], out.status.message());
    write_string(fds[1], out.state);
    ::close(fds[1]);
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(0);
  }
  ::close(fds[1]);
  return std::make_pair(pid, fds[0]);
}

ChildOutcome collect_child(pid_t pid, int fd, const std::string& who, const std::atomic<bool>* cancel) {
  std::string bytes;
  char buf[65536];
  bool cancelled = false;
  while (true) {
    if (cancel) {
      // Wake up every 100 ms to look at the flag.
      pollfd p{fd, POLLIN, 0};
      int pr = ::poll(&p, 1, 100);
      if (pr < 0 && errno == EINTR) continue;
      if (pr == 0) {
        if (cancel->load()) {
          ::kill(pid, SIGKILL);
          cancelled = true;
          break;
        }
        continue;
      }
    }
    ssize_t k = ::read(fd, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    bytes.append(buf, static_cast<std::size_t>(k));
  }
  ::close(fd);
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  std::size_t off = 0;
  auto take = [&](void* p, std::size_t n) {
    if (off + n > bytes.size()) return false;
    std::memcpy(p, bytes.data() + off, n);
    off += n;
    return true;
  };
  auto take_string = [&](std::string& s) {
    std::uint64_t n = 0;
    if (!take(&n, sizeof n) || off + n > bytes.size()) return false;
    s.assign(bytes.data() + off, n);
    off += n;
    return true;
  };
  ChildOutcome out;
  if (cancelled) {
    out.status = Status(Errc::cancelled, fmt::format("stopped by the user; {} was killed", who));
    return out;
  }
  std::int32_t code = 0;
  std::string msg;
  if (!take(&code, sizeof code) || !take_string(msg) || !take_string(out.state)) {
    out.status = Status(Errc::internal, WIFSIGNALED(ws) ? fmt::format("{} died of signal {} ({})", who, WTERMSIG(ws), strsignal(WTERMSIG(ws)))
                                                        : fmt::format("{} ended without a report (see its output above)", who));
    return out;
  }
  out.status = code == 0 ? Status::ok() : Status(static_cast<Errc>(code), msg);
  return out;
}

}  // namespace rdmalab
