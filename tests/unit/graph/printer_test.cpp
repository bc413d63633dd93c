// The graph's text form, checked against an exact golden string.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "graph/graph.h"

namespace tilefuse {
namespace {

TEST(Printer, GoldenGatherMatmulProgram) {
  Graph g;
  const SourceLoc no{};
  const ValueId x = g.parameter("x", DType::F16, {64, 32}, std::nullopt, no);
  const ValueId idx = g.parameter("idx", DType::I64, {50}, IntRange{0, 64}, no);
  const ValueId y = g.parameter("y", DType::F16, {32, 8}, std::nullopt, no);
  const ValueId mask = g.parameter("mask", DType::Bool, {50, 1}, std::nullopt, no);
  const ValueId gathered = g.index(x, 0, idx, no);
  const ValueId half = g.scalar(0.5, DType::F64, no);
  const ValueId h = g.binary(BinaryOp::Add, gathered, half, no);
  g.set_name(h, "h");
  const ValueId sl = g.slice(x, 1, 0, std::nullopt, 2, no);
  g.transpose(sl, 0, 1, no);
  const ValueId row = g.select(x, 0, 3, no);
  g.expand(row, {4, 32}, no);
  const ValueId c = g.clamp(h, 0.0, 6.0, no);
  const ValueId zero = g.scalar(0, DType::I64, no);
  const ValueId w = g.where(mask, c, zero, no);
  const ValueId out = g.matmul(w, y, no);
  g.set_name(out, "out");
  const ValueId f = g.cast(out, DType::F32, no);
  const ValueId bias = g.parameter("b", DType::F16, {8}, std::nullopt, no);
  const ValueId t = g.scalar(1, DType::Bool, no);
  const ValueId am = g.addmm(bias, w, y, 1.0, 0.25, no);
  g.unary(UnaryOp::LogicalNot, mask, no);
  g.binary(BinaryOp::Lt, f, g.scalar(2.0, DType::F64, no), no);
  g.add_output(out);
  g.add_output(am);
  (void)t;
  const std::string expected =
      "%0 = parameter x : f16[64, 32]\n"
      "%1 = parameter idx in [0, 64) : i64[50]\n"
      "%2 = parameter y : f16[32, 8]\n"
      "%3 = parameter mask : bool[50, 1]\n"
      "%4 = index %0, %1 dim=0 : f16[50, 32]\n"
      "%5 = scalar 0.5 : f32[]\n"
      "%6 = add %4, %5 : f16[50, 32]  # h\n"
      "%7 = slice %0 dim=1 start=0 end=32 step=2 : f16[64, 16] strides=[32, 2] offset=0 root=%0\n"
      "%8 = permute %7 perm=[1, 0] : f16[16, 64] strides=[2, 32] offset=0 root=%0\n"
      "%9 = select %0 dim=0 index=3 : f16[32] strides=[1] offset=96 root=%0\n"
      "%10 = expand %9 : f16[4, 32] strides=[0, 1] offset=96 root=%0\n"
      "%11 = clamp %6 min=0 max=6 : f16[50, 32]\n"
      "%12 = scalar 0 : i64[]\n"
      "%13 = where %3, %11, %12 : f16[50, 32]\n"
      "%14 = matmul %13, %2 : f16[50, 8]  # out\n"
      "%15 = cast %14 : f32[50, 8]\n"
      "%16 = parameter b : f16[8]\n"
      "%17 = scalar True : bool[]\n"
      "%18 = addmm %16, %13, %2 beta=1 alpha=0.25 : f16[50, 8]\n"
      "%19 = logical_not %3 : bool[50, 1]\n"
      "%20 = scalar 2.0 : f32[]\n"
      "%21 = lt %15, %20 : bool[50, 8]\n"
      "return %14, %18\n";
  EXPECT_EQ(g.to_string(), expected);
}

TEST(Printer, NumbersReadBack) {
  Graph g;
  g.scalar(1e20, DType::F64, {});
  g.scalar(-0.1, DType::F64, {});
  g.scalar(-7, DType::I64, {});
  g.scalar(0, DType::Bool, {});
  const ValueId x = g.parameter("x", DType::F32, {2}, std::nullopt, {});
  g.clamp(x, -1.5, std::nullopt, {});
  EXPECT_EQ(g.to_string(),
            "%0 = scalar 1e+20 : f32[]\n"
            "%1 = scalar -0.1 : f32[]\n"
            "%2 = scalar -7 : i64[]\n"
            "%3 = scalar False : bool[]\n"
            "%4 = parameter x : f32[2]\n"
            "%5 = clamp %4 min=-1.5 : f32[2]\n"
            "return\n");
}

}  // namespace
}  // namespace tilefuse
