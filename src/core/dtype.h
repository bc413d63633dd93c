// Element types and their exact rounding rules.
//
// Every dtype of the .tfs language is listed once in TILEFUSE_FOR_EACH_DTYPE;
// names, sizes and categories are generated from that list.
//
// Rounding: `round_to(dt, v)` returns the value a tensor of dtype `dt` holds
// after storing `v`, the way PyTorch converts it. That is the one rounding
// rule of every engine (the reference evaluator, the CPU executor, the CUDA
// helpers, constant folding):
// - to f16, bf16 and the f8 types a value goes through f32 first, because
//   c10::Half, c10::BFloat16 and c10::Float8_* have only a float
//   constructor: an f64 (or an integer past 2^24) rounds twice, first to
//   f32 (1 + 2^-11 + 2^-40 becomes 1 + 2^-11, a tie, then f16 1.0). For the
//   results of + - * / and sqrt on such values the two roundings equal one
//   (f32 has at least 2p + 2 bits: Figueroa, "When is double rounding
//   innocuous?", 1995), so arithmetic is correctly rounded either way.
// - f16, bf16, f32: IEEE round to nearest even, subnormals included; overflow
//   gives +-inf; NaN stays NaN.
// - f8e4m3 is torch.float8_e4m3fn (c10/util/Float8_e4m3fn.h): 4 exponent
//   bits, bias 7, 3 mantissa bits, no infinities, largest finite 448, NaN is
//   S.1111.111. Values round to nearest even (subnormals included); there is
//   no saturation: a value whose rounding exceeds 448 (|v| > 464) and +-inf
//   become NaN. (c10 tests |x| >= 480 on f32 inputs and lets (464, 480)
//   round into the NaN pattern: the same result.)
// - f8e5m2 is torch.float8_e5m2 (c10/util/Float8_e5m2.h): IEEE-like with
//   5 exponent bits, 2 mantissa bits, infinities, largest finite 57344, RNE.
// - integer types truncate toward zero and wrap modulo 2^bits (two's
//   complement); NaN and +-inf become 0 (PyTorch leaves these undefined).
//   Integer values are carried in double, exactly for |v| < 2^53.
// - bool is `v != 0` (NaN is true, as in PyTorch).
//
// The f32 bit conversions below are ports of c10's (Half.h, BFloat16.h,
// Float8_e4m3fn.h, Float8_e5m2.h) and agree with round_to on f32 inputs;
// NaN encodings: f16 0x7E00 | sign, bf16 0x7FC0, f8e4m3 0x7F | sign,
// f8e5m2 0x7F | sign.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace tilefuse {

// X(enumerator, canonical name, size in bytes, category)
#define TILEFUSE_FOR_EACH_DTYPE(X)      \
  X(Bool, "bool", 1, Bool)              \
  X(U8, "u8", 1, Integral)              \
  X(I8, "i8", 1, Integral)              \
  X(I32, "i32", 4, Integral)            \
  X(I64, "i64", 8, Integral)            \
  X(F8E4M3, "f8e4m3", 1, Floating)      \
  X(F8E5M2, "f8e5m2", 1, Floating)      \
  X(F16, "f16", 2, Floating)            \
  X(BF16, "bf16", 2, Floating)          \
  X(F32, "f32", 4, Floating)            \
  X(F64, "f64", 8, Floating)

enum class DType : uint8_t {
#define TF_DTYPE_ENUM(e, name, size, cat) e,
  TILEFUSE_FOR_EACH_DTYPE(TF_DTYPE_ENUM)
#undef TF_DTYPE_ENUM
};

// PyTorch's type-promotion categories, ordered: bool < integral < floating.
enum class DTypeCategory : uint8_t { Bool = 0, Integral = 1, Floating = 2 };

std::string_view dtype_name(DType dt);  // canonical .tfs spelling: "f16", "i64", ...
int dtype_size(DType dt);               // bytes per element
DTypeCategory dtype_category(DType dt);
inline bool is_floating(DType dt) { return dtype_category(dt) == DTypeCategory::Floating; }
inline bool is_integral(DType dt) { return dtype_category(dt) == DTypeCategory::Integral; }
int dtype_bits_of_mantissa(DType dt);   // explicit mantissa bits (0 for non-floating)

// Parses a dtype spelling: the canonical names, "float16"/"half"/"bfloat16"/
// "float"/"float32"/"double"/"float64"/"int8"/"uint8"/"int"/"int32"/"long"/
// "int64"/"float8_e4m3fn"/"float8_e5m2" and all of those with a "torch."
// prefix. Returns nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view spelling);

// The value a `dt` element holds after storing `v` (see the header comment).
double round_to(DType dt, double v);

// Bit-exact conversions (round to nearest even).
uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);
float bf16_bits_to_f32(uint16_t h);
uint8_t f32_to_f8e4m3_bits(float f);
float f8e4m3_bits_to_f32(uint8_t b);
uint8_t f32_to_f8e5m2_bits(float f);
float f8e5m2_bits_to_f32(uint8_t b);

// Reads / writes one element stored in `dt`'s binary format at `p`.
// store_element rounds with round_to first.
double load_element(DType dt, const void* p);
void store_element(DType dt, void* p, double v);

// torch.maximum / torch.minimum on floating values (float or double), the
// one rule of every engine: the reference evaluator, the CPU executor,
// constant folding and the CUDA helpers (src/runtime/device/tf_numeric.cuh,
// which must agree bit for bit).
// - A NaN operand gives the positive quiet NaN (c10's
//   std::numeric_limits<T>::quiet_NaN() in PyTorch's CPU kernel; stored to a
//   narrow type it is that type's canonical NaN).
// - Otherwise IEEE 754-2019 maximum / minimum: -0 < +0, so max(-0, +0) and
//   max(+0, -0) are +0, min of the two is -0, whatever the operand order.
//   PyTorch's CUDA kernels give exactly this (the GPU's max.f32 / min.f32).
//   Its CPU kernels depend on the position: the vectorized loop
//   (_mm256_max_ps) returns the second operand of a +-0 tie, the scalar tail
//   (std::max) the first, so no order-based rule matches PyTorch on the CPU
//   for every element; the sign-ordered rule is the one that is the same in
//   every engine and under any reordering of the operands.
template <class T>
T float_maximum(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a;  // +-0: the positive one
  return a > b ? a : b;
}
template <class T>
T float_minimum(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  if (a == b) return std::signbit(a) ? a : b;  // +-0: the negative one
  return a < b ? a : b;
}

}  // namespace tilefuse
