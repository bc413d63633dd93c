// check_tolerance: by dtype, and along a program (the least precise rounding
// on the way to an output).
#include <gtest/gtest.h>

#include "frontend/frontend.h"
#include "reference/eval.h"

namespace tilefuse {
namespace {

double tol_of(const std::string& src, size_t output = 0, bool allow_tf32 = false) {
  const Program p = parse_program(src, "t.tfs");
  return check_tolerance(p.graph, p.graph.outputs()[output], allow_tf32);
}

TEST(CheckTolerance, ByDtype) {
  EXPECT_EQ(check_tolerance(DType::F16), 1e-2);
  EXPECT_EQ(check_tolerance(DType::BF16), 1e-2);
  EXPECT_EQ(check_tolerance(DType::F32), 1e-5);
  EXPECT_EQ(check_tolerance(DType::F64), 1e-12);
  EXPECT_EQ(check_tolerance(DType::I64), 0.0);
}

TEST(CheckTolerance, TheLeastPreciseRoundingOnTheWay) {
  // f16 inputs cast up exactly: f32 all the way.
  EXPECT_EQ(tol_of("def f(x: f16[4, 8], w: f16[8, 4]):\n    return x.float() @ w.float()\n"), 1e-5);
  // An f16 GEMM result carried into an f32 output: f16's tolerance.
  EXPECT_EQ(tol_of("def f(x: f16[4, 8], w: f16[8, 4]):\n    return (x @ w).float().exp()\n"), 1e-2);
  // Views round nothing: a gather and a transpose of f32 stay f32.
  EXPECT_EQ(tol_of("def f(x: f32[6, 8], i: i64[4] in [0, 6), w: f32[4, 8]):\n"
                   "    return x[i] @ w.T\n"),
            1e-5);
  // Each output on its own path.
  const std::string two =
      "def f(x: f32[4, 4], h: f16[4, 4]):\n    return x * 2.0, h.float() + (h * h).float()\n";
  EXPECT_EQ(tol_of(two, 0), 1e-5);
  EXPECT_EQ(tol_of(two, 1), 1e-2);
}

// --allow-tf32: an f32 matmul / addmm on the way rounds its operands to
// TF32 (10 mantissa bits), f16's precision: kTf32Tolerance (1e-2).
TEST(CheckTolerance, Tf32GemmsOnTheWay) {
  EXPECT_EQ(kTf32Tolerance, 1e-2);
  const std::string mm = "def f(x: f32[4, 8], w: f32[8, 4]):\n    return torch.relu(x @ w)\n";
  EXPECT_EQ(tol_of(mm), 1e-5);
  EXPECT_EQ(tol_of(mm, 0, /*allow_tf32=*/true), kTf32Tolerance);
  EXPECT_EQ(tol_of("def f(b: f32[4], x: f32[4, 8], w: f32[8, 4]):\n"
                   "    return torch.addmm(b, x, w)\n",
                   0, true),
            kTf32Tolerance);
  // f16 operands cast up exactly still meet an f32 GEMM.
  EXPECT_EQ(tol_of("def f(x: f16[4, 8], w: f16[8, 4]):\n    return x.float() @ w.float()\n", 0,
                   true),
            kTf32Tolerance);
  // No f32 GEMM: unchanged (f64 GEMMs and f32 element-wise ops are exact).
  EXPECT_EQ(tol_of("def f(x: f64[4, 8], w: f64[8, 4]):\n    return x @ w\n", 0, true), 1e-12);
  EXPECT_EQ(tol_of("def f(x: f32[4, 4]):\n    return x * 2.0\n", 0, true), 1e-5);
  // Each output on its own path.
  const std::string two =
      "def f(x: f32[4, 8], w: f32[8, 4]):\n    return x @ w, x * 2.0\n";
  EXPECT_EQ(tol_of(two, 0, true), kTf32Tolerance);
  EXPECT_EQ(tol_of(two, 1, true), 1e-5);
}

// A long f32 / f64 reduction: u * sqrt(K) where it exceeds the dtype's.
TEST(CheckTolerance, GrowsWithTheSquareRootOfALongReduction) {
  EXPECT_EQ(tol_of("def f(x: f32[8, 16384], w: f32[16384, 8]):\n    return x @ w\n"), 1e-5);
  EXPECT_EQ(tol_of("def f(x: f32[8, 1048576], w: f32[1048576, 8]):\n    return x @ w\n"),
            0x1p-24 * 1024);
  EXPECT_EQ(tol_of("def f(b: f32[8], x: f32[8, 4194304], w: f32[4194304, 8]):\n"
                   "    return torch.addmm(b, x, w).exp()\n"),
            0x1p-24 * 2048);
  // Carried through views and element-wise ops into the output; f64's stays
  // below its dtype's.
  EXPECT_EQ(tol_of("def f(x: f32[1048576, 8], w: f32[1048576, 8]):\n"
                   "    return torch.relu(x.T @ w) * 2.0\n"),
            0x1p-24 * 1024);
  EXPECT_EQ(tol_of("def f(x: f64[8, 1048576], w: f64[1048576, 8]):\n    return x @ w\n"),
            1e-12);
}

}  // namespace
}  // namespace tilefuse
