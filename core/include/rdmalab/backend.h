// A backend runs ranks: it owns the devices, the runtime and the bootstrap each rank sees.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rdmalab/bootstrap.h"
#include "rdmalab/memory.h"
#include "rdmalab/runtime.h"
#include "rdmalab/status.h"
#include "rdmalab/transport.h"

namespace rdmalab {

class RankTrace;

struct Scenario;
class Schema;
class MetricsSink;

// A GPU's generation, as NCCL's tuning model tells them apart (its compute-capability index).
enum class GpuGeneration { volta, ampere, hopper, blackwell };

// The shape of the nodes a backend runs or models, as the collectives need it to lay out their
// rings (NCCL learns the same from its topology detection): ranks packed on nodes, rank r on
// node r / ranks_per_node, and the NICs each node has.
struct NodeShape {
  int ranks_per_node = 1;
  int nics = 1;
  // Bytes per second a GPU's memory moves when a workload copies or reduces in GPU memory, on a
  // backend that models time (SimGrid: fabric.node.gpu.memory_bandwidth); 0: such work takes no
  // modelled time (real hardware, where it takes real time).
  double gpu_memory_bw = 0;
  // What NCCL's tuning model reads of a node (workloads/tuning.h): a GPU's bandwidth to the other
  // GPUs of its node as NCCL moves data (bytes/s, each direction; 0: not known, then nic_bw),
  // whether that is NVLink (else PCIe), a NIC's bandwidth (bytes/s), the GPU generation, the CPU
  // vendor (NCCL's LL cap and network overhead differ on AMD), and whether the NVSwitch reduces
  // (NVLink SHARP).
  double intra_bw = 0;
  bool nvlink = false;
  double nic_bw = 0;
  GpuGeneration gpu = GpuGeneration::hopper;
  bool amd_cpu = false;
  bool nvls = false;
  // The fabric's switches reduce for this job (InfiniBand SHARP, NCCL's CollNet): what NCCL's
  // collnetEnable and a SHARP plugin give it.
  bool collnet = false;
  // The backend models NCCL's protocol costs (framing, step and base latencies: tuning.h) — a
  // model of time that includes the software (SimGrid's calibrated model; not alpha_beta, which
  // is the links alone, nor real hardware, where they are real).
  bool protocol_costs = false;
};

// Everything one rank's code may use.
struct RankEnv {
  int rank = 0;
  int size = 1;
  Bootstrap& boot;
  Runtime& rt;
  Device& dev;
  MemoryProvider& mem;
  NodeShape shape{};
  RankTrace* trace = nullptr;  // --trace: this rank's timeline (trace.h); null when not traced
};

// The provider a rank allocates `kind` memory from: the modelled GPU memory on a backend that
// models GPUs (SimGrid), else the process's provider (null when there is none).
// With phantom_payload (workload.payload: phantom): buffers without bytes that take the data
// path of `kind` (a backend whose capabilities list MemoryKind::phantom stores no bytes there).
inline MemoryProvider* memory_for(const RankEnv& env, MemoryKind kind, bool phantom_payload = false) {
  if (phantom_payload || kind == MemoryKind::phantom) return kind == MemoryKind::cuda ? &phantom_gpu_memory() : &phantom_memory();
  if (kind == MemoryKind::cuda && env.dev.caps().models_gpu_memory) return &modelled_gpu_memory();
  return memory_provider(kind);
}

using RankMain = std::function<Status(RankEnv&)>;

// What `rdmalab devices` shows of a port (what ibv_devinfo would, at a glance).
struct DeviceInfo {
  struct Gid {
    int index = 0;
    std::string gid;
    std::string type;    // IB | RoCE v1 | RoCE v2
    std::string netdev;  // for RoCE
  };
  std::string device;
  int port = 1;
  std::string state;       // PORT_ACTIVE, PORT_DOWN, ...
  std::string link_layer;  // InfiniBand | Ethernet
  std::uint32_t active_mtu = 0;
  double speed_gbps = 0;
  std::uint32_t lid = 0;
  std::vector<Gid> gids;
};

struct Availability {
  bool usable = false;
  std::string why;  // when not usable: what is missing and how to get it
};

// Where this process stands in a run of many processes (verbs across machines):
// --bootstrap HOST:PORT --rank R --size N --token T. Empty rendezvous: the backend places the
// ranks itself (threads, actors, or local child processes).
struct Placement {
  std::string rendezvous;
  int rank = 0;
  int size = 0;
  std::string token;
};

struct LaunchSpec {
  int ranks = 2;
  Placement placement;
  const Scenario* scenario = nullptr;  // fabric description and backend options; may be null
  MetricsSink* metrics = nullptr;      // optional
  // A backend may run the ranks in another process (simgrid runs every launch in a child
  // process: SimGrid allows one engine per process). What the ranks' code left in memory is then
  // carried back as bytes: the backend calls export_state there, after every rank returned, and
  // import_state here with the result. Both optional; in-process backends call neither.
  std::function<std::string()> export_state;
  std::function<void(const std::string&)> import_state;
  // When not empty: write the topology and samples of the run to this file (record.h), every
  // record_interval_s of the backend's time. Backends that cannot record refuse in check().
  std::string record_path;
  double record_interval_s = 10e-6;
  // Show progress on stderr (simulated time reached, rate) during long runs.
  bool progress = false;
  // When not null and set to true by another thread: stop the run as soon as possible and return
  // Errc::cancelled. Backends that run ranks in child processes (simgrid, verbs) kill them,
  // loopback wakes its rank threads' waits; see Backend::can_cancel().
  const std::atomic<bool>* cancel = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual Availability availability() const = 0;
  virtual Capabilities capabilities() const = 0;
  // Declares the scenario keys this backend reads beyond core's (e.g. simgrid's fabric model).
  virtual void add_keys(Schema& schema) const { (void)schema; }
  // Validates the scenario parts this backend reads (fabric, backend options) before anything
  // runs. Errors carry the key and what would be allowed.
  virtual Status check(const Scenario& scenario) const { (void)scenario; return Status::ok(); }
  // Runs `main` once per rank this process hosts, and returns when all of them have returned.
  // The first failing rank's Status is returned, prefixed with its rank. Blocking.
  // Backends that run one rank per process (verbs) call `main` once.
  virtual Status launch(const LaunchSpec& spec, const RankMain& main) = 0;
  // The devices and ports this backend can use here (hardware backends). Errors: not_found with
  // the reason (no RDMA in the kernel, no devices).
  virtual Result<std::vector<DeviceInfo>> devices() const { return std::vector<DeviceInfo>{}; }
  // Whether launch() can write a record (LaunchSpec::record_path).
  virtual bool can_record() const { return false; }
  // Whether launch() honours LaunchSpec::cancel.
  virtual bool can_cancel() const { return false; }
  // True when this process hosts all ranks (loopback, simgrid): results of every rank are local.
  virtual bool hosts_all_ranks() const { return true; }
  // How strongly this backend asks to be the default when neither the scenario nor --backend
  // names one: the usable backend with the highest wins (a model that needs no hardware first,
  // then the reference; hardware never by default). 0: never the default.
  virtual int default_preference() const { return 0; }
};

// The Status a launch reports from its ranks' results: the first real failure (not another
// rank's notice that it stopped because of it), prefixed with its rank; ok when all are ok.
Status first_failure(const std::vector<Status>& per_rank);

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

struct BackendInfo {
  std::string name;
  BackendFactory make;
};

// The registry of backends compiled into this binary. Filled by the executable (see
// backends/backends.h), never by core itself: core includes no backend.
class BackendRegistry {
 public:
  void add(std::string name, BackendFactory make);
  const std::vector<BackendInfo>& all() const { return backends_; }
  // Errors: not_found, listing the names present.
  Result<std::unique_ptr<Backend>> make(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<BackendInfo> backends_;
};

}  // namespace rdmalab
