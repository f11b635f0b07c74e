// rdmalab: run, validate and list scenarios from the command line.
//
// Exit status: 0 success; 1 a run that failed (wrong data, transport error); 2 bad usage or a
// bad scenario (nothing ran).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <signal.h>
#include <unistd.h>

#include "backends.h"
#include "doctor.h"
#include "validation.h"
#include "rdmalab/calibration.h"
#include "rdmalab/files.h"
#include "rdmalab/record.h"
#include "rdmalab/run.h"
#include "rdmalab/tcp_bootstrap.h"
#include "rdmalab/units.h"
#ifdef RDMALAB_HAVE_CUDA
#include "rdmalab/gpu.h"
#endif

namespace rdmalab {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRunFailed = 1;
constexpr int kExitUsage = 2;

// Stopping a run (Ctrl-C, SIGTERM from a scheduler, a closed terminal): the first signal asks the
// backend to stop (simgrid and verbs kill their processes, loopback wakes its ranks), the run's
// outputs are written complete with the outcome "cancelled", and the exit status is the shell's
// 128 + signal. A backend that cannot be stopped within kStopGrace seconds is ended by SIGALRM;
// a second signal ends the process at once. Either way, child processes die with it
// (fork_child's parent-death signal).
std::atomic<bool> g_stop{false};
volatile std::sig_atomic_t g_stop_signal = 0;
constexpr unsigned kStopGrace = 10;

extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
  g_stop.store(true);
  ::alarm(kStopGrace);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESETHAND;  // the second one takes its default action
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

// Before a run: whether a file can be written at `path` when the run ends (its folder exists and
// is writable, and it is not a folder itself), so a long run is not lost to a typo in a path.
Status check_writable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Status(Errc::invalid_argument, fmt::format("{}: is a folder, not a file", path));
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) return Status(Errc::invalid_argument, fmt::format("{}: the folder {} does not exist", path, dir.string()));
  if (::access(dir.c_str(), W_OK) != 0)
    return Status(Errc::invalid_argument, fmt::format("{}: cannot write in the folder {} ({})", path, dir.string(), std::strerror(errno)));
  return Status::ok();
}

bool is_collective_row(const ResultRow& r) { return r.extra.count("busbw_gbps") > 0; }

std::string note(const ResultRow& r, const char* key) {
  auto it = r.notes.find(key);
  return it == r.notes.end() ? std::string() : it->second;
}

// The algorithm, its protocol and, where it was split over several, the channels:
// "ring, LL128, 8 channels".
std::string algorithm_text(const ResultRow& r) {
  std::string out = note(r, "algorithm");
  if (const std::string pr = note(r, "protocol"); !pr.empty()) out += ", " + pr;
  const std::string ch = note(r, "channels");
  if (!ch.empty() && ch != "1") out += fmt::format(", {} channels", ch);
  return out;
}

// nccl-tests' table: one line per size, out-of-place then in-place columns.
void print_collective_table(const std::vector<const ResultRow*>& rows) {
  fmt::print("#{:>62}{:>36}\n", "out-of-place", "in-place");
  fmt::print("#{:>11} {:>12} {:>9} {:>6} {:>6} {:>9} {:>7} {:>7} {:>6} {:>9} {:>7} {:>7} {:>6}\n", "size", "count", "type", "redop", "root",
             "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  fmt::print("#{:>11} {:>12} {:>9} {:>6} {:>6} {:>9} {:>7} {:>7} {:>6} {:>9} {:>7} {:>7} {:>6}\n", "(B)", "(elements)", "", "", "", "(us)",
             "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  auto cols = [](const ResultRow* r) {
    if (!r) return fmt::format("{:>9} {:>7} {:>7} {:>6}", "N/A", "N/A", "N/A", "N/A");
    return fmt::format("{:>9.2f} {:>7.2f} {:>7.2f} {:>6}", r->time_s * 1e6, r->extra.at("algbw_gbps"), r->extra.at("busbw_gbps"), r->errors);
  };
  for (std::size_t i = 0; i < rows.size();) {
    const ResultRow* out = nullptr;
    const ResultRow* in = nullptr;
    const ResultRow* first = rows[i];
    for (; i < rows.size() && rows[i]->bytes == first->bytes && rows[i]->workload == first->workload; ++i) {
      if (note(*rows[i], "placement") == "in-place") {
        if (in) break;
        in = rows[i];
      } else {
        if (out || in) break;
        out = rows[i];
      }
    }
    fmt::print(" {:>11} {:>12} {:>9} {:>6} {:>6} {} {}   {}\n", first->bytes, static_cast<std::uint64_t>(first->extra.at("count")),
               note(*first, "type"), note(*first, "redop"), note(*first, "root"), cols(out), cols(in), algorithm_text(*first));
  }
}

bool is_training_row(const ResultRow& r) { return r.extra.count("step_ms") > 0; }

double extra(const ResultRow& r, const char* key) {
  auto it = r.extra.find(key);
  return it == r.extra.end() ? 0.0 : it->second;
}

void print_training_row(const ResultRow& r) {
  if (r.workload == "train_pp") {
    fmt::print("{:>12} {:>28} {:>10} {:>11} {:>10} {:>9} {:>9} {:>12} {:>7}\n", "model", "parallelism", "step[ms]", "compute[ms]", "bubble[ms]",
               "bubble", "ideal", "samples/s", "#wrong");
    fmt::print("{:>12} {:>28} {:>10.3f} {:>11.3f} {:>10.3f} {:>8.1f}% {:>8.1f}% {:>12.1f} {:>7}\n", note(r, "model"), note(r, "parallelism"),
               extra(r, "step_ms"), extra(r, "compute_ms"), extra(r, "bubble_ms"), 100 * extra(r, "bubble_fraction"),
               100 * extra(r, "ideal_bubble_fraction"), extra(r, "samples_per_s"), r.errors);
    return;
  }
  fmt::print("{:>12} {:>20} {:>14} {:>8} {:>10} {:>11} {:>9} {:>12} {:>12} {:>7}\n", "model", "parallelism", "grad bytes", "buckets", "step[ms]",
             "compute[ms]", "comm[ms]", "exposed[ms]", "samples/s", "#wrong");
  fmt::print("{:>12} {:>20} {:>14} {:>8} {:>10.3f} {:>11.3f} {:>9.3f} {:>12.3f} {:>12.1f} {:>7}\n", note(r, "model"), note(r, "parallelism"),
             r.bytes, static_cast<int>(extra(r, "buckets")), extra(r, "step_ms"), extra(r, "compute_ms"), extra(r, "comm_ms"),
             extra(r, "exposed_ms"), extra(r, "samples_per_s"), r.errors);
}

void print_table(const std::vector<ResultRow>& rows) {
  bool header_bw = false, header_lat = false;
  std::vector<const ResultRow*> coll;
  for (const auto& r : rows)
    if (is_collective_row(r)) coll.push_back(&r);
  if (!coll.empty()) print_collective_table(coll);
  for (const auto& r : rows)
    if (is_training_row(r)) print_training_row(r);
  for (const auto& r : rows) {
    if (is_collective_row(r) || is_training_row(r)) continue;
    if (r.lat) {
      if (!header_lat) {
        if (!note(r, "data_path").empty()) fmt::print("# data path: {}\n", note(r, "data_path"));
        fmt::print("{:>10} {:>12} {:>12} {:>12} {:>16} {:>12} {:>14} {:>14} {:>16} {:>8}\n", "#bytes", "#iterations", "t_min[usec]",
                   "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99% [usec]", "99.9% [usec]", "errors");
        header_lat = true;
      }
      fmt::print("{:>10} {:>12} {:>12.2f} {:>12.2f} {:>16.2f} {:>12.2f} {:>14.2f} {:>14.2f} {:>16.2f} {:>8}\n", r.bytes, r.iterations,
                 r.lat->min_us, r.lat->max_us, r.lat->typical_us, r.lat->avg_us, r.lat->stdev_us, r.lat->p99_us, r.lat->p999_us, r.errors);
    } else {
      if (!header_bw) {
        // What the figures add up: perftest's table is one pair's; rdmalab sums every pair.
        const auto pairs = r.extra.count("pairs") ? static_cast<long>(r.extra.at("pairs")) : 1L;
        const std::string path = note(r, "data_path");
        if (pairs > 1 || !path.empty())
          fmt::print("# {}{}\n", pairs > 1 ? fmt::format("{} pairs: bandwidth and message rate summed over all of them; ", pairs) : "",
                     path.empty() ? "" : "data path: " + path);
        fmt::print("{:>10} {:>12} {:>16} {:>19} {:>14} {:>19} {:>8}\n", "#bytes", "#iterations", "BW peak[Gb/sec]", "BW average[Gb/sec]",
                   "MsgRate[Mpps]", "BW average[MiB/s]", "errors");
        header_bw = true;
      }
      fmt::print("{:>10} {:>12} {:>16.2f} {:>19.2f} {:>14.6f} {:>19.2f} {:>8}\n", r.bytes, r.iterations, r.bw_peak_gbps, r.bw_gbps,
                 r.msg_rate_mpps, r.bw_gbps * 1e9 / 8 / 1048576.0, r.errors);
    }
  }
}

// --explain: NCCL's tuning model's candidates for each collective size (notes.tuning), and what
// ran. One block per size (the in-place row repeats the out-of-place one's choice).
void print_explanation(const std::vector<ResultRow>& rows) {
  bool any = false;
  for (const auto& r : rows) {
    if (!is_collective_row(r) || note(r, "placement") == "in-place") continue;
    const std::string t = note(r, "tuning");
    if (!any) fmt::print("\n# NCCL's tuning model (NCCL 2.30 src/graph/tuning.cc; docs/collectives.md), per size:\n");
    any = true;
    if (t.empty()) {
      fmt::print("# {} {} B: not tuned by NCCL (point to point); ran {}\n", r.workload, r.bytes, algorithm_text(r));
      continue;
    }
    fmt::print("# {} {} B on {} ranks: ran {}; NCCL's model picks {}\n", r.workload, r.bytes, r.ranks, algorithm_text(r), note(r, "nccl_choice"));
    std::size_t from = 0;
    while (from < t.size()) {
      std::size_t to = t.find("; ", from);
      if (to == std::string::npos) to = t.size();
      fmt::print("#   {}\n", t.substr(from, to - from));
      from = to + 2;
    }
  }
  if (!any) fmt::print("\n# --explain: no collective in this run, so no tuning to explain\n");
}

struct RunArgs {
  std::string scenario;
  std::string backend;
  std::vector<std::string> sets;
  std::string json;
  std::string record;
  std::string bootstrap;
  int rank = -1;
  int size = -1;
  std::string token;
  bool quiet = false;
  bool explain = false;
};

Result<Scenario> load(const std::string& path, const std::vector<std::string>& sets) {
  return load_scenario(path, sets, full_schema(all_backends()));
}

// A message of several problems, one per line, each line prefixed as a single one would be.
// Lines are printed as text: a control character shows as \xNN (never acts on the terminal), and
// a line stops after 400 bytes.
std::string printable(const std::string& line) {
  std::string out;
  for (unsigned char c : line) {
    if (out.size() >= 400) return out + "…";
    if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

void print_problems(const std::string& message) {
  std::size_t start = 0;
  while (start <= message.size()) {
    const std::size_t end = message.find('\n', start);
    fmt::print(stderr, "rdmalab: {}\n", printable(message.substr(start, end == std::string::npos ? std::string::npos : end - start)));
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

// Keys the file gives for another backend's section do not act on this run: say so.
void note_other_backend_keys(const Scenario& sc, const std::string& backend) {
  const auto keys = other_backend_keys(sc, backend);
  if (keys.empty()) return;
  std::string list;
  for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
  fmt::print(stderr, "rdmalab: note: not used on backend {}: {} (keys for another backend)\n", backend, list);
}

int cmd_run(RunArgs a) {
  auto sc = load(a.scenario, a.sets);
  if (!sc) {
    print_problems(sc.status().message());
    return kExitUsage;
  }
  std::string backend_name = a.backend.empty() ? sc->get_string("backend") : a.backend;
  auto backend = all_backends().make(backend_name);
  if (!backend) {
    fmt::print(stderr, "rdmalab: --backend: {}\n", backend.status().message());
    return kExitUsage;
  }
  Status pre = check_run(*sc, **backend);
  if (!pre) {
    print_problems(pre.message());
    return kExitUsage;
  }
  for (const auto& [option, path] : {std::pair<const char*, const std::string&>{"--json", a.json}, {"--record", a.record}})
    if (!path.empty()) {
      if (Status w = check_writable(path); !w) {
        fmt::print(stderr, "rdmalab: {}: {}\n", option, w.message());
        return kExitUsage;
      }
      if (same_file(path, a.scenario)) {
        fmt::print(stderr, "rdmalab: {} {}: that is the scenario file itself; write the results elsewhere\n", option, path);
        return kExitUsage;
      }
    }
  if (!a.json.empty() && !a.record.empty() && same_file(a.json, a.record)) {
    fmt::print(stderr, "rdmalab: --json and --record both name {}: one would overwrite the other; give them different files\n", a.json);
    return kExitUsage;
  }
  if (!a.record.empty() && !(*backend)->can_record()) {
    fmt::print(stderr, "rdmalab: --record: backend {} cannot record runs yet (simgrid can)\n", backend_name);
    return kExitUsage;
  }
  // --rank, --size and --token place this process in a run across processes: only with
  // --bootstrap, and only on a backend that runs one rank per process.
  if (a.bootstrap.empty() && (a.rank != -1 || a.size != -1 || !a.token.empty())) {
    fmt::print(stderr, "rdmalab: {} goes only with --bootstrap HOST:PORT (a run across processes, verbs backend)\n",
               a.rank != -1 ? "--rank" : a.size != -1 ? "--size" : "--token");
    return kExitUsage;
  }
  if (!a.bootstrap.empty() && (*backend)->hosts_all_ranks()) {
    fmt::print(stderr, "rdmalab: --bootstrap: backend {} runs every rank in this process; --bootstrap is for the verbs backend, "
                       "one rank per process\n", backend_name);
    return kExitUsage;
  }
  if (!a.bootstrap.empty() && a.bootstrap != "mpi") {
    if (a.rank < 0 || a.size < 1) {
      fmt::print(stderr, "rdmalab: --bootstrap needs --rank R and --size N (0 <= R < N)\n");
      return kExitUsage;
    }
    if (a.size != scenario_ranks(*sc)) {
      fmt::print(stderr, "rdmalab: --size {} but the scenario has {} ranks (fabric.nodes x fabric.gpus_per_node): use --size {} or "
                         "--set fabric.nodes=...\n", a.size, scenario_ranks(*sc), scenario_ranks(*sc));
      return kExitUsage;
    }
    if (a.rank >= a.size) {
      fmt::print(stderr, "rdmalab: --rank {} is not below --size {} (ranks count from 0)\n", a.rank, a.size);
      return kExitUsage;
    }
    if (a.token.empty() && std::getenv("RDMALAB_TOKEN")) a.token = std::getenv("RDMALAB_TOKEN");
    if (a.token.empty()) {
      fmt::print(stderr, "rdmalab: --bootstrap needs a run token shared by every rank: --token T or RDMALAB_TOKEN=T "
                         "(e.g. T=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n'))\n");
      return kExitUsage;
    }
    if (auto hp = parse_host_port(a.bootstrap); !hp) {
      fmt::print(stderr, "rdmalab: --bootstrap: {}\n", hp.status().message());
      return kExitUsage;
    }
  }
  if (!a.quiet) {
    fmt::print("rdmalab {} | scenario {} ({}) | backend {} | workload {} | ranks {}\n", version(), sc->get_string("name"), a.scenario,
               backend_name, sc->get_string("workload.type"), scenario_ranks(*sc));
    if (sc->is_set("description")) fmt::print("  {}\n", sc->get_string("description"));
    std::fflush(stdout);
  }
  note_other_backend_keys(*sc, backend_name);
  RunOptions options;
  options.record_path = a.record;
  // Under mpirun with no --bootstrap, the verbs backend takes its ranks from MPI.
  bool mpi_env = false;
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) mpi_env = mpi_env || std::getenv(v) != nullptr;
  if (a.bootstrap.empty() && mpi_env && backend_name == "verbs") a.bootstrap = "mpi";
  if (a.bootstrap == "mpi")
    options.placement = Placement{"mpi", -1, -1, ""};
  else if (!a.bootstrap.empty())
    options.placement = Placement{a.bootstrap, a.rank, a.size, a.token};
  options.progress = !a.quiet && ::isatty(STDERR_FILENO);
  options.cancel = &g_stop;
  install_stop_handlers();
  RunOutcome out = run_scenario(*sc, **backend, options);
  const int stopped_by = g_stop_signal;
  print_table(out.rows);
  if (a.explain) print_explanation(out.rows);
  if (!a.json.empty()) {
    RunInfo info;
    info.scenario = a.scenario;
    info.name = sc->get_string("name");
    info.backend = backend_name;
    info.seed = static_cast<std::uint64_t>(sc->get_int("seed"));
    info.version = version();
    if (!out.status) {
      info.status = stopped_by ? "cancelled" : "failed";
      info.error = out.status.message();
    }
    Status w = write_file_atomically(a.json, results_to_json(info, out.rows));
    if (!w) {
      fmt::print(stderr, "rdmalab: --json: {}\n", w.message());
      return kExitRunFailed;
    }
  }
  if (stopped_by) {
    const char* name = stopped_by == SIGINT ? "SIGINT" : stopped_by == SIGTERM ? "SIGTERM" : "SIGHUP";
    fmt::print(stderr, "rdmalab: stopped by {}: {}\n", name, out.status ? "the run had ended" : out.status.message());
    return 128 + stopped_by;
  }
  if (!out.status) {
    fmt::print(stderr, "rdmalab: run failed: {}\n", out.status.message());
    return kExitRunFailed;
  }
  return kExitOk;
}

int cmd_validate(const std::string& path, const std::vector<std::string>& sets, const std::string& backend_override) {
  auto sc = load(path, sets);
  if (!sc) {
    print_problems(sc.status().message());
    return kExitUsage;
  }
  std::string backend_name = backend_override.empty() ? sc->get_string("backend") : backend_override;
  auto backend = all_backends().make(backend_name);
  if (!backend) {
    fmt::print(stderr, "rdmalab: {}\n", backend.status().message());
    return kExitUsage;
  }
  Status st = check_run(*sc, **backend);
  if (!st) {
    print_problems(st.message());
    return kExitUsage;
  }
  note_other_backend_keys(*sc, backend_name);
  fmt::print("{}: ok ({} on {}, {} ranks)\n", path, sc->get_string("workload.type"), backend_name, scenario_ranks(*sc));
  return kExitOk;
}

int cmd_list() {
  fmt::print("backends:\n");
  for (const auto& b : all_backends().all()) {
    auto be = b.make();
    Availability av = be->availability();
    fmt::print("  {:<10} {:<11} {}\n", b.name, av.usable ? "usable" : "not usable", av.usable ? be->description() : av.why);
  }
  // In-network reductions are modelled, not run: which backends have them (docs/collectives.md).
  std::string nvls;
  for (const auto& b : all_backends().all())
    if (b.make()->capabilities().switch_reduction) nvls += (nvls.empty() ? "" : ", ") + b.name;
  fmt::print("in-network reductions:\n");
  fmt::print("  {:<10} {}\n", "nvls", nvls.empty() ? std::string("no backend models it")
                                                   : fmt::format("NVLink SHARP on a node whose NVSwitch reduces (fabric.node.nvswitch.reduce): {} only", nvls));
  fmt::print("  {:<10} {}\n", "collnet", "InfiniBand SHARP: not modelled yet");
  fmt::print("memory:\n");
  for (MemoryKind k : {MemoryKind::host, MemoryKind::cuda, MemoryKind::phantom})
    fmt::print("  {:<10} {}\n", memory_kind_name(k), memory_provider(k) ? "usable" : "not usable: " + memory_unavailable_reason(k));
  fmt::print("workloads:\n");
  for (const auto& w : builtin_workloads().all()) {
    const char* kind = w.kind == WorkloadKind::bandwidth ? "bandwidth" : w.kind == WorkloadKind::latency ? "latency"
                       : w.kind == WorkloadKind::collective                                 ? "collective"
                                                                                            : "training";
    fmt::print("  {:<12} {:<10} {}\n", w.name, kind, w.description);
  }
  return kExitOk;
}

int cmd_keys() {
  Schema s = full_schema(all_backends());
  for (const auto& [key, spec] : s.all()) {
    std::string allowed;
    for (const auto& a : spec.allowed) allowed += (allowed.empty() ? "" : "|") + a;
    fmt::print("{:<28} {:<42} default {:<10} {}{}\n", key, allowed.empty() ? value_type_name(spec.type) : allowed,
               spec.default_value.empty() ? "-" : spec.default_value, spec.help, "");
  }
  return kExitOk;
}

int cmd_devices(const std::string& backend_name, bool json) {
  auto backend = all_backends().make(backend_name);
  if (!backend) {
    fmt::print(stderr, "rdmalab: {}\n", backend.status().message());
    return kExitUsage;
  }
  auto devs = (*backend)->devices();
  if (!devs) {
    fmt::print(stderr, "rdmalab devices: {}\n", devs.status().message());
    return kExitRunFailed;
  }
  if (json) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& d : *devs) {
      nlohmann::ordered_json g = nlohmann::ordered_json::array();
      for (const auto& x : d.gids) g.push_back({{"index", x.index}, {"gid", x.gid}, {"type", x.type}, {"netdev", x.netdev}});
      arr.push_back({{"device", d.device}, {"port", d.port}, {"state", d.state}, {"link_layer", d.link_layer}, {"active_mtu", d.active_mtu},
                     {"speed_gbps", d.speed_gbps}, {"lid", d.lid}, {"gids", g}});
    }
    fmt::print("{}\n", arr.dump(2));
    return kExitOk;
  }
  if (devs->empty()) fmt::print("no devices\n");
  for (const auto& d : *devs) {
    fmt::print("{} port {}: {}, {}, MTU {}, {} Gb/s{}\n", d.device, d.port, d.state, d.link_layer, d.active_mtu, d.speed_gbps,
               d.link_layer == "InfiniBand" ? fmt::format(", LID {}", d.lid) : "");
    for (const auto& g : d.gids) fmt::print("  GID[{:>3}] {:<39} {:<8} {}\n", g.index, g.gid, g.type, g.netdev);
  }
  return kExitOk;
}

}  // namespace
}  // namespace rdmalab

namespace rdmalab {
namespace {

int cmd_calibrate(const std::string& measured, const std::string& predicted, const std::string& out) {
  auto m = read_rows(measured);
  if (!m) return fmt::print(stderr, "rdmalab: {}\n", m.status().message()), 2;
  auto p = read_rows(predicted);
  if (!p) return fmt::print(stderr, "rdmalab: {}\n", p.status().message()), 2;
  auto c = calibrate(*m, *p);
  if (!c) return fmt::print(stderr, "rdmalab: calibrate: {}\n", c.status().message()), 2;
  const std::string text = calibration_yaml(
      *c, fmt::format("rdmalab calibration, made by `rdmalab calibrate {} {}`\nUse it with fabric.calibration (fabric.model: calibrated).",
                      measured, predicted));
  if (out.empty()) {
    fmt::print("{}", text);
    return 0;
  }
  Status st = write_file_atomically(out, text);
  if (!st) return fmt::print(stderr, "rdmalab: {}\n", st.message()), 1;
  fmt::print("{}: {} bandwidth and {} latency steps\n", out, c->bandwidth.size(), c->latency.size());
  return 0;
}

}  // namespace
}  // namespace rdmalab

int main(int argc, char** argv) {
  using namespace rdmalab;
#ifdef RDMALAB_HAVE_CUDA
  gpu::install();  // GPU memory when a GPU is there; else the reason is kept for messages
#endif
  CLI::App app{"rdmalab: GPU RDMA workloads on real verbs hardware, Soft-RoCE, or a SimGrid model of a cluster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(version()));

  RunArgs run_args;
  auto* run = app.add_subcommand("run", "run a scenario and print a perftest-style table");
  run->add_option("scenario", run_args.scenario, "scenario file (YAML)")->required();
  run->add_option("--backend", run_args.backend, "backend to run on (default: the scenario's backend:)");
  run->add_option("--set", run_args.sets, "override a scenario key, e.g. --set workload.size=1MiB (repeatable)");
  run->add_option("--json", run_args.json, "write results as JSON to this file (docs/results.md)");
  run->add_option("--bootstrap", run_args.bootstrap, "HOST:PORT of rank 0's rendezvous, for one rank per process (verbs); rank 0 listens there; or mpi: ranks from mpirun (the default under mpirun)");
  run->add_option("--rank", run_args.rank, "this process's rank (with --bootstrap)");
  run->add_option("--size", run_args.size, "number of ranks (with --bootstrap)");
  run->add_option("--token", run_args.token, "run token every rank must share (with --bootstrap; or RDMALAB_TOKEN)");
  run->add_option("--record", run_args.record, "write the run's topology and throughput samples to this file (docs/record.md)");
  run->add_flag("--quiet", run_args.quiet, "print only the result table, no progress");
  run->add_flag("--explain", run_args.explain,
                "after the table: for each collective size, every (algorithm, protocol) NCCL's tuning model considered, its predicted time, "
                "and what was run");

  std::string val_path, val_backend;
  std::vector<std::string> val_sets;
  auto* validate = app.add_subcommand("validate", "check a scenario file without running it");
  validate->add_option("scenario", val_path, "scenario file (YAML)")->required();
  validate->add_option("--set", val_sets, "override a scenario key (repeatable)");
  validate->add_option("--backend", val_backend, "check against this backend instead of the scenario's");

  auto* list = app.add_subcommand("list", "list backends (usable here or why not) and workloads");
  auto* keys = app.add_subcommand("keys", "list every scenario key with its type, default and meaning");
  std::string dev_backend = "verbs";
  bool dev_json = false;
  auto* doctor = app.add_subcommand("doctor", "check what GPUDirect RDMA needs here: GPUs, dmabuf, nvidia_peermem, RDMA devices, GPU-NIC PCIe affinity");
  bool doctor_json = false;
  doctor->add_flag("--json", doctor_json, "print JSON");
  auto* devices = app.add_subcommand("devices", "show RDMA devices, ports and GIDs (what ibv_devinfo would, at a glance)");
  devices->add_flag("--json", dev_json, "print JSON");
  devices->add_option("--backend", dev_backend, "backend whose devices to list (default verbs)");

  std::string cal_measured, cal_predicted, cal_out;
  auto* calib = app.add_subcommand("calibrate",
                                   "make a calibration file for the SimGrid model from a measured run and the model's prediction of the "
                                   "same scenario (records or --json results)");
  calib->add_option("measured", cal_measured, "the measured run (e.g. verbs on the real cluster)")->required();
  calib->add_option("predicted", cal_predicted, "the model's run of the same scenario (simgrid, calibrated model, no calibration file)")->required();
  calib->add_option("-o,--output", cal_out, "write the file here (default: standard output)");

  std::vector<std::string> vcases{"tests/validation"};
  std::string vjson;
  double vmedian = 5;
  auto* validation = app.add_subcommand("validation",
                                        "run the validation cases (published measurements) on the model and print case, published, predicted, "
                                        "ratio (docs/validation.md)");
  validation->add_option("cases", vcases, "case files or folders of them (default: tests/validation)");
  validation->add_option("--json", vjson, "also write the table as JSON to this file");
  validation->add_option("--median", vmedian, "largest median |error| of the suite that passes, in percent (default 5)")->check(CLI::Range(0.0, 100.0));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  if (run->parsed()) return cmd_run(run_args);
  if (doctor->parsed()) return cmd_doctor(doctor_json);
  if (validate->parsed()) return cmd_validate(val_path, val_sets, val_backend);
  if (list->parsed()) return cmd_list();
  if (keys->parsed()) return cmd_keys();
  if (devices->parsed()) return cmd_devices(dev_backend, dev_json);
  if (calib->parsed()) return cmd_calibrate(cal_measured, cal_predicted, cal_out);
  if (validation->parsed()) return cmd_validation(vcases, vjson, vmedian / 100);
  return 2;
}
