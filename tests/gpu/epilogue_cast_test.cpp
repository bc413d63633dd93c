// The staged GEMM epilogue's pair conversion and proved row chunks on the
// device (EpiloguePlan::pair_cast and contiguous_chunks, passes/epilogue.cpp;
// tf::cast_pack2, tf_numeric.cuh). x @ w and relu(x @ w), f16 and bf16, the
// default and the persistent kernel (256 x 256 x 256): x selects two rows
// of w per output row (x[m, 2p] = x[m, 2p + 1] = 1 for p = m % 32, else 0),
// so C[m, n] = w[2p, n] + w[2p + 1, n] (plus zero products), and w's columns make the f32 accumulators hit
// what the NaN rule and the rounding must get right:
//  - columns 0 .. 191: random values of the dtype;
//  - columns 192 .. 253: pairs whose f32 sum is exact and lands on a tie of
//    the output format (to even, up and down), on or past its overflow
//    threshold (inf, -inf), just below it, on f16 subnormals (f32 normals;
//    a bf16 subnormal is an f32 subnormal, whose handling in the MMA is not
//    the epilogue's: DeviceNumericGpu.CastPack2* cover those) and on signed
//    values; compared bit for bit with the host's f32_to_f16_bits /
//    f32_to_bf16_bits (core/dtype.h) of the sum (relu: 0 for a negative
//    sum);
//  - column 254: +inf in w's row 0 (C is inf where row 0 is selected, NaN
//    = 0 * inf elsewhere); column 255: a NaN in w's row 5 (NaN everywhere).
// The whole output also equals, bit for bit, the output of the same program
// compiled with pair_cast_epilogue=0 and proved_epilogue_chunks=0 (the
// element-by-element tf::cast and the run-time tested copy-out), NaNs
// included. Outputs are poisoned before each run. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/dtype.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"

namespace tilefuse {
namespace {

// K = 256: enough K tiles for the 3-stage ring whose shared memory the
// staged tile reuses (at K = 64 the epilogue is paired).
constexpr int64_t kM = 256, kN = 256, kK = 256;
constexpr int64_t kRandomCols = 192, kDesignedCols = 254;

// (a, b) with a + b exact in f32, and what the sum tests.
struct Pair {
  float a, b;
};

std::vector<Pair> designed_pairs(DType dt) {
  if (dt == DType::F16) {
    return {
        {1.0f, 0x1p-11f},         // 1 + half an ulp: tie, to even (1.0)
        {1.0f, 0x3p-11f},         // 1 + 1.5 ulp: tie, up to even (1 + 2^-9)
        {-1.0f, -0x1p-11f},       // negative tie (-1.0)
        {2048.0f, 1.0f},          // 2049: tie, to 2048
        {2048.0f, 3.0f},          // 2051: tie, to 2052
        {65504.0f, 16.0f},        // 65520: the overflow tie, inf
        {-65504.0f, -16.0f},      // -inf
        {65504.0f, 8.0f},         // 65512: rounds down to 65504
        {65504.0f, 65504.0f},     // far past the maximum: inf
        {0x1p-24f, 0.0f},         // the smallest subnormal
        {0x1p-14f, -0x1p-24f},    // the largest subnormal
        {0x1p-24f, 0x1p-24f},     // subnormal 2^-23
        {-0x1p-24f, 0x1p-23f},    // a subnormal from a difference
        {1.0f, -1.0f},            // +0
        {0.333251953125f, 0.5f},  // an ordinary value
        {-3.140625f, 1.0f},
    };
  }
  return {
      {1.0f, 0x1p-8f},                // tie, to even (1.0)
      {1.0f, 0x3p-8f},                // tie, up to even (1 + 2^-6)
      {-1.0f, -0x1p-8f},              // negative tie
      {256.0f, 1.0f},                 // 257: tie, to 256
      {256.0f, 3.0f},                 // 259: tie, to 260
      {0x1.FEp127f, 0x1p119f},        // the bf16 maximum + half an ulp: tie, inf
      {-0x1.FEp127f, -0x1p119f},      // -inf
      {0x1.FEp127f, 0x1p118f},        // below the tie: the maximum
      {0x1p-126f, 0x1p-126f},         // the smallest normals
      {1.0f, -1.0f},                  // +0
      {0.33203125f, 0.5f},            // ordinary values
      {-3.140625f, 1.0f},
  };
}

uint32_t encode(DType dt, float f) {
  return dt == DType::F16 ? f32_to_f16_bits(f) : f32_to_bf16_bits(f);
}

// x (the selector) and w as described at the top.
std::pair<Tensor, Tensor> inputs(DType dt, uint64_t seed) {
  Tensor x = Tensor::full(dt, {kM, kK}, 0.0);
  for (int64_t m = 0; m < kM; ++m) {
    const int64_t p = m % 32;
    x.set_linear(m * kK + 2 * p, 1.0);
    x.set_linear(m * kK + 2 * p + 1, 1.0);
  }
  Tensor w = Tensor::full(dt, {kK, kN}, 0.0);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  const std::vector<Pair> pairs = designed_pairs(dt);
  for (int64_t k = 0; k < kK; ++k)
    for (int64_t n = 0; n < kN; ++n) {
      double v = 0;
      if (n < kRandomCols) {
        v = u(rng);
      } else if (n < kDesignedCols) {
        const Pair& q = pairs[((k / 2) * (kDesignedCols - kRandomCols) + n) % pairs.size()];
        v = k % 2 == 0 ? q.a : q.b;
      } else if (n == kDesignedCols) {
        v = k == 0 ? INFINITY : u(rng);
      } else {
        v = k == 5 ? NAN : u(rng);
      }
      w.set_linear(k * kN + n, v);
    }
  return {x, w};
}

Tensor run(const Graph& g, const std::vector<Tensor>& in, bool new_epilogue, bool persistent,
           bool* pair_cast_used) {
  driver::CompileOptions co;
  co.target = *gputest::device_target();
  co.cuda.pair_cast_epilogue = new_epilogue;
  co.cuda.proved_epilogue_chunks = new_epilogue;
  co.cuda.persistent = persistent;
  const driver::CompiledProgram compiled = driver::compile(g, co);
  *pair_cast_used = false;
  for (const driver::CompiledKernel& ck : compiled.kernels)
    for (const codegen::CudaEpilogue& e : ck.cuda->epilogues)
      *pair_cast_used = *pair_cast_used || (e.pair_cast && e.contiguous_chunks);
  driver::CudaProgram program(compiled, driver::default_device());
  const std::vector<Tensor> out = program.run(in, /*poison=*/true);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0).contiguous();
}

class GpuEpilogueCast : public ::testing::TestWithParam<DType> {};

TEST_P(GpuEpilogueCast, PairCastMatchesTheElementCastBitForBit) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const std::optional<tir::Target> target = gputest::device_target();
  ASSERT_TRUE(target.has_value()) << driver::default_device().arch();
  const DType dt = GetParam();
  const std::string ty = std::string(dtype_name(dt));
  const uint64_t seed = gputest::fresh_seed();
  SCOPED_TRACE(fmt::format("seed {} (TILEFUSE_GPU_SEED reproduces)", seed));
  const auto [x, w] = inputs(dt, seed);
  const std::vector<Pair> pairs = designed_pairs(dt);
  for (const Pair& q : pairs) {  // the design: values of the dtype, every sum exact in f32
    ASSERT_EQ(round_to(dt, q.a), q.a);
    ASSERT_EQ(round_to(dt, q.b), q.b);
    ASSERT_EQ(static_cast<double>(q.a + q.b), static_cast<double>(q.a) + q.b) << q.a << " " << q.b;
  }
  for (const bool relu : {false, true}) {
    const std::string src = fmt::format(
        "def mm(x: {0}[{1}, {2}], w: {0}[{2}, {3}]):\n    return {4}\n", ty, kM, kK, kN,
        relu ? "torch.relu(x @ w)" : "x @ w");
    const Program p = parse_program(src, "epilogue_cast.tfs");
    for (const bool persistent : {false, true}) {
      if (persistent && !target->arch_specific) continue;  // persistent: sm_90a
      SCOPED_TRACE(fmt::format("{}{}", relu ? "relu(x @ w)" : "x @ w",
                               persistent ? ", persistent" : ""));
      bool used = false, old_used = false;
      const Tensor got = run(p.graph, {x, w}, true, persistent, &used);
      const Tensor old = run(p.graph, {x, w}, false, persistent, &old_used);
      EXPECT_TRUE(used) << "the kernel's staged epilogue has no pair cast or no proved chunks";
      EXPECT_FALSE(old_used);
      const int es = dtype_size(dt);
      int shown = 0;
      for (int64_t i = 0; i < got.numel() && shown < 8; ++i) {
        uint16_t a = 0, b = 0;
        std::memcpy(&a, got.data_ptr() + i * es, es);
        std::memcpy(&b, old.data_ptr() + i * es, es);
        if (a != b) {
          ++shown;
          ADD_FAILURE() << fmt::format("element [{}, {}]: pair cast 0x{:04x}, element cast 0x{:04x}",
                                       i / kN, i % kN, a, b);
        }
      }
      for (int64_t m = 0; m < kM && shown < 8; ++m)
        for (int64_t n = kRandomCols; n < kN && shown < 8; ++n) {
          uint16_t a = 0;
          std::memcpy(&a, got.data_ptr() + (m * kN + n) * es, es);
          const int64_t p2 = m % 32;
          uint32_t want = 0;
          if (n < kDesignedCols) {
            const Pair& q0 = pairs[(p2 * (kDesignedCols - kRandomCols) + n) % pairs.size()];
            const float sum = q0.a + q0.b;
            want = encode(dt, relu && sum < 0.0f ? 0.0f : sum);
          } else if (n == kDesignedCols && p2 == 0) {
            want = encode(dt, INFINITY);  // inf + finite
          } else {
            want = encode(dt, NAN);  // 0 * inf, or a NaN operand: NaN (relu keeps it)
          }
          if (a != want) {
            ++shown;
            ADD_FAILURE() << fmt::format("element [{}, {}]: got 0x{:04x}, want 0x{:04x}", m, n, a,
                                         want);
          }
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(F16AndBf16, GpuEpilogueCast, ::testing::Values(DType::F16, DType::BF16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

}  // namespace
}  // namespace tilefuse
