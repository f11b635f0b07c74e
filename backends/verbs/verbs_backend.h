// The verbs backend: libibverbs (rdma-core) on ConnectX or Soft-RoCE; ranks are processes.
#pragma once

#include <memory>

#include "rdmalab/backend.h"

namespace rdmalab::verbs {

std::unique_ptr<Backend> make_backend();

}  // namespace rdmalab::verbs
