// rdmalab labs: the course in docs/labs/. Each lab's commands and their expected output live in
// scenarios/labs/NN-name.tesh, in the spirit of SimGrid's tesh files:
//   # Lab 3: message size, MTU and goodput      (comments; the first one is the lab's title)
//   $ rdmalab run scenarios/labs/03-sizes.yaml --set workload.type=read_bw
//   > what the command prints on stdout, line by line
//   2> what it prints on stderr
//   ! exit 2                                     (its exit status when not 0)
// `labs` lists them, `labs run N` runs lab N's commands as a student would, `labs check` compares
// every command's output with the expected one (ctest runs it per lab), and `labs bless N`
// rewrites the expected output after a change that was meant to alter what a lab shows.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "rdmalab/files.h"

namespace rdmalab {
namespace {

namespace fs = std::filesystem;

struct Step {
  std::vector<std::string> comments;  // the lines before it that start with '#'
  std::string command;                // after "$ "
  std::vector<std::string> out, err;
  int exit_status = 0;
};

struct Lab {
  int number = 0;
  fs::path tesh;
  std::string title;
  std::vector<Step> steps;
};

// Where the labs are: --dir, else scenarios/labs under the current directory, else under the
// source tree this binary was built from. Commands run from the directory above scenarios/.
fs::path labs_dir(const std::string& given) {
  if (!given.empty()) return given;
  if (fs::is_directory("scenarios/labs")) return fs::path("scenarios/labs");
#ifdef RDMALAB_SOURCE_DIR
  return fs::path(RDMALAB_SOURCE_DIR) / "scenarios/labs";
#else
  return fs::path("scenarios/labs");
#endif
}

Result<Lab> parse_lab(const fs::path& path) {
  Lab lab;
  lab.tesh = path;
  const std::string stem = path.stem().string();
  try {
    lab.number = std::stoi(stem.substr(0, stem.find('-')));
  } catch (...) {
    return Status(Errc::invalid_argument, fmt::format("{}: a lab's file is named NN-name.tesh", path.string()));
  }
  std::ifstream in(path);
  if (!in) return Status(Errc::io, fmt::format("{}: cannot read it: {}", path.string(), std::strerror(errno)));
  std::string line;
  std::vector<std::string> comments;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    auto where = [&] { return fmt::format("{}:{}", path.string(), n); };
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (lab.title.empty() && line.find_first_not_of("# ") != std::string::npos) lab.title = line.substr(line.find_first_not_of("# "));
      comments.push_back(line);
      continue;
    }
    if (line.rfind("$ ", 0) == 0) {
      lab.steps.push_back(Step{std::move(comments), line.substr(2), {}, {}, 0});
      comments.clear();
      continue;
    }
    if (lab.steps.empty()) return Status(Errc::invalid_argument, fmt::format("{}: output before the first command ($ ...)", where()));
    Step& s = lab.steps.back();
    if (line == ">" || line.rfind("> ", 0) == 0)
      s.out.push_back(line.size() > 2 ? line.substr(2) : "");
    else if (line == "2>" || line.rfind("2> ", 0) == 0)
      s.err.push_back(line.size() > 3 ? line.substr(3) : "");
    else if (line.rfind("! exit ", 0) == 0)
      try {
        s.exit_status = std::stoi(line.substr(7));
      } catch (...) {
        return Status(Errc::invalid_argument, fmt::format("{}: '! exit N' needs a number", where()));
      }
    else
      return Status(Errc::invalid_argument,
                    fmt::format("{}: a line starts with '# ' (comment), '$ ' (command), '> ' (stdout), '2> ' (stderr) or '! exit N'", where()));
  }
  if (lab.steps.empty()) return Status(Errc::invalid_argument, fmt::format("{}: no command ($ rdmalab ...)", path.string()));
  return lab;
}

Result<std::vector<Lab>> all_labs(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status(Errc::invalid_argument, fmt::format("no labs at {} (run from the project's top directory, or give --dir)", dir.string()));
  std::vector<Lab> labs;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".tesh") {
      RDMALAB_ASSIGN(Lab lab, parse_lab(e.path()));
      labs.push_back(std::move(lab));
    }
  std::sort(labs.begin(), labs.end(), [](const Lab& a, const Lab& b) { return a.number < b.number; });
  return labs;
}

// A command's words: split at spaces, with '...' quoting a word that holds spaces.
Result<std::vector<std::string>> words(const std::string& command) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, any = false;
  for (char c : command) {
    if (c == '\'') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) out.push_back(cur);
      cur.clear();
      any = false;
    } else {
      cur += c;
      any = true;
    }
  }
  if (quoted) return Status(Errc::invalid_argument, fmt::format("unclosed quote in: {}", command));
  if (any) out.push_back(cur);
  if (out.empty() || out[0] != "rdmalab") return Status(Errc::invalid_argument, fmt::format("a lab's commands run rdmalab: {}", command));
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// Runs one command (this binary for "rdmalab") in `root`, its output into files; what it printed.
Result<Step> execute(const std::string& command, const fs::path& root) {
  RDMALAB_ASSIGN(auto argv_s, words(command));
  char tmpl[] = "/tmp/rdmalab-lab-XXXXXX";
  if (!::mkdtemp(tmpl)) return Status(Errc::io, fmt::format("mkdtemp: {}", std::strerror(errno)));
  const fs::path tmp(tmpl);
  const std::string out_path = (tmp / "out").string(), err_path = (tmp / "err").string();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status(Errc::io, fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // the labs command dies: so does the step it runs
    if (::getppid() != parent) ::_exit(127);  // it was gone before the line above
    if (::chdir(root.c_str()) != 0) ::_exit(126);
    exec_self_into(argv_s, out_path, err_path);
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0)
    if (errno != EINTR) return Status(Errc::io, fmt::format("waitpid: {}", std::strerror(errno)));
  Step s;
  s.command = command;
  s.out = lines_of(read_text(out_path));
  s.err = lines_of(read_text(err_path));
  s.exit_status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return s;
}

std::string tesh_text(const Lab& lab, const std::vector<Step>& steps) {
  std::string t;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (i > 0) t += "\n";
    for (const auto& c : lab.steps[i].comments) t += c + "\n";
    t += "$ " + s.command + "\n";
    for (const auto& l : s.out) t += (l.empty() ? ">" : "> " + l) + "\n";
    for (const auto& l : s.err) t += (l.empty() ? "2>" : "2> " + l) + "\n";
    if (s.exit_status != 0) t += fmt::format("! exit {}\n", s.exit_status);
  }
  return t;
}

// Where two outputs part: the first differing line of stdout or stderr, or the exit status.
std::string difference(const Step& want, const Step& got) {
  auto first = [](const char* what, const std::vector<std::string>& a, const std::vector<std::string>& b) -> std::string {
    for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
      const std::string x = i < a.size() ? a[i] : "(nothing)", y = i < b.size() ? b[i] : "(nothing)";
      if (i >= a.size() || i >= b.size() || a[i] != b[i])
        return fmt::format("  {} line {}:\n    expected: {}\n    got:      {}\n", what, i + 1, x, y);
    }
    return "";
  };
  std::string d = first("stdout", want.out, got.out) + first("stderr", want.err, got.err);
  if (want.exit_status != got.exit_status) d += fmt::format("  exit status: expected {}, got {}\n", want.exit_status, got.exit_status);
  return d;
}

struct Args {
  std::string dir;
  std::vector<std::string> numbers;  // as typed: "8" or "08"
};

Result<std::vector<Lab>> chosen(const Args& a, bool all_when_none) {
  RDMALAB_ASSIGN(auto labs, all_labs(labs_dir(a.dir)));
  if (a.numbers.empty()) {
    if (all_when_none) return labs;
    return Status(Errc::invalid_argument, "which lab? give its number (rdmalab labs lists them)");
  }
  std::vector<Lab> out;
  for (const auto& typed : a.numbers) {
    int n = -1;
    try {
      std::size_t used = 0;
      n = std::stoi(typed, &used, 10);
      if (used != typed.size()) n = -1;
    } catch (...) {
    }
    if (n < 0) return Status(Errc::invalid_argument, fmt::format("'{}' is not a lab number (rdmalab labs lists them)", typed));
    auto it = std::find_if(labs.begin(), labs.end(), [&](const Lab& l) { return l.number == n; });
    if (it == labs.end()) {
      std::string have;
      for (const auto& l : labs) have += fmt::format("{}{}", have.empty() ? "" : ", ", l.number);
      return Status(Errc::invalid_argument, fmt::format("no lab {} (the labs are {})", n, have));
    }
    out.push_back(*it);
  }
  return out;
}

// The directory the commands run in: the one that holds scenarios/.
fs::path root_of(const Lab& lab) { return fs::absolute(lab.tesh).parent_path().parent_path().parent_path(); }

int list_labs(const Args& a) {
  auto labs = all_labs(labs_dir(a.dir));
  if (!labs) {
    print_problems(labs.status().message());
    return kExitUsage;
  }
  fmt::print("The labs (docs/labs/README.md): rdmalab labs run N runs one, as its sheet says.\n");
  for (const auto& l : *labs) {
    std::string title = l.title;
    if (const std::string prefix = fmt::format("Lab {}: ", l.number); title.rfind(prefix, 0) == 0) title = title.substr(prefix.size());
    fmt::print("  {:>2}  {} ({} command{})\n", l.number, title, l.steps.size(), l.steps.size() == 1 ? "" : "s");
  }
  return kExitOk;
}

int run_labs(const Args& a) {
  auto labs = chosen(a, false);
  if (!labs) {
    print_problems(labs.status().message());
    return kExitUsage;
  }
  int rc = kExitOk;
  for (const auto& lab : *labs) {
    fmt::print("# {}\n", lab.title);
    for (const auto& want : lab.steps) {
      fmt::print("\n$ {}\n", want.command);
      std::fflush(stdout);
      auto got = execute(want.command, root_of(lab));
      if (!got) {
        print_problems(got.status().message());
        return kExitUsage;
      }
      for (const auto& l : got->out) fmt::print("{}\n", l);
      for (const auto& l : got->err) fmt::print(stderr, "{}\n", l);
      std::fflush(stdout);
      if (got->exit_status != want.exit_status) rc = kExitRunFailed;
    }
  }
  return rc;
}

int check_labs(const Args& a, bool bless) {
  auto labs = chosen(a, !bless);
  if (!labs) {
    print_problems(labs.status().message());
    return kExitUsage;
  }
  int rc = kExitOk;
  for (const auto& lab : *labs) {
    std::vector<Step> got_all;
    std::string report;
    for (const auto& want : lab.steps) {
      auto got = execute(want.command, root_of(lab));
      if (!got) {
        print_problems(got.status().message());
        return kExitUsage;
      }
      if (const std::string d = difference(want, *got); !d.empty()) report += fmt::format("$ {}\n{}", want.command, d);
      got_all.push_back(std::move(*got));
    }
    if (bless) {
      if (Status st = write_file_atomically(lab.tesh.string(), tesh_text(lab, got_all)); !st) {
        print_problems(st.message());
        return kExitRunFailed;
      }
      fmt::print("lab {}: {} {}\n", lab.number, report.empty() ? "unchanged:" : "expected output rewritten:", lab.tesh.string());
    } else if (report.empty()) {
      fmt::print("lab {}: ok ({} commands match {})\n", lab.number, lab.steps.size(), lab.tesh.string());
    } else {
      fmt::print("lab {}: the output differs from {} (what the lab teaches changed: update its sheet in docs/labs/, then "
                 "rdmalab labs bless {}):\n{}",
                 lab.number, lab.tesh.string(), lab.number, report);
      rc = kExitRunFailed;
    }
  }
  return rc;
}

}  // namespace

Command add_labs(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto action = std::make_shared<std::string>("list");
  CLI::App* sub = app.add_subcommand("labs", "the course (docs/labs/): list the labs, run one, or check them against their expected output");
  sub->add_option("action", *action, "list (default), run N, check [N...] or bless N")->check(CLI::IsMember({"list", "run", "check", "bless"}));
  sub->add_option("numbers", a->numbers, "lab numbers");
  sub->add_option("--dir", a->dir, "the labs' directory (default: scenarios/labs)");
  return {sub, [a, action]() {
            if (*action == "list") return list_labs(*a);
            if (*action == "run") return run_labs(*a);
            return check_labs(*a, *action == "bless");
          }};
}

}  // namespace rdmalab
