// rdmalab run: runs a scenario and prints perftest's or nccl-tests' table (docs/results.md).
#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <signal.h>
#include <unistd.h>

#include "backends.h"
#include "commands.h"
#include "rdmalab/files.h"
#include "rdmalab/result_table.h"
#include "rdmalab/results.h"
#include "rdmalab/run.h"
#include "rdmalab/tcp_bootstrap.h"

namespace rdmalab {
namespace {

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

struct RunArgs {
  std::string scenario;
  std::string backend;
  std::vector<std::string> sets;
  std::string json;
  std::string record;
  std::string trace;
  std::string bootstrap;
  int rank = -1;
  int size = -1;
  std::string token;
  bool quiet = false;
  bool progress = false;
  bool explain = false;
};

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
  for (const auto& [option, path] : {std::pair<const char*, const std::string&>{"--json", a.json}, {"--record", a.record}, {"--trace", a.trace}})
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
  for (const auto& [one, other] : {std::pair<const std::string*, const std::string*>{&a.json, &a.record}, {&a.json, &a.trace}, {&a.record, &a.trace}}) {
    if (one->empty() || other->empty() || !same_file(*one, *other)) continue;
    auto opt = [&](const std::string* p) { return p == &a.json ? "--json" : p == &a.record ? "--record" : "--trace"; };
    fmt::print(stderr, "rdmalab: {} and {} both name {}: one would overwrite the other; give them different files\n", opt(one), opt(other), *one);
    return kExitUsage;
  }
  if (!a.record.empty() && !(*backend)->can_record()) {
    std::string can;
    for (const auto& b : all_backends().all())
      if (b.make()->can_record()) can += (can.empty() ? "" : ", ") + b.name;
    fmt::print(stderr, "rdmalab: --record: backend {} cannot record runs yet ({} can)\n", backend_name, can.empty() ? "none" : can);
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
    fmt::print("rdmalab {} | scenario {} ({}) | backend {} | workload {} | ranks {}\n", version(), run_name(sc->get_string("name"), a.sets), a.scenario,
               backend_name, sc->get_string("workload.type"), scenario_ranks(*sc));
    if (sc->is_set("description")) fmt::print("  {}\n", sc->get_string("description"));
    std::fflush(stdout);
  }
  note_other_backend_keys(*sc, backend_name);
  note_unread_workload_keys(*sc);
  RunOptions options;
  options.record_path = a.record;
  options.trace_path = a.trace;
  // Under mpirun with no --bootstrap, a backend that runs one rank per process takes its ranks
  // from MPI.
  bool mpi_env = false;
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) mpi_env = mpi_env || std::getenv(v) != nullptr;
  if (a.bootstrap.empty() && mpi_env && !(*backend)->hosts_all_ranks()) a.bootstrap = "mpi";
  if (!a.record.empty() && !a.bootstrap.empty()) {
    fmt::print(stderr, "rdmalab: --record: backend {} runs one rank per process here ({}): a record samples the ranks one rdmalab run "
                       "forks, so run them from one `rdmalab run` on one machine\n", backend_name, a.bootstrap == "mpi" ? "mpirun" : "--bootstrap");
    return kExitUsage;
  }
  if (!a.trace.empty() && !a.bootstrap.empty()) {
    const char* mpi_rank = std::getenv("OMPI_COMM_WORLD_RANK") ? std::getenv("OMPI_COMM_WORLD_RANK") : std::getenv("PMI_RANK");
    const int me = a.bootstrap == "mpi" ? (mpi_rank ? std::atoi(mpi_rank) : 0) : a.rank;
    if (me != 0)
      fmt::print(stderr, "rdmalab: note: --trace: rank 0 writes the file with every rank's events (docs/trace.md); rank {} does not write {}\n", me, a.trace);
  }
  if (a.bootstrap == "mpi")
    options.placement = Placement{"mpi", -1, -1, ""};
  else if (!a.bootstrap.empty())
    options.placement = Placement{a.bootstrap, a.rank, a.size, a.token};
  options.progress = a.progress || (!a.quiet && ::isatty(STDERR_FILENO));
  options.cancel = &g_stop;
  options.checked = true;  // check_run above
  install_stop_handlers();
  RunOutcome out = run_scenario(*sc, **backend, options);
  const int stopped_by = g_stop_signal;
  fmt::print("{}", result_text(out.rows));
  if (a.explain) fmt::print("{}", tuning_explanation(out.rows));
  if (!a.json.empty()) {
    RunInfo info;
    info.scenario = a.scenario;
    info.name = run_name(sc->get_string("name"), a.sets);
    info.overrides = a.sets;
    for (const auto& [key, e] : sc->values) info.resolved.push_back({key, e.text, e.source()});
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

}  // namespace

Command add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "run a scenario and print a perftest-style table");
  run->add_option("scenario", a->scenario, "scenario file (YAML)")->required();
  run->add_option("--backend", a->backend, "backend to run on (default: the scenario's backend:)");
  run->add_option("--set", a->sets, "override a scenario key, e.g. --set workload.size=1MiB (repeatable)");
  run->add_option("--json", a->json, "write results as JSON to this file (docs/results.md)");
  run->add_option("--bootstrap", a->bootstrap, "HOST:PORT of rank 0's rendezvous, for one rank per process (verbs); rank 0 listens there; or mpi: ranks from mpirun (the default under mpirun)");
  run->add_option("--rank", a->rank, "this process's rank (with --bootstrap)");
  run->add_option("--size", a->size, "number of ranks (with --bootstrap)");
  run->add_option("--token", a->token, "run token every rank must share (with --bootstrap; or RDMALAB_TOKEN)");
  run->add_option("--trace", a->trace, "write every rank's timeline (phases, compute, transfers, completions) as a Chrome/Perfetto trace to this file (docs/trace.md)");
  run->add_option("--record", a->record, "write the run's topology and throughput samples to this file (docs/record.md)");
  run->add_flag("--quiet", a->quiet, "print only the result table, no progress");
  run->add_flag("--progress", a->progress, "progress lines on stderr even when it is not a terminal (a line every 2 s)");
  run->add_flag("--explain", a->explain,
                "after the table: for each collective size, every (algorithm, protocol) NCCL's tuning model considered, its predicted time, "
                "and what was run");

  return {run, [a] { return cmd_run(*a); }};
}

}  // namespace rdmalab
