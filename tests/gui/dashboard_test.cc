// The dashboard under QtTest (QT_QPA_PLATFORM=offscreen): real windows, real runs through core on
// the simgrid and loopback backends, real records.
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QSlider>
#include <QTemporaryDir>
#include <QtTest>
#include <random>

#include "backends.h"
#include "charts.h"
#include "main_window.h"
#include "models.h"
#include "rdmalab/record.h"
#include "rdmalab/run.h"
#include "rdmalab/files.h"
#include "rdmalab/sweep.h"
#include "run_data.h"
#include "run_panel.h"
#include "topology_scene.h"

using namespace rdmalab;
using namespace rdmalab::gui;

namespace {

const QString kSource = QStringLiteral(RDMALAB_SOURCE_DIR);

// Runs a scenario on simgrid with a record, the way `rdmalab run --record` does.
QString record_run(const QString& dir, const QString& name, const std::string& scenario, const std::vector<std::string>& sets) {
  auto sc = load_scenario((kSource + "/" + QString::fromStdString(scenario)).toStdString(), sets, full_schema(all_backends()));
  if (!sc) qFatal("%s", sc.status().message().c_str());
  auto backend = all_backends().make("simgrid");
  RunOptions opt;
  opt.record_path = (dir + "/" + name).toStdString();
  RunOutcome out = run_scenario(*sc, **backend, opt);
  if (!out.status) qFatal("%s", out.status.message().c_str());
  return dir + "/" + name;
}

// The run panel runs simgrid on a worker thread, and the simgrid backend forks its simulation.
// A sanitizer runtime without fork handlers (GCC 12's libsanitizer) can fork while another thread
// holds its allocator's lock, and the child waits for it forever; glibc's malloc and Clang 19's
// runtime (scripts/test.sh's sanitized build) lock around fork. Only with the old runtime do these
// skip (cmake/RdmalabOptions.cmake).
#ifdef RDMALAB_FORK_UNSAFE_SANITIZER
#define SKIP_FORK_FROM_THREAD() \
  QSKIP("this sanitizer runtime can hang a child forked from a multi-threaded process; build the sanitized suite with clang-19")
#else
#define SKIP_FORK_FROM_THREAD()
#endif

int column_of(const QAbstractItemModel* m, const QString& heading) {
  for (int c = 0; c < m->columnCount(); ++c)
    if (m->headerData(c, Qt::Horizontal).toString() == heading) return c;
  return -1;
}

}  // namespace

class DashboardTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // A recorded run loads into the models: the topology, the links with utilisation at the
  // cursor, and the result rows; scrubbing moves the utilisation and the peaks.
  // A real run's record (a 3-rank all_reduce on Soft-RoCE, recorded by `rdmalab run --backend
  // verbs --record` in the VM: tests/gui/data) shows each rank process's CPU, and the throughput
  // chart's line rate is the device port's, once.
  void aRealRunsRecordShowsItsHostSide() {
    MainWindow w(all_backends());
    QCOMPARE(w.openRecord(kSource + "/tests/gui/data/rxe-all-reduce-3-ranks.rec"), QString());
    QCOMPARE(w.data()->record().backend, std::string("verbs"));
    QVERIFY(w.hostChart()->hasData());
    QCOMPARE(w.hostChart()->seriesNames(), QStringList({"rank 0 CPU", "rank 1 CPU", "rank 2 CPU"}));
    for (const auto& name : w.hostChart()->seriesNames()) {
      const double m = w.hostChart()->seriesMax(name);
      QVERIFY2(m > 0.2 && m <= 2.0, qPrintable(QString("%1: %2 cores").arg(name).arg(m)));
    }
    QCOMPARE(w.data()->lineRate(), 1.25e9);  // rxe0's 10 Gb/s port, shared by the three ranks
    QVERIFY(w.throughputChart()->aggregatePoints() > 50);
    QVERIFY2(w.throughputChart()->xTitle() == "time [s]", qPrintable(w.throughputChart()->xTitle()));
  }

  void replayFillsTheModels() {
    const QString rec = record_run(dir_.path(), "ft.jsonl", "scenarios/fat-tree-2to1.yaml", {"workload.iterations=20", "record.interval=20us"});
    MainWindow w(all_backends());
    QCOMPARE(w.openRecord(rec), QString());
    const Record& r = w.data()->record();
    QCOMPARE(r.ranks, 16);
    QCOMPARE(static_cast<int>(r.topology.nodes.size()), 16 + 4 + 2);
    QCOMPARE(w.linkModel()->rowCount(), static_cast<int>(r.topology.links.size()));
    QCOMPARE(w.topologyScene()->drawnNodes(), 22);
    QCOMPARE(w.topologyScene()->drawnLinks(), 16 + 8);  // each pair of directions drawn once
    QVERIFY(w.data()->sampleCount() > 50);
    QCOMPARE(w.resultsModel()->rowCount(), 1);
    QCOMPARE(w.resultsModel()->data(w.resultsModel()->index(0, column_of(w.resultsModel(), "#iterations"))).toString(), QString("20"));
    // The run panel shows the replayed run's backend.
    QCOMPARE(w.runPanel()->backend(), QString("simgrid"));
    // A replay opens where the fabric was busiest, not at the idle last sample.
    QCOMPARE(w.data()->cursor(), w.data()->busiestSample());
    QVERIFY(w.data()->cursor() < w.data()->sampleCount() - 1);
    double busy = 0;
    for (double u : w.data()->linkUtil()) busy = std::max(busy, u);
    QVERIFY(busy > 0.4);
    // Mid-run every flow crosses the 2:1 spine: each host uplink runs at half its rate.
    w.timeline()->setValue(w.data()->sampleCount() / 2);
    QCOMPARE(w.data()->cursor(), w.data()->sampleCount() / 2);
    double host_up = -1;
    for (std::size_t i = 0; i < r.topology.links.size(); ++i)
      if (r.topology.links[i].name == "link_from_0_31_0_UP") host_up = w.data()->linkUtil()[i];
    QVERIFY2(std::abs(host_up - 0.5) < 1e-6, qPrintable(QString::number(host_up)));
    QCOMPARE(w.linkModel()->data(w.linkModel()->index(0, LinkTableModel::Now), Qt::UserRole).toDouble(), w.data()->linkUtil()[0]);
    // The drawn link takes the colour of its busiest member.
    const int drawn = w.topologyScene()->drawnLinkOf(0);
    QVERIFY(drawn >= 0);
    // Scrub to the start: nothing has happened yet, the peaks are back to zero.
    w.timeline()->setValue(0);
    double peak = 0;
    for (double p : w.data()->linkPeak()) peak = std::max(peak, p);
    QVERIFY(peak <= 1.0 + 1e-9);
    QVERIFY(w.throughputChart()->aggregatePoints() > 50);
    // Readable units: the aggregate's peak between 1 and 1000 of the y axis's unit; time in the unit that fits.
    const QString unit = w.throughputChart()->yTitle();
    QVERIFY2(unit == "Mb/s" || unit == "Gb/s" || unit == "Tb/s", qPrintable(unit));
    QVERIFY2(w.throughputChart()->aggregateMax() >= 1 && w.throughputChart()->aggregateMax() < 1000,
             qPrintable(QString("%1 %2").arg(w.throughputChart()->aggregateMax()).arg(unit)));
    QVERIFY2(w.throughputChart()->xTitle().startsWith("time ["), qPrintable(w.throughputChart()->xTitle()));
    QCOMPARE(w.resultChart()->title(), QString("Bandwidth per size"));
    QVERIFY2(!w.hostChart()->hasData(), "a model's record has no host side to draw");
    // Selecting a host highlights its links and adds its rank to the chart.
    const int before = w.throughputChart()->seriesCount();
    w.topologyScene()->selectNode(0);
    QCOMPARE(w.throughputChart()->seriesCount(), before + 1);
    QCOMPARE(w.topologyScene()->linkColour(w.topologyScene()->drawnLinkOf(0)), QColor(30, 90, 255));
    // Its flows: mid-run rank 0 writes to rank 8 across the spine; the route's links light up,
    // among them the far leaf's link down to node-8.
    w.timeline()->setValue(w.data()->sampleCount() / 2);
    QVERIFY(!r.routes.empty());
    int down_to_8 = -1;
    for (std::size_t i = 0; i < r.topology.links.size(); ++i)
      if (r.topology.links[i].ends.size() == 2 && r.topology.nodes[static_cast<std::size_t>(r.topology.links[i].ends[1])].name == "node-8")
        down_to_8 = static_cast<int>(i);
    QVERIFY(down_to_8 >= 0);
    QVERIFY(w.topologyScene()->highlighted(w.topologyScene()->drawnLinkOf(down_to_8)));
    w.topologyScene()->selectNode(-1);
    QVERIFY(!w.topologyScene()->highlighted(w.topologyScene()->drawnLinkOf(down_to_8)));
    w.topologyScene()->selectNode(0);
    // Hovering a node or a link describes it from the data.
    TopologyScene* sc = w.topologyScene();
    const QString node_tip = sc->describeAt(sc->nodeCentre(0));
    QVERIFY2(node_tip.contains("node-0") && node_tip.contains("rank 0"), qPrintable(node_tip));
    const QPointF mid = (sc->nodeCentre(0) + sc->nodeCentre(r.topology.links[0].ends[0] == 0 ? r.topology.links[0].ends[1] : r.topology.links[0].ends[0])) / 2;
    const QString link_tip = sc->describeAt(mid);
    QVERIFY2(link_tip.contains("link_from_0_31_0_UP") && link_tip.contains("100.0 Gb/s") && link_tip.contains("peak"), qPrintable(link_tip));
  }

  // A record that is not one says where.
  // The dashed line rate of a one-way test between two nodes is one uplink (rank 1 only receives).
  void lineRateIsTheSendersLinks() {
    const QString rec = record_run(dir_.path(), "w.jsonl", "scenarios/write-bw-64k.yaml", {"workload.iterations=50"});
    MainWindow w(all_backends());
    QCOMPARE(w.openRecord(rec), QString());
    QCOMPARE(w.data()->lineRate(), 12.5e9);  // 100 Gb/s
  }

  void badRecordSaysWhere() {
    const QString path = dir_.path() + "/bad.jsonl";
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"type\":\"header\",\"format\":\"rdmalab-record\",\"version\":1}\n{\"type\":\"sample\",\"t\":1,\"link_util\":[[3,1]],\"rank_tx_Bps\":[]}\n");
    f.close();
    MainWindow w(all_backends());
    const QString e = w.openRecord(path);
    QVERIFY2(e.contains("bad.jsonl:2: sample names link 3"), qPrintable(e));
  }

  // The run panel: a form from the scenario, a parameter changed, a simgrid run followed live
  // (samples arrive from the growing record), then the results.
  void runPanelRunsSimgridLive() {
    SKIP_FORK_FROM_THREAD();
    MainWindow w(all_backends());
    RunPanel* p = w.runPanel();
    QCOMPARE(p->loadScenario(kSource + "/scenarios/fat-tree-2to1.yaml"), QString());
    QVERIFY(p->fieldKeys().contains("workload.iterations"));
    QCOMPARE(p->field("workload.iterations"), QString("200"));
    QCOMPARE(p->backend(), QString("simgrid"));
    QVERIFY(p->setField("workload.iterations", "30"));
    QSignalSpy done(p, &RunPanel::finished);
    QVERIFY(p->run());
    QVERIFY(done.wait(120000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    QCOMPARE(w.resultsModel()->rowCount(), 1);
    QCOMPARE(w.resultsModel()->data(w.resultsModel()->index(0, column_of(w.resultsModel(), "#iterations"))).toString(), QString("30"));
    QCOMPARE(w.resultsModel()->data(w.resultsModel()->index(0, column_of(w.resultsModel(), "errors"))).toString(), QString("0"));
    QVERIFY(w.data()->sampleCount() > 10);
    QCOMPARE(static_cast<int>(w.data()->record().topology.nodes.size()), 22);
    QCOMPARE(QString::fromStdString(w.data()->record().status), QString("ok"));
  }

  void runPanelRunsLoopback() {
    MainWindow w(all_backends());
    RunPanel* p = w.runPanel();
    QCOMPARE(p->loadScenario(kSource + "/scenarios/write-bw-64k.yaml"), QString());
    QVERIFY(p->setBackend("loopback"));
    QVERIFY(p->setField("workload.iterations", "50"));
    QSignalSpy done(p, &RunPanel::finished);
    QVERIFY(p->run());
    QVERIFY(done.wait(120000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    QCOMPARE(w.resultsModel()->rowCount(), 1);
    QCOMPARE(QString::fromStdString(w.resultsModel()->rows()[0].backend), QString("loopback"));
  }

  // Bad values: the CLI's error, next to the field it names; nothing runs.
  void badParameterShowsTheErrorAtTheField() {
    MainWindow w(all_backends());
    RunPanel* p = w.runPanel();
    QCOMPARE(p->loadScenario(kSource + "/scenarios/fat-tree-2to1.yaml"), QString());
    QVERIFY(p->setField("workload.size", "64 parsecs"));
    QSignalSpy started(p, &RunPanel::started);
    QVERIFY(!p->run());
    QCOMPARE(started.count(), 0);
    QVERIFY2(p->fieldError("workload.size").contains("workload.size"), qPrintable(p->message()));
    QVERIFY(p->fieldError("workload.iterations").isEmpty());
    // A fabric that does not form the topology: the key is named, the run refused.
    QVERIFY(p->setField("workload.size", "1MiB"));
    QVERIFY(p->setField("fabric.nodes", "12"));
    QVERIFY(!p->run());
    QVERIFY2(p->fieldError("fabric.fat_tree.down").contains("but fabric.nodes is 12"), qPrintable(p->message()));
    // A file that does not parse: the file, line and key.
    const QString bad = dir_.path() + "/bad.yaml";
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("workload:\n  type: write_bw\n  iterationz: 3\n");
    f.close();
    const QString e = p->loadScenario(bad);
    QVERIFY2(e.contains("bad.yaml:3") && e.contains("workload.iterationz"), qPrintable(e));
  }

  // Stop kills the simulation; the panel says so and the record ends as cancelled.
  void stopEndsARun() {
    SKIP_FORK_FROM_THREAD();
    MainWindow w(all_backends());
    RunPanel* p = w.runPanel();
    QCOMPARE(p->loadScenario(kSource + "/scenarios/fat-tree-2to1.yaml"), QString());
    QVERIFY(p->setField("workload.iterations", "10000000"));
    QSignalSpy done(p, &RunPanel::finished);
    QVERIFY(p->run());
    QTRY_VERIFY_WITH_TIMEOUT(w.data()->sampleCount() > 5, 60000);
    p->stop();
    QVERIFY(done.wait(30000));
    QVERIFY(!done.at(0).at(0).toBool());
    QVERIFY2(done.at(0).at(1).toString().contains("stopped by the user"), qPrintable(done.at(0).at(1).toString()));
    QVERIFY(!p->running());
  }

  // A training step as a timeline: compute, each bucket's all-reduce, the exposed tail.
  void trainingStepIsATimeline() {
    auto sc = load_scenario((kSource + "/scenarios/write-bw-64k.yaml").toStdString(),
                            {"workload.type=train_dp", "fabric.nodes=4", "training.model=custom",
                             "training.layers=[1000000,1000000,1000000,1000000,1000000,1000000]", "training.batch=100",
                             "training.gpu_flops=1e12", "training.bucket=4MB", "workload.iterations=2"},
                            full_schema(all_backends()));
    QVERIFY2(sc, sc.status().message().c_str());
    auto backend = all_backends().make("simgrid");
    RunOutcome out = run_scenario(*sc, **backend, RunOptions{});
    QVERIFY2(out.status, out.status.message().c_str());
    ResultChart chart;
    chart.setRows(out.rows);
    QVERIFY2(chart.title().startsWith("Training step, rank 0's last: "), qPrintable(chart.title()));
    QCOMPARE(chart.seriesCount(), 2 + 6 + 1);  // forward, backward, 6 buckets, exposed
  }

  // A sweep's table in the Sweep tab: the plots rdmalab-plot draws, chosen from a list, and the
  // table of every point; a file that is not a sweep is refused saying why.
  void sweepTabShowsThePlotsAndTheTable() {
    const std::vector<SweepAxis> axes{{"fabric.link.bandwidth", {"100Gbps", "400Gbps"}}};
    std::vector<SweepResult> results;
    for (const auto& bw : axes[0].values) {
      auto sc = load_scenario((kSource + "/scenarios/all-reduce-sweep.yaml").toStdString(),
                              {"fabric.link.bandwidth=" + bw, "workload.sizes=[1MiB,4MiB]", "workload.iterations=2"}, full_schema(all_backends()));
      QVERIFY2(sc, sc.status().message().c_str());
      auto backend = all_backends().make("simgrid");
      RunOutcome out = run_scenario(*sc, **backend, RunOptions{});
      QVERIFY2(out.status, out.status.message().c_str());
      SweepResult r;
      r.point.values = {bw};
      r.status = "ok";
      r.rows = out.rows;
      results.push_back(r);
    }
    const QString file = dir_.path() + "/sweep.json";
    QVERIFY(write_file_atomically(file.toStdString(), sweep_json("scenarios/all-reduce-sweep.yaml", "simgrid", false, axes, results)));
    MainWindow w(all_backends());
    QCOMPARE(w.openSweep(dir_.path()), QString());  // the folder: its sweep.json
    QCOMPARE(w.sweepPlots()->count(), 2);
    QCOMPARE(w.sweepPlots()->itemText(0), QString("busbw vs message size, one line per point"));
    QCOMPARE(w.sweepChart()->seriesCount(), 2);  // one line per point
    w.sweepPlots()->setCurrentIndex(1);
    QCOMPARE(w.sweepChart()->title(), QString("busbw vs fabric.link.bandwidth at 4 MiB"));
    QCOMPARE(w.sweepChart()->seriesCount(), 1);
    QCOMPARE(w.sweepModel()->rowCount(), 2 * 2 * 2);  // points x sizes x placements
    QCOMPARE(w.sweepModel()->headerData(0, Qt::Horizontal).toString(), QString("fabric.link.bandwidth"));
    QCOMPARE(w.sweepModel()->data(w.sweepModel()->index(7, 0)).toString(), QString("400Gbps"));
    const QString rec = record_run(dir_.path(), "not-a-sweep.jsonl", "scenarios/fat-tree-2to1.yaml", {"workload.iterations=5"});
    QVERIFY(w.openSweep(rec).contains("not a sweep table"));
    QCOMPARE(w.sweepPlots()->count(), 2);  // the open sweep stays
  }

  // Two runs side by side: the alpha_beta model against the calibrated one, ratio per row.
  void compareTwoRuns() {
    const QString a = record_run(dir_.path(), "ab.jsonl", "scenarios/write-bw-64k.yaml", {"fabric.model=alpha_beta", "workload.iterations=200"});
    const QString b = record_run(dir_.path(), "cal.jsonl", "scenarios/write-bw-64k.yaml", {"fabric.model=calibrated", "workload.iterations=200"});
    MainWindow w(all_backends());
    QCOMPARE(w.openRecord(a), QString());
    QCOMPARE(w.compareWith(b), QString());
    CompareModel* m = w.compareModel();
    QCOMPARE(m->rowCount(), 1);
    const double q = m->ratio(0, "BW average[Gb/sec]");
    auto ra = read_rows(a.toStdString()), rb = read_rows(b.toStdString());
    QVERIFY(ra.is_ok() && rb.is_ok());
    QVERIFY(std::abs(q - (*rb)[0].bw_gbps / (*ra)[0].bw_gbps) < 1e-9);
    QVERIFY2(q < 1.0, "headers and NIC costs make the calibrated model slower");
    // Different kinds cannot be compared.
    const QString lat = record_run(dir_.path(), "lat.jsonl", "scenarios/latency-sweep.yaml", {"workload.iterations=50"});
    QVERIFY(w.compareWith(lat).contains("has bandwidth rows and " + lat + " has latency rows: they do not compare"));
    QVERIFY(w.compareWith(dir_.path() + "/nothing.json").contains("cannot open"));
  }

  void exportJsonAndCsv() {
    const QString rec = record_run(dir_.path(), "lat2.jsonl", "scenarios/latency-sweep.yaml", {"workload.iterations=50"});
    MainWindow w(all_backends());
    QCOMPARE(w.openRecord(rec), QString());
    QVERIFY(w.resultChart()->title().startsWith("Latency histogram"));
    QCOMPARE(w.resultChart()->seriesCount(), 1);
    QCOMPARE(w.exportJson(dir_.path() + "/r.json"), QString());
    auto rows = read_rows((dir_.path() + "/r.json").toStdString());
    QVERIFY2(rows.is_ok(), rows.is_ok() ? "" : rows.status().message().c_str());
    QCOMPARE(rows->size(), w.resultsModel()->rows().size());
    QVERIFY(!(*rows)[0].lat->histogram.empty());
    QCOMPARE(w.exportCsv(dir_.path() + "/r.csv"), QString());
    QFile f(dir_.path() + "/r.csv");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString head = QString::fromUtf8(f.readLine()).trimmed();
    QCOMPARE(head, QString("workload,#bytes,#iterations,t_min[usec],t_max[usec],t_typical[usec],t_avg[usec],t_stdev[usec],99% [usec],99.9% [usec],errors"));
    QCOMPARE(w.exportCsv("/nonexistent-dir/r.csv").contains("cannot write"), true);
  }

  // A 1024-node fat tree: hosts grouped per leaf, every link coloured as utilisation changes.
  void scene1024NodesBuildsAndUpdates() {
    const QString rec = record_run(dir_.path(), "ft1024.jsonl", "scenarios/training/resnet50-1024-fat-tree-2to1.yaml",
                                   {"workload.type=write_bw", "workload.size=4KiB", "workload.iterations=1", "record.interval=1ms"});
    auto r = read_record(rec.toStdString());
    QVERIFY(r.is_ok());
    TopologyScene scene;
    scene.build(r->topology);
    QVERIFY(scene.collapsed());
    int hosts = 0, leaves = 0, spines = 0;
    for (const auto& n : r->topology.nodes) (n.kind == "host" ? hosts : n.tier == 1 ? leaves : spines)++;
    QCOMPARE(hosts, 1024);
    QCOMPARE(leaves, 32);
    QCOMPARE(spines, 16);
    QCOMPARE(scene.drawnNodes(), leaves + leaves + spines);  // a group of 32 hosts under each leaf
    QCOMPARE(scene.drawnLinks(), leaves + leaves * spines);
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<double> util(r->topology.links.size());
    for (auto& x : util) x = u(rng);
    scene.setUtilisation(util, util);
    for (std::size_t i = 0; i < util.size(); ++i) {
      const int d = scene.drawnLinkOf(static_cast<int>(i));
      QVERIFY(d >= 0);
    }
    // A drawn group link is as busy as its busiest member.
    std::vector<double> busy(r->topology.links.size(), 0.0);
    busy[0] = 1.0;
    scene.setUtilisation(busy, busy);
    QCOMPARE(scene.linkColour(scene.drawnLinkOf(0)), TopologyScene::colourFor(1.0));
  }

  // A node of the node model: its sockets, switches, GPUs and NICs, and how each GPU reaches its NIC.
  void nodeInsideShowsTheGpuDirectPaths() {
    const QString near = record_run(dir_.path(), "near.jsonl", "scenarios/gpudirect-paths.yaml",
                                    {"workload.sizes=1MiB", "workload.iterations=5"});
    const QString far = record_run(dir_.path(), "far.jsonl", "scenarios/gpudirect-paths.yaml",
                                   {"workload.sizes=1MiB", "workload.iterations=5", "fabric.node.gpu_nic=[4,5,6,7,0,1,2,3]"});
    MainWindow w(all_backends());
    QCOMPARE(w.openRecord(near), QString());
    const TopoNode& n0 = w.data()->record().topology.nodes[0];
    QCOMPARE(n0.gpus, 8);
    QCOMPARE(n0.gpu_nic, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    w.topologyScene()->selectNode(0);
    QCOMPARE(w.nodeScene()->pairsUnderSwitch(), 8);
    QCOMPARE(w.nodeScene()->pairsAcrossSockets(), 0);
    QCOMPARE(w.openRecord(far), QString());
    w.topologyScene()->selectNode(1);
    QCOMPARE(w.nodeScene()->pairsAcrossSockets(), 8);
    QVERIFY(w.topologyScene()->describeAt(w.topologyScene()->nodeCentre(1)).contains("8 GPUs, 8 NICs"));
  }

  void screenshotWritesAPng() {
    const QString rec = record_run(dir_.path(), "shot.jsonl", "scenarios/write-bw-64k.yaml", {"workload.iterations=100"});
    MainWindow w(all_backends());
    QCOMPARE(w.openRecord(rec), QString());
    w.show();
    const QString png = dir_.path() + "/shot.png";
    QCOMPARE(w.screenshot(png), QString());
    QImage img(png);
    QVERIFY(!img.isNull());
    QVERIFY(img.width() >= 800);
  }

 private:
  QTemporaryDir dir_;
};

QTEST_MAIN(DashboardTest)
#include "dashboard_test.moc"
