// The SimGrid backend: runs the same workloads in a SimGrid model of a whole cluster network.
#pragma once

#include <memory>

#include "rdmalab/backend.h"

namespace rdmalab::sim {

std::unique_ptr<Backend> make_backend();

}  // namespace rdmalab::sim
