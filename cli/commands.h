// The commands of `rdmalab`, one file each (run.cc, validate.cc, list.cc, devices.cc, doctor.cc,
// calibrate.cc, validation.cc, sweep.cc); main.cc adds them to the parser and runs the one given.
//
// Exit status: 0 success; 1 a run that failed (wrong data, transport error); 2 bad usage or a bad
// scenario (nothing ran); 128 + the signal for a run stopped by one.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "rdmalab/scenario.h"
#include "rdmalab/status.h"

namespace rdmalab {

constexpr int kExitOk = 0;
constexpr int kExitRunFailed = 1;
constexpr int kExitUsage = 2;

// A command: its subcommand in the parser, and what runs when it was given (the exit status).
struct Command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

Command add_run(CLI::App& app);
Command add_validate(CLI::App& app);
Command add_list(CLI::App& app);
Command add_keys(CLI::App& app);
Command add_doctor(CLI::App& app);
Command add_devices(CLI::App& app);
Command add_calibrate(CLI::App& app);
Command add_validation(CLI::App& app);
Command add_sweep(CLI::App& app);
Command add_labs(CLI::App& app);
Command add_compare(CLI::App& app);

// What the commands that read a scenario share (common.cc).
// The scenario file with --set overrides, checked against every backend's keys.
Result<Scenario> load(const std::string& path, const std::vector<std::string>& sets);
// A message of several problems, one per line, each prefixed "rdmalab: " and printable.
void print_problems(const std::string& message);
// Keys the file gives for another backend's section do not act on this run: says so.
void note_other_backend_keys(const Scenario& sc, const std::string& backend);
// The whole file's bytes ("" when it cannot be read).
std::string read_text(const std::string& path);
// In a forked child: runs this binary again with `args` (args[0] is its name), its stdout and
// stderr into the two files (created or truncated); exits 126 when they cannot be opened, 127 when
// the binary cannot be run. Never returns.
[[noreturn]] void exec_self_into(std::vector<std::string> args, const std::string& out_path, const std::string& err_path);
// The same for another binary (a path).
[[noreturn]] void exec_into(const std::string& binary, std::vector<std::string> args, const std::string& out_path,
                            const std::string& err_path);
// The file's workload keys that a workload chosen by --set does not read.
void note_unread_workload_keys(const Scenario& sc);

}  // namespace rdmalab
