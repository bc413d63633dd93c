// dtype conversions: exhaustive round trips, RNE ties, single rounding in
// round_to, float8 edge cases (c10's Float8_e4m3fn.h / Float8_e5m2.h), integer
// wrap and the dtype spelling table.
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace tilefuse {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

float f32(uint32_t bits) {
  return std::bit_cast<float>(bits);
}

// A small deterministic generator for sampled sweeps (splitmix64).
uint64_t next_u64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// ---------------------------------------------------------------------------
// Exhaustive round trips.

TEST(DTypeF16, AllBitPatternsRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(h));
    const bool nan_pattern = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    if (nan_pattern) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(f)))) << std::hex << h;
      ASSERT_TRUE(std::isnan(round_to(DType::F16, f))) << std::hex << h;
      continue;
    }
    ASSERT_EQ(f32_to_f16_bits(f), h) << std::hex << h;
    ASSERT_EQ(round_to(DType::F16, f), static_cast<double>(f)) << std::hex << h;
    uint16_t stored = 0;
    store_element(DType::F16, &stored, f);
    ASSERT_EQ(stored, h) << std::hex << h;
    ASSERT_EQ(load_element(DType::F16, &stored), static_cast<double>(f));
  }
}

TEST(DTypeBF16, AllBitPatternsRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_bits_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(std::bit_cast<uint32_t>(f), h << 16);
    if (std::isnan(f)) {
      ASSERT_EQ(f32_to_bf16_bits(f), 0x7FC0) << std::hex << h;  // c10's canonical NaN
      ASSERT_TRUE(std::isnan(round_to(DType::BF16, f)));
      continue;
    }
    ASSERT_EQ(f32_to_bf16_bits(f), h) << std::hex << h;
    ASSERT_EQ(round_to(DType::BF16, f), static_cast<double>(f)) << std::hex << h;
  }
}

TEST(DTypeF8E4M3, AllBitPatternsRoundTrip) {
  int nans = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const float f = f8e4m3_bits_to_f32(static_cast<uint8_t>(b));
    if ((b & 0x7F) == 0x7F) {
      ++nans;
      ASSERT_TRUE(std::isnan(f)) << b;
      ASSERT_EQ(f32_to_f8e4m3_bits(f) & 0x7F, 0x7F) << b;
      continue;
    }
    ASSERT_FALSE(std::isnan(f)) << b;
    ASSERT_FALSE(std::isinf(f)) << b;
    ASSERT_EQ(f32_to_f8e4m3_bits(f), b) << b << " = " << f;
    ASSERT_EQ(round_to(DType::F8E4M3, f), static_cast<double>(f)) << b;
  }
  EXPECT_EQ(nans, 2);
  EXPECT_EQ(f8e4m3_bits_to_f32(0x7E), 448.0f);
  EXPECT_EQ(f8e4m3_bits_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(f8e4m3_bits_to_f32(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(f8e4m3_bits_to_f32(0x38), 1.0f);
}

TEST(DTypeF8E5M2, AllBitPatternsRoundTrip) {
  for (uint32_t b = 0; b < 256; ++b) {
    const float f = f8e5m2_bits_to_f32(static_cast<uint8_t>(b));
    // The byte is the high half of an f16.
    ASSERT_EQ(std::bit_cast<uint32_t>(f), std::bit_cast<uint32_t>(f16_bits_to_f32(b << 8)));
    if ((b & 0x7F) > 0x7C) {
      ASSERT_TRUE(std::isnan(f)) << b;
      ASSERT_TRUE(std::isnan(f8e5m2_bits_to_f32(f32_to_f8e5m2_bits(f)))) << b;
      continue;
    }
    ASSERT_EQ(f32_to_f8e5m2_bits(f), b) << b << " = " << f;
    ASSERT_EQ(round_to(DType::F8E5M2, f), static_cast<double>(f)) << b;
  }
  EXPECT_EQ(f8e5m2_bits_to_f32(0x7B), 57344.0f);
  EXPECT_TRUE(std::isinf(f8e5m2_bits_to_f32(0x7C)));
  EXPECT_EQ(f8e5m2_bits_to_f32(0x01), std::ldexp(1.0f, -16));
}

// ---------------------------------------------------------------------------
// The c10 bit-trick encoders (what round_to and store_element use) and an
// independent generic rounding agree on f32 inputs; for f16 the compiler's
// _Float16 (IEEE RNE) is a third opinion.

// An independent, exact rounding to a narrow format (frexp / ldexp
// arithmetic in double; the library's round_to uses the c10 bit tricks), the
// second opinion the encoders are checked against.
struct FloatFormat {
  int mantissa_bits;     // explicit fraction bits
  int min_exponent;      // unbiased exponent of the smallest normal number
  double max_finite;     // largest finite magnitude
  bool overflow_is_nan;  // float8_e4m3fn has no infinity: overflow and inf give NaN
};

constexpr FloatFormat kF16{10, -14, 65504.0, false};
constexpr FloatFormat kBF16{7, -126, 0x1.FEp127, false};
constexpr FloatFormat kF8E4M3{3, -6, 448.0, true};
constexpr FloatFormat kF8E5M2{2, -14, 57344.0, false};

// Rounds `v` to `fmt` with round-to-nearest-even in a single step.
//
// Why this is exact: with |v| = f * 2^e (frexp, f in [0.5, 1)), the spacing
// of `fmt` near |v| is 2^q with q = max(e - 1, min_exponent) - mantissa_bits
// (below the smallest normal the spacing stays that of the subnormals).
// Scaling by a power of two is exact in double (the result stays far from
// double's own overflow and underflow: |v| * 2^-q < 2^(mantissa_bits + 1)),
// so x = |v| * 2^-q carries every bit of v; floor(x) and x - floor(x) are
// exact too, and the tie test is exact. The rounded integer times 2^q is
// exact again. Overflow is decided on the rounded value, which is what IEEE
// (and c10's bit tricks) do: e.g. f16 65519.99 -> 65504 but 65520 -> inf.
double round_to_format(double v, const FloatFormat& fmt) {
  // A NaN keeps its sign (c10 encodes it: f16 0x7E00 | sign), as does an
  // infinity turned NaN (f8e4m3 has no infinities).
  if (std::isnan(v)) return std::copysign(std::numeric_limits<double>::quiet_NaN(), v);
  if (std::isinf(v))
    return fmt.overflow_is_nan ? std::copysign(std::numeric_limits<double>::quiet_NaN(), v) : v;
  if (v == 0) return v;  // keeps the sign of zero
  const double a = std::fabs(v);
  int e = 0;
  std::frexp(a, &e);
  const int q = std::max(e - 1, fmt.min_exponent) - fmt.mantissa_bits;
  const double x = std::ldexp(a, -q);
  double r = std::floor(x);
  const double frac = x - r;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  double result = std::ldexp(r, q);
  if (result > fmt.max_finite)
    result = fmt.overflow_is_nan ? std::numeric_limits<double>::quiet_NaN()
                                 : std::numeric_limits<double>::infinity();
  return std::copysign(result, v);
}

void expect_same_value(double want, float got_f, const char* what, float in) {
  if (std::isnan(want)) {
    ASSERT_TRUE(std::isnan(got_f)) << what << " of " << in;
  } else {
    ASSERT_EQ(static_cast<double>(got_f), want) << what << " of " << std::hexfloat << in;
  }
}

void check_encoders_on(float x) {
  expect_same_value(round_to_format(x, kF16), f16_bits_to_f32(f32_to_f16_bits(x)), "f16", x);
  expect_same_value(round_to_format(x, kBF16), bf16_bits_to_f32(f32_to_bf16_bits(x)), "bf16", x);
  expect_same_value(round_to_format(x, kF8E4M3), f8e4m3_bits_to_f32(f32_to_f8e4m3_bits(x)),
                    "f8e4m3", x);
  expect_same_value(round_to_format(x, kF8E5M2), f8e5m2_bits_to_f32(f32_to_f8e5m2_bits(x)),
                    "f8e5m2", x);
  expect_same_value(round_to(DType::F16, x), f16_bits_to_f32(f32_to_f16_bits(x)), "round_to f16",
                    x);
#ifdef __FLT16_MAX__
  if (!std::isnan(x)) {
    const _Float16 h = static_cast<_Float16>(x);
    ASSERT_EQ(std::bit_cast<uint16_t>(h), f32_to_f16_bits(x)) << std::hexfloat << x;
  }
#endif
}

TEST(DTypeEncoders, AgreeWithAnIndependentRoundingOnSampledF32) {
  // Every f32 whose exponent lies in the ranges that matter (f8 subnormals
  // through bf16 overflow) is too many; walk each binade of f32 from 2^-30
  // to 2^20 with a stride that hits every low-bit pattern class, plus random
  // bit patterns over the whole f32 range.
  for (uint32_t exp = 97; exp <= 147; ++exp) {
    for (uint32_t m = 0; m < (1u << 23); m += 97) {
      check_encoders_on(f32((exp << 23) | m));
      check_encoders_on(f32(0x80000000u | (exp << 23) | m));
    }
    // Ties and near-ties for every narrow format: low bits all zero except
    // the halfway bit, +- one ulp.
    for (int drop : {13, 16, 20, 21}) {
      for (uint32_t top = 0; top < 64; ++top) {
        const uint32_t half = 1u << (drop - 1);
        const uint32_t base = (exp << 23) | (top << drop);
        for (uint32_t b : {base | half, (base | half) - 1, (base | half) + 1})
          check_encoders_on(f32(b));
      }
    }
  }
  uint64_t s = 42;
  for (int i = 0; i < 2000000; ++i) check_encoders_on(f32(static_cast<uint32_t>(next_u64(s))));
  for (float x : {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min()})
    check_encoders_on(x);
}

// ---------------------------------------------------------------------------
// Round to nearest even at ties.

TEST(DTypeRounding, TiesGoToEven) {
  // f16 near 1: ulp 2^-10.
  EXPECT_EQ(round_to(DType::F16, 1.0 + 0x1p-11), 1.0);               // tie, 1.0 is even
  EXPECT_EQ(round_to(DType::F16, 1.0 + 3 * 0x1p-11), 1.0 + 0x1p-9);  // tie, up to even
  // Through f32 (PyTorch's rule): 2^-30 is below f32's ulp at 1, so the
  // value reaches the f16 rounding as the tie, which goes to even.
  EXPECT_EQ(round_to(DType::F16, 1.0 + 0x1p-11 + 0x1p-30), 1.0);
  EXPECT_EQ(round_to(DType::F16, 1.0 + 0x1p-11 + 0x1p-20), 1.0 + 0x1p-10);  // kept by f32
  EXPECT_EQ(f32_to_f16_bits(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * 0x1p-11f), 0x3C02);
  // f16 subnormal ties: step 2^-24.
  EXPECT_EQ(round_to(DType::F16, 0x1p-25), 0.0);
  EXPECT_EQ(round_to(DType::F16, 3 * 0x1p-25), 2 * 0x1p-24);
  EXPECT_EQ(f32_to_f16_bits(0x1p-25f), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(f32_to_f16_bits(-0x1p-25f), 0x8000);  // -0 keeps its sign
  // f16 overflow: 65520 is the tie between 65504 (odd) and 2^16: inf.
  EXPECT_EQ(round_to(DType::F16, 65519.0), 65504.0);
  EXPECT_EQ(round_to(DType::F16, 65520.0), kInf);
  EXPECT_EQ(round_to(DType::F16, -65520.0), -kInf);
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7BFF);
  // bf16: ulp at 1 is 2^-7.
  EXPECT_EQ(round_to(DType::BF16, 1.0 + 0x1p-8), 1.0);
  EXPECT_EQ(round_to(DType::BF16, 1.0 + 3 * 0x1p-8), 1.0 + 0x1p-6);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(round_to(DType::BF16, 0x1.FFp127), kInf);  // tie past the largest finite
  // f8e5m2: ulp at 1 is 2^-2.
  EXPECT_EQ(round_to(DType::F8E5M2, 1.125), 1.0);
  EXPECT_EQ(round_to(DType::F8E5M2, 1.375), 1.5);
  EXPECT_EQ(round_to(DType::F8E5M2, 61440.0), kInf);  // tie 57344 (odd) / 2^16
  EXPECT_EQ(round_to(DType::F8E5M2, 61439.0), 57344.0);
  EXPECT_EQ(f32_to_f8e5m2_bits(61440.0f), 0x7C);
  EXPECT_EQ(f32_to_f8e5m2_bits(-kInf), 0xFC);
  // f8e4m3: ulp at 1 is 2^-3; subnormal step 2^-9.
  EXPECT_EQ(round_to(DType::F8E4M3, 1.0625), 1.0);
  EXPECT_EQ(round_to(DType::F8E4M3, 1.1875), 1.25);
  EXPECT_EQ(round_to(DType::F8E4M3, 0x1p-10), 0.0);
  EXPECT_EQ(round_to(DType::F8E4M3, 3 * 0x1p-10), 0x1p-8);
  EXPECT_EQ(f32_to_f8e4m3_bits(3 * 0x1p-10f), 0x02);
}

// round_to must round the double directly. v = 1 + 2^-11 + 2^-40 is just
// above the f16 tie between 1 and 1 + 2^-10, so the direct rounding goes up;
// rounding to f32 first drops the 2^-40 (below f32's half ulp 2^-24) and lands
// exactly on the tie, which then goes to even (1.0).
// round_to rounds to f16, bf16 and f8 through f32, as PyTorch does
// (c10::Half, BFloat16 and Float8_* have only a float constructor): a double
// just above a tie rounds to the tie in f32, which then goes to even; one
// direct IEEE rounding would go up. The issue-14 value 1 + 2^-11 + 2^-40.
TEST(DTypeRounding, RoundToFollowsPyTorchThroughF32) {
  const double v = 1.0 + 0x1p-11 + 0x1p-40;
  const double via_f32 = f16_bits_to_f32(f32_to_f16_bits(static_cast<float>(v)));
  EXPECT_EQ(via_f32, 1.0);
  EXPECT_EQ(round_to(DType::F16, v), 1.0);
#ifdef __FLT16_MAX__
  // A single rounding (libgcc's double -> _Float16) differs: that is not
  // what PyTorch computes.
  EXPECT_EQ(static_cast<double>(static_cast<_Float16>(v)), 1.0 + 0x1p-10);
#endif
  // The same for bf16 and f8, and below the tie.
  EXPECT_EQ(round_to(DType::BF16, 1.0 + 0x1p-8 + 0x1p-40), 1.0);
  EXPECT_EQ(round_to(DType::BF16, 1.0 + 0x1p-8 + 0x1p-20), 1.0 + 0x1p-7);
  EXPECT_EQ(round_to(DType::BF16, 1.0 + 0x1p-8 - 0x1p-40), 1.0);
  EXPECT_EQ(round_to(DType::F8E4M3, 1.0625 + 0x1p-40), 1.0);
  EXPECT_EQ(round_to(DType::F8E5M2, 1.125 + 0x1p-40), 1.0);
  EXPECT_EQ(round_to(DType::F16, 0x1p-25 + 0x1p-60), 0.0);  // subnormal tie: f32 loses the nudge
  EXPECT_EQ(round_to(DType::F16, 0x1p-25 + 0x1p-40), 0x1p-24);              // f32 keeps it
  EXPECT_EQ(round_to(DType::F32, 1.0 + 0x1p-24 + 0x1p-50), 1.0 + 0x1p-23);  // f32: one rounding
}

#ifdef __FLT16_MAX__
// The compiler's float -> _Float16 conversion is one IEEE rounding, so
// round_to(F16, v) must equal (_Float16)(float)v: compare on random doubles
// spread over the f16 range.
TEST(DTypeRounding, F16FromDoubleMatchesTheCompilerThroughFloat) {
  uint64_t s = 7;
  for (int i = 0; i < 1000000; ++i) {
    const uint64_t r = next_u64(s);
    // exponent in [-30, 17], random 52-bit mantissa and sign.
    const int e = static_cast<int>(r % 48) - 30;
    const double v = std::ldexp(1.0 + static_cast<double>(next_u64(s) >> 12) * 0x1p-52, e) *
                     ((r >> 63) ? -1.0 : 1.0);
    ASSERT_EQ(round_to(DType::F16, v),
              static_cast<double>(static_cast<_Float16>(static_cast<float>(v))))
        << std::hexfloat << v;
  }
}
#endif

// ---------------------------------------------------------------------------
// float8_e4m3fn edges (c10/util/Float8_e4m3fn.h).

TEST(DTypeF8E4M3, Edges) {
  EXPECT_EQ(round_to(DType::F8E4M3, 448.0), 448.0);
  EXPECT_EQ(f32_to_f8e4m3_bits(448.0f), 0x7E);
  EXPECT_EQ(round_to(DType::F8E4M3, 464.0), 448.0);  // tie: 448 = 1.110b * 2^8 is even
  EXPECT_EQ(f32_to_f8e4m3_bits(464.0f), 0x7E);
  EXPECT_TRUE(std::isnan(round_to(DType::F8E4M3, 464.5)));  // rounds to 480: NaN
  EXPECT_EQ(f32_to_f8e4m3_bits(464.5f), 0x7F);
  EXPECT_TRUE(std::isnan(round_to(DType::F8E4M3, 479.9)));
  EXPECT_EQ(f32_to_f8e4m3_bits(479.9f), 0x7F);
  EXPECT_TRUE(std::isnan(round_to(DType::F8E4M3, 480.0)));
  EXPECT_EQ(f32_to_f8e4m3_bits(480.0f), 0x7F);
  EXPECT_EQ(f32_to_f8e4m3_bits(-480.0f), 0xFF);
  EXPECT_EQ(f32_to_f8e4m3_bits(1e30f), 0x7F);
  EXPECT_TRUE(std::isnan(round_to(DType::F8E4M3, -kInf)));
  EXPECT_TRUE(std::isnan(round_to(DType::F8E4M3, kInf)));
  EXPECT_EQ(f32_to_f8e4m3_bits(-std::numeric_limits<float>::infinity()), 0xFF);
  EXPECT_TRUE(std::isnan(round_to(DType::F8E4M3, kNaN)));
  EXPECT_EQ(f32_to_f8e4m3_bits(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(round_to(DType::F8E4M3, -448.0), -448.0);
  EXPECT_EQ(round_to(DType::F8E4M3, 0x1p-10 + 0x1p-40), 0.0);     // the tie, after f32
  EXPECT_EQ(round_to(DType::F8E4M3, 0x1p-10 + 0x1p-20), 0x1p-9);  // smallest subnormal
  uint8_t b = 0;
  store_element(DType::F8E4M3, &b, 479.9);
  EXPECT_EQ(b & 0x7F, 0x7F);
  store_element(DType::F8E4M3, &b, 460.0);
  EXPECT_EQ(b, 0x7E);
}

TEST(DTypeF16, NaNAndInf) {
  EXPECT_TRUE(std::isnan(round_to(DType::F16, kNaN)));
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN()) & 0x7FFF, 0x7E00);
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(round_to(DType::F16, 1e300), kInf);
  EXPECT_EQ(round_to(DType::BF16, -1e300), -kInf);
  EXPECT_EQ(round_to(DType::F32, 1e300), kInf);
  EXPECT_EQ(round_to(DType::F16, 1e-300), 0.0);
  EXPECT_TRUE(std::signbit(round_to(DType::F16, -1e-300)));
  uint16_t h = 0;
  store_element(DType::F16, &h, kNaN);
  EXPECT_TRUE(std::isnan(load_element(DType::F16, &h)));
  store_element(DType::BF16, &h, 1e300);
  EXPECT_EQ(h, 0x7F80);
}

// ---------------------------------------------------------------------------
// Integers and bool.

TEST(DTypeIntegers, TruncateAndWrap) {
  EXPECT_EQ(round_to(DType::I8, 127.9), 127);
  EXPECT_EQ(round_to(DType::I8, 128.0), -128);
  EXPECT_EQ(round_to(DType::I8, -129.5), 127);
  EXPECT_EQ(round_to(DType::I8, -0.9), 0);
  EXPECT_EQ(round_to(DType::U8, -1.5), 255);
  EXPECT_EQ(round_to(DType::U8, 256.0), 0);
  EXPECT_EQ(round_to(DType::U8, 300.7), 44);
  EXPECT_EQ(round_to(DType::I32, 2147483648.0), -2147483648.0);
  EXPECT_EQ(round_to(DType::I32, -2147483649.0), 2147483647.0);
  EXPECT_EQ(round_to(DType::I32, 4294967296.0 * 3 + 5.5), 5.0);
  EXPECT_EQ(round_to(DType::I64, 0x1p63), -0x1p63);
  EXPECT_EQ(round_to(DType::I64, -0x1p63), -0x1p63);
  EXPECT_EQ(round_to(DType::I64, 0x1p64 + 0x1p12), 0x1p12);
  EXPECT_EQ(round_to(DType::I64, -123456789.99), -123456789.0);
  for (DType dt : {DType::U8, DType::I8, DType::I32, DType::I64}) {
    EXPECT_EQ(round_to(dt, kNaN), 0) << dtype_name(dt);
    EXPECT_EQ(round_to(dt, kInf), 0) << dtype_name(dt);
    EXPECT_EQ(round_to(dt, -kInf), 0) << dtype_name(dt);
  }
  // i64 stores are exact past 2^53.
  int64_t x = 0;
  store_element(DType::I64, &x, 0x1p62 + 0x1p10);
  EXPECT_EQ(x, (int64_t{1} << 62) + 1024);
  store_element(DType::I64, &x, -0x1p63);
  EXPECT_EQ(x, std::numeric_limits<int64_t>::min());
  store_element(DType::I64, &x, 0x1p63);
  EXPECT_EQ(x, std::numeric_limits<int64_t>::min());
  int32_t y = 0;
  store_element(DType::I32, &y, -1.0);
  EXPECT_EQ(y, -1);
  EXPECT_EQ(load_element(DType::I32, &y), -1.0);
  int8_t z = 0;
  store_element(DType::I8, &z, 200.0);
  EXPECT_EQ(z, -56);
  EXPECT_EQ(load_element(DType::I8, &z), -56.0);
}

TEST(DTypeIntegers, Bool) {
  EXPECT_EQ(round_to(DType::Bool, 0.0), 0.0);
  EXPECT_EQ(round_to(DType::Bool, -0.0), 0.0);
  EXPECT_EQ(round_to(DType::Bool, 0.5), 1.0);
  EXPECT_EQ(round_to(DType::Bool, -3.0), 1.0);
  EXPECT_EQ(round_to(DType::Bool, kNaN), 1.0);
  uint8_t b = 7;
  store_element(DType::Bool, &b, 42.0);
  EXPECT_EQ(b, 1);
  b = 5;  // a non-canonical byte still reads as true
  EXPECT_EQ(load_element(DType::Bool, &b), 1.0);
}

TEST(DTypeRounding, F32AndF64) {
  EXPECT_EQ(round_to(DType::F64, 0.1), 0.1);
  EXPECT_EQ(round_to(DType::F32, 0.1), static_cast<double>(0.1f));
  float f = 0;
  store_element(DType::F32, &f, 0.1);
  EXPECT_EQ(f, 0.1f);
  double d = 0;
  store_element(DType::F64, &d, 0.1);
  EXPECT_EQ(load_element(DType::F64, &d), 0.1);
}

// ---------------------------------------------------------------------------
// Names, sizes, categories, spellings.

TEST(DTypeNames, Table) {
  EXPECT_EQ(dtype_name(DType::F16), "f16");
  EXPECT_EQ(dtype_name(DType::F8E4M3), "f8e4m3");
  EXPECT_EQ(dtype_size(DType::I64), 8);
  EXPECT_EQ(dtype_size(DType::BF16), 2);
  EXPECT_EQ(dtype_size(DType::F8E5M2), 1);
  EXPECT_EQ(dtype_category(DType::Bool), DTypeCategory::Bool);
  EXPECT_TRUE(is_integral(DType::U8));
  EXPECT_TRUE(is_floating(DType::F8E5M2));
  EXPECT_FALSE(is_floating(DType::I32));
  EXPECT_EQ(dtype_bits_of_mantissa(DType::F16), 10);
  EXPECT_EQ(dtype_bits_of_mantissa(DType::BF16), 7);
  EXPECT_EQ(dtype_bits_of_mantissa(DType::F32), 23);
  EXPECT_EQ(dtype_bits_of_mantissa(DType::F64), 52);
  EXPECT_EQ(dtype_bits_of_mantissa(DType::F8E4M3), 3);
  EXPECT_EQ(dtype_bits_of_mantissa(DType::F8E5M2), 2);
  EXPECT_EQ(dtype_bits_of_mantissa(DType::I32), 0);
  // Every canonical name parses back to itself.
#define TF_CHECK_NAME(e, name, size, cat) EXPECT_EQ(parse_dtype(name), DType::e) << name;
  TILEFUSE_FOR_EACH_DTYPE(TF_CHECK_NAME)
#undef TF_CHECK_NAME
}

TEST(DTypeNames, ParseSpellings) {
  const std::pair<const char*, DType> table[] = {
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
  for (const auto& [s, dt] : table) EXPECT_EQ(parse_dtype(s), dt) << s;
  for (const char* bad : {"", "F16", "torch.", "torch.f16", "float8", "f8", "int16", "i16",
                          "torch.float8_e4m3", "uint32", " f16", "f16 "})
    EXPECT_EQ(parse_dtype(bad), std::nullopt) << '"' << bad << '"';
}

}  // namespace
}  // namespace tilefuse
