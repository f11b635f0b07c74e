// The dashboard's charts. Every QtCharts include is in charts.cc, so moving to Qt Graphs later
// touches only that file; this header shows plain widgets.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "rdmalab/results.h"

namespace rdmalab::gui {

class RunData;

// Throughput over time: the aggregate of every rank, the ranks and links chosen, and the line
// rate as a dashed reference; a vertical line at the timeline cursor.
class ThroughputChart : public QWidget {
  Q_OBJECT

 public:
  explicit ThroughputChart(RunData* run_data, QWidget* parent = nullptr);
  ~ThroughputChart() override;
  void setSelectedRanks(std::vector<int> ranks);
  void setSelectedLinks(std::vector<int> links);
  // Rebuilds every series from the data (called on new samples and selection changes).
  void refresh();
  // For tests: the number of series and points of the aggregate.
  int seriesCount() const;
  int aggregatePoints() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

// What the result rows show best: a latency histogram for latency rows, busbw per size for
// collectives, bandwidth per size for bandwidth rows.
class ResultChart : public QWidget {
  Q_OBJECT

 public:
  explicit ResultChart(QWidget* parent = nullptr);
  ~ResultChart() override;
  void setRows(const std::vector<ResultRow>& rows);
  QString title() const;
  int seriesCount() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

}  // namespace rdmalab::gui
