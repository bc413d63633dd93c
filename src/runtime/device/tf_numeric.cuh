// tf_numeric.cuh: element types, casts and scalar math for the CUDA kernels
// the emitter writes (DESIGN.md, "Backends and runtime"). Device code only;
// compiled by NVRTC (sm_80 and later, -std=c++17) with no CUDA header: every
// conversion is written here, with inline PTX where a single instruction
// does exactly what is needed. Embedded into the library at build time
// (runtime/cuda/device_headers.h) and passed to NVRTC as "tf_numeric.cuh".
//
// The rules are the Tile IR contract (src/tir/ir.h, "Values" and "Rounding")
// as the CPU executor implements it (src/runtime/cpu/eval_math.cpp,
// eval_expr.cpp) with the formats of src/core/dtype.h; the GPU tests
// (tests/unit/runtime/device_numeric_test.cpp) compare every conversion bit
// for bit with the host functions of core/dtype.h.
//
// Storage types. f16 (IEEE binary16), bf16, f8e4m3 (torch.float8_e4m3fn) and
// f8e5m2 (torch.float8_e5m2) are structs holding the encoding: trivially
// copyable, sizes 2, 2, 1, 1, the same bytes as in a tensor.
//
// cast<To>(v) to f16 / bf16 / f8 goes through f32, as PyTorch's c10 types
// convert (they have only a float constructor) and as core/dtype.h's
// round_to: an f64 or an integer first rounds to f32 (cvt.rn.f32.f64 /
// cvt.rn.f32.s64), then to the format; so 1 + 2^-11 + 2^-40 becomes f16 1.0
// as on the CPU. Each step rounds to nearest even:
// - f32 -> f16: PTX `cvt.rn.f16.f32` (PTX ISA, "Data Movement and Conversion
//   Instructions: cvt": .rn is round to nearest even; overflow gives inf;
//   f16 subnormals are produced); f32 -> bf16: `cvt.rn.bf16.f32` (same
//   section, sm_80+). A NaN is re-encoded as the host does (below).
// - f32 -> f8: exact integer rounding of the significand
//   (detail::encode_magnitude), with c10's overflow behaviour per format.
//   (PTX has no f8 cvt before sm_89, and its .satfinite form saturates
//   where c10 does not.)
// - formats, NaN and overflow as core/dtype.h (ported from c10/util/Half.h,
//   BFloat16.h, Float8_e4m3fn.h, Float8_e5m2.h): f16 NaN is 0x7E00 | sign;
//   bf16 NaN is 0x7FC0 (sign dropped); f8e4m3 has no infinity: inf, NaN and
//   any value whose rounding exceeds 448 (|v| > 464) give 0x7F | sign;
//   f8e5m2 overflows to inf 0x7C | sign, NaN is 0x7F | sign. No saturation.
// - f64 -> f32: PTX `cvt.rn.f32.f64` (no .ftz: subnormals kept).
// - narrow -> wider float is exact (f16 -> f32: PTX `cvt.f32.f16`).
// float -> int: truncate toward zero, then wrap modulo 2^64 into two's
// complement and then to the width; NaN and +-inf give 0 (dtype.h,
// eval_math.cpp float_to_int). Done on the bits: no PTX cvt.rzi, which
// saturates.
// int -> float: round to nearest even in one step for f32 / f64
// (cvt.rn.f32.s64 / cvt.rn.f64.s64), through f32 for narrower.
// any -> bool: != 0 (NaN is true, -0 is false); bool -> number: 0 / 1;
// int -> int: wrap (two's complement).
//
// Arithmetic on f16 / bf16 / f8 (+ - * /): computed in f32 (PTX add/sub/mul/div
// .rn.f32, never contracted into an fma, no flush to zero), then rounded once
// to the type. Exact: f32 has at least 2p + 2 bits for these formats, so the
// double rounding is innocuous (Figueroa, "When is double rounding
// innocuous?", 1995). Comparisons are IEEE via f32; unary - flips the sign.
//
// floordiv / floormod (integers): Python floor division, the sign of the
// modulo follows the divisor; b == 0 gives 0 for both, b == -1 gives -a
// (wrapped) and 0, as the CPU executor (eval_expr.cpp floor_div/floor_mod).
// floormod on floats: fmod, plus b where the signs differ (eval_expr.cpp).
// min / max on floats: core/dtype.h's float_minimum / float_maximum, as the
// CPU executor and the reference: a NaN operand gives the type's canonical
// quiet NaN, else IEEE 754-2019 minimum / maximum (-0 < +0, so max(-0, +0)
// and max(+0, -0) are +0 and min of them -0, whatever the order; PyTorch's
// CUDA kernels agree). Plain `a < b ? a : b` / `a > b ? a : b` for integers.
//
// Math (TILEFUSE_FOR_EACH_TIR_INTRINSIC in src/tir/ir.h): tf::exp(x) etc. for
// float and double with the accurate CUDA math library functions (expf, not
// __expf; do not compile with --use_fast_math); sqrt, rsqrt (= 1 / sqrt) and
// sigmoid (= 1 / (1 + exp(-x)), as the CPU) use IEEE-rounded PTX sqrt / div
// / add (.rn, no .ftz), so they agree with the CPU bit for bit. f16 / bf16 /
// f8: in f32, rounded once (sigmoid as exp(x) / (1 + exp(x)) for x < 0, so
// bf16's tiny results do not flush to 0). neg and abs also on integers
// (wrapping).
//
// Defining TF_NUMERIC_SOFTWARE_CVT before the include replaces the PTX cvt
// fast paths by the integer code (the tests run both).
#pragma once

#ifndef TF_DEVICE
#define TF_DEVICE __device__ __forceinline__
#endif

namespace tf {

using i8 = signed char;
using u8 = unsigned char;
using i16 = short;
using u16 = unsigned short;
using i32 = int;
using u32 = unsigned int;
using i64 = long long;
using u64 = unsigned long long;
using f32 = float;
using f64 = double;

struct f16 {
  unsigned short bits;
};
struct bf16 {
  unsigned short bits;
};
struct f8e4m3 {
  unsigned char bits;
};
struct f8e5m2 {
  unsigned char bits;
};

static_assert(sizeof(f16) == 2 && sizeof(bf16) == 2, "16-bit float storage");
static_assert(sizeof(f8e4m3) == 1 && sizeof(f8e5m2) == 1, "8-bit float storage");
static_assert(sizeof(long long) == 8 && sizeof(int) == 4 && sizeof(short) == 2, "int widths");

namespace detail {

template <class A, class B>
struct same {
  static constexpr bool value = false;
};
template <class A>
struct same<A, A> {
  static constexpr bool value = true;
};

// What kind of element a C++ type is, for cast's dispatch.
enum Kind { kNone = 0, kBool, kInt, kF32, kF64, kNarrow };
template <class T>
struct kind_of {
  static constexpr Kind value = kNone;
};
#define TF_NUMERIC_KIND(T, K)        \
  template <>                        \
  struct kind_of<T> {                \
    static constexpr Kind value = K; \
  };
TF_NUMERIC_KIND(bool, kBool)
TF_NUMERIC_KIND(char, kInt)
TF_NUMERIC_KIND(signed char, kInt)
TF_NUMERIC_KIND(unsigned char, kInt)
TF_NUMERIC_KIND(short, kInt)
TF_NUMERIC_KIND(unsigned short, kInt)
TF_NUMERIC_KIND(int, kInt)
TF_NUMERIC_KIND(unsigned int, kInt)
TF_NUMERIC_KIND(long, kInt)
TF_NUMERIC_KIND(unsigned long, kInt)
TF_NUMERIC_KIND(long long, kInt)
TF_NUMERIC_KIND(unsigned long long, kInt)
TF_NUMERIC_KIND(float, kF32)
TF_NUMERIC_KIND(double, kF64)
TF_NUMERIC_KIND(f16, kNarrow)
TF_NUMERIC_KIND(bf16, kNarrow)
TF_NUMERIC_KIND(f8e4m3, kNarrow)
TF_NUMERIC_KIND(f8e5m2, kNarrow)
#undef TF_NUMERIC_KIND

// A binary format narrower than f32: mantissa bits, unbiased exponents of
// the smallest and largest normal binade, largest finite encoding, the sign
// bit, what overflow (and inf) encodes to and the NaN encoding for a sign.
template <class T>
struct format;
template <>
struct format<f16> {
  static constexpr int kMant = 10, kEmin = -14, kEmax = 15;
  static constexpr unsigned kMaxFinite = 0x7BFFu, kSign = 0x8000u, kOverflow = 0x7C00u;
  static TF_DEVICE unsigned nan(unsigned sign) { return 0x7E00u | sign; }
};
template <>
struct format<bf16> {
  static constexpr int kMant = 7, kEmin = -126, kEmax = 127;
  static constexpr unsigned kMaxFinite = 0x7F7Fu, kSign = 0x8000u, kOverflow = 0x7F80u;
  static TF_DEVICE unsigned nan(unsigned) { return 0x7FC0u; }
};
template <>
struct format<f8e4m3> {
  static constexpr int kMant = 3, kEmin = -6, kEmax = 8;
  static constexpr unsigned kMaxFinite = 0x7Eu, kSign = 0x80u, kOverflow = 0x7Fu;  // NaN
  static TF_DEVICE unsigned nan(unsigned sign) { return 0x7Fu | sign; }
};
template <>
struct format<f8e5m2> {
  static constexpr int kMant = 2, kEmin = -14, kEmax = 15;
  static constexpr unsigned kMaxFinite = 0x7Bu, kSign = 0x80u, kOverflow = 0x7Cu;
  static TF_DEVICE unsigned nan(unsigned sign) { return 0x7Fu | sign; }
};

// The encoding (without sign) of the positive value m * 2^e (0 < m < 2^64)
// in format F, rounded to nearest even in one step. With exp the unbiased
// exponent of the value (2^exp <= v < 2^(exp+1)), the spacing of F there is
// 2^q, q = max(exp, kEmin) - kMant (subnormals keep the smallest normal
// binade's spacing); r = round(v / 2^q) is exact integer work on m. The
// encoding of r * 2^q is ((q - (kEmin - kMant)) << kMant) + r: below the
// normal range r < 2^kMant is the subnormal field, in range r in
// [2^kMant, 2^(kMant+1)] carries into the exponent field, so a round-up to
// the next binade (or into the first normal) is right by construction.
// Overflow is decided on the rounded value.
template <class F>
TF_DEVICE unsigned encode_magnitude(unsigned long long m, int e) {
  const int msb = 63 - __clzll(static_cast<long long>(m));
  const int exp = msb + e;
  if (exp > F::kEmax) return F::kOverflow;
  const int q = (exp > F::kEmin ? exp : F::kEmin) - F::kMant;
  const int sh = q - e;  // r = round(m / 2^sh)
  unsigned long long r;
  if (sh <= 0) {
    r = m << -sh;  // exact: -sh <= kMant - msb
  } else if (sh > msb + 1) {
    r = 0;  // below half the spacing
  } else if (sh == msb + 1) {
    r = (m & (m - 1)) != 0 ? 1 : 0;  // in [half, spacing): exactly half ties to 0
  } else {
    r = m >> sh;
    const unsigned long long rem = m & ((1ull << sh) - 1);
    const unsigned long long half = 1ull << (sh - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
  }
  const unsigned enc =
      (static_cast<unsigned>(q - (F::kEmin - F::kMant)) << F::kMant) + static_cast<unsigned>(r);
  return enc > F::kMaxFinite ? F::kOverflow : enc;
}

TF_DEVICE bool f32_is_nan(float x) {
  return (__float_as_uint(x) & 0x7FFFFFFFu) > 0x7F800000u;
}
TF_DEVICE bool f64_is_nan(double x) {
  return (static_cast<unsigned long long>(__double_as_longlong(x)) & 0x7FFFFFFFFFFFFFFFull) >
         0x7FF0000000000000ull;
}

// f32 -> format F, one rounding (integer path).
template <class F>
TF_DEVICE unsigned encode_f32_soft(float x) {
  const unsigned u = __float_as_uint(x);
  const unsigned sign = (u >> 31) ? F::kSign : 0u;
  const unsigned a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return F::nan(sign);
  if (a == 0x7F800000u) return F::kOverflow | sign;
  if (a == 0) return sign;
  const unsigned be = a >> 23, frac = a & 0x7FFFFFu;
  const unsigned long long m = be ? (frac | 0x800000u) : frac;
  const int e = be ? static_cast<int>(be) - 150 : -149;
  return encode_magnitude<F>(m, e) | sign;
}

// f32 -> format F: the PTX cvt where it rounds exactly as required, else
// the integer path.
template <class F>
TF_DEVICE unsigned encode_f32(float x) {
#if !defined(TF_NUMERIC_SOFTWARE_CVT) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (same<F, format<f16>>::value) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return f32_is_nan(x) ? F::nan((__float_as_uint(x) >> 31) ? F::kSign : 0u) : h;
  } else if constexpr (same<F, format<bf16>>::value) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return f32_is_nan(x) ? F::nan(0u) : h;
  } else {
    return encode_f32_soft<F>(x);
  }
#else
  return encode_f32_soft<F>(x);
#endif
}

// ---- decoding (exact) ------------------------------------------------------

// A NaN decodes as the host's conversions decode it (x86 cvtph2ps /
// cvtss2sd, which the reference's f64 path goes through): sign and payload
// kept, the quiet bit set. The PTX cvt would give the canonical NaN
// 0x7FFFFFFF (PTX ISA, "cvt": NaN results are canonical), dropping both.
TF_DEVICE float f16_bits_to_f32(unsigned short h) {
  const unsigned sign = static_cast<unsigned>(h & 0x8000u) << 16;
  if ((h & 0x7FFFu) > 0x7C00u)
    return __uint_as_float(sign | 0x7FC00000u | ((h & 0x3FFu) << 13));
#if !defined(TF_NUMERIC_SOFTWARE_CVT)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  unsigned be = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (be == 0x1F) return __uint_as_float(sign | 0x7F800000u);  // inf (NaN above)
  if (be == 0) {
    if (mant == 0) return __uint_as_float(sign);
    const int shift = __clz(mant) - 21;  // bring the leading 1 to bit 10
    mant = (mant << shift) & 0x3FFu;
    be = static_cast<unsigned>(1 - shift + 112);
    return __uint_as_float(sign | (be << 23) | (mant << 13));
  }
  return __uint_as_float(sign | ((be + 112) << 23) | (mant << 13));
#endif
}

// A NaN keeps its sign and payload and is quieted, as f16's above.
TF_DEVICE float bf16_bits_to_f32(unsigned short h) {
  const unsigned u = static_cast<unsigned>(h) << 16;
  return __uint_as_float((u & 0x7FFFFFFFu) > 0x7F800000u ? u | 0x00400000u : u);
}

TF_DEVICE float f8e4m3_bits_to_f32(unsigned char b) {
  const unsigned sign = static_cast<unsigned>(b & 0x80u) << 24;
  const unsigned be = (b >> 3) & 0xFu, mant = b & 0x7u;
  if (be == 0xF && mant == 0x7) return __uint_as_float(sign | 0x7FC00000u);
  if (be == 0) {  // mant * 2^-9, exact: an f32 normal
    if (mant == 0) return __uint_as_float(sign);
    const int shift = __clz(mant) - 28;  // bring the leading 1 to bit 3
    return __uint_as_float(sign | (static_cast<unsigned>(1 - shift - 7 + 127) << 23) |
                           (((mant << shift) & 0x7u) << 20));
  }
  return __uint_as_float(sign | ((be - 7 + 127) << 23) | (mant << 20));
}

TF_DEVICE float f8e5m2_bits_to_f32(unsigned char b) {
  return f16_bits_to_f32(static_cast<unsigned short>(b << 8));
}

TF_DEVICE float to_f32(float x) {
  return x;
}
TF_DEVICE float to_f32(f16 x) {
  return f16_bits_to_f32(x.bits);
}
TF_DEVICE float to_f32(bf16 x) {
  return bf16_bits_to_f32(x.bits);
}
TF_DEVICE float to_f32(f8e4m3 x) {
  return f8e4m3_bits_to_f32(x.bits);
}
TF_DEVICE float to_f32(f8e5m2 x) {
  return f8e5m2_bits_to_f32(x.bits);
}

template <class T>
TF_DEVICE T from_f32(float x) {
  using S = decltype(T{}.bits);
  return T{static_cast<S>(encode_f32<format<T>>(x))};
}

TF_DEVICE float f64_to_f32(double x) {
  float f;
  asm("cvt.rn.f32.f64 %0, %1;" : "=f"(f) : "d"(x));
  return f;
}

// float -> integer: truncate toward zero, wrap modulo 2^64; NaN, inf -> 0.
// |v| = m * 2^e; the integer part is m >> -e or (m << e) mod 2^64.
TF_DEVICE long long f64_to_int(double x) {
  const unsigned long long u = static_cast<unsigned long long>(__double_as_longlong(x));
  const unsigned be = static_cast<unsigned>(u >> 52) & 0x7FFu;
  if (be == 0x7FF || be < 1023) return 0;  // NaN, inf, |x| < 1
  const unsigned long long m = (u & 0xFFFFFFFFFFFFFull) | 0x10000000000000ull;
  const int e = static_cast<int>(be) - 1075;  // >= -52
  const unsigned long long t = e >= 64 ? 0ull : e >= 0 ? m << e : m >> -e;
  return static_cast<long long>((u >> 63) ? 0ull - t : t);
}
TF_DEVICE long long f32_to_int(float x) {
  const unsigned u = __float_as_uint(x);
  const unsigned be = (u >> 23) & 0xFFu;
  if (be == 0xFF || be < 127) return 0;
  const unsigned long long m = (u & 0x7FFFFFu) | 0x800000u;
  const int e = static_cast<int>(be) - 150;  // >= -23
  const unsigned long long t = e >= 64 ? 0ull : e >= 0 ? m << e : m >> -e;
  return static_cast<long long>((u >> 31) ? 0ull - t : t);
}

TF_DEVICE bool nonzero(bool v) {
  return v;
}
TF_DEVICE bool nonzero(float v) {
  return v != 0.0f;
}
TF_DEVICE bool nonzero(double v) {
  return v != 0.0;
}
TF_DEVICE bool nonzero(f16 v) {
  return (v.bits & 0x7FFFu) != 0;
}
TF_DEVICE bool nonzero(bf16 v) {
  return (v.bits & 0x7FFFu) != 0;
}
TF_DEVICE bool nonzero(f8e4m3 v) {
  return (v.bits & 0x7Fu) != 0;
}
TF_DEVICE bool nonzero(f8e5m2 v) {
  return (v.bits & 0x7Fu) != 0;
}
template <class I>
TF_DEVICE bool nonzero(I v) {
  return v != 0;
}

}  // namespace detail

// ---- cast ------------------------------------------------------------------

template <class To, class From>
TF_DEVICE To cast(From v) {
  using namespace detail;
  constexpr Kind kt = kind_of<To>::value, kf = kind_of<From>::value;
  static_assert(kt != kNone && kf != kNone, "tf::cast: not an element type");
  if constexpr (same<To, From>::value) {
    return v;
  } else if constexpr (kt == kBool) {
    return nonzero(v);
  } else if constexpr (kf == kBool) {
    return cast<To>(static_cast<int>(v));
  } else if constexpr (kt == kInt) {
    if constexpr (kf == kInt) {
      return static_cast<To>(v);
    } else if constexpr (kf == kF64) {
      return static_cast<To>(f64_to_int(v));
    } else {
      return static_cast<To>(f32_to_int(to_f32(v)));
    }
  } else if constexpr (kt == kF32) {
    if constexpr (kf == kInt) {
      return static_cast<float>(v);  // cvt.rn.f32.s64 / .s32 / ...
    } else if constexpr (kf == kF64) {
      return f64_to_f32(v);
    } else {
      return to_f32(v);
    }
  } else if constexpr (kt == kF64) {
    if constexpr (kf == kInt) {
      return static_cast<double>(v);  // cvt.rn.f64.s64 / exact
    } else {
      return static_cast<double>(to_f32(v));
    }
  } else {  // narrow float: through f32 (see the top of this file)
    if constexpr (kf == kInt) {
      return from_f32<To>(static_cast<float>(v));  // cvt.rn.f32.s64 / .s32 / ...
    } else if constexpr (kf == kF64) {
      return from_f32<To>(f64_to_f32(v));
    } else {
      return from_f32<To>(to_f32(v));
    }
  }
}

// ---- pair conversion ------------------------------------------------------

// cast_pack2<To>(lo, hi), To = f16 or bf16: the encodings of cast<To>(lo)
// (bits 0..15) and cast<To>(hi) (bits 16..31) as one 32-bit value, the
// layout of a packed pair in memory and of stmatrix's / mma's b16 pairs;
// bit-identical to two cast<To> for every input (NaN payloads, +-inf, +-0,
// subnormals, values that round to inf). The staged GEMM epilogue converts
// its accumulator pairs with it (EpiloguePlan::pair_cast).
// - PTX `cvt.rn.f16x2.f32 d, a, b` / `cvt.rn.bf16x2.f32 d, a, b` (PTX ISA,
//   "Data Movement and Conversion Instructions: cvt", sm_80+): a converted
//   into the upper half of d, b into the lower half, each rounded to nearest
//   even as the scalar cvt (subnormals kept, overflow to inf); a NaN gives a
//   canonical NaN.
// - The NaN rule (encode_f32) on the pair without branches: `set.nan.u32.
//   f16x2 m, d, d` (PTX ISA, "Half Precision Comparison Instructions: set":
//   with a .u32 destination each half is 0xFFFF where the comparison is
//   true, 0 elsewhere; sm_53+; the .bf16x2 form needs sm_90), then
//   d = (d & ~m) | (m & fix) with fix per half 0x7E00 | the input's sign (f16)
//   or 0x7FC0 (bf16). A NaN converts to a NaN and nothing else does, so m
//   marks exactly the NaN inputs.
// bf16 before sm_90, and with TF_NUMERIC_SOFTWARE_CVT: two encode_f32.
template <class To>
TF_DEVICE unsigned cast_pack2(float lo, float hi) {
  using namespace detail;
  static_assert(same<To, f16>::value || same<To, bf16>::value, "cast_pack2: f16 or bf16");
#if !defined(TF_NUMERIC_SOFTWARE_CVT) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (same<To, f16>::value) {
    unsigned d, m, s;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    asm("set.nan.u32.f16x2 %0, %1, %1;" : "=r"(m) : "r"(d));
    // Each input's top byte into its half's top byte (PTX `prmt`: result
    // byte 1 = lo's byte 3, byte 3 = hi's byte 3), so its sign bit lands at
    // the half's bit 15: one PRMT where shift-and-mask took three ops.
    asm("prmt.b32 %0, %1, %2, 0x7030;" : "=r"(s) : "r"(__float_as_uint(lo)), "r"(__float_as_uint(hi)));
    return (d & ~m) | (m & ((s & 0x80008000u) | 0x7E007E00u));
  }
#if __CUDA_ARCH__ >= 900
  if constexpr (same<To, bf16>::value) {
    unsigned d, m;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    asm("set.nan.u32.bf16x2 %0, %1, %1;" : "=r"(m) : "r"(d));
    return (d & ~m) | (m & 0x7FC07FC0u);
  }
#endif
#endif
  return encode_f32<format<To>>(lo) | (encode_f32<format<To>>(hi) << 16);
}

// ---- f16 / bf16 / f8 arithmetic --------------------------------------------

namespace detail {
TF_DEVICE float add_rn(float a, float b) {
  float r;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
TF_DEVICE float sub_rn(float a, float b) {
  float r;
  asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
TF_DEVICE float mul_rn(float a, float b) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
TF_DEVICE float div_rn(float a, float b) {
  float r;
  asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
TF_DEVICE float sqrt_rn(float a) {
  float r;
  asm("sqrt.rn.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}
}  // namespace detail

#define TF_NUMERIC_NARROW_OPS(T)                                                      \
  TF_DEVICE T operator+(T a, T b) {                                                   \
    return detail::from_f32<T>(detail::add_rn(detail::to_f32(a), detail::to_f32(b))); \
  }                                                                                   \
  TF_DEVICE T operator-(T a, T b) {                                                   \
    return detail::from_f32<T>(detail::sub_rn(detail::to_f32(a), detail::to_f32(b))); \
  }                                                                                   \
  TF_DEVICE T operator*(T a, T b) {                                                   \
    return detail::from_f32<T>(detail::mul_rn(detail::to_f32(a), detail::to_f32(b))); \
  }                                                                                   \
  TF_DEVICE T operator/(T a, T b) {                                                   \
    return detail::from_f32<T>(detail::div_rn(detail::to_f32(a), detail::to_f32(b))); \
  }                                                                                   \
  TF_DEVICE T operator-(T a) {                                                        \
    return T{static_cast<decltype(a.bits)>(a.bits ^ detail::format<T>::kSign)};       \
  }                                                                                   \
  TF_DEVICE T& operator+=(T& a, T b) {                                                \
    return a = a + b;                                                                 \
  }                                                                                   \
  TF_DEVICE T& operator-=(T& a, T b) {                                                \
    return a = a - b;                                                                 \
  }                                                                                   \
  TF_DEVICE T& operator*=(T& a, T b) {                                                \
    return a = a * b;                                                                 \
  }                                                                                   \
  TF_DEVICE T& operator/=(T& a, T b) {                                                \
    return a = a / b;                                                                 \
  }                                                                                   \
  TF_DEVICE bool operator==(T a, T b) {                                               \
    return detail::to_f32(a) == detail::to_f32(b);                                    \
  }                                                                                   \
  TF_DEVICE bool operator!=(T a, T b) {                                               \
    return detail::to_f32(a) != detail::to_f32(b);                                    \
  }                                                                                   \
  TF_DEVICE bool operator<(T a, T b) {                                                \
    return detail::to_f32(a) < detail::to_f32(b);                                     \
  }                                                                                   \
  TF_DEVICE bool operator<=(T a, T b) {                                               \
    return detail::to_f32(a) <= detail::to_f32(b);                                    \
  }                                                                                   \
  TF_DEVICE bool operator>(T a, T b) {                                                \
    return detail::to_f32(a) > detail::to_f32(b);                                     \
  }                                                                                   \
  TF_DEVICE bool operator>=(T a, T b) {                                               \
    return detail::to_f32(a) >= detail::to_f32(b);                                    \
  }
TF_NUMERIC_NARROW_OPS(f16)
TF_NUMERIC_NARROW_OPS(bf16)
TF_NUMERIC_NARROW_OPS(f8e4m3)
TF_NUMERIC_NARROW_OPS(f8e5m2)
#undef TF_NUMERIC_NARROW_OPS

// ---- floor division and modulo -------------------------------------------

TF_DEVICE long long floordiv(long long a, long long b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<long long>(0ull - static_cast<unsigned long long>(a));
  long long q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}
TF_DEVICE long long floormod(long long a, long long b) {
  if (b == 0 || b == -1) return 0;
  long long r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
TF_DEVICE int floordiv(int a, int b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<int>(0u - static_cast<unsigned>(a));
  int q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}
TF_DEVICE int floormod(int a, int b) {
  if (b == 0 || b == -1) return 0;
  int r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// Narrower integers: in int, then wrapped back (as the CPU computes in i64).
#define TF_NUMERIC_SMALL_FLOORDIV(T)                                           \
  TF_DEVICE T floordiv(T a, T b) {                                             \
    return static_cast<T>(floordiv(static_cast<int>(a), static_cast<int>(b))); \
  }                                                                            \
  TF_DEVICE T floormod(T a, T b) {                                             \
    return static_cast<T>(floormod(static_cast<int>(a), static_cast<int>(b))); \
  }
TF_NUMERIC_SMALL_FLOORDIV(signed char)
TF_NUMERIC_SMALL_FLOORDIV(unsigned char)
TF_NUMERIC_SMALL_FLOORDIV(short)
#undef TF_NUMERIC_SMALL_FLOORDIV

TF_DEVICE float floormod(float a, float b) {
  float r = ::fmodf(a, b);
  if (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) r = detail::add_rn(r, b);
  return r;
}
TF_DEVICE double floormod(double a, double b) {
  double r = ::fmod(a, b);
  if (r != 0.0 && ((r < 0.0) != (b < 0.0))) r = __dadd_rn(r, b);
  return r;
}
#define TF_NUMERIC_NARROW_FLOORMOD(T)                                           \
  TF_DEVICE T floormod(T a, T b) {                                              \
    return detail::from_f32<T>(floormod(detail::to_f32(a), detail::to_f32(b))); \
  }
TF_NUMERIC_NARROW_FLOORMOD(f16)
TF_NUMERIC_NARROW_FLOORMOD(bf16)
TF_NUMERIC_NARROW_FLOORMOD(f8e4m3)
TF_NUMERIC_NARROW_FLOORMOD(f8e5m2)
#undef TF_NUMERIC_NARROW_FLOORMOD

// ---- min / max -------------------------------------------------------------

// A tie (a == b, so both zeros when they differ) picks by sign: the
// negative operand for min, the positive for max.
TF_DEVICE float min(float a, float b) {
  if (detail::f32_is_nan(a) || detail::f32_is_nan(b)) return __uint_as_float(0x7FC00000u);
  if (a == b) return (__float_as_uint(a) >> 31) ? a : b;
  return a < b ? a : b;
}
TF_DEVICE float max(float a, float b) {
  if (detail::f32_is_nan(a) || detail::f32_is_nan(b)) return __uint_as_float(0x7FC00000u);
  if (a == b) return (__float_as_uint(a) >> 31) ? b : a;
  return a > b ? a : b;
}
TF_DEVICE double min(double a, double b) {
  if (detail::f64_is_nan(a) || detail::f64_is_nan(b))
    return __longlong_as_double(0x7FF8000000000000ll);
  if (a == b) return __double_as_longlong(a) < 0 ? a : b;
  return a < b ? a : b;
}
TF_DEVICE double max(double a, double b) {
  if (detail::f64_is_nan(a) || detail::f64_is_nan(b))
    return __longlong_as_double(0x7FF8000000000000ll);
  if (a == b) return __double_as_longlong(a) < 0 ? b : a;
  return a > b ? a : b;
}
// SIGN_BIT: the sign bit of the storage (0x8000 or 0x80).
#define TF_NUMERIC_HALF_MINMAX(T, NAN_BITS, SIGN_BIT)                       \
  TF_DEVICE T min(T a, T b) {                                               \
    const float x = detail::to_f32(a), y = detail::to_f32(b);               \
    if (detail::f32_is_nan(x) || detail::f32_is_nan(y)) return T{NAN_BITS}; \
    if (x == y) return (a.bits & SIGN_BIT) ? a : b;                         \
    return x < y ? a : b;                                                   \
  }                                                                         \
  TF_DEVICE T max(T a, T b) {                                               \
    const float x = detail::to_f32(a), y = detail::to_f32(b);               \
    if (detail::f32_is_nan(x) || detail::f32_is_nan(y)) return T{NAN_BITS}; \
    if (x == y) return (a.bits & SIGN_BIT) ? b : a;                         \
    return x > y ? a : b;                                                   \
  }
TF_NUMERIC_HALF_MINMAX(f16, 0x7E00, 0x8000)
TF_NUMERIC_HALF_MINMAX(bf16, 0x7FC0, 0x8000)
TF_NUMERIC_HALF_MINMAX(f8e4m3, 0x7F, 0x80)
TF_NUMERIC_HALF_MINMAX(f8e5m2, 0x7F, 0x80)
#undef TF_NUMERIC_HALF_MINMAX
#define TF_NUMERIC_INT_MINMAX(T) \
  TF_DEVICE T min(T a, T b) {    \
    return a < b ? a : b;        \
  }                              \
  TF_DEVICE T max(T a, T b) {    \
    return a > b ? a : b;        \
  }
TF_NUMERIC_INT_MINMAX(bool)
TF_NUMERIC_INT_MINMAX(signed char)
TF_NUMERIC_INT_MINMAX(unsigned char)
TF_NUMERIC_INT_MINMAX(short)
TF_NUMERIC_INT_MINMAX(int)
TF_NUMERIC_INT_MINMAX(long long)
#undef TF_NUMERIC_INT_MINMAX

// ---- math intrinsics ------------------------------------------------------

// neg / abs on integers wrap (abs of the most negative value is itself).
#define TF_NUMERIC_INT_NEG_ABS(T, U)                           \
  TF_DEVICE T neg(T x) {                                       \
    return static_cast<T>(0u - static_cast<U>(x));             \
  }                                                            \
  TF_DEVICE T abs(T x) {                                       \
    return x < 0 ? static_cast<T>(0u - static_cast<U>(x)) : x; \
  }
TF_NUMERIC_INT_NEG_ABS(signed char, unsigned)
TF_NUMERIC_INT_NEG_ABS(short, unsigned)
TF_NUMERIC_INT_NEG_ABS(int, unsigned)
TF_NUMERIC_INT_NEG_ABS(long long, unsigned long long)
#undef TF_NUMERIC_INT_NEG_ABS
TF_DEVICE unsigned char neg(unsigned char x) {
  return static_cast<unsigned char>(0u - x);
}
TF_DEVICE unsigned char abs(unsigned char x) {
  return x;
}

TF_DEVICE float neg(float x) {
  return -x;
}
TF_DEVICE double neg(double x) {
  return -x;
}
TF_DEVICE f16 neg(f16 x) {
  return -x;
}
TF_DEVICE bf16 neg(bf16 x) {
  return -x;
}
TF_DEVICE f8e4m3 neg(f8e4m3 x) {
  return -x;
}
TF_DEVICE f8e5m2 neg(f8e5m2 x) {
  return -x;
}
TF_DEVICE float abs(float x) {
  return ::fabsf(x);
}
TF_DEVICE double abs(double x) {
  return ::fabs(x);
}
TF_DEVICE f16 abs(f16 x) {
  return f16{static_cast<unsigned short>(x.bits & 0x7FFFu)};
}
TF_DEVICE bf16 abs(bf16 x) {
  return bf16{static_cast<unsigned short>(x.bits & 0x7FFFu)};
}
TF_DEVICE f8e4m3 abs(f8e4m3 x) {
  return f8e4m3{static_cast<unsigned char>(x.bits & 0x7Fu)};
}
TF_DEVICE f8e5m2 abs(f8e5m2 x) {
  return f8e5m2{static_cast<unsigned char>(x.bits & 0x7Fu)};
}

TF_DEVICE float sqrt(float x) {
  return detail::sqrt_rn(x);
}
TF_DEVICE double sqrt(double x) {
  return __dsqrt_rn(x);
}
TF_DEVICE float rsqrt(float x) {
  return detail::div_rn(1.0f, detail::sqrt_rn(x));
}
TF_DEVICE double rsqrt(double x) {
  return __ddiv_rn(1.0, __dsqrt_rn(x));
}
TF_DEVICE float sigmoid(float x) {
  return detail::div_rn(1.0f, detail::add_rn(1.0f, ::expf(-x)));
}
TF_DEVICE double sigmoid(double x) {
  return __ddiv_rn(1.0, __dadd_rn(1.0, ::exp(-x)));
}

#define TF_NUMERIC_UNARY(name, f32fn, f64fn) \
  TF_DEVICE float name(float x) {            \
    return ::f32fn(x);                       \
  }                                          \
  TF_DEVICE double name(double x) {          \
    return ::f64fn(x);                       \
  }
TF_NUMERIC_UNARY(exp, expf, exp)
TF_NUMERIC_UNARY(exp2, exp2f, exp2)
TF_NUMERIC_UNARY(log, logf, log)
TF_NUMERIC_UNARY(log2, log2f, log2)
TF_NUMERIC_UNARY(tanh, tanhf, tanh)
TF_NUMERIC_UNARY(erf, erff, erf)
TF_NUMERIC_UNARY(sin, sinf, sin)
TF_NUMERIC_UNARY(cos, cosf, cos)
TF_NUMERIC_UNARY(floor, floorf, floor)
TF_NUMERIC_UNARY(ceil, ceilf, ceil)
#undef TF_NUMERIC_UNARY

TF_DEVICE float hypot(float x, float y) {
  return ::hypotf(x, y);
}
TF_DEVICE double hypot(double x, double y) {
  return ::hypot(x, y);
}
TF_DEVICE float pow(float x, float y) {
  return ::powf(x, y);
}
TF_DEVICE double pow(double x, double y) {
  return ::pow(x, y);
}
TF_DEVICE float fma(float x, float y, float z) {
  return ::fmaf(x, y, z);
}
TF_DEVICE double fma(double x, double y, double z) {
  return ::fma(x, y, z);
}

// f16 / bf16 / f8: in f32, rounded once. sigmoid in the form that does not
// overflow in f32 for x < 0 (exp(x) / (1 + exp(x))): bf16 reaches sigmoid
// values down to 1e-40 (x ~ -92), where 1 / (1 + exp(-x)) in f32 gives 0; the
// CPU computes these in double.
namespace detail {
TF_DEVICE float sigmoid_stable(float x) {
  if (!(x < 0.0f)) return sigmoid(x);
  const float e = ::expf(x);
  return div_rn(e, add_rn(1.0f, e));
}
}  // namespace detail
#define TF_NUMERIC_HALF_UNARY(T, name)                   \
  TF_DEVICE T name(T x) {                                \
    return detail::from_f32<T>(name(detail::to_f32(x))); \
  }
#define TF_NUMERIC_HALF_MATH(T)                                                               \
  TF_NUMERIC_HALF_UNARY(T, exp)                                                               \
  TF_NUMERIC_HALF_UNARY(T, exp2)                                                              \
  TF_NUMERIC_HALF_UNARY(T, log)                                                               \
  TF_NUMERIC_HALF_UNARY(T, log2)                                                              \
  TF_NUMERIC_HALF_UNARY(T, sqrt)                                                              \
  TF_NUMERIC_HALF_UNARY(T, rsqrt)                                                             \
  TF_NUMERIC_HALF_UNARY(T, tanh)                                                              \
  TF_NUMERIC_HALF_UNARY(T, erf)                                                               \
  TF_DEVICE T sigmoid(T x) {                                                                  \
    return detail::from_f32<T>(detail::sigmoid_stable(detail::to_f32(x)));                    \
  }                                                                                           \
  TF_NUMERIC_HALF_UNARY(T, sin)                                                               \
  TF_NUMERIC_HALF_UNARY(T, cos)                                                               \
  TF_NUMERIC_HALF_UNARY(T, floor)                                                             \
  TF_NUMERIC_HALF_UNARY(T, ceil)                                                              \
  TF_DEVICE T hypot(T x, T y) {                                                               \
    return detail::from_f32<T>(hypot(detail::to_f32(x), detail::to_f32(y)));                  \
  }                                                                                           \
  TF_DEVICE T pow(T x, T y) {                                                                 \
    return detail::from_f32<T>(pow(detail::to_f32(x), detail::to_f32(y)));                    \
  }                                                                                           \
  TF_DEVICE T fma(T x, T y, T z) {                                                            \
    return detail::from_f32<T>(fma(detail::to_f32(x), detail::to_f32(y), detail::to_f32(z))); \
  }
TF_NUMERIC_HALF_MATH(f16)
TF_NUMERIC_HALF_MATH(bf16)
TF_NUMERIC_HALF_MATH(f8e4m3)
TF_NUMERIC_HALF_MATH(f8e5m2)
#undef TF_NUMERIC_HALF_MATH
#undef TF_NUMERIC_HALF_UNARY

}  // namespace tf
