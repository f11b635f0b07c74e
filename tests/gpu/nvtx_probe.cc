// A minimal NVTX tool, as Nsight Systems attaches one (NVTX_INJECTION64_PATH): it takes over
// nvtxRangePushA and nvtxRangePop and writes each call to the file RDMALAB_NVTX_LOG names, one
// line per call ("push NAME", "pop"). tests/gpu/nvtx_ranges.sh checks rdmalab's --trace spans
// through it.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {
std::FILE* g_log = nullptr;
std::mutex g_mu;

int push(const char* name) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_log) std::fprintf(g_log, "push %s\n", name ? name : "");
  return 0;
}
int pop() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_log) std::fprintf(g_log, "pop\n");
  return 0;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  const char* path = std::getenv("RDMALAB_NVTX_LOG");
  if (!path) return 0;
  g_log = std::fopen(path, "a");
  if (!g_log) return 0;
  std::setvbuf(g_log, nullptr, _IOLBF, 0);
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || size <= NVTX_CBID_CORE_RangePop) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&push);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  return 1;
}
