// Element types: names, parsing, and PyTorch-exact rounding.
//
// Two independent implementations live here on purpose:
// - the f32 -> bits functions are ports of c10's (c10/util/Half.h,
//   BFloat16.h, Float8_e4m3fn.h, Float8_e5m2.h), bit for bit, NaN encodings
//   included;
// - round_to rounds a double in one step with an exact frexp/ldexp scheme
//   that is generic over the format (mantissa bits, smallest normal exponent,
//   largest finite value, overflow behaviour).
// The unit tests check that the two agree on f32 inputs.
#include "core/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "core/error.h"

namespace tilefuse {

namespace {

uint32_t bits_of(float f) {
  return std::bit_cast<uint32_t>(f);
}
float float_of(uint32_t u) {
  return std::bit_cast<float>(u);
}

// Truncates toward zero and wraps modulo 2^64 into two's complement.
// fmod is exact, so |r| < 2^64 converts to uint64 exactly; narrower integer
// types then wrap by the (C++20-defined) modular integer conversion, because
// 2^bits divides 2^64. NaN and +-inf have no integer value: 0.
int64_t wrap_to_i64(double v) {
  if (!std::isfinite(v)) return 0;
  const double r = std::fmod(std::trunc(v), 0x1p64);
  uint64_t u = static_cast<uint64_t>(std::fabs(r));
  if (r < 0) u = 0 - u;
  return static_cast<int64_t>(u);
}

}  // namespace

std::string_view dtype_name(DType dt) {
  switch (dt) {
#define TF_DTYPE_NAME(e, name, size, cat) \
  case DType::e:                          \
    return name;
    TILEFUSE_FOR_EACH_DTYPE(TF_DTYPE_NAME)
#undef TF_DTYPE_NAME
  }
  throw InternalError("dtype_name: bad DType " + std::to_string(static_cast<int>(dt)));
}

int dtype_size(DType dt) {
  switch (dt) {
#define TF_DTYPE_SIZE(e, name, size, cat) \
  case DType::e:                          \
    return size;
    TILEFUSE_FOR_EACH_DTYPE(TF_DTYPE_SIZE)
#undef TF_DTYPE_SIZE
  }
  throw InternalError("dtype_size: bad DType " + std::to_string(static_cast<int>(dt)));
}

DTypeCategory dtype_category(DType dt) {
  switch (dt) {
#define TF_DTYPE_CAT(e, name, size, cat) \
  case DType::e:                         \
    return DTypeCategory::cat;
    TILEFUSE_FOR_EACH_DTYPE(TF_DTYPE_CAT)
#undef TF_DTYPE_CAT
  }
  throw InternalError("dtype_category: bad DType " + std::to_string(static_cast<int>(dt)));
}

int dtype_bits_of_mantissa(DType dt) {
  switch (dt) {
    case DType::F8E4M3:
      return 3;
    case DType::F8E5M2:
      return 2;
    case DType::F16:
      return 10;
    case DType::BF16:
      return 7;
    case DType::F32:
      return 23;
    case DType::F64:
      return 52;
    default:
      return 0;
  }
}

std::optional<DType> parse_dtype(std::string_view spelling) {
  // Every accepted spelling, listed once. PyTorch's aliases: torch.half,
  // torch.float, torch.double, torch.int, torch.long.
  static constexpr std::pair<std::string_view, DType> kSpellings[] = {
      {"f16", DType::F16},
      {"float16", DType::F16},
      {"half", DType::F16},
      {"torch.float16", DType::F16},
      {"torch.half", DType::F16},
      {"bf16", DType::BF16},
      {"bfloat16", DType::BF16},
      {"torch.bfloat16", DType::BF16},
      {"f32", DType::F32},
      {"float32", DType::F32},
      {"float", DType::F32},
      {"torch.float32", DType::F32},
      {"torch.float", DType::F32},
      {"f64", DType::F64},
      {"float64", DType::F64},
      {"double", DType::F64},
      {"torch.float64", DType::F64},
      {"torch.double", DType::F64},
      {"i8", DType::I8},
      {"int8", DType::I8},
      {"torch.int8", DType::I8},
      {"u8", DType::U8},
      {"uint8", DType::U8},
      {"torch.uint8", DType::U8},
      {"i32", DType::I32},
      {"int32", DType::I32},
      {"int", DType::I32},
      {"torch.int32", DType::I32},
      {"torch.int", DType::I32},
      {"i64", DType::I64},
      {"int64", DType::I64},
      {"long", DType::I64},
      {"torch.int64", DType::I64},
      {"torch.long", DType::I64},
      {"bool", DType::Bool},
      {"torch.bool", DType::Bool},
      {"f8e4m3", DType::F8E4M3},
      {"float8_e4m3fn", DType::F8E4M3},
      {"torch.float8_e4m3fn", DType::F8E4M3},
      {"f8e5m2", DType::F8E5M2},
      {"float8_e5m2", DType::F8E5M2},
      {"torch.float8_e5m2", DType::F8E5M2},
  };
  for (const auto& [name, dt] : kSpellings)
    if (name == spelling) return dt;
  return std::nullopt;
}

double round_to(DType dt, double v) {
  switch (dt) {
    case DType::Bool:
      return v != 0 ? 1.0 : 0.0;
    case DType::U8:
      return static_cast<double>(static_cast<uint8_t>(wrap_to_i64(v)));
    case DType::I8:
      return static_cast<double>(static_cast<int8_t>(wrap_to_i64(v)));
    case DType::I32:
      return static_cast<double>(static_cast<int32_t>(wrap_to_i64(v)));
    case DType::I64:
      return static_cast<double>(wrap_to_i64(v));
    // Through f32 first, as c10::Half, BFloat16 and the Float8 types convert
    // (they have only a float constructor): a double rounds twice. The value
    // is what the encoding holds, so NaN signs follow the formats (bf16
    // drops it, as c10 does).
    case DType::F8E4M3:
      return f8e4m3_bits_to_f32(f32_to_f8e4m3_bits(static_cast<float>(v)));
    case DType::F8E5M2:
      return f8e5m2_bits_to_f32(f32_to_f8e5m2_bits(static_cast<float>(v)));
    case DType::F16:
      return f16_bits_to_f32(f32_to_f16_bits(static_cast<float>(v)));
    case DType::BF16:
      return bf16_bits_to_f32(f32_to_bf16_bits(static_cast<float>(v)));
    case DType::F32:
      return static_cast<double>(static_cast<float>(v));  // one IEEE RNE rounding
    case DType::F64:
      return v;
  }
  throw InternalError("round_to: bad DType " + std::to_string(static_cast<int>(dt)));
}

// ---------------------------------------------------------------------------
// f16. Port of c10::detail::fp16_ieee_from_fp32_value (c10/util/Half.h, from
// Marat Dukhan's FP16 library). The float arithmetic is the rounding: scaling
// |f| by 2^112 then 2^-110 overflows to inf exactly when f16 would, and
// adding 2^(e+13) (at least 2^-1, via `bias`) makes the f32 adder drop the 13
// extra mantissa bits with round-to-nearest-even, subnormals included. Needs
// the default FP environment (RNE, no flush-to-zero) and no -ffast-math.
uint16_t f32_to_f16_bits(float f) {
  const float scale_to_inf = float_of(UINT32_C(239) << 23);  // 2^112
  const float scale_to_zero = float_of(UINT32_C(17) << 23);  // 2^-110
  float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;
  const uint32_t w = bits_of(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & UINT32_C(0x80000000);
  uint32_t bias = shl1_w & UINT32_C(0xFF000000);
  if (bias < UINT32_C(0x71000000)) bias = UINT32_C(0x71000000);
  base = float_of((bias >> 1) + UINT32_C(0x07800000)) + base;
  const uint32_t bits = bits_of(base);
  const uint32_t exp_bits = (bits >> 13) & UINT32_C(0x00007C00);
  const uint32_t mantissa_bits = bits & UINT32_C(0x00000FFF);
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) |
                               (shl1_w > UINT32_C(0xFF000000) ? UINT32_C(0x7E00) : nonsign));
}

// Exact decode (every f16 is an f32). NaN payloads are kept, as c10 does.
float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FF;
  if (exp == 0) {
    const float mag = std::ldexp(static_cast<float>(mant), -24);  // subnormal or zero
    return sign ? -mag : mag;
  }
  if (exp == 0x1F) return float_of(sign | UINT32_C(0x7F800000) | (mant << 13));
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

// ---------------------------------------------------------------------------
// bf16. c10::detail::round_to_nearest_even (c10/util/BFloat16.h): adding
// 0x7FFF plus the lowest kept bit rounds the dropped 16 bits to nearest even;
// a carry into the exponent is the correct next binade (or inf). NaN becomes
// the canonical 0x7FC0, sign dropped, as in c10.
uint16_t f32_to_bf16_bits(float f) {
  if (std::isnan(f)) return UINT16_C(0x7FC0);
  const uint32_t u = bits_of(f);
  const uint32_t rounding_bias = ((u >> 16) & 1) + UINT32_C(0x7FFF);
  return static_cast<uint16_t>((u + rounding_bias) >> 16);
}

float bf16_bits_to_f32(uint16_t h) {
  return float_of(static_cast<uint32_t>(h) << 16);
}

// ---------------------------------------------------------------------------
// float8_e4m3fn. Port of c10::detail::fp8e4m3fn_from_fp32_value
// (c10/util/Float8_e4m3fn.h). |f| >= 480 (and inf, NaN) gives 0x7F (NaN).
// Below 2^-6 (the f8 subnormals) f is added to denorm_mask = 2^14, whose f32
// ulp is 2^-9, the f8 subnormal step: the f32 adder rounds f to a multiple
// of 2^-9 with RNE and the low bits of the sum are the f8 encoding (8 steps
// carry into 0x08, the smallest normal). Otherwise the usual "add 0x7FFFF
// plus the lowest kept bit" rounds the 20 dropped bits to nearest even;
// (464, 480) rounds up into 0x7F, which is NaN: there is no saturation.
uint8_t f32_to_f8e4m3_bits(float f) {
  constexpr uint32_t fp8_max = UINT32_C(1087) << 20;     // 480.0f
  constexpr uint32_t denorm_mask = UINT32_C(141) << 23;  // 2^14: ulp 2^-9
  uint32_t f_bits = bits_of(f);
  const uint32_t sign = f_bits & UINT32_C(0x80000000);
  f_bits ^= sign;
  uint8_t result = 0;
  if (f_bits >= fp8_max) {
    result = 0x7F;
  } else if (f_bits < (UINT32_C(121) << 23)) {  // below 2^-6: f8 subnormal
    f_bits = bits_of(float_of(f_bits) + float_of(denorm_mask));
    result = static_cast<uint8_t>(f_bits - denorm_mask);
  } else {
    const uint32_t mant_odd = (f_bits >> 20) & 1;
    f_bits += (static_cast<uint32_t>(7 - 127) << 23) + UINT32_C(0x7FFFF);
    f_bits += mant_odd;
    result = static_cast<uint8_t>(f_bits >> 20);
  }
  return static_cast<uint8_t>(result | (sign >> 24));
}

float f8e4m3_bits_to_f32(uint8_t b) {
  const bool negative = (b & 0x80) != 0;
  const int exp = (b >> 3) & 0xF;
  const int mant = b & 0x7;
  float mag;
  if (exp == 0xF && mant == 0x7) {
    mag = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    mag = std::ldexp(static_cast<float>(mant), -9);  // subnormal step 2^-9
  } else {
    mag = std::ldexp(static_cast<float>(8 + mant), exp - 7 - 3);
  }
  return negative ? -mag : mag;
}

// ---------------------------------------------------------------------------
// float8_e5m2. Port of c10::detail::fp8e5m2_from_fp32_value
// (c10/util/Float8_e5m2.h): f32 is rounded directly (not through f16, which
// would round twice); >= 2^16 gives inf (NaN stays NaN, 0x7F); [61440, 65536)
// rounds up into the inf pattern, as IEEE RNE does. Decoding is f16's with
// the byte as the high half, as c10 does.
uint8_t f32_to_f8e5m2_bits(float f) {
  constexpr uint32_t fp32_inf = UINT32_C(255) << 23;
  constexpr uint32_t fp8_max = UINT32_C(143) << 23;      // 2^16
  constexpr uint32_t denorm_mask = UINT32_C(134) << 23;  // 2^7: ulp 2^-16
  uint32_t f_bits = bits_of(f);
  const uint32_t sign = f_bits & UINT32_C(0x80000000);
  f_bits ^= sign;
  uint8_t result = 0;
  if (f_bits >= fp8_max) {
    result = f_bits > fp32_inf ? UINT8_C(0x7F) : UINT8_C(0x7C);
  } else if (f_bits < (UINT32_C(113) << 23)) {  // below 2^-14: f8 subnormal
    f_bits = bits_of(float_of(f_bits) + float_of(denorm_mask));
    result = static_cast<uint8_t>(f_bits - denorm_mask);
  } else {
    const uint32_t mant_odd = (f_bits >> 21) & 1;
    f_bits += (static_cast<uint32_t>(15 - 127) << 23) + UINT32_C(0xFFFFF);
    f_bits += mant_odd;
    result = static_cast<uint8_t>(f_bits >> 21);
  }
  return static_cast<uint8_t>(result | (sign >> 24));
}

float f8e5m2_bits_to_f32(uint8_t b) {
  return f16_bits_to_f32(static_cast<uint16_t>(b << 8));
}

// ---------------------------------------------------------------------------

double load_element(DType dt, const void* p) {
  switch (dt) {
    case DType::Bool:
      return *static_cast<const uint8_t*>(p) != 0 ? 1.0 : 0.0;
    case DType::U8:
      return *static_cast<const uint8_t*>(p);
    case DType::I8:
      return *static_cast<const int8_t*>(p);
    case DType::I32: {
      int32_t x;
      std::memcpy(&x, p, sizeof x);
      return x;
    }
    case DType::I64: {
      int64_t x;
      std::memcpy(&x, p, sizeof x);
      return static_cast<double>(x);
    }
    case DType::F8E4M3:
      return f8e4m3_bits_to_f32(*static_cast<const uint8_t*>(p));
    case DType::F8E5M2:
      return f8e5m2_bits_to_f32(*static_cast<const uint8_t*>(p));
    case DType::F16: {
      uint16_t x;
      std::memcpy(&x, p, sizeof x);
      return f16_bits_to_f32(x);
    }
    case DType::BF16: {
      uint16_t x;
      std::memcpy(&x, p, sizeof x);
      return bf16_bits_to_f32(x);
    }
    case DType::F32: {
      float x;
      std::memcpy(&x, p, sizeof x);
      return x;
    }
    case DType::F64: {
      double x;
      std::memcpy(&x, p, sizeof x);
      return x;
    }
  }
  throw InternalError("load_element: bad DType " + std::to_string(static_cast<int>(dt)));
}

// Narrow floats: round_to gives a value that is exactly representable, so
// the f32 encoders below only re-encode it (no second rounding). NaN goes
// through the encoders and gets c10's NaN pattern.
void store_element(DType dt, void* p, double v) {
  switch (dt) {
    case DType::Bool:
      *static_cast<uint8_t*>(p) = v != 0 ? 1 : 0;
      return;
    case DType::U8:
      *static_cast<uint8_t*>(p) = static_cast<uint8_t>(wrap_to_i64(v));
      return;
    case DType::I8:
      *static_cast<int8_t*>(p) = static_cast<int8_t>(wrap_to_i64(v));
      return;
    case DType::I32: {
      const int32_t x = static_cast<int32_t>(wrap_to_i64(v));
      std::memcpy(p, &x, sizeof x);
      return;
    }
    case DType::I64: {
      const int64_t x = wrap_to_i64(v);  // exact, even past 2^53
      std::memcpy(p, &x, sizeof x);
      return;
    }
    // round_to's rule: through f32 (see there).
    case DType::F8E4M3:
      *static_cast<uint8_t*>(p) = f32_to_f8e4m3_bits(static_cast<float>(v));
      return;
    case DType::F8E5M2:
      *static_cast<uint8_t*>(p) = f32_to_f8e5m2_bits(static_cast<float>(v));
      return;
    case DType::F16: {
      const uint16_t x = f32_to_f16_bits(static_cast<float>(v));
      std::memcpy(p, &x, sizeof x);
      return;
    }
    case DType::BF16: {
      const uint16_t x = f32_to_bf16_bits(static_cast<float>(v));
      std::memcpy(p, &x, sizeof x);
      return;
    }
    case DType::F32: {
      const float x = static_cast<float>(v);
      std::memcpy(p, &x, sizeof x);
      return;
    }
    case DType::F64:
      std::memcpy(p, &v, sizeof v);
      return;
  }
  throw InternalError("store_element: bad DType " + std::to_string(static_cast<int>(dt)));
}

}  // namespace tilefuse
