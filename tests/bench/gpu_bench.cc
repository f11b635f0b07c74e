// GPU kernels against the device-to-device copy rate measured in the same run (a benchmark, not
// a test). Bytes read + written per second: a copy moves 2n, a reduction 3n (two inputs, one
// output), fill n, verify n. Target: reductions at 256 MiB >= 0.9 of the copy rate. Then the
// staged path (pinned bounce buffers, pipelined) against plain pinned cudaMemcpy: target >= 0.9.
//
//   build/bench/gpu_bench [MiB]      (default 256; 1 to 16384)
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <cstdlib>
#include <string>

#include "rdmalab/gpu.h"

using namespace rdmalab;

namespace {

int usage(FILE* to, int code) {
  std::fprintf(to,
               "usage: gpu_bench [MiB]\n"
               "  Times the GPU kernels (copy, the twenty reductions: five types x sum, prod, max, min; payload fill and\n"
               "  verify) and the staged copy pipeline on buffers of MiB mebibytes (default 256, 1 to 16384), against the\n"
               "  device-to-device copy and pinned cudaMemcpy rates of the same run.\n");
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 256;
  if (argc > 2) return usage(stderr, 2);
  if (argc == 2) {
    const std::string a = argv[1];
    if (a == "--help" || a == "-h") return usage(stdout, 0);
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(a.c_str(), &end, 10);
    if (a.empty() || a[0] == '-' || *end != '\0' || errno != 0 || v < 1 || v > 16384) {
      std::fprintf(stderr, "gpu_bench: '%s' is not a size in MiB (1 to 16384)\n", a.c_str());
      return usage(stderr, 2);
    }
    mib = static_cast<std::size_t>(v);
  }
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
  double worst = 1e30;
  std::string worst_name;
  for (auto op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min})
    for (auto t : {DataType::fp32, DataType::fp16, DataType::bf16, DataType::int32, DataType::int8}) {
      const std::size_t count = n / dtype_size(t);
      const double tr = gpu::time_gpu(20, [&] { (void)gpu::reduce(d->data(), a->data(), b->data(), count, t, op); });
      const double rate = 3.0 * static_cast<double>(n) / tr;
      const std::string name = std::string("reduce ") + reduce_op_name(op) + " " + dtype_name(t);
      std::printf("%-28s %10.3f ms %9.1f GB/s  %.3f of copy\n", name.c_str(), tr * 1e3, rate / 1e9, rate / copy_rate);
      if (rate / copy_rate < worst) worst = rate / copy_rate, worst_name = name;
    }
  std::printf("slowest reduction: %s at %.3f of copy (target 0.90)\n", worst_name.c_str(), worst);
  const double tf = gpu::time_gpu(10, [&] { (void)mem.fill(*d, 0, n, 3); });
  std::printf("%-28s %10.3f ms %9.1f GB/s  %.3f of copy\n", "payload fill", tf * 1e3, static_cast<double>(n) / tf / 1e9,
              static_cast<double>(n) / tf / copy_rate);
  const double tv = gpu::time_gpu(10, [&] { (void)mem.verify(*d, 0, n, 3); });
  std::printf("%-28s %10.3f ms %9.1f GB/s  %.3f of copy (cost of checking %zu MiB: %.3f ms)\n", "payload verify", tv * 1e3,
              static_cast<double>(n) / tv / 1e9, static_cast<double>(n) / tv / copy_rate, mib, tv * 1e3);
  // The staged path: pipelined through pinned bounce buffers, against one plain cudaMemcpy of the
  // whole buffer to or from pinned memory, in the same run. Target: >= 0.9.
  auto pinned = gpu::alloc_pinned(n);
  if (!pinned) {
    std::printf("cannot allocate %zu MiB of pinned memory\n", mib);
    return 1;
  }
  auto best = [](int reps, const std::function<void()>& fn) {
    double fastest = 1e30;
    fn();  // warm-up
    for (int i = 0; i < reps; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      fn();
      fastest = std::min(fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return fastest;
  };
  const double d2h = best(10, [&] { (void)gpu::copy_to_host(*pinned, a->data(), n); });
  const double h2d = best(10, [&] { (void)gpu::copy_to_gpu(d->data(), *pinned, n); });
  std::printf("%-28s %10.3f ms %9.1f GB/s  %s\n", "pinned cudaMemcpy D2H", d2h * 1e3, static_cast<double>(n) / d2h / 1e9, "(reference)");
  std::printf("%-28s %10.3f ms %9.1f GB/s  %s\n", "pinned cudaMemcpy H2D", h2d * 1e3, static_cast<double>(n) / h2d / 1e9, "(reference)");
  for (std::size_t chunk : {std::size_t{512} << 10, std::size_t{1} << 20, std::size_t{4} << 20}) {
    auto pipe = gpu::StagingPipeline::create(chunk, 4);
    if (!pipe) {
      std::printf("staging: %s\n", pipe.status().message().c_str());
      return 1;
    }
    const double up = best(10, [&] { (void)(*pipe)->to_host(a->data(), n, [](const void*, std::size_t, std::size_t) { return Status::ok(); }); });
    const double down = best(10, [&] { (void)(*pipe)->to_gpu(d->data(), n, [](void*, std::size_t, std::size_t) { return Status::ok(); }); });
    std::printf("staged D2H, %4zu KiB x 4 chunks %8.3f ms %9.1f GB/s  %.3f of pinned cudaMemcpy\n", chunk >> 10, up * 1e3,
                static_cast<double>(n) / up / 1e9, d2h / up);
    std::printf("staged H2D, %4zu KiB x 4 chunks %8.3f ms %9.1f GB/s  %.3f of pinned cudaMemcpy\n", chunk >> 10, down * 1e3,
                static_cast<double>(n) / down / 1e9, h2d / down);
  }
  gpu::free_pinned(*pinned);
  return 0;
}
