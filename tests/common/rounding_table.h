// The rounding table of issue 14: for every source dtype, the values where
// conversions are easy to get wrong (ties of every target format, and the
// values just beside them; values that round to a tie in f32 and then go to
// even; subnormals and their ties; overflow boundaries, with and without
// saturation; infinities; NaNs of both signs and with payloads; signed
// zeros; integers at and past 2^24, 2^53 and the integer ranges), converted
// to every dtype. The CPU test (tests/unit/driver/rounding_table_test.cpp)
// runs the table through the reference evaluator and the CPU executor, the
// GPU test (tests/gpu/rounding_table_test.cpp) through the device: every
// engine must give the same bits (PyTorch's rule, core/dtype.h round_to).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace tilefuse::testing {

inline std::vector<DType> all_dtypes() {
  return {DType::Bool,   DType::U8,  DType::I8,   DType::I32, DType::I64, DType::F8E4M3,
          DType::F8E5M2, DType::F16, DType::BF16, DType::F32, DType::F64};
}

// Doubles around the ties and limits of every narrow format (each also
// negated by the caller).
inline std::vector<double> tricky_doubles() {
  std::vector<double> v = {
      0.0,
      1.0,
      1.0 + 0x1p-11 + 0x1p-40,  // issue 14: f16 1.0 through f32 (the tie), 1 + 2^-10 direct
      1.0 + 0x1p-11,            // f16 tie
      1.0 + 0x1p-11 + 0x1p-23,  // just past it, in f32 too
      1.0 + 3 * 0x1p-11,        // f16 tie, up to even
      1.0 + 0x1p-8 + 0x1p-40,   // bf16 tie after f32
      1.0 + 0x1p-8,             // bf16 tie
      1.0 + 0x1p-8 - 0x1p-40,   // just below it
      1.0625 + 0x1p-40,         // f8e4m3 tie after f32
      1.125 + 0x1p-40,          // f8e5m2 tie after f32
      1.0 + 0x1p-24,            // f32 tie
      1.0 + 0x1p-24 + 0x1p-50,  // just past it: f32 rounds up
      0x1p-24,                  // smallest f16 subnormal
      0x1p-25,                  // its tie with 0
      0x1p-25 + 0x1p-60,        // that tie nudged up: 0 through f32, 2^-24 direct
      0x1p-25 + 0x1p-40,        // nudged far enough for f32 to keep it
      3 * 0x1p-25,              // subnormal tie, up to even
      0x1p-14,                  // smallest f16 normal
      0x1p-14 - 0x1p-25,        // tie at the top of the f16 subnormals
      0x1p-9,                   // smallest f8e4m3 subnormal
      0x1p-10,                  // its tie with 0
      0x1p-10 + 0x1p-40,
      0x1p-16,  // smallest f8e5m2 subnormal
      0x1p-17 + 0x1p-45,
      0x1p-133,  // bf16 subnormal
      0x1p-149,  // smallest f32 subnormal
      0x1p-150,  // its tie with 0
      0x1p-150 + 0x1p-200,
      0x1p-1074,          // smallest double
      65504.0,            // f16 max
      65519.0,            // below the f16 overflow tie
      65520.0,            // the tie: inf
      65520.0 - 0x1p-30,  // just below: through f32 it is the tie
      65536.0,
      448.0,            // f8e4m3 max
      464.0,            // tie: 448
      464.0 + 0x1p-30,  // through f32: the tie
      464.5,            // NaN
      480.0,
      57344.0,  // f8e5m2 max
      61440.0,  // its tie: inf
      61440.0 - 0x1p-20,
      0x1.FEp127,  // bf16 max region
      0x1.FFp127,  // bf16 tie past the max: inf
      static_cast<double>(std::numeric_limits<float>::max()),
      static_cast<double>(std::numeric_limits<float>::max()) * (1 + 0x1p-25),  // f32 overflow tie
      0x1p128,
      1e300,
      0.1,
      1.0 / 3.0,
      2049.0,               // an integer that is an f16 tie
      16777217.0,           // 2^24 + 1: an f32 tie
      0x1p40 + 0x1p32 + 1,  // bf16 tie after f32
      127.5,
      255.75,
      -129.5,
      2147483647.0,
      2147483648.0,
      9007199254740993.0,  // 2^53 + 1 (rounded when written)
      9.3e18,
      std::numeric_limits<double>::infinity(),
  };
  return v;
}

// The source values of `dt`, as raw element bytes (dtype_size(dt) each).
inline std::vector<uint8_t> table_inputs(DType dt) {
  std::vector<uint8_t> out;
  auto put = [&](const void* p) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + dtype_size(dt));
  };
  switch (dt) {
    case DType::Bool:
      for (uint8_t b : {0, 1}) put(&b);
      break;
    case DType::U8:
    case DType::I8:
    case DType::F8E4M3:
    case DType::F8E5M2:
      for (int b = 0; b < 256; ++b) {
        const auto x = static_cast<uint8_t>(b);
        put(&x);
      }
      break;
    case DType::F16:
    case DType::BF16:
      for (int b = 0; b < 65536; ++b) {
        const auto x = static_cast<uint16_t>(b);
        put(&x);
      }
      break;
    case DType::I32:
    case DType::I64: {
      std::vector<int64_t> ints = {0,
                                   1,
                                   2,
                                   255,
                                   256,
                                   257,
                                   2047,
                                   2048,
                                   2049,
                                   2051,
                                   65504,
                                   65519,
                                   65520,
                                   65535,
                                   65536,
                                   16777215,
                                   16777216,
                                   16777217,
                                   16777219,
                                   33554435,
                                   (int64_t{1} << 31) - 1,
                                   int64_t{1} << 31,
                                   (int64_t{1} << 40) + (int64_t{1} << 32) + 1,  // bf16 tie via f32
                                   (int64_t{1} << 40) + (int64_t{1} << 32),
                                   (int64_t{1} << 53) + 1,
                                   (int64_t{1} << 62) + 1,
                                   std::numeric_limits<int64_t>::max(),
                                   127,
                                   128,
                                   448,
                                   464,
                                   465};
      for (int64_t i : std::vector<int64_t>(ints)) ints.push_back(i == INT64_MIN ? i : -i);
      ints.push_back(std::numeric_limits<int64_t>::min());
      for (int64_t i : ints) {
        if (dt == DType::I32) {
          const auto x = static_cast<int32_t>(i);
          put(&x);
        } else {
          put(&i);
        }
      }
      break;
    }
    case DType::F32:
    case DType::F64: {
      std::vector<double> vals = tricky_doubles();
      for (double d : std::vector<double>(vals)) vals.push_back(-d);
      for (double d : vals) {
        if (dt == DType::F32) {
          const auto f = static_cast<float>(d);
          put(&f);
        } else {
          put(&d);
        }
      }
      // NaNs of both signs, quiet and signalling, with payloads.
      const uint64_t nan64[] = {0x7FF8000000000000ull, 0xFFF8000000000000ull, 0x7FF0000000000001ull,
                                0xFFF4000000000123ull, 0x7FFFFFFFFFFFFFFFull};
      const uint32_t nan32[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFA00123u, 0x7FFFFFFFu};
      for (int k = 0; k < 5; ++k) {
        if (dt == DType::F32)
          put(&nan32[k]);
        else
          put(&nan64[k]);
      }
      break;
    }
  }
  return out;
}

// One graph per source dtype: parameter x (the table's values) and one
// output per dtype, x.to(that dtype), in all_dtypes() order.
inline Graph rounding_graph(DType from, int64_t n) {
  Graph g;
  const ValueId x = g.parameter("x", from, {n}, std::nullopt, {});
  for (DType to : all_dtypes()) g.add_output(to == from ? x : g.cast(x, to, {}));
  return g;
}

// The table's input tensor of `from` (values from table_inputs).
inline Tensor rounding_input(DType from) {
  const std::vector<uint8_t> bytes = table_inputs(from);
  const int64_t n = static_cast<int64_t>(bytes.size()) / dtype_size(from);
  Tensor t = Tensor::empty(from, {n});
  std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

// "" when `got` and `want` hold the same bytes element by element, else a
// report of the first differences (`what` names the pair and the engines).
inline std::string compare_bits(const Tensor& input, const Tensor& got, const Tensor& want,
                                const std::string& what) {
  const Tensor a = got.contiguous(), b = want.contiguous(), x = input.contiguous();
  const int es = dtype_size(a.dtype()), xs = dtype_size(x.dtype());
  std::string report;
  int shown = 0;
  for (int64_t i = 0; i < a.numel() && shown < 8; ++i) {
    const auto* pa = static_cast<const uint8_t*>(static_cast<const void*>(a.data_ptr())) + i * es;
    const auto* pb = static_cast<const uint8_t*>(static_cast<const void*>(b.data_ptr())) + i * es;
    if (std::memcmp(pa, pb, es) == 0) continue;
    auto hex = [](const uint8_t* p, int n) {
      std::string s = "0x";
      for (int k = n - 1; k >= 0; --k) s += fmt::format("{:02x}", p[k]);
      return s;
    };
    const auto* px = static_cast<const uint8_t*>(static_cast<const void*>(x.data_ptr())) + i * xs;
    report += fmt::format("{}: element {} ({} = {}): got {}, want {}\n", what, i, hex(px, xs),
                          x.get_linear(i), hex(pa, es), hex(pb, es));
    ++shown;
  }
  return report;
}

// The dtype's name, for a test parameterized by dtype.
inline std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info) {
  return std::string(dtype_name(info.param));
}

}  // namespace tilefuse::testing
