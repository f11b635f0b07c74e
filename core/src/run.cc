#include "rdmalab/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <fstream>
#include <optional>
#include <set>

#include "rdmalab/files.h"
#include "rdmalab/gpus.h"
#include "rdmalab/metrics.h"
#include "rdmalab/progress.h"
#include "rdmalab/record.h"
#include "rdmalab/staging.h"
#include "rdmalab/trace.h"
#include "rdmalab/bootstrap.h"
#include "rdmalab/units.h"
#include "rdmalab/workloads/collectives.h"
#include "rdmalab/workloads/common.h"
#include "rdmalab/workloads/perftest.h"
#include "rdmalab/workloads/tcp.h"
#include "rdmalab/workloads/tuning.h"
#include "rdmalab/workloads/training.h"
#include "rdmalab/workloads/verbs_errors.h"

namespace rdmalab {

WorkMeter& work_meter() {
  static WorkMeter meter;
  return meter;
}


const char* version() noexcept { return "0.1.0"; }

const WorkloadRegistry& builtin_workloads() {
  static const WorkloadRegistry reg = [] {
    WorkloadRegistry r;
    workloads::register_perftest(r);
    workloads::register_collectives(r);
    workloads::register_training(r);
    workloads::register_verbs_errors(r);
    workloads::register_tcp(r);
    return r;
  }();
  return reg;
}

Schema full_schema(const BackendRegistry& backends) {
  Schema s = core_schema();
  s.set_allowed("backend", backends.names());
  // The default backend: the usable one that asks most (Backend::default_preference: the model
  // where this build has it, no hardware needed).
  int best = 0;
  for (const auto& info : backends.all()) {
    auto b = info.make();
    if (b->default_preference() > best && b->availability().usable) {
      best = b->default_preference();
      KeySpec spec = *s.find("backend");
      spec.default_value = info.name;
      s.add(spec);
    }
  }
  s.set_allowed("workload.type", builtin_workloads().names());
  for (const auto& b : backends.all()) b.make()->add_keys(s);
  return s;
}

int scenario_ranks(const Scenario& sc) { return static_cast<int>(sc.get_int("fabric.nodes") * sc.get_int("fabric.gpus_per_node")); }

Status check_fabric_shape(const Scenario& sc) {
  if (const GpuSpec* g = find_gpu(sc.get_string("fabric.gpu.model")); g && sc.is_set("fabric.gpu.generation") &&
      sc.get_string("fabric.gpu.generation") != workloads::gpu_generation_name(g->generation))
    return sc.error("fabric.gpu.generation", fmt::format("is {}, but fabric.gpu.model {} ({}) is {}: drop one, or make them agree",
                                                         sc.get_string("fabric.gpu.generation"), g->name, g->product,
                                                         workloads::gpu_generation_name(g->generation)));
  // The fabric's shape against fabric.nodes, whichever backend runs (the keys' declarer checks).
  for (const auto& check : sc.checks) RDMALAB_TRY(check(sc));
  return Status::ok();
}

std::vector<std::string> other_backend_keys(const Scenario& sc, const std::string& backend) {
  // Core's own sections; any other first segment is a backend's section (docs/scenarios.md).
  static const std::set<std::string> core_sections = {"name", "description", "backend", "seed", "fabric", "workload", "training", "record"};
  std::vector<std::string> out;
  for (const auto& [key, entry] : sc.values) {
    if (!entry.explicit_) continue;
    const std::string section = key.substr(0, key.find('.'));
    if (!core_sections.count(section) && section != backend) out.push_back(key);
  }
  return out;
}

std::vector<std::string> unread_workload_keys(const Scenario& sc) {
  std::vector<std::string> out;
  const WorkloadInfo* w = builtin_workloads().find(sc.get_string("workload.type"));
  if (!w || w->reads.empty()) return out;
  for (const auto& [key, entry] : sc.values) {
    if (!entry.explicit_ || key == "workload.type") continue;
    if (key.rfind("workload.", 0) != 0 && key.rfind("training.", 0) != 0) continue;
    if (std::find(w->reads.begin(), w->reads.end(), key) == w->reads.end()) out.push_back(key);
  }
  return out;
}

namespace {

// Bytes this process may still allocate: MemAvailable, within the cgroup v2 limit if there is
// one. 0 when neither can be read (then nothing is refused).
std::uint64_t available_host_memory() {
  std::uint64_t avail = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") {
      avail = kib * 1024;
      break;
    }
  }
  std::ifstream max_f("/sys/fs/cgroup/memory.max"), cur_f("/sys/fs/cgroup/memory.current");
  std::string max_s;
  std::uint64_t cur = 0;
  if (max_f >> max_s && max_s != "max" && cur_f >> cur) {
    try {
      const std::uint64_t lim = std::stoull(max_s);
      const std::uint64_t left = lim > cur ? lim - cur : 0;
      avail = avail ? std::min(avail, left) : left;
    } catch (...) {
    }
  }
  return avail;
}

}  // namespace

Status check_host_memory(const Scenario& sc, const Backend& backend, int ranks_here) {
  const WorkloadInfo* w = builtin_workloads().find(sc.get_string("workload.type"));
  if (!w || !w->min_buffer_bytes || workloads::phantom_payload(sc)) return Status::ok();
  const MemoryKind kind = workloads::memory_kind_of(sc);
  const bool in_host = kind == MemoryKind::host || (kind == MemoryKind::cuda && backend.capabilities().models_gpu_memory);
  if (!in_host) return Status::ok();
  const std::uint64_t per_rank = w->min_buffer_bytes(sc);
  const long double need = static_cast<long double>(per_rank) * ranks_here;
  const std::uint64_t avail = available_host_memory();
  if (avail == 0 || need <= static_cast<long double>(avail)) return Status::ok();
  auto gib = [](long double b) { return fmt::format("{:.1f} GiB", static_cast<double>(b / (1024.0L * 1024 * 1024))); };
  const std::string fix = backend.capabilities().models_gpu_memory
                              ? "use workload.payload: phantom (the model moves sizes without bytes), fewer ranks or smaller sizes"
                              : "use fewer ranks or smaller sizes (or run on the simgrid backend with workload.payload: phantom)";
  return sc.error(sc.is_set("workload.sizes") ? "workload.sizes" : "workload.size",
                  fmt::format("{} ranks here need at least {} of buffers ({} each{}), and this machine has {} of memory available: {}",
                              ranks_here, gib(need), units::format_size(per_rank),
                              kind == MemoryKind::cuda ? ", modelled GPU memory held in host memory" : "", gib(avail), fix));
}

Status check_run(const Scenario& sc, Backend& backend) {
  Availability av = backend.availability();
  if (!av.usable) {
    const std::string msg = fmt::format("backend '{}' is not usable here: {}", backend.name(), av.why);
    // Named by the scenario (not by --backend): say where.
    if (sc.is_set("backend") && sc.get_string("backend") == backend.name()) return Status(Errc::not_supported, sc.error("backend", msg).message());
    return Status(Errc::not_supported, msg);
  }
  // A key of another backend's section given on the command line was meant for this run: it
  // would not act here. In the file, sections for other backends are how one scenario runs on
  // all three transports; the CLI lists them as not used.
  for (const auto& key : other_backend_keys(sc, backend.name()))
    if (sc.loc(key).from_command_line())
      return sc.error(key, fmt::format("is read by the {} backend only; this run uses {} (drop it, or run --backend {})",
                                       key.substr(0, key.find('.')), backend.name(), key.substr(0, key.find('.'))));
  RDMALAB_TRY(check_fabric_shape(sc));
  RDMALAB_TRY(backend.check(sc));
  const WorkloadInfo* w = builtin_workloads().find(sc.get_string("workload.type"));
  if (!w) return sc.error("workload.type", "unknown workload");
  Status st = w->check(sc, backend.capabilities(), scenario_ranks(sc));
  if (!st) return Status(st.code(), fmt::format("{} (backend {})", st.message(), backend.name()));
  // A key the workload does not read would not act. Refused, unless the file wrote it for the
  // workload it names and --set chose another (then the CLI lists it as not used).
  const bool type_from_cli = sc.loc("workload.type").from_command_line();
  for (const auto& key : unread_workload_keys(sc))
    if (!type_from_cli || sc.loc(key).from_command_line()) {
      std::string readers;
      for (const auto& other : builtin_workloads().all())
        if (std::find(other.reads.begin(), other.reads.end(), key) != other.reads.end()) readers += (readers.empty() ? "" : ", ") + other.name;
      return sc.error(key, fmt::format("{} does not read this key, so it would not act: drop it{}", w->name,
                                       readers.empty() ? std::string() : " (it is read by " + readers + ")"));
    }
  // Without knowing the placement: a backend with a process per rank may host only one here.
  return check_host_memory(sc, backend, backend.hosts_all_ranks() ? scenario_ranks(sc) : 1);
}

void fill_tuning_facts(const Scenario& sc, NodeShape& shape) {
  shape.nic_bw = sc.get_bandwidth("fabric.link.bandwidth");
  const std::string gen = sc.get_string("fabric.gpu.generation");
  shape.gpu = gen == "volta" ? GpuGeneration::volta : gen == "ampere" ? GpuGeneration::ampere : gen == "blackwell" ? GpuGeneration::blackwell : GpuGeneration::hopper;
  // A named GPU gives its generation unless the scenario says it (check_fabric_shape: they agree).
  if (const GpuSpec* g = find_gpu(sc.get_string("fabric.gpu.model")); g && !sc.is_set("fabric.gpu.generation")) shape.gpu = g->generation;
  shape.amd_cpu = sc.get_string("fabric.cpu.vendor") == "amd";
}

NodeShape scenario_node_shape(const Scenario* sc, int ranks) {
  NodeShape shape;
  if (!sc) return shape;
  const auto g = static_cast<int>(sc->get_int("fabric.gpus_per_node"));
  if (g > 1 && ranks % g == 0) shape.ranks_per_node = g;
  fill_tuning_facts(*sc, shape);
  return shape;
}

namespace {

// Every rank's string, comma-joined in rank order (empty ones left out): two allgathers, the
// lengths and then the bytes padded to the longest.
Result<std::string> gather_to_all(Bootstrap& boot, const std::string& mine) {
  RDMALAB_ASSIGN(auto lens, allgather_value<std::uint64_t>(boot, static_cast<std::uint64_t>(mine.size())));
  const std::uint64_t most = *std::max_element(lens.begin(), lens.end());
  std::vector<std::byte> padded(most);
  if (!mine.empty()) std::memcpy(padded.data(), mine.data(), mine.size());
  RDMALAB_ASSIGN(auto all, boot.allgather(padded));
  std::string out;
  for (std::size_t r = 0; r < lens.size(); ++r)
    if (lens[r]) out += (out.empty() ? "" : ",") + std::string(reinterpret_cast<const char*>(all.data()) + r * most, lens[r]);
  return out;
}

// --trace keeps at most 2 million events in all (a few hundred MB in memory while the run goes,
// the model's 1024 ranks in one process included): 200,000 per rank for up to 10 ranks, fewer
// beyond, at least 1,000.
std::size_t trace_events_per_rank(int ranks) {
  return std::clamp<std::size_t>(2'000'000 / static_cast<std::size_t>(std::max(ranks, 1)), 1'000, 200'000);
}

// Whether a rank's device gets the staged GPU path's layer (staging.h): GPU memory on a backend
// with real hardware when workload.gpu_path is staged, or auto (then only when the backend
// refuses GPUDirect RDMA). A model (SimGrid) runs the path in its own model instead.
std::optional<StagingOptions> staging_for(const Scenario& sc, const Capabilities& caps, const RunOptions& options) {
  if (options.stage_host_memory) return StagingOptions{MemoryKind::host, false};
  if (caps.models_gpu_memory || workloads::memory_kind_of(sc) != MemoryKind::cuda) return std::nullopt;
  const std::string path = sc.get_string("workload.gpu_path");
  if (path == "staged") return StagingOptions{MemoryKind::cuda, false};
  if (path == "auto") return StagingOptions{MemoryKind::cuda, true};
  return std::nullopt;
}

}  // namespace

RunOutcome run_scenario(const Scenario& sc, Backend& backend, const RunOptions& options) {
  MetricsSink* metrics = options.metrics;
  RunOutcome out;
  work_meter().reset();  // a workload that declares its work sets it again
  if (!options.checked) out.status = check_run(sc, backend);
  if (out.status && !backend.hosts_all_ranks() && options.placement.rendezvous.empty())
    out.status = check_host_memory(sc, backend, scenario_ranks(sc));  // verbs without a placement forks every rank here
  if (!out.status) return out;
  if (!options.record_path.empty() && !backend.can_record()) {
    out.status = Status(Errc::not_supported, fmt::format("backend {} cannot record runs (it does not write records; --record needs a backend that does)", backend.name()));
    return out;
  }
  const WorkloadInfo* w = builtin_workloads().find(sc.get_string("workload.type"));
  std::mutex mu;
  LaunchSpec spec;
  spec.ranks = scenario_ranks(sc);
  spec.scenario = &sc;
  spec.metrics = metrics;
  // The backend writes next to the destination; the file takes its name once it is complete, so
  // an earlier record of the same name is never left half-overwritten.
  std::string record_tmp;
  if (!options.record_path.empty()) {
    if (options.record_temp_path.empty()) {
      auto tmp = create_temp_next_to(options.record_path);
      if (!tmp) {
        out.status = Status(Errc::io, fmt::format("--record: {}", tmp.status().message()));
        return out;
      }
      record_tmp = *tmp;
    } else {
      record_tmp = options.record_temp_path;
      if (Status st = create_exclusive(record_tmp); !st) {
        out.status = Status(Errc::io, fmt::format("--record: {}", st.message()));
        return out;
      }
    }
  }
  spec.record_path = record_tmp;
  if (sc.has("record.interval")) spec.record_interval_s = sc.get_time("record.interval");
  spec.progress = options.progress;
  spec.cancel = options.cancel;
  spec.placement = options.placement;
  // --trace: each rank's events (trace.h), gathered here: comma-joined fragments of the file.
  std::string trace_events;
  // One rank per process: rank 0's process writes the file (its own events only when the run failed).
  bool trace_owner = options.placement.rendezvous.empty();
  // A forked child's state: its rows, then (after a NUL, which JSON never holds) its ranks' events.
  spec.export_state = [&] { return rows_to_json(out.rows) + std::string(1, '\0') + trace_events; };
  // Backends with a process per rank import every rank's state: rows accumulate.
  spec.import_state = [&](const std::string& bytes) {
    const auto nul = bytes.find('\0');
    for (auto& r : rows_from_json(bytes.substr(0, nul))) out.rows.push_back(std::move(r));
    if (nul != std::string::npos && nul + 1 < bytes.size()) {
      std::lock_guard<std::mutex> lock(mu);
      trace_events += (trace_events.empty() ? "" : ",") + bytes.substr(nul + 1);
    }
  };
  out.status = backend.launch(spec, [&](RankEnv& base) -> Status {
    std::vector<ResultRow> rows;
    Status st;
    std::unique_ptr<RankTrace> trace;
    std::unique_ptr<TracingRuntime> traced_rt;
    std::unique_ptr<RankEnv> traced;
    bool tracing = !options.trace_path.empty();
    const bool one_rank_here = !options.placement.rendezvous.empty();
    if (one_rank_here) {
      // One rank per process, each with its own command line: every rank traces when any does
      // (rank 0 gathers the events at the end and writes the file).
      auto flags = allgather_value<std::uint8_t>(base.boot, tracing ? 1 : 0);
      if (!flags) return flags.status().with_context("before the run");
      tracing = std::any_of(flags->begin(), flags->end(), [](std::uint8_t t) { return t != 0; });
    }
    if (tracing) {
      trace = std::make_unique<RankTrace>(base.rank, base.rt, trace_events_per_rank(base.size));
      if (!base.dev.caps().models_time) trace->set_mirror(trace_mirror());  // NVTX where CUDA is built in
      traced_rt = std::make_unique<TracingRuntime>(base.rt, *trace);
      traced.reset(new RankEnv{base.rank, base.size, base.boot, *traced_rt, base.dev, base.mem, base.shape, trace.get()});
    }
    RankEnv& env = traced ? *traced : base;
    {
      TraceScope whole(env.trace, "workload", w->name);
      if (auto staging = staging_for(sc, env.dev.caps(), options)) {
        std::unique_ptr<Device> dev = make_staging_device(env.dev, *staging);
        RankEnv staged{env.rank, env.size, env.boot, env.rt, *dev, env.mem, env.shape, env.trace};
        st = w->run(staged, sc, rows);
      } else {
        st = w->run(env, sc, rows);
      }
    }
    std::string mine = trace ? trace->events_json() : std::string();
    if (one_rank_here && trace && st) {
      auto gathered = gather_to_all(env.boot, mine);
      if (!gathered) st = gathered.status().with_context("--trace: gathering the ranks' events");
      else if (env.rank == 0) mine = *gathered;
      else mine.clear();
    }
    if (one_rank_here && env.rank == 0 && !options.trace_path.empty()) trace_owner = true;
    if (!mine.empty()) {
      std::lock_guard<std::mutex> lock(mu);
      trace_events += (trace_events.empty() ? "" : ",") + mine;
    }
    if (env.rank == 0 && !rows.empty()) {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& r : rows) {
        r.backend = backend.name();
        out.rows.push_back(std::move(r));
      }
    }
    return st;
  });
  for (const auto& r : out.rows) {
    out.errors += r.errors;
    if (metrics) metrics->on_row(r);
  }
  if (!options.record_path.empty()) {
    // The backend wrote the header, topology and samples; the rows and the outcome close it.
    RecordWriter writer;
    Status rs = writer.open(record_tmp, true);
    if (rs) {
      writer.rows(out.rows);
      writer.end(out.status ? (out.errors ? "failed" : "ok") : out.status.code() == Errc::cancelled ? "cancelled" : "failed");
      rs = writer.close();
    }
    if (rs) rs = commit_temp(record_tmp, options.record_path);
    if (!rs) {
      std::remove(record_tmp.c_str());
      if (out.status) out.status = rs;
    }
  }
  if (!options.trace_path.empty() && trace_owner) {
    // Written whatever the outcome: a failed run's timeline shows where it stopped.
    const std::string clock = backend.capabilities().models_time ? "simulated seconds" : "wall-clock seconds since each rank started";
    Status ts = write_file_atomically(options.trace_path, trace_file_json({trace_events}, backend.name(), sc.file, clock));
    if (!ts && out.status) out.status = ts.with_context("--trace");
  }
  if (out.status && out.errors > 0)
    out.status = Status(Errc::data, fmt::format("{} wrong bytes or failed checks in the delivered data", out.errors));
  return out;
}

}  // namespace rdmalab
