// The dashboard's window: the run panel at the left; tabs for the topology (with its links
// table), the charts and the results (with export and a second run to compare); a timeline at
// the bottom to scrub through a run's samples.
#pragma once

#include <QMainWindow>
#include <QString>
#include <QTimer>
#include <memory>

#include "rdmalab/backend.h"
#include "rdmalab/record.h"
#include "rdmalab/sweep_plot.h"

class QComboBox;
class QLabel;
class QSlider;
class QTabWidget;
class QTableView;
class QGraphicsView;

namespace rdmalab::gui {

class RunData;
class RunPanel;
class TopologyScene;
class TopologyView;
class NodeScene;
class LinkTableModel;
class ResultsModel;
class CompareModel;
class ThroughputChart;
class HostChart;
class ResultChart;
class PlotChart;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(const BackendRegistry& backends, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Each returns an error text, empty when fine (also shown in the status bar).
  QString openRecord(const QString& path);
  QString compareWith(const QString& path);
  QString exportJson(const QString& path);
  QString exportCsv(const QString& path);
  QString screenshot(const QString& path);
  // A sweep's table (DIR/sweep.json or DIR) into the Sweep tab: its plots and its rows.
  QString openSweep(const QString& path);
  void showTab(const QString& name);  // topology | charts | results | sweep

  RunData* data() const { return data_; }
  RunPanel* runPanel() const { return panel_; }
  TopologyScene* topologyScene() const { return scene_; }
  NodeScene* nodeScene() const { return node_scene_; }
  ResultsModel* resultsModel() const { return results_; }
  CompareModel* compareModel() const { return compare_; }
  LinkTableModel* linkModel() const { return links_; }
  ThroughputChart* throughputChart() const { return throughput_; }
  HostChart* hostChart() const { return host_chart_; }
  ResultChart* resultChart() const { return result_chart_; }
  QSlider* timeline() const { return timeline_; }
  PlotChart* sweepChart() const { return sweep_chart_; }
  QComboBox* sweepPlots() const { return sweep_plots_; }
  ResultsModel* sweepModel() const { return sweep_table_; }

 private:
  void followLive();
  // Highlights the routes of the selected node's transfers in flight at the cursor.
  void updateFlows();
  void refreshTimeline();

  const BackendRegistry& backends_;
  RunData* data_;
  RunPanel* panel_;
  TopologyScene* scene_;
  TopologyView* view_;
  NodeScene* node_scene_;
  QGraphicsView* node_view_;
  LinkTableModel* links_;
  ResultsModel* results_;
  CompareModel* compare_;
  ThroughputChart* throughput_;
  HostChart* host_chart_;
  ResultChart* result_chart_;
  QTabWidget* tabs_;
  QSlider* timeline_;
  QLabel* time_label_;
  QTableView* compare_view_;
  QLabel* compare_label_;
  PlotChart* sweep_chart_;
  QComboBox* sweep_plots_;
  ResultsModel* sweep_table_;
  QLabel* sweep_label_;
  std::vector<Plot> plots_;
  QTimer live_timer_;
  std::unique_ptr<RecordFollower> follower_;
  QString live_path_;
};

}  // namespace rdmalab::gui
