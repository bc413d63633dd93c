// The plan's stable text form (plan.h, to_string), compared whole.
#include <gtest/gtest.h>

#include <string>

#include "schedule_test_util.h"

namespace tilefuse {
namespace {

using testing::checked_plan;
using testing::load_case;
using testing::parse;

TEST(PlanPrinter, SeedFused) {
  const Program prog = load_case("seed_gather_mm_f16");
  EXPECT_EQ(to_string(prog.graph, checked_plan(prog.graph, PlanKind::kFused)),
            "plan fused: 1 step\n"
            "step 0 gemm0: gemm %4=matmul batch=[] M=2048 N=2048 K=2048 -> %4 f16[2048, 2048]\n"
            "  A %3: %3=index; reads %0(x), %2(index)\n"
            "  B %1(y): reads %1(y)\n"
            "  epilogue: -; reads -\n"
            "materialized: %0(x), %1(y), %2(index), %4\n"
            "decision: %4=matmul: no epilogue: %4 is a graph output\n"
            "decision: %4=matmul A: prologue %3=index; reads %0(x), %2(index)\n"
            "decision: %4=matmul B: loads %1(y)\n");
}

TEST(PlanPrinter, SeedUnfused) {
  const Program prog = load_case("seed_gather_mm_f16");
  EXPECT_EQ(to_string(prog.graph, checked_plan(prog.graph, PlanKind::kUnfused)),
            "plan unfused: 2 steps\n"
            "step 0 pointwise0: pointwise -> %3 f16[2048, 2048]\n"
            "  compute: %3=index; reads %0(x), %2(index)\n"
            "step 1 gemm1: gemm %4=matmul batch=[] M=2048 N=2048 K=2048 -> %4 f16[2048, 2048]\n"
            "  A %3: reads %3\n"
            "  B %1(y): reads %1(y)\n"
            "  epilogue: -; reads -\n"
            "materialized: %0(x), %1(y), %2(index), %3, %4\n"
            "decision: %4=matmul: epilogue fusion off: the GEMM stores its result %4\n"
            "decision: materialize %3=index: prologue fusion off: %4=matmul A %3 must be a "
            "materialized value or a view of one\n");
}

// Names of bound variables, an addmm's bias line, vector flags, epilogue reads.
TEST(PlanPrinter, AddmmWithNamesAndAnEpilogue) {
  const Program prog = parse(
      "def f(b: f32[4], x: f32[16, 8], w: f32[8, 4], v: f32[4]):\n"
      "    h = torch.addmm(b, x, w)\n"
      "    g = torch.relu(h * v)\n"
      "    return g @ v\n");
  EXPECT_EQ(to_string(prog.graph, checked_plan(prog.graph, PlanKind::kFused)),
            "plan fused: 2 steps\n"
            "step 0 gemm0: gemm %4=addmm batch=[] M=16 N=4 K=8 -> %6(g) f32[16, 4]\n"
            "  A %1(x): reads %1(x)\n"
            "  B %2(w): reads %2(w)\n"
            "  bias %0(b): reads %0(b)\n"
            "  epilogue: %5=mul, %6=relu; reads %3(v)\n"
            "step 1 gemm1: gemm %7=matmul batch=[] M=16 N=1 K=4 b_vector -> %7 f32[16]\n"
            "  A %6(g): reads %6(g)\n"
            "  B %3(v): reads %3(v)\n"
            "  epilogue: -; reads -\n"
            "materialized: %0(b), %1(x), %2(w), %3(v), %6(g), %7\n"
            "decision: %4=addmm: epilogue %5=mul, %6=relu; stops at %6(g): its consumer "
            "%7=matmul is not elementwise\n"
            "decision: %7=matmul: no epilogue: %7 is a graph output\n"
            "decision: %4=addmm bias: loads %0(b)\n"
            "decision: %4=addmm A: loads %1(x)\n"
            "decision: %4=addmm B: loads %2(w)\n"
            "decision: %7=matmul A: loads %6(g) (a GEMM result: never fused into a prologue)\n"
            "decision: %7=matmul B: loads %3(v)\n");
}

}  // namespace
}  // namespace tilefuse
