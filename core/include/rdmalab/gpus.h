// The GPUs a scenario can name (fabric.gpu.model): their generation and the peaks that cap what
// rdmalab may print for them. Each figure is the vendor's datasheet number, dense (the
// datasheets' "with sparsity" figures are twice these).
#pragma once

#include <string>
#include <vector>

#include "rdmalab/backend.h"

namespace rdmalab {

struct GpuSpec {
  std::string name;        // fabric.gpu.model
  std::string product;     // as the vendor names it
  GpuGeneration generation;
  double tensor_flops = 0;  // dense FP16/BF16 tensor-core FLOP/s
  double tf32_flops = 0;    // dense TF32 tensor-core FLOP/s
  double fp8_flops = 0;     // dense FP8 tensor-core FLOP/s (0: no FP8 tensor cores)
  double memory_bw = 0;     // HBM bytes/s
  std::string source;
  // The dense tensor-core peak for a training precision (training.precision: "tf32", "fp8", else
  // FP16/BF16).
  double peak_flops(const std::string& precision) const {
    return precision == "tf32" ? tf32_flops : precision == "fp8" ? fp8_flops : tensor_flops;
  }
};

const std::vector<GpuSpec>& gpu_specs();
// nullptr when `name` names no GPU (fabric.gpu.model: unnamed).
const GpuSpec* find_gpu(const std::string& name);

}  // namespace rdmalab
