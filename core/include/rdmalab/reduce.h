// Element types and reduction operators of the collectives, and the host reference for them.
//
// The host code here is the reference every other implementation (the GPU kernels) is checked
// against. fp16 and bf16 are stored as 16-bit patterns and computed in fp32, rounded to nearest
// even on the way back, as GPU libraries do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmalab {

enum class DataType : std::uint8_t { fp32, fp16, bf16, int32, int8 };
enum class ReduceOp : std::uint8_t { sum, prod, max, min };

std::size_t dtype_size(DataType t) noexcept;
const char* dtype_name(DataType t) noexcept;   // nccl-tests' names: float half bfloat16 int32 int8
const char* reduce_op_name(ReduceOp op) noexcept;  // sum prod max min
// The scenario spellings (fp32 fp16 bf16 int32 int8 / sum prod max min).
std::optional<DataType> parse_dtype(const std::string& s);
std::optional<ReduceOp> parse_reduce_op(const std::string& s);
std::vector<std::string> dtype_choices();
std::vector<std::string> reduce_op_choices();

// fp16 / bf16 conversions (round to nearest even; NaN stays NaN).
float half_to_float(std::uint16_t h) noexcept;
std::uint16_t float_to_half(float f) noexcept;
float bf16_to_float(std::uint16_t b) noexcept;
std::uint16_t float_to_bf16(float f) noexcept;

// dst[i] = a[i] op b[i] for `count` elements. dst may alias a or b. Integers wrap (two's
// complement), as on GPUs.
void host_reduce(void* dst, const void* a, const void* b, std::size_t count, DataType t, ReduceOp op) noexcept;

// Element i of `count` as a double (for messages and tests), and the reverse for test inputs.
double element_as_double(const void* data, std::size_t i, DataType t) noexcept;
void set_element(void* data, std::size_t i, DataType t, double v) noexcept;

}  // namespace rdmalab
