// The backends compiled into this build, for executables (CLI, dashboard, tests).
#pragma once

#include <memory>

#include "rdmalab/backend.h"
#include "rdmalab/bootstrap.h"

namespace rdmalab {

// All backends of this build, usable or not (availability() says which).
const BackendRegistry& all_backends();

// The ranks of a command that mpirun launched (MPI_COMM_WORLD: rank, size, barrier, allgather),
// through the verbs backend's MPI library; not_supported when this build has none.
Result<std::unique_ptr<Bootstrap>> mpi_bootstrap();

}  // namespace rdmalab
