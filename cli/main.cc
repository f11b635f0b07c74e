// rdmalab: run, validate and list scenarios from the command line. One file per command
// (commands.h); this one builds the parser and runs the command given.
#include <CLI/CLI.hpp>

#include <vector>

#include "commands.h"
#include "rdmalab/run.h"
#ifdef RDMALAB_HAVE_CUDA
#include "rdmalab/gpu.h"
#endif

int main(int argc, char** argv) {
  using namespace rdmalab;
#ifdef RDMALAB_HAVE_CUDA
  gpu::install();  // GPU memory when a GPU is there; else the reason is kept for messages
#endif
  CLI::App app{"rdmalab: GPU RDMA workloads on real verbs hardware, Soft-RoCE, or a SimGrid model of a cluster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(version()));
  const std::vector<Command> commands{add_run(app),    add_sweep(app),   add_validate(app),  add_list(app),      add_keys(app),
                                      add_doctor(app), add_devices(app), add_calibrate(app), add_validation(app), add_labs(app), add_compare(app)};
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
    return kExitUsage;
  }
  for (const auto& c : commands)
    if (c.sub->parsed()) return c.run();
  return kExitUsage;
}
