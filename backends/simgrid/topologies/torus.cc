// torus: SimGrid's torus zone (fabric.torus.dims).
#include <fmt/format.h>

#include <cstdio>
#include <simgrid/s4u.hpp>

#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

namespace {

Status nodes_torus(const Scenario& sc) {
  if (!sc.has("fabric.torus.dims")) return Status::ok();
  return nodes_agree(sc, "fabric.torus.dims", sc.get_ints("fabric.torus.dims"));
}

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

// SimGrid's torus zone names its links fabric_link_from_<a>_to_<b>_UP|DOWN (SimGrid 3.32).
void describe_torus(Picture& p) {
  for (TopoLink& tl : p.t.links) {
    long a = -1, b = -1;
    if (std::sscanf(tl.name.c_str(), "fabric_link_from_%ld_to_%ld_", &a, &b) == 2)
      tl.ends = link_ends(tl.name, static_cast<int>(a), static_cast<int>(b));
  }
}

void keys_torus(Schema& s) {
  using T = ValueType;
  s.add("fabric.torus.dims", T::int_list, "", "torus dimensions; their product is the node count", 1, 1e6);
}

}  // namespace

// Its entry in the table of kinds (topologies.cc).
extern const TopologyKind kTorus = {.name = "torus",
                              .check = check_torus,
                              .build = build_torus,
                              .check_nodes = nodes_torus,
                              .describe = describe_torus,
                              .keys = keys_torus};

}  // namespace rdmalab::sim
