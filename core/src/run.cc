#include "rdmalab/run.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include "rdmalab/metrics.h"
#include "rdmalab/record.h"
#include "rdmalab/staging.h"
#include "rdmalab/workloads/collectives.h"
#include "rdmalab/workloads/common.h"
#include "rdmalab/workloads/perftest.h"
#include "rdmalab/workloads/training.h"

namespace rdmalab {

const char* version() noexcept { return "0.1.0"; }

const WorkloadRegistry& builtin_workloads() {
  static const WorkloadRegistry reg = [] {
    WorkloadRegistry r;
    workloads::register_perftest(r);
    workloads::register_collectives(r);
    workloads::register_training(r);
    return r;
  }();
  return reg;
}

Schema full_schema(const BackendRegistry& backends) {
  Schema s = core_schema();
  s.set_allowed("backend", backends.names());
  // The default backend is the SimGrid model when this build has it (no hardware needed), else
  // loopback.
  for (const char* preferred : {"simgrid", "loopback"}) {
    auto b = backends.make(preferred);
    if (b && (*b)->availability().usable) {
      KeySpec spec = *s.find("backend");
      spec.default_value = preferred;
      s.add(spec);
      break;
    }
  }
  s.set_allowed("workload.type", builtin_workloads().names());
  for (const auto& b : backends.all()) b.make()->add_keys(s);
  return s;
}

int scenario_ranks(const Scenario& sc) { return static_cast<int>(sc.get_int("fabric.nodes") * sc.get_int("fabric.gpus_per_node")); }

Status check_run(const Scenario& sc, Backend& backend) {
  Availability av = backend.availability();
  if (!av.usable) return Status(Errc::not_supported, fmt::format("backend '{}' is not usable here: {}", backend.name(), av.why));
  RDMALAB_TRY(backend.check(sc));
  const WorkloadInfo* w = builtin_workloads().find(sc.get_string("workload.type"));
  if (!w) return sc.error("workload.type", "unknown workload");
  Status st = w->check(sc, backend.capabilities(), scenario_ranks(sc));
  if (!st) return Status(st.code(), fmt::format("{} (backend {})", st.message(), backend.name()));
  return Status::ok();
}

NodeShape scenario_node_shape(const Scenario* sc, int ranks) {
  NodeShape shape;
  if (!sc) return shape;
  const auto g = static_cast<int>(sc->get_int("fabric.gpus_per_node"));
  if (g > 1 && ranks % g == 0) shape.ranks_per_node = g;
  return shape;
}

namespace {

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
  out.status = check_run(sc, backend);
  if (!out.status) return out;
  if (!options.record_path.empty() && !backend.can_record()) {
    out.status = Status(Errc::not_supported, fmt::format("backend {} cannot record runs yet (simgrid can)", backend.name()));
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
  const std::string record_tmp = options.record_path.empty() ? std::string() : options.record_path + ".tmp";
  spec.record_path = record_tmp;
  if (sc.has("record.interval")) spec.record_interval_s = sc.get_time("record.interval");
  spec.progress = options.progress;
  spec.cancel = options.cancel;
  spec.placement = options.placement;
  spec.export_state = [&] { return rows_to_json(out.rows); };
  // Backends with a process per rank import every rank's state: rows accumulate.
  spec.import_state = [&](const std::string& bytes) {
    for (auto& r : rows_from_json(bytes)) out.rows.push_back(std::move(r));
  };
  out.status = backend.launch(spec, [&](RankEnv& env) -> Status {
    std::vector<ResultRow> rows;
    Status st;
    if (auto staging = staging_for(sc, env.dev.caps(), options)) {
      std::unique_ptr<Device> dev = make_staging_device(env.dev, *staging);
      RankEnv staged{env.rank, env.size, env.boot, env.rt, *dev, env.mem};
      st = w->run(staged, sc, rows);
    } else {
      st = w->run(env, sc, rows);
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
    if (rs && std::rename(record_tmp.c_str(), options.record_path.c_str()) != 0)
      rs = Status(Errc::io, fmt::format("{}: cannot move the record into place ({})", options.record_path, std::strerror(errno)));
    if (!rs && out.status) out.status = rs;
  }
  if (out.status && out.errors > 0)
    out.status = Status(Errc::data, fmt::format("{} wrong bytes or failed checks in the delivered data", out.errors));
  return out;
}

}  // namespace rdmalab
