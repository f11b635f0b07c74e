#include "verbs/verbs_monitor.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/nvml.h"

namespace rdmalab::verbs::detail {
namespace {

// A process's user + system CPU time in clock ticks (/proc/PID/stat fields 14 and 15); 0 when it
// is gone.
std::uint64_t cpu_ticks(pid_t pid) {
  // read(2), not a stream: a process that exits between the open and the read makes the read fail
  // (ESRCH), which a stream buffer iterator throws out of.
  std::string stat;
  const int fd = ::open(fmt::format("/proc/{}/stat", pid).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  for (ssize_t got; (got = ::read(fd, buf, sizeof buf)) > 0;) stat.append(buf, static_cast<std::size_t>(got));
  ::close(fd);
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  std::uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::strtoull(f.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(f.c_str(), nullptr, 10);
  }
  return utime + stime;
}

// The port counters the IBTA defines in units of four octets (IBA 16.1.3.5, PortCounters:
// PortXmitData and PortRcvData), which sysfs shows as they are.
bool in_words(const std::string& name) { return name == "port_xmit_data" || name == "port_rcv_data"; }

}  // namespace

Result<std::unique_ptr<RunMonitor>> RunMonitor::start(const std::string& path, const std::string& scenario, const MonitoredPort& port,
                                                      std::vector<pid_t> pids, const std::atomic<std::uint64_t>* tx_bytes, double interval_s) {
  std::unique_ptr<RunMonitor> m(new RunMonitor);
  RDMALAB_TRY(m->out_.open(path, false));
  const int ranks = static_cast<int>(pids.size());
  m->port_ = port;
  m->pids_ = std::move(pids);
  m->tx_ = tx_bytes;
  m->interval_s_ = interval_s;
  m->out_.header(scenario, "verbs", ranks, interval_s);
  // The ranks of this run and the device port they share: what the dashboard draws.
  Topology topo;
  auto node = [&](std::string name, std::string kind, int rank, int tier) {
    TopoNode n;
    n.name = std::move(name);
    n.kind = std::move(kind);
    n.rank = rank;
    n.tier = tier;
    topo.nodes.push_back(std::move(n));
  };
  for (int r = 0; r < ranks; ++r) node(fmt::format("rank-{}", r), "host", r, 0);
  const int dev = ranks;
  node(fmt::format("{}:{}", port.device, port.port), "switch", -1, 1);
  for (int r = 0; r < ranks; ++r) {
    topo.links.push_back(TopoLink{fmt::format("rank-{}_UP", r), port.rate_Bps, 0, {r, dev}});
    topo.links.push_back(TopoLink{fmt::format("rank-{}_DOWN", r), port.rate_Bps, 0, {dev, r}});
  }
  m->out_.topology(topo);
  Monitor mon;
  mon.port = fmt::format("{}:{}", port.device, port.port);
  for (const char* sub : {"counters", "hw_counters"}) {
    const std::string dir = fmt::format("/sys/class/infiniband/{}/ports/{}/{}", port.device, port.port, sub);
    if (::access(dir.c_str(), R_OK) == 0) m->counter_dirs_.push_back(dir);
  }
  for (const auto& d : m->counter_dirs_) mon.counters += (mon.counters.empty() ? "" : " ") + d;
  if (mon.counters.empty()) mon.counters = fmt::format("none (no /sys/class/infiniband/{}/ports/{}/counters or hw_counters)", port.device, port.port);
  m->nvml_ = Nvml::open(mon.gpu);
  if (m->nvml_) mon.gpu = m->nvml_->describe();
  m->out_.monitor(mon);
  m->last_tx_.assign(m->pids_.size(), 0);
  m->last_cpu_ticks_.assign(m->pids_.size(), 0);
  for (std::size_t r = 0; r < m->pids_.size(); ++r) m->last_cpu_ticks_[r] = cpu_ticks(m->pids_[r]);
  m->last_counters_ = m->read_counters();
  m->t0_ = std::chrono::steady_clock::now();
  m->thread_ = std::thread([p = m.get()] { p->loop(); });
  return m;
}

RunMonitor::~RunMonitor() { (void)stop(); }

std::vector<std::pair<std::string, std::uint64_t>> RunMonitor::read_counters() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const auto& dir : counter_dirs_) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.empty() || name[0] == '.' || name == "lifespan") continue;
      std::ifstream in(dir + "/" + name);
      std::uint64_t v = 0;
      if (in >> v) out.emplace_back(name, v);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void RunMonitor::take_sample() {
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double dt = t - last_t_;
  if (dt <= 0) return;
  Sample s;
  s.t = t;
  static const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
  for (std::size_t r = 0; r < pids_.size(); ++r) {
    const std::uint64_t tx = tx_[r].load(std::memory_order_relaxed);
    s.rank_tx_Bps.push_back(static_cast<double>(tx - last_tx_[r]) / dt);
    last_tx_[r] = tx;
    const std::uint64_t ticks = cpu_ticks(pids_[r]);
    s.rank_cpu.push_back(ticks >= last_cpu_ticks_[r] ? static_cast<double>(ticks - last_cpu_ticks_[r]) / ticks_per_s / dt : 0.0);
    if (ticks) last_cpu_ticks_[r] = ticks;
  }
  auto counters = read_counters();
  for (const auto& [name, v] : counters) {
    auto it = std::lower_bound(last_counters_.begin(), last_counters_.end(), std::make_pair(name, std::uint64_t{0}));
    if (it == last_counters_.end() || it->first != name || v <= it->second) continue;
    const double rate = static_cast<double>(v - it->second) / dt;
    if (in_words(name))
      s.port.emplace_back(name == "port_xmit_data" ? "port_xmit_bytes" : "port_rcv_bytes", rate * 4);
    else
      s.port.emplace_back(name, rate);
  }
  last_counters_ = std::move(counters);
  if (nvml_) s.gpu = nvml_->sample();
  last_t_ = t;
  out_.sample(s);
}

void RunMonitor::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (cv_.wait_for(lock, std::chrono::duration<double>(interval_s_), [this] { return stopping_; })) break;
    take_sample();
  }
}

Status RunMonitor::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return Status::ok();
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  take_sample();  // the tail since the last one
  return out_.close();
}

}  // namespace rdmalab::verbs::detail
