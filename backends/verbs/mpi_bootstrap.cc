#include "mpi_bootstrap.h"

#include <fmt/format.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace rdmalab::verbs {
namespace {

Status mpi_error(int rc, const char* what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return Status(Errc::bootstrap, fmt::format("MPI: {} failed: {}", what, std::string(text, static_cast<std::size_t>(len))));
}

}  // namespace

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

Result<std::unique_ptr<MpiBootstrap>> MpiBootstrap::init() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided); rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Init");
  }
  // Errors come back as codes (and become messages) instead of aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::unique_ptr<MpiBootstrap> b(new MpiBootstrap());
  MPI_Comm_rank(MPI_COMM_WORLD, &b->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &b->size_);
  return b;
}

MpiBootstrap::~MpiBootstrap() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Status MpiBootstrap::barrier() {
  if (int rc = MPI_Barrier(MPI_COMM_WORLD); rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Barrier");
  return Status::ok();
}

Result<std::vector<std::byte>> MpiBootstrap::allgather(std::span<const std::byte> mine) {
  // Every rank must contribute the same length: check it first, as the TCP bootstrap does.
  long long len = static_cast<long long>(mine.size()), lo = 0, hi = 0;
  if (int rc = MPI_Allreduce(&len, &lo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD); rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce");
  if (int rc = MPI_Allreduce(&len, &hi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD); rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce");
  if (lo != hi) return Status(Errc::invalid_argument, fmt::format("allgather: ranks contribute different lengths ({} to {} bytes)", lo, hi));
  std::vector<std::byte> out(mine.size() * static_cast<std::size_t>(size_));
  if (mine.empty()) return out;
  if (int rc = MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, out.data(), static_cast<int>(mine.size()), MPI_BYTE,
                             MPI_COMM_WORLD);
      rc != MPI_SUCCESS)
    return mpi_error(rc, "MPI_Allgather");
  return out;
}

void MpiBootstrap::abort(const std::string& why) {
  std::fprintf(stderr, "rdmalab: rank %d: %s: stopping every rank (MPI_Abort)\n", rank_, why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

}  // namespace rdmalab::verbs
