// Element types and their exact rounding rules.
//
// Every dtype of the .tfs language is listed once in TILEFUSE_FOR_EACH_DTYPE;
// names, sizes and categories are generated from that list.
//
// Rounding: `round_to(dt, v)` returns the value a tensor of dtype `dt` holds
// after storing `v`, as PyTorch does it: floating types round to nearest even
// (f8e4m3 is PyTorch's float8_e4m3fn: no infinities, saturates to NaN past
// the largest finite value when not representable, max 448; f8e5m2 is IEEE
// like with infinities); integer types truncate toward zero and wrap modulo
// 2^bits; bool is `v != 0`. Integer values are carried in double, exactly for
// |v| < 2^53.
#pragma once

#include <cstdint>
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

}  // namespace tilefuse
