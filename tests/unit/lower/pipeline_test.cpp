// The lowered kernels through the pass pipeline (driver::compile): the
// seed's gather leaves the K loop (index load, wrap and bounds check hoisted
// by licm, not by the template). That the optimized kernels of both plans
// match the reference is tested with the driver (tests/unit/driver).
#include <gtest/gtest.h>

#include "driver/compile.h"
#include "lower_test_util.h"

namespace tilefuse {
namespace {

// The gather `x[index] @ y` with M rows and K columns, compiled by the
// driver (the pass table, verified after every pass; the kernel as lowered
// kept beside the optimized one): the index load is in the K loop as
// lowered and, with its wrap and its check, out of it once optimized.
void expect_gather_leaves_the_k_loop(int64_t m, int64_t k) {
  const std::string M = std::to_string(m), K = std::to_string(k);
  const Program p = testing::parse("def gather_mm(x: f16[" + M + ", " + K + "], y: f16[" + K +
                                   ", 40], index: i64[" + M + "]):\n    return x[index] @ y\n");
  // BLOCK_K 32, as the GPU heuristic takes: the CPU's default config takes
  // all of K in one step, which leaves no K loop to leave.
  driver::CompileOptions co;
  co.lower.gemm_config = GemmConfig{128, 64, 32, 2, 4, 8};
  const driver::CompiledProgram c = driver::compile(p.graph, co);
  ASSERT_EQ(c.kernels.size(), 1u);
  const std::string before =
      testing::block_of(tir::print(c.kernels[0].lowered.kernel), "for k in pipelined(");
  ASSERT_NE(before.find("load(index"), std::string::npos) << before;
  const std::string text = tir::print(c.kernels[0].kernel);
  const std::string k_loop = testing::block_of(text, "for k in pipelined(");
  ASSERT_FALSE(k_loop.empty()) << text;
  EXPECT_EQ(k_loop.find("load(index,"), std::string::npos) << "M=" << M << " K=" << K << "\n"
                                                           << text;
  EXPECT_EQ(k_loop.find("index["), std::string::npos) << text;
  EXPECT_EQ(k_loop.find("check("), std::string::npos) << text;
  EXPECT_NE(text.find("check("), std::string::npos) << text;
}

TEST(LowerPipeline, SeedGatherLeavesTheKLoop) {
  // M = 70 leaves a row conjunct (m < 70) on the index load, which bounds
  // it; with M = 128 and no K tail, the load has no mask at all.
  expect_gather_leaves_the_k_loop(70, 48);
  expect_gather_leaves_the_k_loop(128, 64);
}

// M a multiple of BLOCK_M and a K tail: simplify drops the row conjunct, so
// the index load's only mask is the K tail `cse_2 + j < 48`, with cse's
// `let cse_2 = k*32` bound inside the K loop. licm reads the loop body
// modulo its lets (the witness lane gives the let its first-iteration
// value), so the load, its wrap and its check still leave the K loop.
TEST(LowerPipeline, GatherWithFullRowTilesAndAKTailLeavesTheKLoop) {
  expect_gather_leaves_the_k_loop(128, 48);
}

}  // namespace
}  // namespace tilefuse
