// What the commands share: loading a scenario, printing its problems, running this binary again.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "backends.h"
#include "commands.h"
#include "rdmalab/run.h"

namespace rdmalab {

Result<Scenario> load(const std::string& path, const std::vector<std::string>& sets) {
  return load_scenario(path, sets, full_schema(all_backends()));
}

namespace {

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

}  // namespace

void print_problems(const std::string& message) {
  std::size_t start = 0;
  while (start <= message.size()) {
    const std::size_t end = message.find('\n', start);
    fmt::print(stderr, "rdmalab: {}\n", printable(message.substr(start, end == std::string::npos ? std::string::npos : end - start)));
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void exec_self_into(std::vector<std::string> args, const std::string& out_path, const std::string& err_path) {
  exec_into("/proc/self/exe", std::move(args), out_path, err_path);
}

void exec_into(const std::string& binary, std::vector<std::string> args, const std::string& out_path, const std::string& err_path) {
  const int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (o < 0 || e < 0) ::_exit(126);
  ::dup2(o, STDOUT_FILENO);
  ::dup2(e, STDERR_FILENO);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(binary.c_str(), argv.data());
  ::_exit(127);
}

void note_other_backend_keys(const Scenario& sc, const std::string& backend) {
  const auto keys = other_backend_keys(sc, backend);
  if (keys.empty()) return;
  std::string list;
  for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
  fmt::print(stderr, "rdmalab: note: not used on backend {}: {} (keys for another backend)\n", backend, list);
}

void note_unread_workload_keys(const Scenario& sc) {
  if (!sc.loc("workload.type").from_command_line()) return;  // check_run refuses them then
  std::vector<std::string> keys;
  for (const auto& k : unread_workload_keys(sc))
    if (!sc.loc(k).from_command_line()) keys.push_back(k);
  if (keys.empty()) return;
  std::string list;
  for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
  fmt::print(stderr, "rdmalab: note: not used by workload {}: {} (keys for the file's own workload)\n", sc.get_string("workload.type"), list);
}

}  // namespace rdmalab
