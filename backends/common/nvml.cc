// NVML through dlopen (nvml.h). The few entry points used are declared here with NVML's C ABI
// (nvml.h of the CUDA toolkit: nvmlReturn_t is an int, nvmlDevice_t an opaque pointer, and the
// two structures below have these fields in this order), so building needs no NVIDIA header.
#include "common/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace rdmalab {

namespace {
struct NvmlUtilization {
  unsigned int gpu, memory;  // percent of the sample period
};
struct NvmlMemory {
  unsigned long long total, free, used;  // bytes
};
}  // namespace

struct Nvml::Api {
  void* lib = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*count)(unsigned int*) = nullptr;
  int (*handle)(unsigned int, void**) = nullptr;
  int (*name)(void*, char*, unsigned int) = nullptr;
  int (*util)(void*, NvmlUtilization*) = nullptr;
  int (*memory)(void*, NvmlMemory*) = nullptr;
  const char* (*error)(int) = nullptr;
  ~Api() {
    if (lib) dlclose(lib);
  }
};

std::unique_ptr<Nvml> Nvml::open(std::string& why) {
  auto api = std::make_unique<Api>();
  api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    const char* e = dlerror();
    why = fmt::format("no NVML (libnvidia-ml.so.1, from the NVIDIA driver: {})", e ? e : "not found");
    return nullptr;
  }
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(api->lib, name));
    return fn != nullptr;
  };
  if (!sym(api->init, "nvmlInit_v2") || !sym(api->shutdown, "nvmlShutdown") || !sym(api->count, "nvmlDeviceGetCount_v2") ||
      !sym(api->handle, "nvmlDeviceGetHandleByIndex_v2") || !sym(api->name, "nvmlDeviceGetName") ||
      !sym(api->util, "nvmlDeviceGetUtilizationRates") || !sym(api->memory, "nvmlDeviceGetMemoryInfo") ||
      !sym(api->error, "nvmlErrorString")) {
    why = "NVML library lacks nvmlInit_v2 and the calls used (driver too old)";
    return nullptr;
  }
  if (int rc = api->init(); rc != 0) {
    why = fmt::format("NVML did not start: {}", api->error(rc));
    return nullptr;
  }
  unsigned int n = 0;
  if (int rc = api->count(&n); rc != 0 || n == 0) {
    why = rc ? fmt::format("NVML: {}", api->error(rc)) : "NVML sees no GPU";
    api->shutdown();
    return nullptr;
  }
  std::unique_ptr<Nvml> out(new Nvml);
  for (unsigned int i = 0; i < n; ++i) {
    void* h = nullptr;
    if (api->handle(i, &h) != 0) continue;
    char name[96] = {};
    if (api->name(h, name, sizeof name) != 0) name[0] = 0;
    out->devices_.push_back(h);
    out->names_.emplace_back(name);
  }
  out->api_ = std::move(api);
  return out;
}

Nvml::~Nvml() {
  if (api_ && api_->shutdown) api_->shutdown();
}

std::string Nvml::describe() const {
  std::string names;
  for (const auto& n : names_) names += (names.empty() ? "" : ", ") + n;
  return fmt::format("NVML: {} GPU{} ({})", count(), count() == 1 ? "" : "s", names);
}

std::vector<GpuSample> Nvml::sample() const {
  std::vector<GpuSample> out;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    GpuSample g;
    g.index = static_cast<int>(i);
    NvmlUtilization u{};
    if (api_->util(devices_[i], &u) == 0) g.util = u.gpu / 100.0;
    NvmlMemory m{};
    if (api_->memory(devices_[i], &m) == 0) {
      g.mem_used = m.used;
      g.mem_total = m.total;
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace rdmalab
