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
  return {};
}

QVariant ResultsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o == Qt::Horizontal && role == Qt::DisplayRole && section >= 0 && section < columnCount())
    return QString::fromStdString(table_.columns[static_cast<std::size_t>(section)]);
  return QAbstractTableModel::headerData(section, o, role);
}

// ---------------------------------------------------------------------------------------------
namespace {
// Columns that say which row it is rather than what was measured.
bool identifying(const std::string& h) {
  return h == "workload" || h == "#bytes" || h == "#iterations" || h == "size (B)" || h == "count" || h == "type" || h == "redop" ||
         h == "root" || h == "placement" || h == "algorithm" || h == "channels" || h == "model" || h == "parallelism" || h == "grad bytes";
}
}  // namespace

QString CompareModel::setRuns(const std::vector<ResultRow>& a, QString label_a, const std::vector<ResultRow>& b, QString label_b) {
  beginResetModel();
  a_ = result_table(a);
  b_ = result_table(b);
  label_a_ = std::move(label_a);
  label_b_ = std::move(label_b);
  cols_.clear();
  QString error;
  if (!a_.cells.empty() && !b_.cells.empty() && a_.kind != b_.kind) {
    error = QStringLiteral("cannot compare %1 rows with %2 rows").arg(QString::fromStdString(a_.kind), QString::fromStdString(b_.kind));
    a_ = b_ = ResultTable{};
  }
  for (std::size_t c = 0; c < a_.columns.size(); ++c) {
    const QString h = QString::fromStdString(a_.columns[c]);
    if (identifying(a_.columns[c])) {
      if (a_.columns[c] != "#iterations") cols_.push_back({h, static_cast<int>(c), 0});
      continue;
    }
    cols_.push_back({h + " " + label_a_, static_cast<int>(c), 1});
    cols_.push_back({h + " " + label_b_, static_cast<int>(c), 2});
    cols_.push_back({h + " " + label_b_ + "/" + label_a_, static_cast<int>(c), 3});
  }
  endResetModel();
  return error;
}

int CompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(std::max(a_.cells.size(), b_.cells.size()));
}
int CompareModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(cols_.size()); }

double CompareModel::ratio(int row, const QString& column) const {
  for (const auto& c : cols_)
    if (c.part == 3 && c.heading.startsWith(column + " ")) {
      const auto r = static_cast<std::size_t>(row), s = static_cast<std::size_t>(c.source);
      if (r >= a_.values.size() || r >= b_.values.size()) return std::nan("");
      return b_.values[r][s] / a_.values[r][s];
    }
  return std::nan("");
}

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Col& c = cols_[static_cast<std::size_t>(index.column())];
  const auto r = static_cast<std::size_t>(index.row()), s = static_cast<std::size_t>(c.source);
  const bool has_a = r < a_.cells.size(), has_b = r < b_.cells.size();
  const QString missing = QStringLiteral("—");
  if (role == Qt::TextAlignmentRole && c.part > 0) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::DisplayRole) {
    switch (c.part) {
      case 0: return has_a ? QString::fromStdString(a_.cells[r][s]) : has_b ? QString::fromStdString(b_.cells[r][s]) : missing;
      case 1: return has_a ? QString::fromStdString(a_.cells[r][s]) : missing;
      case 2: return has_b ? QString::fromStdString(b_.cells[r][s]) : missing;
      default: {
        if (!has_a || !has_b) return missing;
        const double x = a_.values[r][s], y = b_.values[r][s];
        if (x == 0 && y == 0) return QStringLiteral("=");
        if (x == 0) return missing;
        return QString::number(y / x, 'f', 3);
      }
    }
  }
  if (role == Qt::BackgroundRole && c.part == 3 && has_a && has_b && a_.values[r][s] != 0) {
    const double q = b_.values[r][s] / a_.values[r][s];
    if (std::abs(q - 1) > 0.10) return QBrush(QColor(255, 225, 180));  // more than 10 % apart
  }
  return {};
}

QVariant CompareModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o == Qt::Horizontal && role == Qt::DisplayRole && section >= 0 && section < columnCount())
    return cols_[static_cast<std::size_t>(section)].heading;
  return QAbstractTableModel::headerData(section, o, role);
}

}  // namespace rdmalab::gui
