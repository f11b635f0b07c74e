// The run panel: open a scenario, choose a backend among those usable here, change the common
// parameters in a form generated from the scenario (applied as `--set` overrides), run and
// stop. Errors are the CLI's, shown next to the field they name. The run itself goes through
// core (run_scenario) on a worker thread; results and progress come back as queued signals, and
// a live record is followed with core's RecordFollower.
#pragma once

#include <QMap>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <atomic>
#include <memory>
#include <vector>

#include "rdmalab/backend.h"
#include "rdmalab/results.h"
#include "rdmalab/scenario.h"

class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QThread;

namespace rdmalab::gui {

class RunPanel : public QWidget {
  Q_OBJECT

 public:
  RunPanel(const BackendRegistry& backends, QWidget* parent = nullptr);
  ~RunPanel() override;

  // Loads a scenario file and builds the form. Returns the error text (empty when fine); the
  // error is also shown in the panel.
  QString loadScenario(const QString& path);
  // Sets a form field as a user would (key must be in the form). False if there is no such field.
  bool setField(const QString& key, const QString& value);
  QString field(const QString& key) const;
  QStringList fieldKeys() const;
  // The error shown next to a field ("" when none), and the panel's general message.
  QString fieldError(const QString& key) const;
  QString message() const;
  QString backend() const;
  bool setBackend(const QString& name);
  // Checks the form and starts the run; false (with the errors shown) if it cannot start.
  bool run();
  void stop();
  bool running() const { return running_; }
  // Where the live record is written (empty when the backend cannot record).
  QString livePath() const { return live_path_; }

 signals:
  // A run started; its record (if any) grows at recordPath.
  void started(const QString& record_path);
  // The run ended: ok, or the error; rows as the CLI would print them.
  void finished(bool ok, const QString& message, const std::vector<rdmalab::ResultRow>& rows);
  void progress(const QString& what);

 private:
  struct Field {
    QLineEdit* edit = nullptr;
    QComboBox* choice = nullptr;
    QLabel* error = nullptr;
    QString original;
  };
  void clearErrors();
  // Shows an error message next to the field it names, or in the panel message.
  void showError(const QString& text);
  std::vector<std::string> overrides() const;
  void addField(const std::string& key, const Scenario& sc);

  const BackendRegistry& backends_;
  Schema schema_;
  QString path_;
  QLabel* path_label_ = nullptr;
  QComboBox* backend_ = nullptr;
  QFormLayout* form_ = nullptr;
  QWidget* form_host_ = nullptr;
  QLabel* message_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* stop_ = nullptr;
  QMap<QString, Field> fields_;
  QStringList order_;
  bool running_ = false;
  QString live_path_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  QThread* thread_ = nullptr;
};

}  // namespace rdmalab::gui
