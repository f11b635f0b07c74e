#include "mpi_bootstrap.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace rdmalab::verbs {
namespace {

// The shim (mpi_shim.cc) and its entry points.
struct Shim {
  int (*init)(int*, int*, char*, int) = nullptr;
  int (*barrier)(char*, int) = nullptr;
  int (*allgather)(const void*, long long, void*, long long*, long long*, char*, int) = nullptr;
  void (*abort)() = nullptr;
  void (*finalize)() = nullptr;
};
Shim g_shim;

Status load_shim() {
  if (g_shim.init) return Status::ok();
  std::vector<std::string> tried;
  std::vector<std::filesystem::path> candidates;
  if (const char* env = std::getenv("RDMALAB_MPI_SHIM")) candidates.emplace_back(env);
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / ".." / "lib" / "librdmalab_mpi.so");
    candidates.push_back(exe.parent_path() / "librdmalab_mpi.so");
  }
  for (const auto& c : candidates) {
    // DEEPBIND: the shim's MPI_* calls bind to the MPI library it links, not to SimGrid's SMPI.
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) {
      tried.push_back(fmt::format("{} ({})", c.string(), dlerror()));
      continue;
    }
    g_shim.init = reinterpret_cast<decltype(g_shim.init)>(dlsym(h, "rdmalab_mpi_init"));
    g_shim.barrier = reinterpret_cast<decltype(g_shim.barrier)>(dlsym(h, "rdmalab_mpi_barrier"));
    g_shim.allgather = reinterpret_cast<decltype(g_shim.allgather)>(dlsym(h, "rdmalab_mpi_allgather"));
    g_shim.abort = reinterpret_cast<decltype(g_shim.abort)>(dlsym(h, "rdmalab_mpi_abort"));
    g_shim.finalize = reinterpret_cast<decltype(g_shim.finalize)>(dlsym(h, "rdmalab_mpi_finalize"));
    if (g_shim.init && g_shim.barrier && g_shim.allgather && g_shim.abort && g_shim.finalize) return Status::ok();
    g_shim = Shim{};
    tried.push_back(fmt::format("{} (not rdmalab's MPI shim)", c.string()));
  }
  std::string list;
  for (const auto& t : tried) list += "\n  " + t;
  return Status(Errc::not_supported, fmt::format("cannot load rdmalab's MPI library (librdmalab_mpi.so, next to the executable's "
                                                 "lib/ or named by RDMALAB_MPI_SHIM); tried:{}", list));
}

}  // namespace

Result<std::unique_ptr<MpiBootstrap>> MpiBootstrap::init() {
  RDMALAB_TRY(load_shim());
  std::unique_ptr<MpiBootstrap> b(new MpiBootstrap());
  char err[512] = {0};
  if (g_shim.init(&b->rank_, &b->size_, err, sizeof err)) return Status(Errc::bootstrap, err);
  return b;
}

MpiBootstrap::~MpiBootstrap() {
  if (g_shim.finalize) g_shim.finalize();
}

Status MpiBootstrap::barrier() {
  char err[512] = {0};
  if (g_shim.barrier(err, sizeof err)) return Status(Errc::bootstrap, err);
  return Status::ok();
}

Result<std::vector<std::byte>> MpiBootstrap::allgather(std::span<const std::byte> mine) {
  std::vector<std::byte> out(mine.size() * static_cast<std::size_t>(size_));
  long long lo = 0, hi = 0;
  char err[512] = {0};
  if (g_shim.allgather(mine.data(), static_cast<long long>(mine.size()), out.empty() ? nullptr : out.data(), &lo, &hi, err, sizeof err))
    return Status(Errc::bootstrap, err);
  if (lo != hi) return Status(Errc::invalid_argument, fmt::format("allgather: ranks contribute different lengths ({} to {} bytes)", lo, hi));
  return out;
}

void MpiBootstrap::abort(const std::string& why) {
  std::fprintf(stderr, "rdmalab: rank %d: %s: stopping every rank (MPI_Abort)\n", rank_, why.c_str());
  std::fflush(stderr);
  if (g_shim.abort) g_shim.abort();
  std::abort();
}

}  // namespace rdmalab::verbs
