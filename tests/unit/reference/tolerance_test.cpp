// check_tolerance: by dtype, and along a program (the least precise rounding
// on the way to an output).
#include <gtest/gtest.h>

#include "frontend/frontend.h"
#include "reference/eval.h"

namespace tilefuse {
namespace {

double tol_of(const std::string& src, size_t output = 0) {
  const Program p = parse_program(src, "t.tfs");
  return check_tolerance(p.graph, p.graph.outputs()[output]);
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

}  // namespace
}  // namespace tilefuse
