// Dashboard speed (a benchmark, not a test): the time to build the scene of a 1024-node fat tree
// and the time of one update with every link changing, drawn into an image the size of the
// window. Target: ≤ 16 ms per update. Run: QT_QPA_PLATFORM=offscreen build/bench/dashboard_bench
#include <QApplication>
#include <QImage>
#include <QPainter>
#include <QSlider>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "backends.h"
#include "main_window.h"
#include "rdmalab/record.h"
#include "rdmalab/run.h"
#include "run_data.h"
#include "topology_scene.h"

using namespace rdmalab;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  // The cluster: a 1024-node two-level fat tree (32 leaves of 32 hosts, 16 spines, 2:1), from a
  // real SimGrid run's record.
  const std::string path = "/tmp/rdmalab-dashboard-bench.jsonl";
  {
    auto sc = parse_scenario(
        "backend: simgrid\nfabric: { topology: fat_tree, nodes: 1024, model: alpha_beta, link: { bandwidth: 200Gbps, latency: 1us },\n"
        "  fat_tree: { levels: 2, down: [32, 32], up: [1, 16], parallel: [1, 1] } }\n"
        "workload: { type: write_bw, size: 4KiB, iterations: 1 }\nrecord: { interval: 1ms }\n",
        "bench.yaml", {}, full_schema(all_backends()));
    if (!sc) return std::fprintf(stderr, "%s\n", sc.status().message().c_str()), 1;
    auto backend = all_backends().make("simgrid");
    RunOptions opt;
    opt.record_path = path;
    RunOutcome out = run_scenario(*sc, **backend, opt);
    if (!out.status) return std::fprintf(stderr, "%s\n", out.status.message().c_str()), 1;
  }
  auto rec = read_record(path);
  if (!rec) return std::fprintf(stderr, "%s\n", rec.status().message().c_str()), 1;
  const std::size_t links = rec->topology.links.size();

  std::vector<double> build;
  for (int i = 0; i < 5; ++i) {
    gui::TopologyScene scene;
    auto t0 = Clock::now();
    scene.build(rec->topology);
    build.push_back(ms_since(t0));
  }

  // Updates: every link gets a new utilisation, then the scene is drawn into a window-sized image.
  gui::TopologyScene scene;
  scene.build(rec->topology);
  QImage img(1400, 900, QImage::Format_ARGB32_Premultiplied);
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> util(links), update, draw;
  for (int f = 0; f < 100; ++f) {
    for (auto& x : util) x = u(rng);
    auto t0 = Clock::now();
    scene.setUtilisation(util, util);
    update.push_back(ms_since(t0));
    t0 = Clock::now();
    img.fill(Qt::white);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    scene.render(&p);
    p.end();
    draw.push_back(ms_since(t0));
  }

  // The whole window stepping through a replay: 200 samples, each with every link changed.
  Record r = *rec;
  r.samples.clear();
  for (int s = 0; s < 200; ++s) {
    Sample smp;
    smp.t = s * 1e-5;
    for (std::size_t l = 0; l < links; ++l) smp.link_util.emplace_back(static_cast<int>(l), u(rng));
    smp.rank_tx_Bps.assign(1024, 1e9);
    r.samples.push_back(std::move(smp));
  }
  gui::MainWindow w(all_backends());
  w.data()->setRecord(r, "bench");
  w.show();
  app.processEvents();
  std::vector<double> step;
  for (int s = 0; s < 200; ++s) {
    auto t0 = Clock::now();
    w.timeline()->setValue(s);
    w.grab();  // paints every widget: topology, links table, chart
    step.push_back(ms_since(t0));
  }

  std::printf("dashboard, 1024-node fat tree: %zu topology nodes, %zu links, drawn as %d nodes and %d links (hosts grouped)\n",
              rec->topology.nodes.size(), links, scene.drawnNodes(), scene.drawnLinks());
  std::printf("  scene build                          median %8.2f ms (5 builds)\n", median(build));
  std::printf("  update, every link changed           median %8.3f ms  max %8.3f ms (100 updates)\n", median(update),
              *std::max_element(update.begin(), update.end()));
  std::printf("  draw the scene, 1400x900             median %8.3f ms  max %8.3f ms\n", median(draw), *std::max_element(draw.begin(), draw.end()));
  std::printf("  per frame (update + draw)            median %8.3f ms  (target <= 16 ms: %s)\n", median(update) + median(draw),
              median(update) + median(draw) <= 16 ? "met" : "NOT met");
  std::printf("  whole window, one replay step        median %8.3f ms  max %8.3f ms (200 steps: cursor, scene, links table, chart, paint)\n",
              median(step), *std::max_element(step.begin(), step.end()));
  return 0;
}
