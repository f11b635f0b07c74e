// One run as the dashboard sees it: a record (replayed from a file, or growing while a live run
// writes it), the timeline cursor, and each link's utilisation at the cursor and its peak up to
// it. Models and views read it; its signals say what changed. GUI thread only.
#pragma once

#include <QObject>
#include <QString>
#include <vector>

#include "rdmalab/record.h"

namespace rdmalab::gui {

class RunData : public QObject {
  Q_OBJECT

 public:
  explicit RunData(QObject* parent = nullptr) : QObject(parent) {}

  void clear();
  // A whole record (replay). The cursor goes to the last sample.
  void setRecord(Record record, QString source);
  // The first sample of the highest total link utilisation (the last when there is none).
  int busiestSample() const;
  // The record so far of a live run; samples are appended. With `follow`, the cursor stays on
  // the newest sample.
  void update(const Record& record, bool follow);
  // Rows only (a backend that cannot record: loopback, verbs).
  void setRows(std::vector<ResultRow> rows);

  const Record& record() const { return rec_; }
  const QString& source() const { return source_; }
  int sampleCount() const { return static_cast<int>(rec_.samples.size()); }
  int cursor() const { return cursor_; }
  void setCursor(int sample);

  // Per link (record().topology.links order), at the cursor and the maximum up to it.
  const std::vector<double>& linkUtil() const { return util_; }
  const std::vector<double>& linkPeak() const { return peak_; }
  // Sum of every rank's transmit rate in a sample, bytes/s.
  double aggregateTx(int sample) const;
  // The aggregate's reference: the sum of the hosts' uplink bandwidths (bytes/s); 0 if unknown.
  double lineRate() const;
  // A host's uplink bandwidth (bytes/s): the reference for one rank's throughput.
  double hostLinkRate() const;

 signals:
  void topologyChanged();
  void samplesChanged();
  void cursorChanged(int sample);
  void rowsChanged();

 private:
  void recompute(int from, int to);

  Record rec_;
  QString source_;
  int cursor_ = -1;
  std::vector<double> util_, peak_;
};

}  // namespace rdmalab::gui
