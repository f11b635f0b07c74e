// The loopback backend: ranks are threads of one process, data really moves (memcpy) between
// registered regions, completions are produced by an engine thread and arrive asynchronously.
// It is the reference implementation of the contract's semantics; it does not model time.
#pragma once

#include <memory>

#include "rdmalab/backend.h"

namespace rdmalab::loopback {

std::unique_ptr<Backend> make_backend();

}  // namespace rdmalab::loopback
