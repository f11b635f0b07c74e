// Qt item models over core's data: the links of a run (with utilisation at the timeline cursor),
// the result table (the CLI's columns), and two runs compared row by row.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <vector>

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

// Two runs side by side (e.g. a simgrid prediction and a verbs measurement): the first run's
// identifying columns, then for each measured column the value of A, of B, and B/A. Rows are
// paired in order; a row missing on one side shows "—".
class CompareModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  explicit CompareModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  // Errors (returned as text, empty when fine): the two runs are of different kinds.
  QString setRuns(const std::vector<ResultRow>& a, QString label_a, const std::vector<ResultRow>& b, QString label_b);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  // B/A of a measured column in a row (NaN when either side is missing).
  double ratio(int row, const QString& column) const;

 private:
  struct Col {
    QString heading;
    int source;  // column in the tables
    int part;    // 0: identifying (A's text); 1: A; 2: B; 3: B/A
  };
  ResultTable a_, b_;
  QString label_a_, label_b_;
  std::vector<Col> cols_;
};

}  // namespace rdmalab::gui
