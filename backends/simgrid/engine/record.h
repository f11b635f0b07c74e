// What the launcher (simgrid_backend.cc) uses of the engine beyond its objects: the record's
// topology and its sampler.
#pragma once

#include "rdmalab/record.h"
#include "simgrid/engine/world.h"

namespace rdmalab::sim {

// The record's picture of the platform: nodes, switches with their tier, links with their ends.
Topology describe_topology(const World& w);
// The sampler actor's body: one record sample every `interval` simulated seconds, until the run ends.
void sample_record(World& w, RecordWriter& rec, const Topology& topo, double interval);

}  // namespace rdmalab::sim
