#include "models.h"

#include <QBrush>
#include <QColor>
#include <cmath>

#include "run_data.h"

namespace rdmalab::gui {

// ---------------------------------------------------------------------------------------------
LinkTableModel::LinkTableModel(RunData* data, QObject* parent) : QAbstractTableModel(parent), data_(data) {
  connect(data_, &RunData::topologyChanged, this, [this] {
    beginResetModel();
    endResetModel();
  });
  connect(data_, &RunData::cursorChanged, this, [this] {
    if (rowCount() > 0) emit dataChanged(index(0, Now), index(rowCount() - 1, Peak));
  });
}

int LinkTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(data_->record().topology.links.size());
}
int LinkTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LinkTableModel::data(const QModelIndex& index, int role) const {
  const auto& topo = data_->record().topology;
  if (!index.isValid() || index.row() >= static_cast<int>(topo.links.size())) return {};
  const auto r = static_cast<std::size_t>(index.row());
  const TopoLink& l = topo.links[r];
  auto end = [&](int i) -> QString {
    if (l.ends.size() != 2) return QStringLiteral("?");
    return QString::fromStdString(topo.nodes[static_cast<std::size_t>(l.ends[static_cast<std::size_t>(i)])].name);
  };
  const double now = r < data_->linkUtil().size() ? data_->linkUtil()[r] : 0;
  const double peak = r < data_->linkPeak().size() ? data_->linkPeak()[r] : 0;
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Name: return QString::fromStdString(l.name);
      case From: return end(0);
      case To: return end(1);
      case Bandwidth: return QString::number(l.bandwidth_Bps * 8 / 1e9, 'f', 1);
      case Latency: return QString::number(l.latency_s * 1e6, 'f', 3);
      case Now: return QString::number(100 * now, 'f', 1);
      case Peak: return QString::number(100 * peak, 'f', 1);
      default: return {};
    }
  }
  if (role == Qt::UserRole) {  // numbers, for sorting and tests
    switch (index.column()) {
      case Bandwidth: return l.bandwidth_Bps;
      case Latency: return l.latency_s;
      case Now: return now;
      case Peak: return peak;
      default: return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() >= Bandwidth) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant LinkTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  static const char* names[] = {"link", "from", "to", "Gb/s", "latency [us]", "now [%]", "peak [%]"};
  return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

// ---------------------------------------------------------------------------------------------
void ResultsModel::setRows(const std::vector<ResultRow>& rows) {
  beginResetModel();
  rows_ = rows;
  table_ = result_table(rows);
  endResetModel();
}

void ResultsModel::setTable(const ResultTable& table) {
  beginResetModel();
  rows_.clear();
  table_ = table;
  endResetModel();
}

int ResultsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(table_.cells.size()); }
int ResultsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(table_.columns.size()); }

QVariant ResultsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const auto r = static_cast<std::size_t>(index.row()), c = static_cast<std::size_t>(index.column());
  if (role == Qt::DisplayRole) return QString::fromStdString(table_.cells[r][c]);
  if (role == Qt::UserRole) return table_.values[r][c];
  if (role == Qt::TextAlignmentRole && !std::isnan(table_.values[r][c])) return int(Qt::AlignRight | Qt::AlignVCenter);
  const std::string& h = table_.columns[c];
  if (role == Qt::BackgroundRole && (h == "errors" || h == "#wrong") && table_.values[r][c] > 0) return QBrush(QColor(255, 200, 200));
  if (role == Qt::BackgroundRole && h == "status" && table_.cells[r][c] != "ok") return QBrush(QColor(255, 200, 200));
  return {};
}

QVariant ResultsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o == Qt::Horizontal && role == Qt::DisplayRole && section >= 0 && section < columnCount())
    return QString::fromStdString(table_.columns[static_cast<std::size_t>(section)]);
  return QAbstractTableModel::headerData(section, o, role);
}

// ---------------------------------------------------------------------------------------------

QString CompareModel::setRuns(const std::vector<ResultRow>& a, QString label_a, const std::vector<ResultRow>& b, QString label_b) {
  RunFile fa, fb;
  fa.rows = a;
  fb.rows = b;
  return setRuns(fa, std::move(label_a), fb, std::move(label_b));
}

QString CompareModel::setRuns(const RunFile& a, QString label_a, const RunFile& b, QString label_b) {
  beginResetModel();
  label_a_ = std::move(label_a);
  label_b_ = std::move(label_b);
  QString error;
  auto c = compare_runs(a, label_a_.toStdString(), b, label_b_.toStdString());
  if (c) {
    c_ = std::move(*c);
  } else {
    c_ = Comparison{};
    error = QString::fromStdString(c.status().message());
  }
  endResetModel();
  return error;
}

int CompareModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(c_.table.cells.size()); }
int CompareModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(c_.table.columns.size()); }

bool CompareModel::isRatio(std::size_t column) const {
  const std::string suffix = " " + label_b_.toStdString() + "/" + label_a_.toStdString();
  const std::string& h = c_.table.columns[column];
  return h.size() > suffix.size() && h.compare(h.size() - suffix.size(), suffix.size(), suffix) == 0;
}

double CompareModel::ratio(int row, const QString& column) const {
  const std::string want = (column + " " + label_b_ + "/" + label_a_).toStdString();
  const auto r = static_cast<std::size_t>(row);
  for (std::size_t c = 0; c < c_.table.columns.size(); ++c)
    if (c_.table.columns[c] == want && r < c_.table.values.size()) return c_.table.values[r][c];
  return std::nan("");
}

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const auto r = static_cast<std::size_t>(index.row()), c = static_cast<std::size_t>(index.column());
  if (r >= c_.table.cells.size() || c >= c_.table.columns.size()) return {};
  if (role == Qt::DisplayRole) return QString::fromStdString(c_.table.cells[r][c]);
  const double v = c_.table.values[r][c];
  if (role == Qt::TextAlignmentRole && !std::isnan(v)) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::BackgroundRole && isRatio(c) && std::isfinite(v) && std::abs(v - 1) > 0.10)
    return QBrush(QColor(255, 225, 180));  // more than 10 % apart
  return {};
}

QVariant CompareModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o == Qt::Horizontal && role == Qt::DisplayRole && section >= 0 && section < columnCount())
    return QString::fromStdString(c_.table.columns[static_cast<std::size_t>(section)]);
  return QAbstractTableModel::headerData(section, o, role);
}

}  // namespace rdmalab::gui
