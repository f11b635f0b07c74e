// rdmalab sweep: one scenario at every point of a product (or zip) of key values, the points run
// in parallel processes (each `rdmalab run`, so a point that crashes or hangs takes nothing else
// with it), every point's results kept under the output folder, and one table of them all (CSV
// and JSON). A re-run recomputes only the points whose resolved scenario changed. docs/planning.md.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <signal.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "backends.h"
#include "commands.h"
#include "rdmalab/files.h"
#include "rdmalab/results.h"
#include "rdmalab/result_table.h"
#include "rdmalab/run.h"
#include "rdmalab/sweep.h"

namespace rdmalab {
namespace {

namespace fs = std::filesystem;

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> vary;
  bool zip = false;
  int jobs = 1;
  std::string out;
  std::string backend;
  std::vector<std::string> sets;
  bool progress = false;
  bool quiet = false;
  bool no_plots = false;
  std::string measure;
};

volatile std::sig_atomic_t g_sweep_signal = 0;
extern "C" void on_sweep_signal(int sig) { g_sweep_signal = sig; }

// The sweep's plots: rdmalab-plot (the GUI layer, Qt Charts) beside this binary draws them into
// OUT/plots. Where it was not built, or it cannot plot this table, a note says so: the table is
// the sweep's result, the plots a view of it.
void make_plots(const fs::path& out, const SweepArgs& a) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path plotter = self.parent_path() / "rdmalab-plot";
  if (ec || !fs::exists(plotter)) {
    fmt::print(stderr, "rdmalab: note: no plots: rdmalab-plot is not built here (it needs Qt6 Charts and Svg); sweep.csv holds every figure\n");
    return;
  }
  std::vector<std::string> args{"rdmalab-plot", (out / "sweep.json").string(), "--out", (out / "plots").string()};
  if (!a.measure.empty()) {
    args.push_back("--measure");
    args.push_back(a.measure);
  }
  const std::string txt = (out / "plots.txt").string(), err = (out / "plots.err").string();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    fmt::print(stderr, "rdmalab: note: no plots: fork: {}\n", std::strerror(errno));
    return;
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the sweep was gone before the line above
    exec_into(plotter.string(), args, txt, err);
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  std::string why = read_text(err);
  while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    fmt::print(stderr, "rdmalab: note: no plots: {}\n", why.empty() ? "rdmalab-plot failed" : why);
    return;
  }
  fs::remove(err, ec);
  if (!a.quiet) fmt::print("# plots (PNG and SVG; rdmalab-plot --help to draw others): {}\n", (out / "plots").string());
}

// What a point's run left: its status and error from its --json file, and its rows.
void read_point(const fs::path& json_path, SweepResult& r) {
  std::error_code ec;
  if (!fs::exists(json_path, ec)) {
    if (r.status.empty()) r.status = "failed";
    return;
  }
  auto j = nlohmann::json::parse(read_text(json_path), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    r.status = "failed";
    r.error = fmt::format("{}: not a results file", json_path.string());
    return;
  }
  r.status = j.value("status", "failed");
  r.error = j.value("error", "");
  if (j.contains("results") && j["results"].is_array()) {
    try {
      r.rows = rows_from_json(j["results"].dump());
    } catch (const nlohmann::json::exception& e) {
      r.status = "failed";
      r.error = fmt::format("{}: malformed rows: {}", json_path.string(), e.what());
    }
  }
}

std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return fmt::format("{}h{:02d}m", static_cast<int>(s) / 3600, (static_cast<int>(s) % 3600) / 60);
}

// The table as aligned text, for the terminal.
void print_aligned(const ResultTable& t) {
  std::vector<std::size_t> w(t.columns.size(), 0);
  for (std::size_t c = 0; c < t.columns.size(); ++c) w[c] = t.columns[c].size();
  for (const auto& row : t.cells)
    for (std::size_t c = 0; c < row.size() && c < w.size(); ++c) w[c] = std::max(w[c], row[c].size());
  auto line = [&](const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t c = 0; c < v.size(); ++c) s += fmt::format("{}{:>{}}", c ? "  " : "", v[c], w[c]);
    fmt::print("{}\n", s);
  };
  line(t.columns);
  for (const auto& row : t.cells) line(row);
}

// Under mpirun: this process's rank and the job's size, from the launcher's environment (Open
// MPI's OMPI_COMM_WORLD_*, MPICH's and Intel MPI's PMI_*), read before MPI starts so that the
// points can be forked first and MPI only gathers at the end (forking after MPI_Init is what MPI
// libraries warn against). {0, 1} outside mpirun.
std::pair<int, int> launcher_rank_size() {
  for (const auto& [r, n] : {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, std::pair{"PMI_RANK", "PMI_SIZE"}}) {
    const char* rv = std::getenv(r);
    const char* nv = std::getenv(n);
    if (rv && nv) return {std::atoi(rv), std::max(1, std::atoi(nv))};
  }
  return {0, 1};
}

// The launcher's variables, which a point's own `rdmalab run` must not see (it would take its
// ranks from MPI).
// The names come from /proc/self/environ, not from `environ`: naming that symbol here would copy
// it into the executable, where the MPI library, loaded with RTLD_DEEPBIND (mpi_bootstrap.cc),
// would not see it, and Open MPI's own setenv then frees strings it never allocated.
void forget_launcher_env() {
  std::vector<std::string> names;
  std::ifstream in("/proc/self/environ", std::ios::binary);
  for (std::string kv; std::getline(in, kv, '\0');) {
    const std::string name = kv.substr(0, kv.find('='));
    for (const char* prefix : {"OMPI_", "PMI_", "PMIX_", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "HYDRA_"})
      if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  for (const auto& n : names) ::unsetenv(n.c_str());
}

// The points' results of every rank, at rank 0: each rank sends, for each point it ran, its
// index, the JSON its run wrote (none when the run died first) and the error it saw; rank 0
// writes the JSON into its points folder, where the table reads it (the same file on a shared
// folder, a new one on a machine of its own), and keeps the error of a point without one.
Status gather_points(Bootstrap& boot, const std::vector<std::size_t>& mine, std::vector<SweepResult>& results,
                     const std::function<fs::path(std::size_t)>& json_of) {
  std::string blob;
  for (std::size_t i : mine) {
    const std::string text = read_text(json_of(i)), error = results[i].error;
    blob += fmt::format("{} {} {}\n", i, text.size(), error.size());
    blob += text + error;
  }
  RDMALAB_ASSIGN(auto lengths, allgather_value<std::uint64_t>(boot, blob.size()));
  std::uint64_t longest = 0;
  for (auto l : lengths) longest = std::max(longest, l);
  blob.resize(longest, '\0');
  RDMALAB_ASSIGN(auto all, boot.allgather(std::as_bytes(std::span(blob.data(), blob.size()))));
  if (boot.rank() != 0) return Status::ok();
  for (int r = 1; r < boot.size(); ++r) {
    const char* p = reinterpret_cast<const char*>(all.data()) + static_cast<std::size_t>(r) * longest;
    std::string_view rest(p, lengths[static_cast<std::size_t>(r)]);
    while (!rest.empty()) {
      const std::size_t eol = rest.find('\n');
      std::size_t i = 0, json_len = 0, error_len = 0;
      if (eol == std::string_view::npos ||
          std::sscanf(std::string(rest.substr(0, eol)).c_str(), "%zu %zu %zu", &i, &json_len, &error_len) != 3 || i >= results.size() ||
          rest.size() - eol - 1 < json_len + error_len)
        return Status(Errc::internal, fmt::format("sweep: rank {} sent points rank 0 cannot read", r));
      rest.remove_prefix(eol + 1);
      if (json_len > 0) RDMALAB_TRY(write_file_atomically(json_of(i).string(), std::string(rest.substr(0, json_len))));
      results[i].error = std::string(rest.substr(json_len, error_len));
      rest.remove_prefix(json_len + error_len);
    }
  }
  return Status::ok();
}

int cmd_sweep(const SweepArgs& a) {
  // Everything is checked before any point runs.
  std::vector<SweepAxis> axes;
  for (const auto& v : a.vary) {
    auto axis = parse_sweep_axis(v);
    if (!axis) {
      fmt::print(stderr, "rdmalab: {}\n", axis.status().message());
      return kExitUsage;
    }
    axes.push_back(std::move(axis).value());
  }
  auto points = sweep_points(axes, a.zip);
  if (!points) {
    fmt::print(stderr, "rdmalab: {}\n", points.status().message());
    return kExitUsage;
  }
  if (a.jobs < 1) {
    fmt::print(stderr, "rdmalab: -j {}: give 1 or more parallel points\n", a.jobs);
    return kExitUsage;
  }
  if (!a.measure.empty()) {
    const std::vector<std::string> numeric = result_numeric_columns();
    if (std::find(numeric.begin(), numeric.end(), a.measure) == numeric.end()) {
      std::string list;
      for (const auto& c : numeric) list += (list.empty() ? "'" : ", '") + c + "'";
      fmt::print(stderr, "rdmalab: --measure '{}': not a result column; use one of {}\n", a.measure, list);
      return kExitUsage;
    }
  }
  auto base = load(a.scenario, a.sets);
  if (!base) {
    print_problems(base.status().message());
    return kExitUsage;
  }
  const std::string backend_name = a.backend.empty() ? base->get_string("backend") : a.backend;
  auto backend = all_backends().make(backend_name);
  if (!backend) {
    fmt::print(stderr, "rdmalab: --backend: {}\n", backend.status().message());
    return kExitUsage;
  }
  if (!(*backend)->hosts_all_ranks()) {
    fmt::print(stderr, "rdmalab: sweep: backend {} runs one rank per process; sweep its points with rdmalab run under your launcher\n",
               backend_name);
    return kExitUsage;
  }
  std::vector<std::string> digests;
  for (std::size_t i = 0; i < points->size(); ++i) {
    const SweepPoint& p = (*points)[i];
    std::vector<std::string> sets = a.sets;
    for (const auto& o : p.overrides(axes)) sets.push_back(o);
    auto sc = load(a.scenario, sets);
    Status st = sc ? check_run(*sc, **backend) : sc.status();
    if (!st) {
      fmt::print(stderr, "rdmalab: sweep point {} ({}): refused before any point ran:\n", i, p.label(axes));
      print_problems(st.message());
      return kExitUsage;
    }
    std::string key = resolved_scenario_text(*sc) + "backend = " + backend_name + "\nrdmalab = " + version() + "\n";
    for (const auto& [k, e] : sc->values)  // a file the scenario names is part of what it runs
      if (k.ends_with(".calibration") && !e.text.empty()) key += read_text(e.text);
    digests.push_back(text_digest(key));
  }
  const std::string name = base->get_string("name");
  const fs::path out = a.out.empty() ? fs::path("sweep-" + name) : fs::path(a.out);
  std::error_code ec;
  fs::create_directories(out / "points", ec);
  if (ec || ::access((out / "points").c_str(), W_OK) != 0) {
    fmt::print(stderr, "rdmalab: --out {}: cannot create or write there ({})\n", out.string(), ec ? ec.message() : std::strerror(errno));
    return kExitUsage;
  }

  // Run: at most `jobs` points at once, each its own `rdmalab run` process.
  const std::size_t n = points->size();
  std::vector<SweepResult> results(n);
  // A point's files are named by its digest: a re-run with more values, or in another order,
  // finds every point it already has.
  auto file = [&](std::size_t i, const char* ext) { return out / "points" / fmt::format("{}.{}", digests[i], ext); };
  std::vector<std::size_t> todo;
  std::size_t cached = 0;
  for (std::size_t i = 0; i < n; ++i) {
    results[i].point = (*points)[i];
    results[i].id = digests[i];
    if (fs::exists(file(i, "json"), ec)) {
      read_point(file(i, "json"), results[i]);
      if (results[i].status == "ok") {
        results[i].cached = true;
        ++cached;
        continue;
      }
      results[i] = SweepResult{(*points)[i], "", "", false, {}, digests[i]};
    }
    todo.push_back(i);
  }
  // Under mpirun the points are dealt out over the ranks (point i to rank i mod size); rank 0
  // gathers the results and writes the table.
  const auto [mpi_rank, mpi_size] = launcher_rank_size();
  if (mpi_size > 1) {
    std::vector<std::size_t> mine;
    for (std::size_t i : todo)
      if (static_cast<int>(i % static_cast<std::size_t>(mpi_size)) == mpi_rank) mine.push_back(i);
    todo.swap(mine);
  }
  const bool show = mpi_rank == 0 && !a.quiet && (a.progress || ::isatty(STDERR_FILENO));
  const bool tty = ::isatty(STDERR_FILENO);
  struct sigaction sa {};
  sa.sa_handler = on_sweep_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);

  std::map<pid_t, std::size_t> running;
  std::size_t next = 0, done = 0, failed = 0;
  double busy_s = 0;  // wall seconds of the points that finished
  std::map<pid_t, std::chrono::steady_clock::time_point> started;
  const auto t0 = std::chrono::steady_clock::now();
  auto report = [&] {
    if (!show) return;
    std::string now_running;
    for (const auto& [pid, i] : running) now_running += fmt::format("{}p{} {}", now_running.empty() ? "" : "; ", i, results[i].point.label(axes));
    const std::size_t left = todo.size() - done;
    std::string eta = "?";
    if (done > 0) eta = duration_text(busy_s / static_cast<double>(done) * static_cast<double>(left) / static_cast<double>(std::min<std::size_t>(a.jobs, std::max<std::size_t>(left, 1))));
    const std::string line = fmt::format("[sweep] {}/{} points done ({:.0f}%; {} cached, {} failed), {} elapsed, ETA {}{}{}", done + cached, n,
                                         100.0 * static_cast<double>(done + cached) / static_cast<double>(n), cached, failed,
                                         duration_text(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()), eta,
                                         now_running.empty() ? "" : " | running: ", now_running);
    if (tty)
      fmt::print(stderr, "\r\033[K{}", line.substr(0, 200));
    else
      fmt::print(stderr, "{}\n", line);
    std::fflush(stderr);
  };
  auto launch = [&](std::size_t i) -> Status {
    std::vector<std::string> argv_s{"rdmalab", "run", a.scenario, "--backend", backend_name, "--quiet", "--json", file(i, "json").string()};
    std::vector<std::string> sets = a.sets;
    for (const auto& o : results[i].point.overrides(axes)) sets.push_back(o);
    for (const auto& s : sets) {
      argv_s.push_back("--set");
      argv_s.push_back(s);
    }
    fs::remove(file(i, "json"), ec);
    const std::string txt = file(i, "txt").string(), err = file(i, "err").string();
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return Status(Errc::io, fmt::format("fork: {}", std::strerror(errno)));
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // the sweep dies: so do its points (they write their results as cancelled)
      if (::getppid() != parent) ::_exit(127);
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
      ::setpgid(0, 0);  // a terminal's Ctrl-C reaches the sweep, which stops its points itself
      if (mpi_size > 1) forget_launcher_env();
      exec_self_into(argv_s, txt, err);
    }
    running[pid] = i;
    started[pid] = std::chrono::steady_clock::now();
    return Status::ok();
  };
  report();
  while ((next < todo.size() || !running.empty())) {
    while (!g_sweep_signal && next < todo.size() && running.size() < static_cast<std::size_t>(a.jobs)) {
      if (Status st = launch(todo[next]); !st) {
        fmt::print(stderr, "\nrdmalab: sweep: {}\n", st.message());
        g_sweep_signal = SIGTERM;
        break;
      }
      ++next;
      report();
    }
    if (g_sweep_signal && !running.empty()) {
      for (const auto& [pid, i] : running) ::kill(pid, SIGTERM);
    }
    if (running.empty()) break;
    int wstatus = 0;
    const pid_t pid = ::waitpid(-1, &wstatus, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const std::size_t i = it->second;
    running.erase(it);
    busy_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - started[pid]).count();
    ++done;
    SweepResult& r = results[i];
    read_point(file(i, "json"), r);
    if (r.status != "ok") {
      ++failed;
      if (r.error.empty()) {
        std::string why = read_text(file(i, "err"));
        while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
        r.error = why.empty() ? fmt::format("exit status {}", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus)) : why;
      }
      if (show && tty) fmt::print(stderr, "\r\033[K");
      if (!a.quiet) fmt::print(stderr, "rdmalab: sweep point {} ({}) {}: {}\n", i, r.point.label(axes), r.status, r.error);
    }
    report();
  }
  if (show && tty) fmt::print(stderr, "\n");
  if (mpi_size > 1) {
    // MPI starts now, after the last fork. Every rank's points reach rank 0, which reads them.
    auto boot = mpi_bootstrap();
    Status st = boot ? gather_points(**boot, todo, results, [&](std::size_t i) { return file(i, "json"); }) : boot.status();
    if (!st) {
      fmt::print(stderr, "rdmalab: sweep under mpirun, rank {}: {}\n", mpi_rank, st.message());
      return kExitRunFailed;
    }
    if (mpi_rank != 0) return g_sweep_signal ? 128 + g_sweep_signal : failed > 0 ? kExitRunFailed : kExitOk;
    const std::set<std::size_t> ran_here(todo.begin(), todo.end());
    for (std::size_t i = 0; i < n; ++i) {
      if (results[i].cached || ran_here.count(i)) continue;
      const std::string error = results[i].error;  // as its rank saw it; the JSON's, if it has one, says more
      read_point(file(i, "json"), results[i]);
      if (results[i].error.empty()) results[i].error = error;
      ++done;
      if (results[i].status != "ok") {
        ++failed;
        if (!a.quiet) fmt::print(stderr, "rdmalab: sweep point {} ({}) {}: {}\n", i, results[i].point.label(axes), results[i].status, results[i].error);
      }
    }
  }
  for (auto& r : results)
    if (r.status.empty()) r.status = "not run";

  const ResultTable table = sweep_table(axes, results);
  Status w1 = write_file_atomically((out / "sweep.csv").string(), result_table_csv(table));
  Status w2 = write_file_atomically((out / "sweep.json").string(), sweep_json(a.scenario, backend_name, a.zip, axes, results));
  if (!w1 || !w2) {
    fmt::print(stderr, "rdmalab: sweep: {}\n", (!w1 ? w1 : w2).message());
    return kExitRunFailed;
  }
  if (!a.quiet) {
    print_aligned(table);
    fmt::print("# {} points ({} run, {} cached, {} failed): {}, {}\n", n, done, cached, failed, (out / "sweep.csv").string(),
               (out / "sweep.json").string());
  }
  if (!a.no_plots && !g_sweep_signal) make_plots(out, a);
  if (g_sweep_signal) {
    const int sig = g_sweep_signal;
    fmt::print(stderr, "rdmalab: sweep stopped by {}: {} of {} points have results; the table says which\n",
               sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP", done + cached - failed, n);
    return 128 + sig;
  }
  return failed > 0 ? kExitRunFailed : kExitOk;
}

}  // namespace

Command add_sweep(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  auto* sweep = app.add_subcommand("sweep", "run a scenario at every point of a product (or zip) of key values, in parallel, "
                                            "and write one table of all the points (docs/planning.md)");
  sweep->add_option("scenario", a->scenario, "scenario file (YAML)")->required();
  sweep->add_option("--vary", a->vary, "KEY=V1,V2,... : a key and its values (repeatable; the points are the product)")->required();
  sweep->add_flag("--zip", a->zip, "the i-th value of every --vary together, instead of their product");
  sweep->add_option("-j,--jobs", a->jobs, "points run at once, each in its own process (default 1)");
  sweep->add_option("--out", a->out, "folder for the points' results and the table (default sweep-<scenario name>)");
  sweep->add_option("--backend", a->backend, "backend to run on (default: the scenario's backend:)");
  sweep->add_option("--set", a->sets, "override a key at every point (repeatable)");
  sweep->add_flag("--progress", a->progress, "print progress lines even when stderr is not a terminal");
  sweep->add_flag("--quiet", a->quiet, "print nothing but errors");
  sweep->add_flag("--no-plots", a->no_plots, "do not draw the plots (DIR/plots/*.png and .svg)");
  sweep->add_option("--measure", a->measure, "the column the plots show (default: busbw, BW average, t_typical or step)");
  return {sweep, [a] { return cmd_sweep(*a); }};
}

}  // namespace rdmalab
