// Running ranks in child processes and carrying their outcome back through a pipe: used by the
// SimGrid backend (one engine per process) and the verbs backend (one rank per process).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <string>

#include "rdmalab/status.h"

namespace rdmalab {

struct ChildOutcome {
  Status status;
  std::string state;  // LaunchSpec::export_state() of the child
};

// Forks; the child runs `body`, writes its outcome to the pipe and leaves with _exit(0) (no
// atexit handlers, no test framework teardown in the child). Returns the child's pid and the
// read end of the pipe. Errors: io.
Result<std::pair<pid_t, int>> fork_child(const std::function<ChildOutcome()>& body);

// Reads the child's outcome to the end of the pipe, closes it and reaps the child. A child that
// died without a report (a signal, a crash) gives an internal error that says so; `who` names it.
// When `cancel` becomes true while waiting, the child is killed (SIGKILL) and the outcome is
// Errc::cancelled.
ChildOutcome collect_child(pid_t pid, int fd, const std::string& who, const std::atomic<bool>* cancel = nullptr);

}  // namespace rdmalab
