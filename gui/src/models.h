// Qt item models over core's data: the links of a run (with utilisation at the timeline cursor),
// the result table (the CLI's columns), and two runs compared row by row.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <vector>

#include "rdmalab/compare.h"
#include "rdmalab/result_table.h"

namespace rdmalab::gui {

class RunData;

// One row per link: name, from, to, bandwidth, latency, utilisation now and peak (percent).
class LinkTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Name, From, To, Bandwidth, Latency, Now, Peak, ColumnCount };
  explicit LinkTableModel(RunData* data, QObject* parent = nullptr);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  RunData* data_;
};

// The result rows of a run, with the CLI's columns (core's result_table).
class ResultsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  explicit ResultsModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setRows(const std::vector<ResultRow>& rows);
  // A table without rows behind it (a sweep's: rdmalab/sweep_plot.h read_sweep).
  void setTable(const ResultTable& table);
  const ResultTable& table() const { return table_; }
  const std::vector<ResultRow>& rows() const { return rows_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<ResultRow> rows_;
  ResultTable table_;
};

// Two runs side by side (e.g. a simgrid prediction and a verbs measurement), as `rdmalab
// compare` shows them (core/compare.h): rows paired by what they are, the identifying columns,
// then for each measured column A, B and B/A; a row without a partner shows "-".
class CompareModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  explicit CompareModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  // Errors (returned as text, empty when fine): the two runs are of different kinds.
  QString setRuns(const RunFile& a, QString label_a, const RunFile& b, QString label_b);
  QString setRuns(const std::vector<ResultRow>& a, QString label_a, const std::vector<ResultRow>& b, QString label_b);
  // What makes the comparison doubtful (a failed run, rows without a partner, fabrics that differ).
  const std::vector<std::string>& warnings() const { return c_.warnings; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  // B/A of a measured column in a row (NaN when either side is missing).
  double ratio(int row, const QString& column) const;

 private:
  bool isRatio(std::size_t column) const;
  Comparison c_;
  QString label_a_, label_b_;
};

}  // namespace rdmalab::gui
