// The verbs backend: libibverbs from rdma-core, the same code on ConnectX (mlx5) and on the
// kernel's Soft-RoCE (rxe). Ranks are processes. Every errno and ibv_wc_status is translated into
// the contract's Status and WcStatus here, in one place.
//
// Launch: with LaunchSpec::placement (from --bootstrap HOST:PORT --rank R --size N) this process
// is one rank of a run across machines; without it, the backend forks every rank on this machine
// and connects them through a rendezvous on 127.0.0.1 (how tests and single-host Soft-RoCE runs
// start).
#include "verbs/verbs_backend.h"

#include "verbs/verbs_internal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <random>
#include <mutex>
#include <thread>

#include <sys/mman.h>

#include "common/child_process.h"
#include "verbs/verbs_monitor.h"
#include "rdmalab/scenario.h"
#include "rdmalab/run.h"
#include "rdmalab/tcp_bootstrap.h"
#include "mpi_bootstrap.h"
#include "rdmalab/units.h"

namespace rdmalab::verbs {
namespace {

using namespace detail;
using Clock = std::chrono::steady_clock;

class WallRuntime final : public Runtime {
 public:
  explicit WallRuntime(Bootstrap* boot) : t0_(Clock::now()), boot_(boot) {}
  double now() override { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  Status compute(double seconds) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return Status::ok();
  }
  std::optional<CpuTimes> cpu_times() override { return read_cpu_times(); }
  Status wait_for_byte(const volatile std::uint8_t* addr, std::uint8_t value, double timeout_s) override {
    // Busy-polls the memory, as ib_write_lat does; the clock is read only every 64Ki spins.
    Clock::time_point deadline{};
    for (std::uint64_t spins = 1;; ++spins) {
      if (*addr == value) return Status::ok();
      if ((spins & 0xffff) == 0) {
        auto now = Clock::now();
        if (deadline == Clock::time_point{})
          deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
        if (now > deadline) return Status(Errc::timeout, fmt::format("byte not written within {}s", timeout_s));
        if (boot_ && (spins & 0xfffff) == 0) RDMALAB_TRY(boot_->health());
      }
    }
  }

 private:
  Clock::time_point t0_;
  Bootstrap* boot_;
};

struct VerbsOptions {
  std::string device;
  int port = -1;
  int gid_index = -1;
  WaitMode wait = WaitMode::poll;
  std::string gpu_path = "auto";
};

VerbsOptions read_options(const Scenario* sc) {
  VerbsOptions o;
  if (!sc) return o;
  if (sc->has("verbs.device")) o.device = sc->get_string("verbs.device");
  if (sc->has("verbs.port")) o.port = static_cast<int>(sc->get_int("verbs.port"));
  if (sc->has("verbs.gid_index")) o.gid_index = static_cast<int>(sc->get_int("verbs.gid_index"));
  if (sc->has("verbs.wait")) o.wait = sc->get_string("verbs.wait") == "event" ? WaitMode::event : WaitMode::poll;
  if (sc->has("workload.gpu_path")) o.gpu_path = sc->get_string("workload.gpu_path");
  return o;
}

// Rank 0 says once when the scenario's fabric does not describe the device this run found (the
// model's prediction of the scenario is then for other hardware): a note, not a failure.
void note_fabric_mismatch(const Scenario* sc, const Selected& sel, int rank) {
  if (!sc || rank != 0) return;
  const double want = sc->get_bandwidth("fabric.link.bandwidth") * 8 / 1e9, have = port_gbps(sel.port_attr);
  if (have <= 0 || std::abs(want - have) <= 0.1 * have) return;
  fmt::print(stderr, "rdmalab: note: fabric.link.bandwidth is {:g} Gb/s{}, but {} port {} is active at {:g} Gb/s: the scenario's fabric does "
                     "not describe this device, so a model run of it predicts other hardware (set fabric.link.bandwidth to compare)\n",
             want, sc->is_set("fabric.link.bandwidth") ? "" : " (the default)", sel.name, sel.port, have);
}

// Rank 0 says once when a latency test runs on Soft-RoCE inside a virtual machine (the CPU flags
// carry "hypervisor"): each sample is then the kernel's software path, timed on an emulated or
// shared CPU, many times what a NIC takes (tens to hundreds of microseconds in the qemu VM of
// scripts/rxe-vm.sh against about 1-2 us on a ConnectX): fine to compare with itself, not with hardware.
void note_emulated_latency(const Scenario* sc, const Selected& sel, int rank) {
  if (!sc || rank != 0 || sel.name.rfind("rxe", 0) != 0) return;
  const std::string type = sc->get_string("workload.type");
  if (type.size() < 4 || type.compare(type.size() - 4, 4, "_lat") != 0) return;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool vm = false;
  while (!vm && std::getline(cpuinfo, line)) vm = line.rfind("flags", 0) == 0 && line.find(" hypervisor") != std::string::npos;
  if (!vm) return;
  fmt::print(stderr, "rdmalab: note: {} is Soft-RoCE (the kernel's software) in a virtual machine: these latencies are its software path "
                     "on a virtual CPU, many times a NIC's; compare them with each other, not with hardware or a model of it\n",
             sel.name);
}

// Runs one rank in this process.
// `abort` tells the other ranks this one failed (so they stop instead of waiting for it).
Status run_rank(const LaunchSpec& spec, const RankMain& main, Bootstrap& boot, const std::function<void(const std::string&)>& abort) {
  VerbsOptions o = read_options(spec.scenario);
  auto sel = open_device(o.device, o.port, o.gid_index);
  if (!sel) {
    Status st = sel.status().with_context(fmt::format("rank {}", boot.rank()));
    abort(st.message());
    return st;
  }
  note_fabric_mismatch(spec.scenario, *sel, boot.rank());
  note_emulated_latency(spec.scenario, *sel, boot.rank());
  Capabilities caps = probe_caps(*sel);
  std::unique_ptr<Device> dev = make_device(std::move(sel).value(), boot.rank(), o.wait, caps, &boot, o.gpu_path);
  WallRuntime rt(&boot);
  RankEnv env{boot.rank(), boot.size(), boot, rt, *dev, host_memory(), scenario_node_shape(spec.scenario, boot.size())};
  Status st;
  try {
    st = main(env);
  } catch (const std::exception& e) {
    st = Status(Errc::internal, fmt::format("uncaught exception: {}", e.what()));
  }
  if (!st) abort(st.message());
  return st;
}

Status run_rank(const LaunchSpec& spec, const RankMain& main, TcpBootstrap& boot) {
  return run_rank(spec, main, boot, [&](const std::string& why) { boot.abort(why); });
}

std::string random_token() {
  std::random_device rd;
  return fmt::format("{:016x}{:016x}", (static_cast<std::uint64_t>(rd()) << 32) | rd(), (static_cast<std::uint64_t>(rd()) << 32) | rd());
}


// The device port a local run uses, as its ranks will find it (for the record's counters).
MonitoredPort monitored_port(const Scenario* sc) {
  VerbsOptions o = read_options(sc);
  MonitoredPort p;
  auto s = open_device(o.device, o.port, o.gid_index);
  if (!s) return p;
  p.device = s->name;
  p.port = s->port;
  p.rate_Bps = port_gbps(s->port_attr) * 1e9 / 8;
  ibv_close_device(s->ctx);
  return p;
}

// Wall time between two samples of a recorded run: record.interval when the scenario sets it,
// else 100 ms (the model's default of 10 us is simulated time, far below what sampling /proc and
// sysfs costs).
constexpr double kDefaultRecordInterval = 0.1;
constexpr const char* kNoRecordPerProcess =
    "--record on the verbs backend samples the ranks one rdmalab run forks on this machine; with one rank per process "
    "(--bootstrap, mpirun) it cannot gather them yet: run the ranks from one `rdmalab run` (GPU memory needs one process per rank, "
    "so such runs are traced with --trace instead)";
double record_interval(const LaunchSpec& spec) {
  return spec.scenario && spec.scenario->is_set("record.interval") ? spec.record_interval_s : kDefaultRecordInterval;
}

class VerbsBackend final : public Backend {
 public:
  Result<std::vector<DeviceInfo>> devices() const override {
    DeviceList dl;
    if (!dl.list || dl.n == 0) return Status(Errc::not_found, no_devices_reason(dl.err));
    std::vector<DeviceInfo> out;
    for (int i = 0; i < dl.n; ++i) {
      ibv_context* ctx = ibv_open_device(dl.list[i]);
      if (!ctx) continue;
      ibv_device_attr da{};
      ibv_query_device(ctx, &da);
      for (int p = 1; p <= da.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (ibv_query_port(ctx, static_cast<std::uint8_t>(p), &pa) != 0) continue;
        DeviceInfo d;
        d.device = ibv_get_device_name(dl.list[i]);
        d.port = p;
        d.state = ibv_port_state_str(pa.state);
        d.link_layer = link_layer_name(pa.link_layer);
        d.active_mtu = mtu_bytes(pa.active_mtu);
        d.speed_gbps = port_gbps(pa);
        d.lid = pa.lid;
        for (int g = 0; g < pa.gid_tbl_len; ++g) {
          ibv_gid_entry e{};
          if (ibv_query_gid_ex(ctx, static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(g), &e, 0) != 0) continue;
          bool zero = std::all_of(e.gid.raw, e.gid.raw + 16, [](std::uint8_t b) { return b == 0; });
          if (zero) continue;
          const char* type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : e.gid_type == IBV_GID_TYPE_ROCE_V1 ? "RoCE v1" : "IB";
          d.gids.push_back({g, gid_text(e.gid), type, gid_netdev(ctx, static_cast<std::uint8_t>(p), g)});
        }
        out.push_back(std::move(d));
      }
      ibv_close_device(ctx);
    }
    return out;
  }

  std::string name() const override { return "verbs"; }
  std::string description() const override { return "libibverbs (rdma-core): ConnectX and Soft-RoCE, ranks as processes"; }
  Availability availability() const override {
    DeviceList dl;
    if (!dl.list || dl.n == 0) return {false, no_devices_reason(dl.err)};
    auto s = open_device("", -1, -1);
    if (!s) return {false, s.status().message()};
    ibv_close_device(s->ctx);
    return {true, ""};
  }
  Capabilities capabilities() const override {
    auto s = open_device("", -1, -1);
    if (!s) return {};
    Capabilities c = probe_caps(*s);
    ibv_close_device(s->ctx);
    return c;
  }
  void add_keys(Schema& schema) const override {
    using T = ValueType;
    schema.add(KeySpec{"verbs.device", T::string, "", "RDMA device to use (ibv_devices); default: the first with an ACTIVE port", {}});
    schema.add(KeySpec{"verbs.port", T::integer, "", "port number; default: the first ACTIVE port", {}, 1, 255});
    schema.add(KeySpec{"verbs.gid_index", T::integer, "", "GID index (perftest -x); default: a RoCE v2 GID on Ethernet ports", {}, 0, 1024});
    schema.add(KeySpec{"verbs.wait", T::enumeration, "poll", "waiting for completions: poll (busy, lowest latency) or event (completion channel, low CPU)",
                       {"poll", "event"}});
  }
  Status check(const Scenario& sc) const override {
    VerbsOptions o = read_options(&sc);
    auto s = open_device(o.device, o.port, o.gid_index);
    if (!s) return sc.error(sc.is_set("verbs.device") ? "verbs.device" : "backend", s.status().message());
    ibv_close_device(s->ctx);
    if (sc.is_set("record.interval") && sc.get_time("record.interval") < 1e-3)
      return sc.error("record.interval", "a verbs run is sampled in wall-clock time, from /proc and sysfs: at least 1ms (unset: 100ms)");
    return Status::ok();
  }
  bool hosts_all_ranks() const override { return false; }
  // Runs whose ranks this process forks (not --bootstrap or mpirun, where each process is one rank).
  bool can_record() const override { return true; }

  // Local ranks are child processes, killed on a stop request; one rank per process (--bootstrap,
  // mpirun) is stopped by its launcher's signal.
  bool can_cancel() const override { return true; }

  Status launch(const LaunchSpec& spec, const RankMain& main) override {
    if (!spec.placement.rendezvous.empty() && !spec.record_path.empty()) return Status(Errc::not_supported, kNoRecordPerProcess);
    if (spec.placement.rendezvous == "mpi") {
      // One rank of a run started by mpirun: MPI gives the rank, the size and the allgather.
      RDMALAB_ASSIGN(auto boot, verbs::MpiBootstrap::init());
      if (boot->size() != spec.ranks)
        return Status(Errc::invalid_argument, fmt::format("mpirun started {} ranks but the scenario has {} (fabric.nodes): run "
                                                          "mpirun -np {}, or --set fabric.nodes={}", boot->size(), spec.ranks, spec.ranks, boot->size()));
      return run_rank(spec, main, *boot, [&](const std::string& why) { boot->abort(why); });
    }
    if (!spec.placement.rendezvous.empty()) {
      // One rank of a run across processes or machines.
      auto hp = parse_host_port(spec.placement.rendezvous);
      if (!hp) return hp.status();
      TcpBootstrapOptions bo;
      bo.host = hp->first;
      bo.port = hp->second;
      bo.rank = spec.placement.rank;
      bo.size = spec.placement.size;
      bo.token = spec.placement.token;
      if (bo.size != spec.ranks)
        return Status(Errc::invalid_argument, fmt::format("--size {} but the scenario has {} ranks (fabric.nodes)", bo.size, spec.ranks));
      RDMALAB_ASSIGN(auto boot, TcpBootstrap::listen(bo));
      RDMALAB_TRY(boot->connect());
      return run_rank(spec, main, *boot);  // in this process: nothing to carry back
    }
    // Local ranks are forked from this process, which has already opened the GPU (CUDA cannot be
    // used in a child forked after that).
    if (spec.scenario && spec.scenario->has("workload.memory") && spec.scenario->get_string("workload.memory") == "cuda")
      return spec.scenario->error("workload.memory",
                                  "GPU memory on the verbs backend needs one process per rank: start them with mpirun, or with "
                                  "--bootstrap HOST:PORT --rank R --size N (CUDA cannot be used in ranks forked from this process)");
    return launch_local(spec, main);
  }

 private:
  // Every rank a child process of this one, connected through 127.0.0.1.
  Status launch_local(const LaunchSpec& spec, const RankMain& main) {
    TcpBootstrapOptions bo;
    bo.host = "127.0.0.1";
    bo.port = 0;
    bo.rank = 0;
    bo.size = spec.ranks;
    bo.token = random_token();
    RDMALAB_ASSIGN(auto hub, TcpBootstrap::listen(bo));  // bound before forking: children connect to it
    const int port = hub->port();
    // A recorded run: each rank's completion meter lives in memory shared with this process,
    // whose monitor thread samples it (verbs_monitor.h).
    std::atomic<std::uint64_t>* meters = nullptr;
    const std::size_t meters_len = sizeof(std::atomic<std::uint64_t>) * static_cast<std::size_t>(spec.ranks);
    if (!spec.record_path.empty()) {
      void* p = ::mmap(nullptr, meters_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return from_errno(errno, "mmap (the record's completion meters)");
      meters = new (p) std::atomic<std::uint64_t>[static_cast<std::size_t>(spec.ranks)]();
    }
    struct Unmap {
      void* p;
      std::size_t len;
      ~Unmap() {
        if (p) ::munmap(p, len);
      }
    } unmap{meters, meters_len};
    std::vector<std::pair<pid_t, int>> children;
    for (int r = 0; r < spec.ranks; ++r) {
      auto child = fork_child([&, r] {
        ChildOutcome out;
        if (meters) set_completion_meter(&meters[r]);
        if (r == 0) {
          out.status = hub->connect();
          if (out.status) out.status = run_rank(spec, main, *hub);
        } else {
          TcpBootstrapOptions co = bo;
          co.rank = r;
          co.port = port;
          auto b = TcpBootstrap::listen(co);
          out.status = b ? b.value()->connect() : b.status();
          if (out.status) out.status = run_rank(spec, main, *b.value());
        }
        out.state = spec.export_state ? spec.export_state() : std::string();
        return out;
      });
      if (!child) return child.status();
      children.push_back(*child);
    }
    hub.reset();  // the parent's copy of the listening socket
    std::unique_ptr<RunMonitor> monitor;
    Status monitor_status;
    if (meters) {
      std::vector<pid_t> pids;
      for (const auto& c : children) pids.push_back(c.first);
      auto m = RunMonitor::start(spec.record_path, spec.scenario ? spec.scenario->file : std::string(), monitored_port(spec.scenario),
                                 std::move(pids), meters, record_interval(spec));
      if (m) monitor = std::move(m).value();
      else monitor_status = m.status();  // the ranks run on; the run reports it
    }
    std::vector<Status> results;
    for (int r = 0; r < spec.ranks; ++r) {
      auto [pid, fd] = children[static_cast<std::size_t>(r)];
      ChildOutcome out = collect_child(pid, fd, fmt::format("rank {}", r), spec.cancel);
      if (spec.import_state && !out.state.empty()) spec.import_state(out.state);
      results.push_back(out.status);
    }
    if (monitor) monitor_status = monitor->stop();
    if (!monitor_status) results.push_back(monitor_status.with_context("--record"));
    return first_failure(results);
  }
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<VerbsBackend>(); }

}  // namespace rdmalab::verbs
