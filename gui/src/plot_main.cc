// rdmalab-plot: a sweep's plots (rdmalab/sweep_plot.h) as PNG and SVG files, drawn with the
// dashboard's Qt Charts off screen. `rdmalab sweep` runs it after writing its table.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <cstdio>

#include "charts.h"
#include "rdmalab/sweep_plot.h"

int main(int argc, char** argv) {
  // Qt's notes about its own set-up (XDG_RUNTIME_DIR) are not the user's business; the rest is.
  static const QtMessageHandler qt_default = qInstallMessageHandler(nullptr);
  qInstallMessageHandler([](QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
    if (type == QtWarningMsg && msg.startsWith("QStandardPaths:")) return;
    qt_default(type, ctx, msg);
  });
  // No window is shown: draw off screen unless the user chose a platform.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setApplicationName("rdmalab-plot");
  QCommandLineParser p;
  p.setApplicationDescription(
      "A sweep's plots as PNG and SVG: the measure against message size (one line per point) and\n"
      "against each varied key (one line per combination of the others).\n"
      "Example:\n"
      "  rdmalab-plot sweep-ar/sweep.json --out sweep-ar/plots");
  p.addHelpOption();
  p.addPositionalArgument("sweep", "a sweep's table (DIR/sweep.json) or its folder DIR");
  QCommandLineOption out("out", "the folder for the files (default: plots/ beside the table)", "DIR");
  QCommandLineOption measure("measure", "the column to plot (default: busbw, BW average, t_typical or step)", "COLUMN");
  QCommandLineOption size("size", "the image size in pixels (default 1000x640)", "WxH", "1000x640");
  p.addOptions({out, measure, size});
  p.process(app);

  auto fail = [](int code, const QString& what) {
    std::fprintf(stderr, "rdmalab-plot: %s\n", what.toLocal8Bit().constData());
    return code;
  };
  if (p.positionalArguments().size() != 1) return fail(2, "give one sweep table (DIR/sweep.json) or its folder");
  QString path = p.positionalArguments().first();
  if (QFileInfo(path).isDir()) path = QDir(path).filePath("sweep.json");
  const QStringList wh = p.value(size).split('x');
  bool okw = false, okh = false;
  const int w = wh.size() == 2 ? wh[0].toInt(&okw) : 0, h = wh.size() == 2 ? wh[1].toInt(&okh) : 0;
  if (!okw || !okh || w < 200 || h < 150 || w > 8000 || h > 8000)
    return fail(2, QString("--size %1: give WIDTHxHEIGHT in pixels, 200x150 to 8000x8000").arg(p.value(size)));

  auto sweep = rdmalab::read_sweep(path.toStdString());
  if (!sweep) return fail(sweep.status().code() == rdmalab::Errc::io ? 1 : 2, QString::fromStdString(sweep.status().message()));
  rdmalab::PlotOptions opt;
  opt.measure = p.value(measure).toStdString();
  auto plots = rdmalab::sweep_plots(*sweep, opt);
  if (!plots) return fail(2, QString::fromStdString(plots.status().message()));

  const QString dir = p.isSet(out) ? p.value(out) : QFileInfo(path).dir().filePath("plots");
  if (!QDir().mkpath(dir)) return fail(1, QString("%1: cannot create the folder").arg(dir));
  for (const auto& plot : *plots) {
    const QString stem = QDir(dir).filePath(QString::fromStdString(plot.id));
    const QString e = rdmalab::gui::writePlotFiles(plot, stem, w, h);
    if (!e.isEmpty()) return fail(1, e);
    std::printf("%s.png %s.svg  %s\n", stem.toLocal8Bit().constData(), stem.toLocal8Bit().constData(), plot.title.c_str());
  }
  return 0;
}
