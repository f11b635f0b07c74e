// The dashboard's charts. Every QtCharts include is in charts.cc, so moving to Qt Graphs later
// touches only that file; this header shows plain widgets.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "rdmalab/results.h"
#include "rdmalab/sweep_plot.h"

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
  // The axes' titles (their units follow the data: us, ms or s; Mb/s, Gb/s or Tb/s) and the
  // aggregate's largest value in the y axis's unit.
  QString xTitle() const;
  QString yTitle() const;
  double aggregateMax() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

// A real run's host side (verbs records, docs/record.md): each rank process's CPU in cores and
// each GPU's busy fraction over time. Empty (and hidden by the window) for a model's record.
class HostChart : public QWidget {
  Q_OBJECT

 public:
  explicit HostChart(RunData* run_data, QWidget* parent = nullptr);
  ~HostChart() override;
  void refresh();
  // Whether the record has anything to draw here (CPU or GPU samples).
  bool hasData() const;
  // For tests: the series' names and each one's largest value.
  QStringList seriesNames() const;
  double seriesMax(const QString& name) const;

 signals:
  void hasDataChanged(bool has);

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

// One of a sweep's plots (rdmalab/sweep_plot.h): lines with points, a size axis labelled
// 1 KiB, 1 MiB ... or the varied key's values as categories, axis titles with units, a legend.
class PlotChart : public QWidget {
  Q_OBJECT

 public:
  explicit PlotChart(QWidget* parent = nullptr);
  ~PlotChart() override;
  void setPlot(const Plot& plot);
  QString title() const;
  int seriesCount() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

// Draws a plot into STEM.png and STEM.svg (width x height pixels), each written to a temporary
// name and renamed, so a file is whole or absent. Returns an error text, empty when fine.
QString writePlotFiles(const Plot& plot, const QString& stem, int width = 1000, int height = 640);

}  // namespace rdmalab::gui
