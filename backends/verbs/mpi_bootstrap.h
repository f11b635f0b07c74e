// The bootstrap of a run launched by mpirun: rank, size, barrier and allgather come from MPI
// (MPI_COMM_WORLD), as nccl-tests gets them, through librdmalab_mpi.so (mpi_shim.cc), which is
// built when an MPI implementation is found and loaded when a run asks for it.
#pragma once

#include <memory>
#include <string>

#include "rdmalab/bootstrap.h"

namespace rdmalab::verbs {

class MpiBootstrap final : public Bootstrap {
 public:
  // Initialises MPI (once per process). Errors: bootstrap.
  static Result<std::unique_ptr<MpiBootstrap>> init();
  ~MpiBootstrap() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status barrier() override;
  Result<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override;
  // Ends the whole job: MPI's way to stop ranks blocked in a collective when one fails.
  [[noreturn]] void abort(const std::string& why);

 private:
  MpiBootstrap() = default;
  int rank_ = 0, size_ = 1;
};

}  // namespace rdmalab::verbs
