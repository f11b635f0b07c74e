#include "run_data.h"

#include <algorithm>

namespace rdmalab::gui {

void RunData::clear() {
  rec_ = Record{};
  source_.clear();
  cursor_ = -1;
  util_.clear();
  peak_.clear();
  emit topologyChanged();
  emit samplesChanged();
  emit rowsChanged();
  emit cursorChanged(cursor_);
}

void RunData::setRecord(Record record, QString source) {
  rec_ = std::move(record);
  source_ = std::move(source);
  util_.assign(rec_.topology.links.size(), 0.0);
  peak_.assign(rec_.topology.links.size(), 0.0);
  cursor_ = -1;
  emit topologyChanged();
  emit samplesChanged();
  emit rowsChanged();
  // A finished run's last sample has every link idle: a replay opens where the fabric was busiest.
  setCursor(busiestSample());
}

int RunData::busiestSample() const {
  int busiest = sampleCount() - 1;
  double most = -1;
  for (int i = 0; i < sampleCount(); ++i) {
    double sum = 0;
    for (const auto& [link, u] : rec_.samples[static_cast<std::size_t>(i)].link_util) sum += u;
    if (sum > most + 1e-12) most = sum, busiest = i;
  }
  return busiest;
}

void RunData::update(const Record& record, bool follow) {
  const bool topo = record.topology.links.size() != rec_.topology.links.size() || record.topology.nodes.size() != rec_.topology.nodes.size();
  const bool rows = record.rows.size() != rec_.rows.size();
  const bool samples = record.samples.size() != rec_.samples.size();
  rec_ = record;
  if (topo) {
    util_.assign(rec_.topology.links.size(), 0.0);
    peak_.assign(rec_.topology.links.size(), 0.0);
    cursor_ = -1;
    emit topologyChanged();
  }
  if (samples) emit samplesChanged();
  if (rows) emit rowsChanged();
  if (samples && (follow || cursor_ < 0)) setCursor(sampleCount() - 1);
}

void RunData::setRows(std::vector<ResultRow> rows) {
  rec_.rows = std::move(rows);
  emit rowsChanged();
}

void RunData::setCursor(int sample) {
  sample = std::clamp(sample, -1, sampleCount() - 1);
  if (sample == cursor_) return;
  if (sample < cursor_) {
    // Going back: the peaks are recomputed from the start.
    std::fill(peak_.begin(), peak_.end(), 0.0);
    recompute(0, sample);
  } else {
    recompute(cursor_ + 1, sample);
  }
  cursor_ = sample;
  emit cursorChanged(cursor_);
}

void RunData::recompute(int from, int to) {
  util_.assign(rec_.topology.links.size(), 0.0);
  for (int i = std::max(0, from); i <= to; ++i)
    for (auto [link, u] : rec_.samples[static_cast<std::size_t>(i)].link_util)
      peak_[static_cast<std::size_t>(link)] = std::max(peak_[static_cast<std::size_t>(link)], u);
  if (to >= 0)
    for (auto [link, u] : rec_.samples[static_cast<std::size_t>(to)].link_util) util_[static_cast<std::size_t>(link)] = u;
}

double RunData::aggregateTx(int sample) const {
  if (sample < 0 || sample >= sampleCount()) return 0;
  double sum = 0;
  for (double v : rec_.samples[static_cast<std::size_t>(sample)].rank_tx_Bps) sum += v;
  return sum;
}

double RunData::hostLinkRate() const {
  // The link that leaves rank 0's node.
  for (const auto& l : rec_.topology.links)
    if (l.ends.size() == 2 && l.ends[0] >= 0 && static_cast<std::size_t>(l.ends[0]) < rec_.topology.nodes.size() &&
        rec_.topology.nodes[static_cast<std::size_t>(l.ends[0])].rank == 0)
      return l.bandwidth_Bps;
  return 0;
}

double RunData::lineRate() const {
  // A real run's ranks share the device port the monitor names (docs/record.md): its rate, once.
  if (!rec_.monitor.port.empty()) return rec_.topology.links.empty() ? 0.0 : rec_.topology.links.front().bandwidth_Bps;
  // The ranks that send at all: a one-way test between two nodes is bounded by one uplink, not two.
  std::vector<bool> sends(static_cast<std::size_t>(std::max(rec_.ranks, 0)), false);
  bool any = false;
  for (const auto& smp : rec_.samples)
    for (std::size_t r = 0; r < smp.rank_tx_Bps.size() && r < sends.size(); ++r)
      if (smp.rank_tx_Bps[r] > 0) sends[r] = any = true;
  double sum = 0;
  std::vector<bool> seen(rec_.topology.nodes.size(), false);
  for (const auto& l : rec_.topology.links) {
    if (l.ends.size() != 2 || l.ends[0] < 0 || static_cast<std::size_t>(l.ends[0]) >= rec_.topology.nodes.size()) continue;
    const auto from = static_cast<std::size_t>(l.ends[0]);
    if (rec_.topology.nodes[from].kind != "host" || seen[from]) continue;
    const int rank = rec_.topology.nodes[from].rank;
    if (any && rank >= 0 && static_cast<std::size_t>(rank) < sends.size() && !sends[static_cast<std::size_t>(rank)]) continue;
    // One uplink per host (a host of a full mesh or torus has several: count the first).
    seen[from] = true;
    sum += l.bandwidth_Bps;
  }
  return sum;
}

}  // namespace rdmalab::gui
