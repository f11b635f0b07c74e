#include "rdmalab/gpus.h"

namespace rdmalab {

const std::vector<GpuSpec>& gpu_specs() {
  static const std::vector<GpuSpec> specs = {
      // NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB): BF16/FP16 tensor 312 TFLOPS, TF32 156
      // TFLOPS (dense; 624 and 312 with sparsity), no FP8, HBM2e 2,039 GB/s.
      {"a100", "A100 SXM4 80GB", GpuGeneration::ampere, 312e12, 156e12, 0, 2039e9,
       "NVIDIA A100 datasheet: 312 TFLOP/s BF16/FP16, 156 TFLOP/s TF32 (dense), 2,039 GB/s"},
      // NVIDIA H100 Tensor Core GPU datasheet (SXM5): BF16/FP16 tensor 1,979 TFLOPS, TF32 989
      // TFLOPS and FP8 3,958 TFLOPS with sparsity, so 989.4, 494.7 and 1,978.9 dense; HBM3 3.35 TB/s.
      {"h100", "H100 SXM5 80GB", GpuGeneration::hopper, 989.4e12, 494.7e12, 1978.9e12, 3.35e12,
       "NVIDIA H100 datasheet: 989.4 TFLOP/s BF16/FP16, 494.7 TFLOP/s TF32, 1,978.9 TFLOP/s FP8 (dense), 3.35 TB/s"},
      // NVIDIA H200 Tensor Core GPU datasheet (SXM): the H100's tensor cores and clocks (the same
      // 1,979 / 989 / 3,958 TFLOPS with sparsity), HBM3e 141 GB at 4.8 TB/s.
      {"h200", "H200 SXM 141GB", GpuGeneration::hopper, 989.4e12, 494.7e12, 1978.9e12, 4.8e12,
       "NVIDIA H200 datasheet: 989.4 TFLOP/s BF16/FP16, 494.7 TFLOP/s TF32, 1,978.9 TFLOP/s FP8 (dense), 4.8 TB/s"},
  };
  return specs;
}

const GpuSpec* find_gpu(const std::string& name) {
  for (const auto& g : gpu_specs())
    if (g.name == name) return &g;
  return nullptr;
}

}  // namespace rdmalab
