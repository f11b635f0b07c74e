// The CUDA memory provider and the kernels: reductions for every type and operator, payload
// fill and verify on the GPU (no copy back to check), and the timing helper the benchmark uses.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>
#include <string>

#include "rdmalab/gpu.h"

namespace rdmalab::gpu {
namespace {

// (fmt does not compile under nvcc: messages are put together by hand here.)

Status cuda_error(cudaError_t e, const char* what) {
  return Status(e == cudaErrorMemoryAllocation ? Errc::no_memory : Errc::internal,
                std::string("CUDA: ") + what + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")");
}
#define RDMALAB_CUDA(call, what)                          \
  do {                                                    \
    cudaError_t rdmalab_e_ = (call);                      \
    if (rdmalab_e_ != cudaSuccess) return cuda_error(rdmalab_e_, what); \
  } while (0)

int blocks_for(std::size_t n, int threads) {
  static int sms = [] {
    int dev = 0, v = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev);
    return v > 0 ? v : 80;
  }();
  const std::size_t want = (n + static_cast<std::size_t>(threads) - 1) / static_cast<std::size_t>(threads);
  return static_cast<int>(std::min<std::size_t>(want ? want : 1, static_cast<std::size_t>(sms) * 8));
}

// ---- reductions ------------------------------------------------------------------------------
// Computed exactly as the host reference (reduce.cc): fp16/bf16 through fp32 with round to
// nearest even, integers wrap, max/min as std::max/std::min.

template <typename T>
struct Math;
template <>
struct Math<float> {
  __device__ static float op(float a, float b, ReduceOp o) {
    switch (o) {
      case ReduceOp::sum: return __fadd_rn(a, b);
      case ReduceOp::prod: return __fmul_rn(a, b);
      case ReduceOp::max: return (a < b) ? b : a;
      case ReduceOp::min: return (b < a) ? b : a;
    }
    return a;
  }
};
template <>
struct Math<__half> {
  __device__ static __half op(__half a, __half b, ReduceOp o) {
    return __float2half_rn(Math<float>::op(__half2float(a), __half2float(b), o));
  }
};
template <>
struct Math<__nv_bfloat16> {
  __device__ static __nv_bfloat16 op(__nv_bfloat16 a, __nv_bfloat16 b, ReduceOp o) {
    return __float2bfloat16_rn(Math<float>::op(__bfloat162float(a), __bfloat162float(b), o));
  }
};
template <typename S, typename U>
struct IntMath {
  __device__ static S op(S a, S b, ReduceOp o) {
    switch (o) {
      case ReduceOp::sum: return static_cast<S>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case ReduceOp::prod: return static_cast<S>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case ReduceOp::max: return (a < b) ? b : a;
      case ReduceOp::min: return (b < a) ? b : a;
    }
    return a;
  }
};
template <>
struct Math<std::int32_t> : IntMath<std::int32_t, std::uint32_t> {};
template <>
struct Math<std::int8_t> : IntMath<std::int8_t, std::uint8_t> {};

// The operator is a template parameter: one branch-free kernel per type and operator, chosen
// once at launch (a switch per element kept int8's max and min below 0.9 of the copy rate).
template <typename T, ReduceOp O>
struct Lane {
  // One 32-bit word of packed elements.
  __device__ static unsigned word(unsigned x, unsigned y) {
    constexpr int k = 4 / sizeof(T);
    unsigned r;
    const T* px = reinterpret_cast<const T*>(&x);
    const T* py = reinterpret_cast<const T*>(&y);
    T* pr = reinterpret_cast<T*>(&r);
#pragma unroll
    for (int j = 0; j < k; ++j) pr[j] = Math<T>::op(px[j], py[j], O);
    return r;
  }
};
// int8 sum, max and min: the per-byte SIMD instructions, bit for bit the scalar results (sum
// wraps modulo 256; max and min compare signed bytes).
template <>
struct Lane<std::int8_t, ReduceOp::sum> {
  __device__ static unsigned word(unsigned x, unsigned y) { return __vadd4(x, y); }
};
template <>
struct Lane<std::int8_t, ReduceOp::max> {
  __device__ static unsigned word(unsigned x, unsigned y) { return __vmaxs4(x, y); }
};
template <>
struct Lane<std::int8_t, ReduceOp::min> {
  __device__ static unsigned word(unsigned x, unsigned y) { return __vmins4(x, y); }
};

// 16 bytes per thread per iteration when all three pointers are 16-byte aligned.
template <typename T, ReduceOp O>
__global__ void reduce_vec(uint4* __restrict__ dst, const uint4* __restrict__ a, const uint4* __restrict__ b, std::size_t nvec) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < nvec;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    uint4 r;
    r.x = Lane<T, O>::word(x.x, y.x);
    r.y = Lane<T, O>::word(x.y, y.y);
    r.z = Lane<T, O>::word(x.z, y.z);
    r.w = Lane<T, O>::word(x.w, y.w);
    dst[i] = r;
  }
}

template <typename T, ReduceOp O>
__global__ void reduce_scalar(T* dst, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = Math<T>::op(a[i], b[i], O);
}

template <typename T, ReduceOp O>
void launch_reduce(void* dst, const void* a, const void* b, std::size_t count) {
  constexpr int threads = 512;
  auto al = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  std::size_t done = 0;
  if (al(dst) && al(a) && al(b)) {
    const std::size_t nvec = count * sizeof(T) / 16;
    if (nvec)
      reduce_vec<T, O><<<blocks_for(nvec, threads), threads>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(a),
                                                                static_cast<const uint4*>(b), nvec);
    done = nvec * 16 / sizeof(T);
  }
  if (done < count)
    reduce_scalar<T, O><<<blocks_for(count - done, threads), threads>>>(static_cast<T*>(dst) + done, static_cast<const T*>(a) + done,
                                                                         static_cast<const T*>(b) + done, count - done);
}

template <typename T>
Status reduce_t(void* dst, const void* a, const void* b, std::size_t count, ReduceOp o) {
  switch (o) {
    case ReduceOp::sum: launch_reduce<T, ReduceOp::sum>(dst, a, b, count); break;
    case ReduceOp::prod: launch_reduce<T, ReduceOp::prod>(dst, a, b, count); break;
    case ReduceOp::max: launch_reduce<T, ReduceOp::max>(dst, a, b, count); break;
    case ReduceOp::min: launch_reduce<T, ReduceOp::min>(dst, a, b, count); break;
  }
  RDMALAB_CUDA(cudaGetLastError(), "launching a reduction");
  RDMALAB_CUDA(cudaDeviceSynchronize(), "a reduction");
  return Status::ok();
}

// ---- payload pattern -------------------------------------------------------------------------

__global__ void fill_kernel(std::uint8_t* p, std::size_t len, std::uint64_t seed) {
  const std::size_t words = len / 8;
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < words; k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t w = pattern_word(seed, k);
    if (reinterpret_cast<std::uintptr_t>(p) % 8 == 0) {
      reinterpret_cast<std::uint64_t*>(p)[k] = w;
    } else {
      for (int b = 0; b < 8; ++b) p[8 * k + b] = static_cast<std::uint8_t>(w >> (8 * b));
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (std::size_t i = words * 8; i < len; ++i) p[i] = pattern_byte(seed, i);
}

__global__ void verify_kernel(const std::uint8_t* p, std::size_t len, std::uint64_t seed, unsigned long long* wrong) {
  const std::size_t words = len / 8;
  unsigned long long mine = 0;
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < words; k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint64_t got;
    if (reinterpret_cast<std::uintptr_t>(p) % 8 == 0) {
      got = reinterpret_cast<const std::uint64_t*>(p)[k];
    } else {
      got = 0;
      for (int b = 0; b < 8; ++b) got |= static_cast<std::uint64_t>(p[8 * k + b]) << (8 * b);
    }
    const std::uint64_t x = got ^ pattern_word(seed, k);
    if (x)
      for (int b = 0; b < 8; ++b) mine += ((x >> (8 * b)) & 0xff) != 0;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (std::size_t i = words * 8; i < len; ++i) mine += p[i] != pattern_byte(seed, i);
  if (mine) atomicAdd(wrong, mine);
}

// ---- the provider ----------------------------------------------------------------------------

// The driver API entry points the dmabuf export needs, opened at run time (libcuda.so.1 is the
// driver's: present wherever a GPU is, absent on build machines).
struct DriverApi {
  using Init = int (*)(unsigned);
  using GetHandle = int (*)(void*, unsigned long long, std::size_t, int, unsigned long long);
  using ErrorName = int (*)(int, const char**);
  GetHandle get_handle = nullptr;
  ErrorName error_name = nullptr;
  std::string why;  // when get_handle is null
};

const DriverApi& driver_api() {
  static const DriverApi api = [] {
    DriverApi a;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      a.why = "the CUDA driver library (libcuda.so.1) is not here";
      return a;
    }
    auto init = reinterpret_cast<DriverApi::Init>(dlsym(h, "cuInit"));
    a.error_name = reinterpret_cast<DriverApi::ErrorName>(dlsym(h, "cuGetErrorName"));
    a.get_handle = reinterpret_cast<DriverApi::GetHandle>(dlsym(h, "cuMemGetHandleForAddressRange"));
    if (!init || init(0) != 0) {
      a.get_handle = nullptr;
      a.why = "cuInit failed";
    } else if (!a.get_handle) {
      a.why = "the CUDA driver has no cuMemGetHandleForAddressRange (driver older than CUDA 11.7)";
    }
    return a;
  }();
  return api;
}

class CudaMemory final : public MemoryProvider {
 public:
  MemoryKind kind() const override { return MemoryKind::cuda; }

  // cuMemGetHandleForAddressRange(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD) on the host pages that
  // hold the range (it wants page-aligned start and size); the offset says where the range starts.
  Result<DmabufRange> export_dmabuf(const void* addr, std::size_t len) override {
    const DriverApi& api = driver_api();
    if (!api.get_handle) return Status(Errc::not_supported, "dmabuf export unavailable: " + api.why);
    const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    const auto a = reinterpret_cast<std::uint64_t>(addr);
    const std::uint64_t base = a / page * page, end = (a + len + page - 1) / page * page;
    int fd = -1;
    const int rc = api.get_handle(&fd, base, static_cast<std::size_t>(end - base), 1 /* DMA_BUF_FD */, 0);
    if (rc != 0) {
      const char* name = "unknown error";
      if (api.error_name) api.error_name(rc, &name);
      return Status(Errc::not_supported,
                    std::string("cuMemGetHandleForAddressRange(dmabuf) failed: ") + name +
                        (rc == 801 ? " (the driver cannot export dmabuf: it needs the open GPU kernel modules)" : ""));
    }
    return DmabufRange{fd, a - base};
  }

  Result<Buffer> allocate(std::size_t bytes) override {
    void* p = nullptr;
    const std::size_t n = std::max<std::size_t>(bytes, 1);
    cudaError_t e = cudaMalloc(&p, n);
    if (e != cudaSuccess) return Status(Errc::no_memory, "cannot allocate " + std::to_string(bytes) + " bytes of GPU memory: " + cudaGetErrorString(e));
    e = cudaMemset(p, 0, n);
    if (e != cudaSuccess) {
      cudaFree(p);
      return cuda_error(e, "clearing a new allocation");
    }
    return Buffer(p, bytes, MemoryKind::cuda, [](void* q) { cudaFree(q); });
  }

  // Pinned (page-locked) host memory: cudaMemcpy to and from it runs at PCIe speed, and the NIC
  // can register it (NCCL's host buffers are allocated the same way).
  Result<Buffer> allocate_bounce(std::size_t bytes) override {
    void* p = nullptr;
    const std::size_t n = std::max<std::size_t>(bytes, 1);
    cudaError_t e = cudaHostAlloc(&p, n, cudaHostAllocDefault);
    if (e != cudaSuccess)
      return Status(Errc::no_memory, "cannot allocate " + std::to_string(bytes) + " bytes of pinned host memory: " + cudaGetErrorString(e));
    std::memset(p, 0, n);
    return Buffer(p, bytes, MemoryKind::host, [](void* q) { cudaFreeHost(q); });
  }

  Status fill(const Buffer& buf, std::size_t offset, std::size_t len, std::uint64_t seed) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "fill outside the buffer");
    if (!len) return Status::ok();
    fill_kernel<<<blocks_for(len / 8 + 1, 256), 256>>>(reinterpret_cast<std::uint8_t*>(buf.bytes() + offset), len, seed);
    RDMALAB_CUDA(cudaGetLastError(), "launching fill");
    RDMALAB_CUDA(cudaDeviceSynchronize(), "fill");
    return Status::ok();
  }

  Result<std::uint64_t> verify(const Buffer& buf, std::size_t offset, std::size_t len, std::uint64_t seed) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "verify outside the buffer");
    if (!len) return std::uint64_t{0};
    unsigned long long* counter = nullptr;
    RDMALAB_CUDA(cudaMalloc(&counter, sizeof *counter), "allocating a counter");
    cudaMemset(counter, 0, sizeof *counter);
    verify_kernel<<<blocks_for(len / 8 + 1, 256), 256>>>(reinterpret_cast<const std::uint8_t*>(buf.bytes() + offset), len, seed, counter);
    unsigned long long wrong = 0;
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(&wrong, counter, sizeof wrong, cudaMemcpyDeviceToHost);
    cudaFree(counter);
    RDMALAB_CUDA(e, "verify");
    return static_cast<std::uint64_t>(wrong);
  }

  Status clear(const Buffer& buf, std::size_t offset, std::size_t len) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "clear outside the buffer");
    RDMALAB_CUDA(cudaMemset(buf.bytes() + offset, 0, len), "clear");
    return Status::ok();
  }

  Status read(const Buffer& buf, std::size_t offset, void* dst, std::size_t len) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "read outside the buffer");
    RDMALAB_CUDA(cudaMemcpy(dst, buf.bytes() + offset, len, cudaMemcpyDeviceToHost), "read");
    return Status::ok();
  }

  Status write(const Buffer& buf, std::size_t offset, const void* src, std::size_t len) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "write outside the buffer");
    RDMALAB_CUDA(cudaMemcpy(buf.bytes() + offset, src, len, cudaMemcpyHostToDevice), "write");
    // From pageable memory cudaMemcpy returns once the bytes are staged, not written: wait.
    RDMALAB_CUDA(cudaStreamSynchronize(0), "write (waiting for it)");
    return Status::ok();
  }

  // Returns when the bytes are there. cudaMemcpy returns before a device-to-device copy has run
  // (the runtime's documented behaviour), so a backend timing its "DMA" by this call would time
  // the enqueue: the copy is queued on this thread's stream and waited for. (That stream orders
  // itself after work on the legacy default stream, where the kernels run.)
  Status copy_bytes(void* dst, const void* src, std::size_t len) override {
    if (!len) return Status::ok();
    RDMALAB_CUDA(cudaMemcpyAsync(dst, src, len, cudaMemcpyDefault, cudaStreamPerThread), "copy");
    RDMALAB_CUDA(cudaStreamSynchronize(cudaStreamPerThread), "copy (waiting for it)");
    return Status::ok();
  }

  Status copy(const Buffer& dst, std::size_t dst_off, const Buffer& src, std::size_t src_off, std::size_t len) override {
    if (dst_off + len > dst.size() || src_off + len > src.size()) return Status(Errc::invalid_argument, "copy outside a buffer");
    return copy_bytes(dst.bytes() + dst_off, src.bytes() + src_off, len);
  }

  Status reduce(const Buffer& dst, std::size_t dst_off, const Buffer& a, std::size_t a_off, const Buffer& b, std::size_t b_off,
                std::size_t count, DataType t, ReduceOp op) override {
    const std::size_t len = count * dtype_size(t);
    if (dst_off + len > dst.size() || a_off + len > a.size() || b_off + len > b.size())
      return Status(Errc::invalid_argument, "reduce outside a buffer");
    // Staging slots may be host memory when a backend stages; the kernels need device memory.
    return gpu::reduce(dst.bytes() + dst_off, a.bytes() + a_off, b.bytes() + b_off, count, t, op);
  }
};

CudaMemory g_cuda;
bool g_installed = false;

}  // namespace

Status reduce(void* dst, const void* a, const void* b, std::size_t count, DataType t, ReduceOp op) {
  if (!count) return Status::ok();
  switch (t) {
    case DataType::fp32: return reduce_t<float>(dst, a, b, count, op);
    case DataType::fp16: return reduce_t<__half>(dst, a, b, count, op);
    case DataType::bf16: return reduce_t<__nv_bfloat16>(dst, a, b, count, op);
    case DataType::int32: return reduce_t<std::int32_t>(dst, a, b, count, op);
    case DataType::int8: return reduce_t<std::int8_t>(dst, a, b, count, op);
  }
  return Status(Errc::invalid_argument, "unknown data type");
}

Status copy(void* dst, const void* src, std::size_t bytes) {
  RDMALAB_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "device-to-device copy");
  return Status::ok();
}

double time_gpu(int reps, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  fn();  // warm-up
  cudaDeviceSynchronize();
  float best = 1e30f;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a);
    fn();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    best = std::min(best, ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return static_cast<double>(best) * 1e-3;
}

GpuInfo install() {
  install_nvtx();
  GpuInfo info;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice)
      info.why = std::string("no NVIDIA GPU and driver here (") + cudaGetErrorName(e) + ")";
    else
      info.why = e != cudaSuccess ? std::string("no usable GPU: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")" : std::string("no GPU found");
    set_memory_unavailable_reason(MemoryKind::cuda, info.why);
    return info;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  info.usable = true;
  info.devices = n;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.memory_bytes = prop.totalGlobalMem;
  set_memory_provider(MemoryKind::cuda, &g_cuda);
  g_installed = true;
  return info;
}

MemoryProvider* cuda_memory() { return g_installed ? &g_cuda : nullptr; }

std::vector<GpuFacts> gpu_facts() {
  std::vector<GpuFacts> out;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return out;
  // dmabuf export is a driver-API attribute (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124): the
  // driver library is opened at run time so that rdmalab starts on machines without one.
  using GetAttr = int (*)(int*, int, int);
  using Init = int (*)(unsigned);
  GetAttr get_attr = nullptr;
  if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    auto init = reinterpret_cast<Init>(dlsym(h, "cuInit"));
    if (init && init(0) == 0) get_attr = reinterpret_cast<GetAttr>(dlsym(h, "cuDeviceGetAttribute"));
  }
  for (int i = 0; i < n; ++i) {
    GpuFacts f;
    f.index = i;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) f.name = prop.name;
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) {
      f.pci_bus_id = bus;
      for (auto& c : f.pci_bus_id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrGPUDirectRDMASupported, i) == cudaSuccess) f.gpudirect_rdma = v != 0;
    if (get_attr && get_attr(&v, 124, i) == 0) f.dmabuf = v != 0;
    out.push_back(f);
  }
  return out;
}

}  // namespace rdmalab::gpu
