// torus: SimGrid's torus zone (fabric.torus.dims).
#include <fmt/format.h>

#include <cstdio>
#include <simgrid/s4u.hpp>

#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

Status check_torus(const Scenario& sc) {
  if (!sc.has("fabric.torus.dims")) return sc.error("fabric.topology", "a torus needs fabric.torus.dims, e.g. [4, 4, 4]");
  return Status::ok();
}

void build_torus(Fabric& f) {
  const Scenario& sc = f.sc;
  const double bw = f.bw;
  const double lat = f.lat;
  const sg4::ClusterCallbacks& callbacks = f.callbacks;
  const auto policy = f.policy;
  std::vector<unsigned long> dims;
  for (auto d : sc.get_ints("fabric.torus.dims")) dims.push_back(static_cast<unsigned long>(d));
  auto* zone = sg4::create_torus_zone("fabric", nullptr, dims, callbacks, bw, lat, policy);
  zone->seal();
}

}  // namespace rdmalab::sim
