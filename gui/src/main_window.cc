#include "main_window.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGraphicsView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include "charts.h"
#include "models.h"
#include "rdmalab/files.h"
#include "rdmalab/run.h"
#include "run_data.h"
#include "run_panel.h"
#include "topology_scene.h"

namespace rdmalab::gui {

namespace {

QString write_text(const QString& path, const std::string& text) {
  // Through a temporary file and a rename: an existing file is never left half-written.
  Status st = write_file_atomically(path.toStdString(), text);
  return st ? QString() : QString::fromStdString(st.message());
}

}  // namespace

MainWindow::MainWindow(const BackendRegistry& backends, QWidget* parent)
    : QMainWindow(parent), backends_(backends), data_(new RunData(this)) {
  setWindowTitle(tr("rdmalab dashboard"));
  panel_ = new RunPanel(backends_);
  auto* dock = new QDockWidget(tr("Run"), this);
  dock->setWidget(panel_);
  dock->setFeatures(QDockWidget::DockWidgetMovable);
  panel_->setMinimumWidth(380);
  addDockWidget(Qt::LeftDockWidgetArea, dock);

  // Topology tab: the graph, and the links with their utilisation.
  scene_ = new TopologyScene(this);
  view_ = new TopologyView(scene_);
  links_ = new LinkTableModel(data_, this);
  auto* link_view = new QTableView();
  link_view->setModel(links_);
  link_view->verticalHeader()->hide();
  // Sized once per topology, not on every update (measuring thousands of rows per frame is slow).
  link_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  connect(data_, &RunData::topologyChanged, link_view, [link_view] { link_view->resizeColumnsToContents(); });
  link_view->setSelectionBehavior(QAbstractItemView::SelectRows);
  // The selected node's inside, next to the cluster.
  node_scene_ = new NodeScene(this);
  node_view_ = new QGraphicsView(node_scene_);
  auto* node_view = node_view_;
  node_view->setRenderHint(QPainter::Antialiasing);
  auto* upper = new QSplitter(Qt::Horizontal);
  upper->addWidget(view_);
  upper->addWidget(node_view);
  upper->setSizes({520, 480});
  auto* topo_split = new QSplitter(Qt::Vertical);
  topo_split->addWidget(upper);
  topo_split->addWidget(link_view);
  topo_split->setStretchFactor(0, 3);
  topo_split->setStretchFactor(1, 1);

  // Charts tab.
  throughput_ = new ThroughputChart(data_);
  host_chart_ = new HostChart(data_);
  host_chart_->setVisible(false);  // a real run's record shows it (CPU, GPU samples)
  connect(host_chart_, &HostChart::hasDataChanged, host_chart_, &QWidget::setVisible);
  result_chart_ = new ResultChart();
  auto* chart_split = new QSplitter(Qt::Vertical);
  chart_split->addWidget(throughput_);
  chart_split->addWidget(host_chart_);
  chart_split->addWidget(result_chart_);
  chart_split->setSizes({450, 450});

  // Results tab: the table, export, and a second run side by side.
  results_ = new ResultsModel(this);
  compare_ = new CompareModel(this);
  auto* results_page = new QWidget();
  auto* rv = new QVBoxLayout(results_page);
  auto* result_view = new QTableView();
  result_view->setModel(results_);
  result_view->verticalHeader()->hide();
  result_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* rb = new QHBoxLayout();
  auto* export_json = new QPushButton(tr("Export JSON…"));
  auto* export_csv = new QPushButton(tr("Export CSV…"));
  auto* compare_button = new QPushButton(tr("Compare with a run…"));
  rb->addWidget(export_json);
  rb->addWidget(export_csv);
  rb->addStretch();
  rb->addWidget(compare_button);
  rv->addLayout(rb);
  rv->addWidget(result_view, 1);
  compare_label_ = new QLabel();
  compare_view_ = new QTableView();
  compare_view_->setModel(compare_);
  compare_view_->verticalHeader()->hide();
  compare_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  rv->addWidget(compare_label_);
  rv->addWidget(compare_view_, 1);
  compare_label_->hide();
  compare_view_->hide();

  // Sweep tab: a sweep's plots (the same as rdmalab-plot draws) and its table.
  auto* sweep_page = new QWidget();
  auto* sv = new QVBoxLayout(sweep_page);
  auto* sb = new QHBoxLayout();
  auto* open_sweep = new QPushButton(tr("Open sweep…"));
  sweep_plots_ = new QComboBox();
  sweep_plots_->setMinimumWidth(360);
  sweep_label_ = new QLabel(tr("Run `rdmalab sweep`, then open its sweep.json here."));
  sb->addWidget(open_sweep);
  sb->addWidget(new QLabel(tr("Plot:")));
  sb->addWidget(sweep_plots_);
  sb->addWidget(sweep_label_, 1);
  sv->addLayout(sb);
  sweep_chart_ = new PlotChart();
  sweep_table_ = new ResultsModel(this);
  auto* sweep_view = new QTableView();
  sweep_view->setModel(sweep_table_);
  sweep_view->verticalHeader()->hide();
  sweep_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* sweep_split = new QSplitter(Qt::Vertical);
  sweep_split->addWidget(sweep_chart_);
  sweep_split->addWidget(sweep_view);
  sweep_split->setSizes({560, 300});
  sv->addWidget(sweep_split, 1);
  connect(sweep_plots_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0 && static_cast<std::size_t>(i) < plots_.size()) sweep_chart_->setPlot(plots_[static_cast<std::size_t>(i)]);
  });
  connect(open_sweep, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Open a sweep (rdmalab sweep writes DIR/sweep.json)"), QString(), tr("Sweeps (sweep.json);;JSON (*.json)"));
    if (!f.isEmpty()) openSweep(f);
  });

  tabs_ = new QTabWidget();
  tabs_->addTab(topo_split, tr("Topology"));
  tabs_->addTab(chart_split, tr("Charts"));
  tabs_->addTab(results_page, tr("Results"));
  tabs_->addTab(sweep_page, tr("Sweep"));

  // Timeline.
  timeline_ = new QSlider(Qt::Horizontal);
  timeline_->setRange(0, 0);
  time_label_ = new QLabel(tr("no samples"));
  time_label_->setMinimumWidth(220);
  auto* central = new QWidget();
  auto* cv = new QVBoxLayout(central);
  cv->addWidget(tabs_, 1);
  auto* tl = new QHBoxLayout();
  tl->addWidget(new QLabel(tr("Timeline")));
  tl->addWidget(timeline_, 1);
  tl->addWidget(time_label_);
  cv->addLayout(tl);
  setCentralWidget(central);

  // Menu.
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("Open scenario…"), this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Open a scenario"), QString(), tr("Scenarios (*.yaml *.yml)"));
    if (!f.isEmpty()) panel_->loadScenario(f);
  });
  file->addAction(tr("Open recorded run…"), this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Open a record (rdmalab run --record)"), QString(), tr("Records (*.jsonl *.rec);;All files (*)"));
    if (!f.isEmpty()) openRecord(f);
  });
  file->addAction(tr("Open sweep…"), open_sweep, &QPushButton::click);
  file->addAction(tr("Save screenshot…"), this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("Screenshot"), QStringLiteral("dashboard.png"), tr("PNG (*.png)"));
    if (!f.isEmpty()) screenshot(f);
  });
  file->addSeparator();
  file->addAction(tr("Quit"), qApp, &QApplication::quit);

  // Wiring.
  connect(data_, &RunData::topologyChanged, this, [this] {
    scene_->build(data_->record().topology);
    view_->fit();
  });
  connect(data_, &RunData::cursorChanged, this, [this](int c) {
    scene_->setUtilisation(data_->linkUtil(), data_->linkPeak());
    if (c >= 0 && timeline_->value() != c) timeline_->setValue(c);
    const auto& s = data_->record().samples;
    time_label_->setText(c >= 0 && c < static_cast<int>(s.size())
                             ? tr("t = %1 us (sample %2 of %3)").arg(s[static_cast<std::size_t>(c)].t * 1e6, 0, 'f', 2).arg(c + 1).arg(s.size())
                             : tr("no samples"));
  });
  connect(data_, &RunData::samplesChanged, this, &MainWindow::refreshTimeline);
  connect(data_, &RunData::rowsChanged, this, [this] {
    results_->setRows(data_->record().rows);
    result_chart_->setRows(data_->record().rows);
  });
  connect(timeline_, &QSlider::valueChanged, data_, &RunData::setCursor);
  connect(data_, &RunData::cursorChanged, this, &MainWindow::updateFlows);
  connect(scene_, &TopologyScene::nodeSelected, this, &MainWindow::updateFlows);
  connect(scene_, &TopologyScene::nodeSelected, this, [this, node_view](int node) {
    const auto& nodes = data_->record().topology.nodes;
    if (node >= 0 && static_cast<std::size_t>(node) < nodes.size()) {
      node_scene_->show(nodes[static_cast<std::size_t>(node)]);
      node_view->fitInView(node_scene_->sceneRect(), Qt::KeepAspectRatio);
    }
  });
  connect(data_, &RunData::topologyChanged, this, [this, node_view] {
    // A node-model cluster shows its first node's inside until another is selected; without a
    // node model the pane is hidden.
    const auto& nodes = data_->record().topology.nodes;
    bool model = false;
    for (const auto& n : nodes) model = model || n.gpus > 0;
    node_view->setVisible(model);
    for (const auto& n : nodes)
      if (model && n.kind == "host") {
        node_scene_->show(n);
        node_view->fitInView(node_scene_->sceneRect(), Qt::KeepAspectRatio);
        break;
      }
  });
  connect(scene_, &TopologyScene::nodeSelected, this, [this](int node) {
    const auto& nodes = data_->record().topology.nodes;
    std::vector<int> ranks;
    if (node >= 0 && nodes[static_cast<std::size_t>(node)].rank >= 0) ranks.push_back(nodes[static_cast<std::size_t>(node)].rank);
    throughput_->setSelectedRanks(ranks);
  });
  connect(link_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this, link_view] {
    std::vector<int> sel;
    for (const auto& idx : link_view->selectionModel()->selectedRows()) sel.push_back(idx.row());
    throughput_->setSelectedLinks(sel);
  });
  connect(export_json, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("Export results"), QStringLiteral("results.json"), tr("JSON (*.json)"));
    if (!f.isEmpty()) exportJson(f);
  });
  connect(export_csv, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("Export results"), QStringLiteral("results.csv"), tr("CSV (*.csv)"));
    if (!f.isEmpty()) exportCsv(f);
  });
  connect(compare_button, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("A run to compare with (record or --json results)"), QString(),
                                                   tr("Runs (*.jsonl *.json *.rec);;All files (*)"));
    if (!f.isEmpty()) compareWith(f);
  });

  // Live runs: follow the record the run writes, ten times a second.
  live_timer_.setInterval(100);
  connect(&live_timer_, &QTimer::timeout, this, &MainWindow::followLive);
  connect(panel_, &RunPanel::started, this, [this](const QString& record) {
    data_->clear();
    compare_->setRuns(RunFile{}, {}, RunFile{}, {});
    live_path_ = record;
    follower_.reset();
    if (!record.isEmpty()) {
      follower_ = std::make_unique<RecordFollower>((record + ".tmp").toStdString());
      live_timer_.start();
    }
    statusBar()->showMessage(tr("running…"));
  });
  connect(panel_, &RunPanel::finished, this, [this](bool ok, const QString& msg, const std::vector<ResultRow>& rows) {
    live_timer_.stop();
    if (follower_) {
      // The record took its final name: read what is left from there.
      follower_->set_path(live_path_.toStdString());
      followLive();
      QFile::remove(live_path_);
    }
    follower_.reset();
    data_->setRows(rows);
    statusBar()->showMessage(ok ? msg : tr("run failed: %1").arg(msg));
  });
  connect(panel_, &RunPanel::progress, this, [this](const QString& t) { statusBar()->showMessage(t); });
  resize(1400, 900);
}

MainWindow::~MainWindow() = default;

void MainWindow::followLive() {
  if (!follower_) return;
  auto got = follower_->poll();
  if (!got) {
    statusBar()->showMessage(QString::fromStdString(got.status().message()));
    return;
  }
  if (*got > 0) data_->update(follower_->record(), /*follow=*/timeline_->value() >= timeline_->maximum());
}

void MainWindow::updateFlows() {
  std::vector<int> links;
  const int node = scene_->selectedNode();
  const Record& rec = data_->record();
  const int c = data_->cursor();
  if (node >= 0 && c >= 0 && c < data_->sampleCount()) {
    const TopoNode& n = rec.topology.nodes[static_cast<std::size_t>(node)];
    if (n.rank >= 0) {
      const int lo = n.rank, hi = n.rank + std::max(1, n.gpus) - 1;  // a node-model host holds several ranks
      for (int f : rec.samples[static_cast<std::size_t>(c)].flows) {
        const Route& r = rec.routes[static_cast<std::size_t>(f)];
        if ((r.src >= lo && r.src <= hi) || (r.dst >= lo && r.dst <= hi)) links.insert(links.end(), r.links.begin(), r.links.end());
      }
    }
  }
  scene_->setHighlightedLinks(links);
}

void MainWindow::refreshTimeline() {
  const bool at_end = timeline_->value() >= timeline_->maximum();
  timeline_->setRange(0, std::max(0, data_->sampleCount() - 1));
  if (at_end) timeline_->setValue(timeline_->maximum());
}

QString MainWindow::openRecord(const QString& path) {
  auto rec = read_record(path.toStdString());
  if (!rec) {
    const QString e = QString::fromStdString(rec.status().message());
    statusBar()->showMessage(e);
    return e;
  }
  // The run panel shows what was replayed: the record's scenario (when the file is still there)
  // and its backend, so "Run" runs it again.
  const QString scenario = QString::fromStdString(rec->scenario);
  if (!panel_->running()) {
    if (!scenario.isEmpty() && QFileInfo::exists(scenario)) panel_->loadScenario(scenario);
    panel_->setBackend(QString::fromStdString(rec->backend));
  }
  data_->setRecord(std::move(*rec), path);
  setWindowTitle(tr("rdmalab dashboard — %1").arg(QFileInfo(path).fileName()));
  statusBar()->showMessage(tr("replaying %1: %2 on %3, %4 ranks, %5 samples")
                               .arg(path, QString::fromStdString(data_->record().scenario), QString::fromStdString(data_->record().backend))
                               .arg(data_->record().ranks)
                               .arg(data_->sampleCount()));
  return {};
}

QString MainWindow::compareWith(const QString& path) {
  auto other = read_run(path.toStdString());
  if (!other) {
    const QString e = QString::fromStdString(other.status().message());
    statusBar()->showMessage(e);
    return e;
  }
  const std::vector<ResultRow>* rows = &other->rows;
  RunFile mine;
  mine.path = data_->source().toStdString();
  mine.rows = data_->record().rows;
  mine.info.backend = data_->record().backend;
  // Columns are labelled by backend (a prediction against a measurement), or by file name when
  // both runs come from the same backend.
  QString a = data_->record().backend.empty() ? tr("A") : QString::fromStdString(data_->record().backend);
  QString b = (*rows).empty() || (*rows)[0].backend.empty() ? tr("B") : QString::fromStdString((*rows)[0].backend);
  if (a == b) {
    a = data_->source().isEmpty() ? tr("A") : QFileInfo(data_->source()).completeBaseName();
    b = QFileInfo(path).completeBaseName();
    if (a == b) b += "′";
  }
  const QString err = compare_->setRuns(mine, a, *other, b);
  QString notes;
  for (const auto& w : compare_->warnings()) notes += "\n" + tr("Note: %1").arg(QString::fromStdString(w));
  compare_label_->setText(err.isEmpty() ? tr("Compared with %1: %2 rows; ratios more than 10 % from 1 are shaded").arg(path).arg(rows->size()) + notes
                                        : err);
  compare_label_->show();
  compare_view_->setVisible(err.isEmpty());
  showTab("results");
  return err;
}

QString MainWindow::exportJson(const QString& path) {
  RunInfo info;
  info.scenario = data_->record().scenario;
  info.backend = data_->record().backend;
  info.version = version();
  const QString e = write_text(path, results_to_json(info, results_->rows()));
  statusBar()->showMessage(e.isEmpty() ? tr("wrote %1").arg(path) : e);
  return e;
}

QString MainWindow::exportCsv(const QString& path) {
  const QString e = write_text(path, result_table_csv(results_->table()));
  statusBar()->showMessage(e.isEmpty() ? tr("wrote %1").arg(path) : e);
  return e;
}

QString MainWindow::screenshot(const QString& path) {
  view_->fit();
  node_view_->fitInView(node_scene_->sceneRect(), Qt::KeepAspectRatio);
  if (!grab().save(path, "PNG")) return tr("%1: cannot write the PNG").arg(path);
  return {};
}

QString MainWindow::openSweep(const QString& path) {
  QString file = path;
  if (QFileInfo(path).isDir()) file = QDir(path).filePath("sweep.json");
  auto sweep = read_sweep(file.toStdString());
  QString e;
  if (!sweep) e = QString::fromStdString(sweep.status().message());
  auto plots = sweep ? sweep_plots(*sweep) : Result<std::vector<Plot>>(sweep.status());
  if (sweep && !plots) e = QString::fromStdString(plots.status().message());
  if (!e.isEmpty()) {
    statusBar()->showMessage(e);
    sweep_label_->setText(e);
    return e;
  }
  plots_ = std::move(*plots);
  sweep_table_->setTable(sweep->table);
  {
    const QSignalBlocker block(sweep_plots_);
    sweep_plots_->clear();
    for (const auto& p : plots_) sweep_plots_->addItem(QString::fromStdString(p.title));
  }
  sweep_plots_->setCurrentIndex(0);
  sweep_chart_->setPlot(plots_.front());
  std::size_t points = 1;
  for (const auto& a : sweep->axes) points = sweep->zip ? a.values.size() : points * a.values.size();
  sweep_label_->setText(tr("%1: %2 on %3, %4 points, %5 rows")
                            .arg(file, QString::fromStdString(sweep->scenario), QString::fromStdString(sweep->backend))
                            .arg(points)
                            .arg(sweep->table.cells.size()));
  showTab("sweep");
  return {};
}

void MainWindow::showTab(const QString& name) {
  const int i = name == "charts" ? 1 : name == "results" ? 2 : name == "sweep" ? 3 : 0;
  tabs_->setCurrentIndex(i);
  if (i == 0) {
    view_->fit();
    node_view_->fitInView(node_scene_->sceneRect(), Qt::KeepAspectRatio);
  }
}

}  // namespace rdmalab::gui
