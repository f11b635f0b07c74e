#include "backends.h"

#include "loopback/loopback.h"

namespace rdmalab {

const BackendRegistry& all_backends() {
  static const BackendRegistry reg = [] {
    BackendRegistry r;
    r.add("loopback", [] { return loopback::make_backend(); });
    return r;
  }();
  return reg;
}

}  // namespace rdmalab
