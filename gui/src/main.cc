// rdmalab-dashboard: the Qt6 dashboard. The only file of the GUI that sees the backend registry
// (like the CLI's main): the window itself talks to core.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QSlider>
#include <QTimer>
#include <cstdio>

#include "backends.h"
#include "main_window.h"
#include "run_data.h"
#include "run_panel.h"
#ifdef RDMALAB_HAVE_CUDA
#include "rdmalab/gpu.h"
#endif

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("rdmalab-dashboard");
  QCommandLineParser p;
  p.setApplicationDescription(
      "The rdmalab dashboard: a cluster's topology and throughput, live and replayed.\n"
      "Examples:\n"
      "  rdmalab-dashboard scenarios/fat-tree-2to1.yaml\n"
      "  rdmalab-dashboard --replay run.jsonl --screenshot topology.png");
  p.addHelpOption();
  p.addPositionalArgument("scenario", "a scenario file to load into the run panel");
  QCommandLineOption replay("replay", "open a record written by `rdmalab run --record FILE`", "RUN");
  QCommandLineOption compare("compare", "a second run (record or --json results) to compare with", "RUN");
  QCommandLineOption backend("backend", "the backend to select in the run panel", "NAME");
  QCommandLineOption set("set", "a form field, as KEY=VALUE (repeatable)", "KEY=VALUE");
  QCommandLineOption run("run", "run the loaded scenario at start");
  QCommandLineOption sweep("sweep", "open a sweep's table (rdmalab sweep's DIR/sweep.json) in the Sweep tab", "SWEEP");
  QCommandLineOption tab("tab", "the tab to show: topology, charts, results or sweep", "TAB", "topology");
  QCommandLineOption cursor("cursor", "with --replay: the sample to show (0 = first; default the last)", "N");
  QCommandLineOption shot("screenshot", "write a PNG of the window and exit (after --run has finished)", "FILE");
  p.addOptions({replay, compare, sweep, backend, set, run, tab, cursor, shot});
  p.process(app);

  auto fail = [](const QString& what) {
    std::fprintf(stderr, "rdmalab-dashboard: %s\n", what.toLocal8Bit().constData());
    return 2;
  };
  const QString t = p.value(tab);
  if (t != "topology" && t != "charts" && t != "results" && t != "sweep")
    return fail(QString("--tab %1: use topology, charts, results or sweep").arg(t));
  if (p.positionalArguments().size() > 1) return fail("give at most one scenario file");
  if (p.isSet(run) && p.positionalArguments().isEmpty()) return fail("--run needs a scenario file");

#ifdef RDMALAB_HAVE_CUDA
  rdmalab::gpu::install();
#endif
  rdmalab::gui::MainWindow w(rdmalab::all_backends());
  if (!p.positionalArguments().isEmpty()) {
    const QString e = w.runPanel()->loadScenario(p.positionalArguments().first());
    if (!e.isEmpty()) return fail(e);
  }
  if (p.isSet(backend) && !w.runPanel()->setBackend(p.value(backend)))
    return fail(QString("--backend %1: not a backend usable here (see `rdmalab list`)").arg(p.value(backend)));
  for (const QString& kv : p.values(set)) {
    const int eq = kv.indexOf('=');
    if (eq <= 0 || !w.runPanel()->setField(kv.left(eq), kv.mid(eq + 1)))
      return fail(QString("--set %1: not KEY=VALUE with a KEY of the form (%2)").arg(kv, w.runPanel()->fieldKeys().join(", ")));
  }
  if (p.isSet(replay)) {
    const QString e = w.openRecord(p.value(replay));
    if (!e.isEmpty()) return fail(e);
    if (p.isSet(cursor)) {
      bool ok = false;
      const int c = p.value(cursor).toInt(&ok);
      if (!ok || c < 0 || c >= w.data()->sampleCount())
        return fail(QString("--cursor %1: the record has samples 0 to %2").arg(p.value(cursor)).arg(w.data()->sampleCount() - 1));
      w.timeline()->setValue(c);
    }
  }
  if (p.isSet(compare)) {
    const QString e = w.compareWith(p.value(compare));
    if (!e.isEmpty()) return fail(e);
  }
  if (p.isSet(sweep)) {
    const QString e = w.openSweep(p.value(sweep));
    if (!e.isEmpty()) return fail(e);
  }
  w.showTab(p.isSet(sweep) && !p.isSet(tab) ? QString("sweep") : t);
  w.show();

  int status = 0;
  auto take_screenshot = [&] {
    if (!p.isSet(shot)) return;
    // Let the layout settle at its final size before grabbing.
    QTimer::singleShot(300, &app, [&] {
      w.showTab(p.isSet(sweep) && !p.isSet(tab) ? QString("sweep") : t);
      const QString e = w.screenshot(p.value(shot));
      if (!e.isEmpty()) {
        std::fprintf(stderr, "rdmalab-dashboard: %s\n", e.toLocal8Bit().constData());
        status = 1;
      }
      app.exit(status);
    });
  };
  if (p.isSet(run)) {
    QObject::connect(w.runPanel(), &rdmalab::gui::RunPanel::finished, &app,
                     [&](bool ok, const QString& msg, const std::vector<rdmalab::ResultRow>&) {
                       if (!ok) {
                         std::fprintf(stderr, "rdmalab-dashboard: run failed: %s\n", msg.toLocal8Bit().constData());
                         status = 1;
                       }
                       take_screenshot();
                     });
    if (!w.runPanel()->run()) return fail(w.runPanel()->message());
  } else {
    take_screenshot();
  }
  const int rc = app.exec();
  return status ? status : rc;
}
