// GPU utilisation and memory through NVML, loaded at run time (libnvidia-ml.so.1 ships with the
// NVIDIA driver, not with CUDA's toolkit): a machine without the driver gets the reason, never a
// link error. Used by recorded runs on real hardware (docs/record.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rdmalab/record.h"

namespace rdmalab {

class Nvml {
 public:
  // Loads and initialises NVML. Null with `why` set when it cannot (no library, no driver,
  // no GPU): the caller records the reason.
  static std::unique_ptr<Nvml> open(std::string& why);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  int count() const { return static_cast<int>(devices_.size()); }
  std::string describe() const;  // "NVML: 1 GPU (NVIDIA H100 80GB HBM3)"
  // Every GPU's utilisation over NVML's last sample period and its memory now.
  std::vector<GpuSample> sample() const;

 private:
  Nvml() = default;
  struct Api;
  std::unique_ptr<Api> api_;
  std::vector<void*> devices_;
  std::vector<std::string> names_;
};

}  // namespace rdmalab
