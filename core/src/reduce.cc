#include "rdmalab/reduce.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace rdmalab {

std::size_t dtype_size(DataType t) noexcept {
  switch (t) {
    case DataType::fp32: return 4;
    case DataType::fp16: return 2;
    case DataType::bf16: return 2;
    case DataType::int32: return 4;
    case DataType::int8: return 1;
  }
  return 1;
}

const char* dtype_name(DataType t) noexcept {
  switch (t) {
    case DataType::fp32: return "float";
    case DataType::fp16: return "half";
    case DataType::bf16: return "bfloat16";
    case DataType::int32: return "int32";
    case DataType::int8: return "int8";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

namespace {
const char* const kDtypeKeys[] = {"fp32", "fp16", "bf16", "int32", "int8"};
const char* const kOpKeys[] = {"sum", "prod", "max", "min"};
}  // namespace

std::optional<DataType> parse_dtype(const std::string& s) {
  for (int i = 0; i < 5; ++i)
    if (s == kDtypeKeys[i]) return static_cast<DataType>(i);
  return std::nullopt;
}
std::optional<ReduceOp> parse_reduce_op(const std::string& s) {
  for (int i = 0; i < 4; ++i)
    if (s == kOpKeys[i]) return static_cast<ReduceOp>(i);
  return std::nullopt;
}
std::vector<std::string> dtype_choices() { return {std::begin(kDtypeKeys), std::end(kDtypeKeys)}; }
std::vector<std::string> reduce_op_choices() { return {std::begin(kOpKeys), std::end(kOpKeys)}; }

float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1f;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t float_to_half(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));  // inf / NaN
  if (ax >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (ax < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    if (ax < 0x33000000u) return sign;  // < 2^-25: rounds to zero
    const std::uint32_t e = ax >> 23;
    const std::uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - e;  // 14 - (e - 127) + 13 - 1 ... align to 2^-24 units
    std::uint32_t val = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (val & 1u))) ++val;
    return static_cast<std::uint16_t>(sign | val);
  }
  std::uint32_t val = ((ax >> 23) - 127 + 15) << 10 | ((ax >> 13) & 0x3ffu);
  const std::uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (val & 1u))) ++val;
  return static_cast<std::uint16_t>(sign | val);
}

float bf16_to_float(std::uint16_t b) noexcept { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

std::uint16_t float_to_bf16(float f) noexcept {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

namespace {

template <typename T>
T apply(T a, T b, ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return a + b;
    case ReduceOp::prod: return a * b;
    case ReduceOp::max: return std::max(a, b);
    case ReduceOp::min: return std::min(a, b);
  }
  return a;
}

// Integers wrap: compute in the unsigned type of the same width.
template <typename S, typename U>
S apply_int(S a, S b, ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return static_cast<S>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    case ReduceOp::prod: return static_cast<S>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    case ReduceOp::max: return std::max(a, b);
    case ReduceOp::min: return std::min(a, b);
  }
  return a;
}

template <typename T, typename F>
void loop(void* dst, const void* a, const void* b, std::size_t count, F f) noexcept {
  auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0; };
  if (aligned(dst) && aligned(a) && aligned(b)) {
    // The common case, in a form the compiler vectorises (with a runtime check for aliasing).
    T* d = static_cast<T*>(dst);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    for (std::size_t i = 0; i < count; ++i) d[i] = f(pa[i], pb[i]);
    return;
  }
  // Element by element through memcpy: any alignment, may alias.
  auto* d = static_cast<unsigned char*>(dst);
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  for (std::size_t i = 0; i < count; ++i) {
    T x, y;
    std::memcpy(&x, pa + i * sizeof(T), sizeof(T));
    std::memcpy(&y, pb + i * sizeof(T), sizeof(T));
    T r = f(x, y);
    std::memcpy(d + i * sizeof(T), &r, sizeof(T));
  }
}

}  // namespace

void host_reduce(void* dst, const void* a, const void* b, std::size_t count, DataType t, ReduceOp op) noexcept {
  switch (t) {
    case DataType::fp32:
      loop<float>(dst, a, b, count, [op](float x, float y) { return apply(x, y, op); });
      break;
    case DataType::fp16:
      loop<std::uint16_t>(dst, a, b, count,
                          [op](std::uint16_t x, std::uint16_t y) { return float_to_half(apply(half_to_float(x), half_to_float(y), op)); });
      break;
    case DataType::bf16:
      loop<std::uint16_t>(dst, a, b, count,
                          [op](std::uint16_t x, std::uint16_t y) { return float_to_bf16(apply(bf16_to_float(x), bf16_to_float(y), op)); });
      break;
    case DataType::int32:
      loop<std::int32_t>(dst, a, b, count, [op](std::int32_t x, std::int32_t y) { return apply_int<std::int32_t, std::uint32_t>(x, y, op); });
      break;
    case DataType::int8:
      loop<std::int8_t>(dst, a, b, count, [op](std::int8_t x, std::int8_t y) { return apply_int<std::int8_t, std::uint8_t>(x, y, op); });
      break;
  }
}

double element_as_double(const void* data, std::size_t i, DataType t) noexcept {
  const auto* p = static_cast<const unsigned char*>(data) + i * dtype_size(t);
  switch (t) {
    case DataType::fp32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DataType::fp16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return half_to_float(v);
    }
    case DataType::bf16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return bf16_to_float(v);
    }
    case DataType::int32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DataType::int8: {
      std::int8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
  }
  return 0;
}

void set_element(void* data, std::size_t i, DataType t, double v) noexcept {
  auto* p = static_cast<unsigned char*>(data) + i * dtype_size(t);
  switch (t) {
    case DataType::fp32: {
      float x = static_cast<float>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DataType::fp16: {
      std::uint16_t x = float_to_half(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case DataType::bf16: {
      std::uint16_t x = float_to_bf16(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case DataType::int32: {
      auto x = static_cast<std::int32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DataType::int8: {
      auto x = static_cast<std::int8_t>(v);
      std::memcpy(p, &x, 1);
      break;
    }
  }
}

}  // namespace rdmalab
