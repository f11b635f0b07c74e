// NVTX ranges for --trace (trace.h's TraceMirror): the spans a rank opens and closes are pushed
// and popped on its thread, so Nsight Systems (`nsys profile rdmalab run … --trace t.json`) shows
// them beside the CUDA kernels. NVTX 3 is header-only: without a tool attached (nsys sets
// NVTX_INJECTION64_PATH) each call is a check of a function pointer.
#include <nvtx3/nvToolsExt.h>

#include "rdmalab/gpu.h"
#include "rdmalab/trace.h"

namespace rdmalab::gpu {
namespace {

struct NvtxMirror final : TraceMirror {
  void push(const char* name) override { nvtxRangePushA(name); }
  void pop() override { nvtxRangePop(); }
};

NvtxMirror g_nvtx;

}  // namespace

void install_nvtx() { set_trace_mirror(&g_nvtx); }

}  // namespace rdmalab::gpu
