// The backends compiled into this build, for executables (CLI, dashboard, tests).
#pragma once

#include "rdmalab/backend.h"

namespace rdmalab {

// All backends of this build, usable or not (availability() says which).
const BackendRegistry& all_backends();

}  // namespace rdmalab
