#include "rdmalab/backend.h"

#include <fmt/format.h>

namespace rdmalab {

void BackendRegistry::add(std::string name, BackendFactory make) {
  backends_.push_back(BackendInfo{std::move(name), std::move(make)});
}

std::vector<std::string> BackendRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& b : backends_) out.push_back(b.name);
  return out;
}

Result<std::unique_ptr<Backend>> BackendRegistry::make(const std::string& name) const {
  for (const auto& b : backends_)
    if (b.name == name) return b.make();
  std::string known;
  for (const auto& b : backends_) known += (known.empty() ? "" : ", ") + b.name;
  return Status(Errc::not_found, fmt::format("no backend named '{}' in this build (built: {})", name, known));
}

Status first_failure(const std::vector<Status>& per_rank) {
  auto named = [](const Status& st, std::size_t r) {
    return st.message().rfind("rank ", 0) == 0 ? st : st.with_context(fmt::format("rank {}", r));
  };
  for (std::size_t r = 0; r < per_rank.size(); ++r)
    if (!per_rank[r] && per_rank[r].code() != Errc::bootstrap) return named(per_rank[r], r);
  for (std::size_t r = 0; r < per_rank.size(); ++r)
    if (!per_rank[r]) return named(per_rank[r], r);
  return Status::ok();
}

}  // namespace rdmalab
