#include "charts.h"

#include <QFile>
#include <QGraphicsScene>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>
#include <QVBoxLayout>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>
#include <map>

#include "rdmalab/result_table.h"
#include "run_data.h"

namespace rdmalab::gui {

namespace {

QChartView* make_view(QWidget* parent, QChart* chart) {
  auto* view = new QChartView(chart, parent);
  view->setRenderHint(QPainter::Antialiasing);
  auto* layout = new QVBoxLayout(parent);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(view);
  chart->legend()->setAlignment(Qt::AlignBottom);
  return view;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
struct ThroughputChart::Impl {
  RunData* data = nullptr;
  QChart* chart = nullptr;
  QValueAxis* x = nullptr;
  QValueAxis* y = nullptr;
  QLineSeries* aggregate = nullptr;
  QLineSeries* line_rate = nullptr;
  QLineSeries* cursor = nullptr;
  std::vector<QLineSeries*> extra;
  std::vector<int> ranks, links;
  double xf = 1, yf = 1;  // the axes' units: microseconds and Gb/s times these (refresh picks them)

  // A line series on this chart's time and throughput axes.
  QLineSeries* add_series(const QString& name) {
    auto* s = new QLineSeries();
    s->setName(name);
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
    return s;
  }
};

ThroughputChart::ThroughputChart(RunData* run_data, QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  d_->data = run_data;
  d_->chart = new QChart();
  d_->chart->setTitle(tr("Throughput"));
  d_->x = new QValueAxis();
  d_->x->setTitleText(tr("time [us]"));
  d_->y = new QValueAxis();
  d_->y->setTitleText(tr("Gb/s"));
  d_->chart->addAxis(d_->x, Qt::AlignBottom);
  d_->chart->addAxis(d_->y, Qt::AlignLeft);
  auto add = [this](const QString& name, const QPen& pen) {
    QLineSeries* s = d_->add_series(name);
    s->setPen(pen);
    return s;
  };
  d_->aggregate = add(tr("all ranks"), QPen(QColor(20, 90, 200), 2));
  QPen dashed(QColor(200, 40, 40), 1.5, Qt::DashLine);
  d_->line_rate = add(tr("line rate (sending hosts' links)"), dashed);
  d_->cursor = add(tr("cursor"), QPen(QColor(120, 120, 120), 1, Qt::DotLine));
  make_view(this, d_->chart);
  connect(run_data, &RunData::samplesChanged, this, &ThroughputChart::refresh);
  connect(run_data, &RunData::topologyChanged, this, &ThroughputChart::refresh);
  connect(run_data, &RunData::cursorChanged, this, [this](int c) {
    const auto& s = d_->data->record().samples;
    if (c < 0 || c >= static_cast<int>(s.size())) {
      d_->cursor->clear();
      return;
    }
    const double t = s[static_cast<std::size_t>(c)].t * 1e6 * d_->xf;
    d_->cursor->replace(QList<QPointF>{{t, d_->y->min()}, {t, d_->y->max()}});
  });
}

ThroughputChart::~ThroughputChart() = default;

void ThroughputChart::setSelectedRanks(std::vector<int> ranks) {
  d_->ranks = std::move(ranks);
  refresh();
}
void ThroughputChart::setSelectedLinks(std::vector<int> links) {
  d_->links = std::move(links);
  refresh();
}

void ThroughputChart::refresh() {
  const Record& rec = d_->data->record();
  for (auto* s : d_->extra) {
    d_->chart->removeSeries(s);
    delete s;
  }
  d_->extra.clear();
  // Long runs have many samples: draw at most about 2000 points per series (each the mean of
  // the samples it stands for), which keeps a redraw well under a frame.
  const std::size_t n = rec.samples.size();
  const std::size_t stride = std::max<std::size_t>(1, n / 2000);
  auto series_of = [&](auto value) {
    QList<QPointF> pts;
    pts.reserve(static_cast<qsizetype>(n / stride + 1));
    for (std::size_t i = 0; i < n; i += stride) {
      double sum = 0;
      std::size_t k = 0;
      for (; k < stride && i + k < n; ++k) sum += value(i + k);
      pts.append({rec.samples[i + k - 1].t * 1e6, sum / static_cast<double>(k)});
    }
    return pts;
  };
  // Every series in us and Gb/s first; then the axes take readable units (ms or s, Tb/s or
  // Mb/s: rdmalab/sweep_plot.h's readable_scale) and the points are scaled to them.
  std::vector<std::pair<QString, QList<QPointF>>> extra;
  QList<QPointF> agg = series_of([&](std::size_t i) { return d_->data->aggregateTx(static_cast<int>(i)) * 8 / 1e9; });
  const double t0 = n ? rec.samples.front().t * 1e6 : 0, t1 = n ? rec.samples.back().t * 1e6 : 1;
  const double rate = d_->data->lineRate() * 8 / 1e9;
  for (int r : d_->ranks) {
    if (r < 0 || r >= rec.ranks) continue;
    extra.emplace_back(tr("rank %1").arg(r), series_of([&](std::size_t i) {
                         const auto& tx = rec.samples[i].rank_tx_Bps;
                         return static_cast<std::size_t>(r) < tx.size() ? tx[static_cast<std::size_t>(r)] * 8 / 1e9 : 0.0;
                       }));
  }
  for (int l : d_->links) {
    if (l < 0 || l >= static_cast<int>(rec.topology.links.size())) continue;
    const double bw = rec.topology.links[static_cast<std::size_t>(l)].bandwidth_Bps * 8 / 1e9;
    extra.emplace_back(QString::fromStdString(rec.topology.links[static_cast<std::size_t>(l)].name), series_of([&](std::size_t i) {
                         for (auto [k, u] : rec.samples[i].link_util)
                           if (k == l) return u * bw;
                         return 0.0;
                       }));
  }
  double ymax = std::max(rate, 1e-9);
  for (const auto& p : agg) ymax = std::max(ymax, p.y());
  for (const auto& [name, pts] : extra)
    for (const auto& p : pts) ymax = std::max(ymax, p.y());
  const Scale ys = readable_scale(ymax, "Gb/s"), xs = readable_scale(std::max(std::abs(t0), std::abs(t1)), "us");
  d_->xf = xs.factor;
  d_->yf = ys.factor;
  d_->x->setTitleText(tr("time [%1]").arg(QString::fromStdString(xs.unit)));
  d_->y->setTitleText(QString::fromStdString(ys.unit));
  auto scaled = [&](QList<QPointF> pts) {
    for (auto& p : pts) p = {p.x() * xs.factor, p.y() * ys.factor};
    return pts;
  };
  d_->aggregate->replace(scaled(agg));
  if (rate > 0)
    d_->line_rate->replace(scaled(QList<QPointF>{{t0, rate}, {t1, rate}}));
  else
    d_->line_rate->clear();
  for (auto& [name, pts] : extra) {
    QLineSeries* s = d_->add_series(name);
    s->replace(scaled(pts));
    d_->extra.push_back(s);
  }
  d_->x->setRange(t0 * xs.factor, std::max(t1, t0 + 1e-3) * xs.factor);
  d_->y->setRange(0, ymax * 1.1 * ys.factor);
  d_->x->applyNiceNumbers();
  d_->y->applyNiceNumbers();
  const int c = d_->data->cursor();
  if (c >= 0 && c < static_cast<int>(n)) {
    const double t = rec.samples[static_cast<std::size_t>(c)].t * 1e6 * xs.factor;
    d_->cursor->replace(QList<QPointF>{{t, 0}, {t, d_->y->max()}});
  } else {
    d_->cursor->clear();
  }
}

int ThroughputChart::seriesCount() const { return static_cast<int>(d_->chart->series().size()); }
int ThroughputChart::aggregatePoints() const { return static_cast<int>(d_->aggregate->count()); }
QString ThroughputChart::xTitle() const { return d_->x->titleText(); }
QString ThroughputChart::yTitle() const { return d_->y->titleText(); }
double ThroughputChart::aggregateMax() const {
  double m = 0;
  for (const auto& p : d_->aggregate->points()) m = std::max(m, p.y());
  return m;
}

// ---------------------------------------------------------------------------------------------
struct HostChart::Impl {
  RunData* data = nullptr;
  QChart* chart = nullptr;
  QValueAxis* x = nullptr;
  QValueAxis* y = nullptr;
  std::vector<QLineSeries*> series;
  bool has = false;
};

HostChart::HostChart(RunData* run_data, QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  d_->data = run_data;
  d_->chart = new QChart();
  d_->chart->setTitle(tr("Host: CPU per rank process, GPU busy"));
  d_->x = new QValueAxis();
  d_->x->setTitleText(tr("time [s]"));
  d_->y = new QValueAxis();
  d_->y->setTitleText(tr("cores (CPU) / fraction busy (GPU)"));
  d_->chart->addAxis(d_->x, Qt::AlignBottom);
  d_->chart->addAxis(d_->y, Qt::AlignLeft);
  make_view(this, d_->chart);
  connect(run_data, &RunData::samplesChanged, this, &HostChart::refresh);
}

HostChart::~HostChart() = default;

void HostChart::refresh() {
  const Record& rec = d_->data->record();
  for (auto* s : d_->series) {
    d_->chart->removeSeries(s);
    delete s;
  }
  d_->series.clear();
  const std::size_t n = rec.samples.size();
  const std::size_t stride = std::max<std::size_t>(1, n / 2000);  // as the throughput chart: about 2000 points a series
  std::map<QString, QList<QPointF>> lines;
  for (std::size_t i = 0; i < n; i += stride) {
    std::map<QString, double> sum;
    std::size_t k = 0;
    for (; k < stride && i + k < n; ++k) {
      const Sample& smp = rec.samples[i + k];
      for (std::size_t r = 0; r < smp.rank_cpu.size(); ++r) sum[tr("rank %1 CPU").arg(r)] += smp.rank_cpu[r];
      for (const auto& g : smp.gpu) sum[tr("GPU %1 busy").arg(g.index)] += g.util;
    }
    const double t = rec.samples[i + k - 1].t;
    for (const auto& [name, v] : sum) lines[name].append({t, v / static_cast<double>(k)});
  }
  double ymax = 1;
  for (const auto& [name, pts] : lines) {
    auto* s = new QLineSeries();
    s->setName(name);
    d_->chart->addSeries(s);
    s->attachAxis(d_->x);
    s->attachAxis(d_->y);
    s->replace(pts);
    for (const auto& p : pts) ymax = std::max(ymax, p.y());
    d_->series.push_back(s);
  }
  const double t1 = n ? rec.samples.back().t : 1;
  d_->x->setRange(0, std::max(t1, 1e-3));
  d_->y->setRange(0, ymax * 1.1);
  d_->x->applyNiceNumbers();
  const bool has = !lines.empty();
  if (has != d_->has) {
    d_->has = has;
    emit hasDataChanged(has);
  }
}

bool HostChart::hasData() const { return d_->has; }

QStringList HostChart::seriesNames() const {
  QStringList out;
  for (auto* s : d_->series) out << s->name();
  return out;
}

double HostChart::seriesMax(const QString& name) const {
  double m = -1;
  for (auto* s : d_->series)
    if (s->name() == name)
      for (const auto& p : s->points()) m = std::max(m, p.y());
  return m;
}

// ---------------------------------------------------------------------------------------------
struct ResultChart::Impl {
  QChartView* view = nullptr;
};

ResultChart::ResultChart(QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  d_->view = make_view(this, new QChart());
}

ResultChart::~ResultChart() = default;

void ResultChart::setRows(const std::vector<ResultRow>& rows) {
  auto* chart = new QChart();
  chart->legend()->setAlignment(Qt::AlignBottom);
  const std::string kind = rows.empty() ? std::string() : result_kind(rows.front());
  if (kind == "latency") {
    // The histogram of the first size's samples (perftest latency runs are usually one size).
    const ResultRow* r = nullptr;
    for (const auto& row : rows)
      if (row.lat && !row.lat->histogram.empty()) {
        r = &row;
        break;
      }
    chart->setTitle(r ? tr("Latency histogram, %1 B (%2 iterations)").arg(r->bytes).arg(r->iterations) : tr("Latency: no histogram in these rows"));
    if (r) {
      auto* set = new QBarSet(tr("samples"));
      QStringList cats;
      const auto& h = r->lat->histogram;
      const double w = (r->lat->p999_us - r->lat->min_us) / static_cast<double>(h.size());
      for (std::size_t i = 0; i < h.size(); ++i) {
        *set << static_cast<double>(h[i]);
        cats << QString::number(r->lat->min_us + w * (static_cast<double>(i) + 0.5), 'f', 2);
      }
      auto* series = new QBarSeries();
      series->append(set);
      series->setBarWidth(1.0);
      chart->addSeries(series);
      auto* x = new QBarCategoryAxis();
      x->append(cats);
      x->setTitleText(tr("latency [us] (bin centre)"));
      x->setLabelsAngle(-90);
      auto* y = new QValueAxis();
      y->setTitleText(tr("samples"));
      chart->addAxis(x, Qt::AlignBottom);
      chart->addAxis(y, Qt::AlignLeft);
      series->attachAxis(x);
      series->attachAxis(y);
      chart->legend()->hide();
    }
  } else if (kind == "collective" || kind == "bandwidth") {
    chart->setTitle(kind == "collective" ? tr("busbw per size") : tr("Bandwidth per size"));
    // Sizes on a log2 axis labelled 1 KiB, 1 MiB … (as a sweep's plots label them).
    auto* x = new QCategoryAxis();
    x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    x->setLabelsAngle(-45);
    x->setTitleText(tr("message size (bytes)"));
    auto* y = new QValueAxis();
    y->setTitleText(kind == "collective" ? tr("busbw [GB/s]") : tr("BW average [Gb/s]"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    std::map<QString, QLineSeries*> by_name;
    double ymax = 1, xmin = 1e30, xmax = -1e30;
    for (const auto& r : rows) {
      if (result_kind(r) != kind || r.bytes == 0) continue;
      QString name = QString::fromStdString(r.workload);
      double v = r.bw_gbps;
      if (kind == "collective") {
        auto p = r.notes.find("placement");
        if (p != r.notes.end()) name += " " + QString::fromStdString(p->second);
        v = r.extra.at("busbw_gbps");
      }
      auto& s = by_name[name];
      if (!s) {
        s = new QLineSeries();
        s->setName(name);
        s->setPointsVisible(true);
        chart->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
      }
      const double lb = std::log2(static_cast<double>(r.bytes));
      s->append(lb, v);
      ymax = std::max(ymax, v);
      xmin = std::min(xmin, lb);
      xmax = std::max(xmax, lb);
    }
    if (xmin > xmax) xmin = xmax = 0;
    const int lo = static_cast<int>(std::floor(xmin)), hi = static_cast<int>(std::ceil(xmax));
    const int step = std::max(1, (hi - lo + 11) / 12);  // at most about 12 labels
    for (int e = lo; e <= hi; e += step) x->append(QString::fromStdString(size_tick_label(e)), e);
    x->setRange(lo - 0.5, hi + 0.5);
    y->setRange(0, ymax * 1.15);
  } else if (kind == "training" && rows.front().notes.count("timeline")) {
    // The step as a timeline (rank 0's last timed step): compute phases, each collective from
    // its launch to its end, and the part of the step nothing hides.
    const ResultRow& r = rows.front();
    struct Ph {
      QString name;
      double start, end;
    };
    std::vector<Ph> phases;
    for (const QString& part : QString::fromStdString(r.notes.at("timeline")).split(';', Qt::SkipEmptyParts)) {
      const QStringList w = part.split(' ', Qt::SkipEmptyParts);
      if (w.size() < 3) continue;
      phases.push_back({w.mid(0, w.size() - 2).join(' '), w[w.size() - 2].toDouble(), w.back().toDouble()});
    }
    // One lane per collective (a DDP bucket's all-reduce, an FSDP unit's all-gather or
    // reduce-scatter: the same name twice is the same unit's, on the same lane), in the order
    // they first appear.
    auto is_comm = [](const QString& name) { return name != "forward" && name != "backward" && name != "exposed"; };
    std::vector<QString> lanes;
    for (const auto& ph : phases)
      if (is_comm(ph.name) && std::find(lanes.begin(), lanes.end(), ph.name) == lanes.end()) lanes.push_back(ph.name);
    const int comm_lanes = static_cast<int>(lanes.size());
    const double exposed = r.extra.count("exposed_ms") ? r.extra.at("exposed_ms") : 0;
    chart->setTitle(tr("Training step, rank 0's last: %1 ms, %2 ms of it exposed communication")
                        .arg(phases.empty() ? 0.0 : phases.back().end, 0, 'f', 3)
                        .arg(exposed, 0, 'f', 3));
    auto* x = new QValueAxis();
    x->setTitleText(tr("time in the step [ms]"));
    auto* y = new QCategoryAxis();
    y->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    y->append(tr("compute"), 0);
    for (int b = 0; b < comm_lanes; ++b) y->append(lanes[static_cast<std::size_t>(b)], b + 1);
    y->append(tr("exposed"), comm_lanes + 1);
    y->setRange(-0.7, comm_lanes + 1.7);
    y->setReverse(true);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    const int thick = std::max(3, std::min(18, 300 / (comm_lanes + 2)));
    std::map<QString, bool> shown;
    double tmax = 0;
    for (const auto& ph : phases) {
      const bool gather = ph.name.startsWith("gather"), scatter = ph.name.startsWith("scatter");
      const QString kind_name = gather                           ? tr("parameter all-gather")
                                : scatter                        ? tr("gradient reduce-scatter")
                                : ph.name.startsWith("bucket") ? tr("gradient all-reduce")
                                                                 : ph.name;
      const double lane = is_comm(ph.name) ? static_cast<double>(std::find(lanes.begin(), lanes.end(), ph.name) - lanes.begin()) + 1
                          : ph.name == "exposed" ? comm_lanes + 1
                                                 : 0;
      const QColor colour = ph.name == "forward"    ? QColor(40, 110, 210)
                            : ph.name == "backward" ? QColor(60, 160, 80)
                            : ph.name == "exposed"  ? QColor(210, 50, 50)
                            : gather                ? QColor(140, 80, 190)
                                                    : QColor(230, 140, 30);
      auto* s = new QLineSeries();
      s->setName(kind_name);
      s->setPen(QPen(colour, thick, Qt::SolidLine, Qt::FlatCap));
      s->append(ph.start, lane);
      s->append(ph.end, lane);
      chart->addSeries(s);
      s->attachAxis(x);
      s->attachAxis(y);
      // One legend entry per kind of phase.
      if (shown[kind_name])
        for (auto* m : chart->legend()->markers(s)) m->setVisible(false);
      shown[kind_name] = true;
      tmax = std::max(tmax, ph.end);
    }
    x->setRange(0, tmax > 0 ? tmax * 1.02 : 1);
    x->applyNiceNumbers();
  } else {
    chart->setTitle(rows.empty() ? tr("No results yet") : tr("Training step: see the table"));
  }
  QChart* old = d_->view->chart();
  d_->view->setChart(chart);
  delete old;
}

QString ResultChart::title() const { return d_->view->chart()->title(); }
int ResultChart::seriesCount() const { return static_cast<int>(d_->view->chart()->series().size()); }

// ---------------------------------------------------------------------------------------------
namespace {

// A new chart of the plot: its series, axes (titles with units) and legend.
QChart* plot_chart(const Plot& plot) {
  auto* chart = new QChart();
  chart->setTitle(QString::fromStdString(plot.title));
  // Long legends (a point's every varied key) go to the right, where they are not cut short.
  std::size_t longest = 0;
  for (const auto& l : plot.lines) longest = std::max(longest, l.name.size());
  const bool right = plot.lines.size() > 4 || longest * plot.lines.size() > 80;
  chart->legend()->setAlignment(right ? Qt::AlignRight : Qt::AlignBottom);
  if (plot.lines.size() == 1) chart->legend()->hide();
  auto* y = new QValueAxis();
  y->setTitleText(QString::fromStdString(plot.y_title));
  auto* x = new QCategoryAxis();
  x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  x->setTitleText(QString::fromStdString(plot.x_title));
  double xmin = 1e300, xmax = -1e300, ymax = 0;
  for (const auto& l : plot.lines)
    for (std::size_t i = 0; i < l.x.size(); ++i) {
      xmin = std::min(xmin, l.x[i]);
      xmax = std::max(xmax, l.x[i]);
      ymax = std::max(ymax, l.y[i]);
    }
  if (plot.x_is_size) {
    // One tick per power of two present, thinned to at most 12 labels.
    const int lo = static_cast<int>(std::floor(xmin)), hi = static_cast<int>(std::ceil(xmax));
    const int step = std::max(1, (hi - lo + 11) / 12);
    for (int e = lo; e <= hi; e += step) x->append(QString::fromStdString(size_tick_label(e)), e);
    x->setRange(lo - 0.3, hi + 0.3);
    x->setLabelsAngle(-45);
  } else {
    for (std::size_t i = 0; i < plot.x_categories.size(); ++i)
      x->append(QString::fromStdString(plot.x_categories[i]), static_cast<double>(i));
    xmin = -0.3;
    xmax = static_cast<double>(plot.x_categories.size()) - 0.7;
    x->setRange(xmin, xmax);
  }
  y->setRange(0, ymax > 0 ? ymax * 1.12 : 1);
  y->applyNiceNumbers();
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (const auto& l : plot.lines) {
    auto* s = new QLineSeries();
    s->setName(QString::fromStdString(l.name));
    s->setPointsVisible(true);
    for (std::size_t i = 0; i < l.x.size(); ++i) s->append(l.x[i], l.y[i]);
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }
  return chart;
}

}  // namespace

struct PlotChart::Impl {
  QChartView* view = nullptr;
};

PlotChart::PlotChart(QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  auto* empty = new QChart();
  empty->setTitle(tr("No sweep open"));
  d_->view = make_view(this, empty);
}

PlotChart::~PlotChart() = default;

void PlotChart::setPlot(const Plot& plot) {
  QChart* old = d_->view->chart();
  d_->view->setChart(plot_chart(plot));
  delete old;
}

QString PlotChart::title() const { return d_->view->chart()->title(); }
int PlotChart::seriesCount() const { return static_cast<int>(d_->view->chart()->series().size()); }

QString writePlotFiles(const Plot& plot, const QString& stem, int width, int height) {
  QGraphicsScene scene;
  QChart* chart = plot_chart(plot);
  scene.addItem(chart);  // the scene owns it
  chart->setGeometry(0, 0, width, height);
  const QRectF area(0, 0, width, height);
  auto commit = [](const QString& tmp, const QString& path) -> QString {
    QFile::remove(path);
    if (!QFile::rename(tmp, path)) {
      QFile::remove(tmp);
      return QString("%1: cannot write (rename from %2 failed)").arg(path, tmp);
    }
    return {};
  };

  QImage image(width, height, QImage::Format_ARGB32);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    scene.render(&painter, area, area);
  }
  const QString png = stem + ".png", png_tmp = stem + ".png.part";
  if (!image.save(png_tmp, "PNG")) {
    QFile::remove(png_tmp);
    return QString("%1: cannot write").arg(png);
  }
  if (QString e = commit(png_tmp, png); !e.isEmpty()) return e;

  const QString svg = stem + ".svg", svg_tmp = stem + ".svg.part";
  QSvgGenerator gen;
  gen.setFileName(svg_tmp);
  gen.setSize(QSize(width, height));
  gen.setViewBox(area);
  gen.setTitle(QString::fromStdString(plot.title));
  gen.setDescription(QStringLiteral("rdmalab sweep plot"));
  {
    QPainter painter;
    if (!painter.begin(&gen)) return QString("%1: cannot write").arg(svg);
    scene.render(&painter, area, area);
    painter.end();
  }
  return commit(svg_tmp, svg);
}

}  // namespace rdmalab::gui
