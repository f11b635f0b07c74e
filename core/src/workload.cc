#include "rdmalab/workload.h"

namespace rdmalab {

void WorkloadRegistry::add(WorkloadInfo info) { workloads_.push_back(std::move(info)); }

const WorkloadInfo* WorkloadRegistry::find(const std::string& name) const {
  for (const auto& w : workloads_)
    if (w.name == name) return &w;
  return nullptr;
}

std::vector<std::string> WorkloadRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& w : workloads_) out.push_back(w.name);
  return out;
}

}  // namespace rdmalab
