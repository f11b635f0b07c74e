// GPU kernels against the device-to-device copy rate measured in the same run (a benchmark, not
// a test). Bytes read + written per second: a copy moves 2n, a reduction 3n (two inputs, one
// output), fill n, verify n. Target: reductions at 256 MiB >= 0.9 of the copy rate.
//
//   build/bench/gpu_bench [MiB]      (default 256)
#include <cstdio>
#include <cstdlib>

#include "rdmalab/gpu.h"

using namespace rdmalab;

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  const std::size_t n = mib << 20;
  gpu::GpuInfo info = gpu::install();
  if (!info.usable) {
    std::printf("no GPU here (%s): nothing to measure\n", info.why.c_str());
    return 0;
  }
  std::printf("%s (sm_%d%d, %.0f GiB), buffers of %zu MiB\n", info.name.c_str(), info.cc_major, info.cc_minor,
              static_cast<double>(info.memory_bytes) / (1u << 30), mib);
  auto& mem = *gpu::cuda_memory();
  auto a = mem.allocate(n), b = mem.allocate(n), d = mem.allocate(n);
  if (!a || !b || !d) {
    std::printf("cannot allocate 3 x %zu MiB on the GPU\n", mib);
    return 1;
  }
  if (!mem.fill(*a, 0, n, 1) || !mem.fill(*b, 0, n, 2)) {
    std::printf("cannot fill the inputs\n");
    return 1;
  }
  const double t_copy = gpu::time_gpu(20, [&] { (void)gpu::copy(d->data(), a->data(), n); });
  const double copy_rate = 2.0 * static_cast<double>(n) / t_copy;
  std::printf("%-28s %10.3f ms %9.1f GB/s  %s\n", "device-to-device copy", t_copy * 1e3, copy_rate / 1e9, "(reference)");
  for (auto t : {DataType::fp32, DataType::fp16, DataType::bf16, DataType::int32, DataType::int8}) {
    const std::size_t count = n / dtype_size(t);
    const double tr = gpu::time_gpu(20, [&] { (void)gpu::reduce(d->data(), a->data(), b->data(), count, t, ReduceOp::sum); });
    const double rate = 3.0 * static_cast<double>(n) / tr;
    std::printf("reduce sum %-17s %10.3f ms %9.1f GB/s  %.3f of copy\n", dtype_name(t), tr * 1e3, rate / 1e9, rate / copy_rate);
  }
  const double tf = gpu::time_gpu(10, [&] { (void)mem.fill(*d, 0, n, 3); });
  std::printf("%-28s %10.3f ms %9.1f GB/s  %.3f of copy\n", "payload fill", tf * 1e3, static_cast<double>(n) / tf / 1e9,
              static_cast<double>(n) / tf / copy_rate);
  const double tv = gpu::time_gpu(10, [&] { (void)mem.verify(*d, 0, n, 3); });
  std::printf("%-28s %10.3f ms %9.1f GB/s  %.3f of copy (cost of checking %zu MiB: %.3f ms)\n", "payload verify", tv * 1e3,
              static_cast<double>(n) / tv / 1e9, static_cast<double>(n) / tv / copy_rate, mib, tv * 1e3);
  return 0;
}
