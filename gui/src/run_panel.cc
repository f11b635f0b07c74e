#include "run_panel.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QStandardPaths>
#include <QThread>
#include <QVBoxLayout>

#include "rdmalab/metrics.h"
#include "rdmalab/run.h"

namespace rdmalab::gui {

namespace {

// The keys every form shows (when the schema has them), after the ones the file sets.
const char* const kCommonKeys[] = {"workload.type",       "workload.size",        "workload.sizes", "workload.iterations",
                                   "workload.memory",     "fabric.nodes",         "fabric.topology", "fabric.model",
                                   "fabric.link.bandwidth", "fabric.link.latency"};

// Progress and rows from the worker thread, queued to the panel.
class QueuedSink : public MetricsSink {
 public:
  explicit QueuedSink(RunPanel* panel) : panel_(panel) {}
  void on_progress(double now_s, const std::string& what) override {
    const QString text = QStringLiteral("%1 (t = %2 s)").arg(QString::fromStdString(what)).arg(now_s, 0, 'g', 6);
    QMetaObject::invokeMethod(panel_, [p = panel_, text] { emit p->progress(text); }, Qt::QueuedConnection);
  }

 private:
  RunPanel* panel_;
};

}  // namespace

RunPanel::RunPanel(const BackendRegistry& backends, QWidget* parent) : QWidget(parent), backends_(backends) {
  qRegisterMetaType<std::vector<rdmalab::ResultRow>>("std::vector<rdmalab::ResultRow>");
  schema_ = full_schema(backends_);
  auto* v = new QVBoxLayout(this);
  auto* top = new QHBoxLayout();
  path_label_ = new QLabel(tr("no scenario"));
  path_label_->setWordWrap(true);
  auto* open = new QPushButton(tr("Open…"));
  top->addWidget(path_label_, 1);
  top->addWidget(open);
  v->addLayout(top);
  auto* bl = new QHBoxLayout();
  bl->addWidget(new QLabel(tr("Backend")));
  backend_ = new QComboBox();
  for (const auto& info : backends_.all()) {
    auto b = info.make();
    Availability av = b->availability();
    backend_->addItem(QString::fromStdString(info.name));
    const int i = backend_->count() - 1;
    if (!av.usable) {
      // Shown, but not choosable: the tooltip says why (the same text as `rdmalab list`).
      backend_->setItemData(i, QString::fromStdString(av.why), Qt::ToolTipRole);
      backend_->setItemData(i, 0, Qt::UserRole - 1);  // disables the item
    } else {
      backend_->setItemData(i, QString::fromStdString(b->description()), Qt::ToolTipRole);
    }
  }
  bl->addWidget(backend_, 1);
  v->addLayout(bl);
  form_host_ = new QWidget();
  form_ = new QFormLayout(form_host_);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  auto* scroll = new QScrollArea();
  scroll->setWidgetResizable(true);
  scroll->setWidget(form_host_);
  v->addWidget(scroll, 1);
  message_ = new QLabel();
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(message_);
  auto* buttons = new QHBoxLayout();
  run_ = new QPushButton(tr("Run"));
  stop_ = new QPushButton(tr("Stop"));
  stop_->setEnabled(false);
  buttons->addWidget(run_);
  buttons->addWidget(stop_);
  v->addLayout(buttons);
  connect(open, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Open a scenario"), QString(), tr("Scenarios (*.yaml *.yml)"));
    if (!f.isEmpty()) loadScenario(f);
  });
  connect(run_, &QPushButton::clicked, this, [this] { run(); });
  connect(stop_, &QPushButton::clicked, this, [this] { stop(); });
  connect(this, &RunPanel::progress, this, [this](const QString& t) { message_->setText(t); });
}

RunPanel::~RunPanel() {
  if (thread_) {
    if (cancel_) *cancel_ = true;
    thread_->wait();
  }
}

void RunPanel::addField(const std::string& key, const Scenario& sc) {
  const KeySpec* spec = schema_.find(key);
  if (!spec || fields_.contains(QString::fromStdString(key))) return;
  Field f;
  auto it = sc.values.find(key);
  f.original = it != sc.values.end() ? QString::fromStdString(it->second.text) : QString();
  QWidget* w = nullptr;
  if (spec->type == ValueType::enumeration) {
    f.choice = new QComboBox();
    for (const auto& a : spec->allowed) f.choice->addItem(QString::fromStdString(a));
    f.choice->setCurrentText(f.original);
    w = f.choice;
  } else {
    f.edit = new QLineEdit(f.original);
    f.edit->setPlaceholderText(QString::fromStdString(spec->default_value));
    w = f.edit;
  }
  w->setToolTip(QStringLiteral("%1 (%2)\ndefault: %3")
                    .arg(QString::fromStdString(spec->help), QString::fromLatin1(value_type_name(spec->type)),
                         QString::fromStdString(spec->default_value.empty() ? "none" : spec->default_value)));
  w->setObjectName(QString::fromStdString(key));
  f.error = new QLabel();
  f.error->setStyleSheet("color: #b00000");
  f.error->setWordWrap(true);
  f.error->hide();
  auto* box = new QWidget();
  auto* bv = new QVBoxLayout(box);
  bv->setContentsMargins(0, 0, 0, 0);
  bv->addWidget(w);
  bv->addWidget(f.error);
  form_->addRow(QString::fromStdString(key), box);
  fields_.insert(QString::fromStdString(key), f);
  order_ << QString::fromStdString(key);
}

QString RunPanel::loadScenario(const QString& path) {
  clearErrors();
  auto sc = load_scenario(path.toStdString(), {}, schema_);
  if (!sc) {
    showError(QString::fromStdString(sc.status().message()));
    return message_->text();
  }
  path_ = path;
  path_label_->setText(QFileInfo(path).fileName());
  path_label_->setToolTip(path);
  while (form_->rowCount() > 0) form_->removeRow(0);
  fields_.clear();
  order_.clear();
  for (const auto& [key, entry] : sc->values)
    if (entry.explicit_ && key != "name" && key != "description" && key != "backend") addField(key, *sc);
  for (const char* k : kCommonKeys)
    if (!(std::string(k) == "workload.size" && sc->is_set("workload.sizes")) && !(std::string(k) == "workload.sizes" && !sc->is_set("workload.sizes")))
      addField(k, *sc);
  setBackend(QString::fromStdString(sc->get_string("backend")));
  message_->setText(sc->is_set("description") ? QString::fromStdString(sc->get_string("description")) : QString());
  return {};
}

bool RunPanel::setField(const QString& key, const QString& value) {
  auto it = fields_.find(key);
  if (it == fields_.end()) return false;
  if (it->edit) it->edit->setText(value);
  if (it->choice) it->choice->setCurrentText(value);
  return true;
}

QString RunPanel::field(const QString& key) const {
  auto it = fields_.find(key);
  if (it == fields_.end()) return {};
  return it->edit ? it->edit->text() : it->choice->currentText();
}

QStringList RunPanel::fieldKeys() const { return order_; }
QString RunPanel::fieldError(const QString& key) const {
  auto it = fields_.find(key);
  return it == fields_.end() || it->error->isHidden() ? QString() : it->error->text();
}
QString RunPanel::message() const { return message_->text(); }
QString RunPanel::backend() const { return backend_->currentText(); }

bool RunPanel::setBackend(const QString& name) {
  const int i = backend_->findText(name);
  if (i < 0 || backend_->itemData(i, Qt::UserRole - 1).isValid()) return false;
  backend_->setCurrentIndex(i);
  return true;
}

void RunPanel::clearErrors() {
  for (auto& f : fields_) f.error->hide();
  message_->setStyleSheet({});
}

void RunPanel::showError(const QString& text) {
  // Core's messages name the key: "file:12:3: workload.size: …" or "--set k=v: key: …".
  QString best;
  for (auto it = fields_.begin(); it != fields_.end(); ++it)
    if (text.contains(it.key() + ":") && it.key().size() > best.size()) best = it.key();
  if (!best.isEmpty()) {
    fields_[best].error->setText(text);
    fields_[best].error->show();
  }
  message_->setText(text);
  message_->setStyleSheet("color: #b00000");
}

std::vector<std::string> RunPanel::overrides() const {
  std::vector<std::string> out;
  for (const QString& key : order_) {
    const QString v = field(key);
    if (v != fields_[key].original && !(v.isEmpty() && fields_[key].original.isEmpty()))
      out.push_back((key + "=" + v).toStdString());
  }
  return out;
}

bool RunPanel::run() {
  if (running_) return false;
  clearErrors();
  if (path_.isEmpty()) {
    showError(tr("open a scenario first"));
    return false;
  }
  std::vector<std::string> sets = overrides();
  sets.push_back("backend=" + backend().toStdString());
  auto sc = load_scenario(path_.toStdString(), sets, schema_);
  if (!sc) {
    showError(QString::fromStdString(sc.status().message()));
    return false;
  }
  auto made = backends_.make(backend().toStdString());
  if (!made) {
    showError(QString::fromStdString(made.status().message()));
    return false;
  }
  Status pre = check_run(*sc, **made);
  if (!pre) {
    showError(QString::fromStdString(pre.message()));
    return false;
  }
  live_path_.clear();
  if ((*made)->can_record()) {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::TempLocation);
    live_path_ = QDir(dir).filePath(QStringLiteral("rdmalab-dashboard-%1-%2.jsonl").arg(QCoreApplication::applicationPid()).arg(reinterpret_cast<quintptr>(this)));
    QFile::remove(live_path_);
    QFile::remove(live_path_ + ".tmp");
  }
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  running_ = true;
  run_->setEnabled(false);
  stop_->setEnabled((*made)->can_cancel());
  stop_->setToolTip((*made)->can_cancel() ? QString() : tr("backend %1 runs in this process and cannot be stopped").arg(this->backend()));
  message_->setText(tr("running %1 on %2…").arg(QString::fromStdString(sc->get_string("workload.type")), this->backend()));
  emit started(live_path_);
  auto shared_backend = std::shared_ptr<Backend>(std::move(*made));
  auto scenario = std::make_shared<Scenario>(std::move(*sc));
  thread_ = QThread::create([this, shared_backend, scenario, cancel = cancel_, record = live_path_.toStdString()] {
    QueuedSink sink(this);
    RunOptions opt;
    opt.metrics = &sink;
    opt.record_path = record;
    if (!record.empty()) opt.record_temp_path = record + ".tmp";  // MainWindow follows it there
    opt.cancel = cancel.get();
    RunOutcome out = run_scenario(*scenario, *shared_backend, opt);
    const bool ok = out.status.is_ok();
    const QString msg = ok ? tr("done: %1 rows, %2 errors").arg(out.rows.size()).arg(out.errors)
                           : QString::fromStdString(out.status.message());
    QMetaObject::invokeMethod(
        this,
        [this, ok, msg, rows = std::move(out.rows)] {
          thread_->wait();
          thread_->deleteLater();
          thread_ = nullptr;
          running_ = false;
          run_->setEnabled(true);
          stop_->setEnabled(false);
          if (ok) {
            message_->setStyleSheet({});
            message_->setText(msg);
          } else {
            showError(msg);
          }
          emit finished(ok, msg, rows);
        },
        Qt::QueuedConnection);
  });
  thread_->start();
  return true;
}

void RunPanel::stop() {
  if (running_ && cancel_) {
    *cancel_ = true;
    message_->setText(tr("stopping…"));
  }
}

}  // namespace rdmalab::gui
