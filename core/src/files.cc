#include "rdmalab/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace rdmalab {

namespace {

Status fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Status(Errc::io, fmt::format("{}: cannot open to flush ({})", path, std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot flush a folder (EINVAL); the rename is then as durable as they allow.
  if (rc != 0 && err != EINVAL) return Status(Errc::io, fmt::format("{}: cannot flush to the disk ({})", path, std::strerror(err)));
  return Status::ok();
}

// 0 or the errno of the exclusive create.
int create_exclusive_errno(const std::string& tmp) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

}  // namespace

Status create_exclusive(const std::string& tmp) {
  const int err = create_exclusive_errno(tmp);
  if (err != 0)
    return Status(Errc::io, err == EEXIST ? fmt::format("{}: already exists (another run writing there, or a leftover); "
                                                          "remove it or choose another name", tmp)
                                          : fmt::format("{}: cannot create ({})", tmp, std::strerror(err)));
  return Status::ok();
}

Result<std::string> create_temp_next_to(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string tmp = fmt::format("{}.tmp-{}-{}", path, ::getpid(), counter.fetch_add(1));
    const int err = create_exclusive_errno(tmp);
    if (err == 0) return tmp;
    if (err != EEXIST) return Status(Errc::io, fmt::format("{}: cannot write ({} for {})", path, std::strerror(err), tmp));
  }
  return Status(Errc::io, fmt::format("{}: cannot find a free temporary name next to it", path));
}

Status commit_temp(const std::string& tmp, const std::string& path) {
  RDMALAB_TRY(fsync_path(tmp, O_RDONLY));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status(Errc::io, fmt::format("{}: cannot move the finished file into place ({})", path, std::strerror(errno)));
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return fsync_path(dir.empty() ? "." : dir.string(), O_RDONLY | O_DIRECTORY);
}

Status write_file_atomically(const std::string& path, const std::string& text) {
  RDMALAB_ASSIGN(std::string tmp, create_temp_next_to(path));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  Status st;
  if (fd < 0) {
    st = Status(Errc::io, fmt::format("{}: cannot write ({})", tmp, std::strerror(errno)));
  } else {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        st = Status(Errc::io, fmt::format("{}: write failed ({})", path, std::strerror(errno)));
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  if (st) st = commit_temp(tmp, path);
  if (!st) ::unlink(tmp.c_str());
  return st;
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec1, ec2;
  if (fs::exists(a, ec1) && fs::exists(b, ec2)) {
    std::error_code ec;
    return fs::equivalent(a, b, ec);
  }
  std::error_code ec;
  return fs::weakly_canonical(fs::absolute(a), ec) == fs::weakly_canonical(fs::absolute(b), ec);
}

}  // namespace rdmalab
