// The block timeline (CudaOptions::block_timeline, a measuring aid) on the
// device: a gathered GEMM compiled with it still matches the f64 oracle on
// fresh random inputs (outputs poisoned), and one launch's records come
// back for every block: on the SMs the launch can use, each block's first
// stage and main loop ending within the block, the span covering every
// block. The
// warp-specialized kernel (sm_90a), its split-K form and a persistent one;
// on sm_80 the ring. TILEFUSE_GPU_SEED=<seed> reproduces a run.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include <fmt/format.h>

#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/tune.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "runtime/cuda/timing.h"

namespace tilefuse {
namespace {

TEST(GpuBlockTimeline, RecordsEveryBlockAndKeepsTheResult) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  const std::optional<tir::Target> target = gputest::device_target();
  ASSERT_TRUE(target.has_value());
  const uint64_t seed = gputest::fresh_seed();
  const Program p = parse_program(
      "def f(x: f16[700, 512], idx: i64[1024] in [0, 700), w: f16[512, 512]):\n"
      "    return x[idx] @ w\n",
      "timeline.tfs");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
  const gputest::Oracle oracle = gputest::oracle_of(p.graph, inputs);
  std::vector<std::optional<GemmConfig>> configs = {std::nullopt};
  if (target->has_wgmma()) {
    configs.push_back(GemmConfig{128, 128, 64, 3, 8, 8, 2});
    configs.push_back(GemmConfig{128, 128, 64, 3, 8, 8, 1, true, false});
  }
  for (const std::optional<GemmConfig>& cfg : configs) {
    SCOPED_TRACE(fmt::format("{} seed {}", cfg ? driver::gemm_config_name(*cfg) : "default", seed));
    driver::CompileOptions co;
    co.plan = PlanKind::kFused;
    co.target = *target;
    co.cuda.block_timeline = true;
    if (cfg) co.lower.gemm_config = *cfg;
    const driver::CompiledProgram prog = driver::compile(p.graph, co);
    driver::CudaProgram run(prog, dev);
    const std::vector<Tensor> got = run.run(inputs, /*poison=*/true);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_LE(relative_error(got[0], oracle.output), oracle.tol);  // false for NaN
    EXPECT_EQ(gputest::count_nan(got[0]), 0);
    const std::vector<driver::BlockTimeline> t = run.block_timelines();
    ASSERT_EQ(t.size(), 1u);
    SCOPED_TRACE(driver::format_block_timeline(t[0]));
    // The grid: the printer's blocks (tiles x splits), a persistent kernel
    // one block an SM at most.
    const int64_t grid = prog.kernels[0].cuda->grid;
    ASSERT_GT(grid, 0);
    EXPECT_EQ(t[0].launched, prog.kernels[0].cuda->persistent
                                 ? std::min<int64_t>(grid, dev.sm_count())
                                 : grid);
    EXPECT_EQ(t[0].blocks, t[0].launched);
    EXPECT_EQ(t[0].loop_blocks, t[0].blocks);
    // A warp-specialized loop also records when its first stage landed.
    EXPECT_EQ(t[0].first_stage_blocks,
              prog.kernels[0].cuda->producer_threads > 0 ? t[0].blocks : 0);
    EXPECT_LE(t[0].first_stage_us[2], t[0].block_us[2]);
    EXPECT_GE(t[0].sms, 1);
    EXPECT_LE(t[0].sms, dev.sm_count());
    EXPECT_GT(t[0].loop_us[0], 0.0);
    EXPECT_LE(t[0].loop_us[2], t[0].block_us[2]);
    EXPECT_GE(t[0].span_us, t[0].block_us[2]);
    EXPECT_LT(t[0].span_us, 1e6);  // (a second: the records are of one launch)
    // The records are read again after another launch: a fresh set, here
    // after an L2 flush (bench's form), which runs once, before the launch.
    int flushes = 0;
    const std::vector<driver::BlockTimeline> again = run.block_timelines([&] {
      ++flushes;
      cuda::flush_l2(dev);
    });
    EXPECT_EQ(flushes, 1);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].blocks, t[0].blocks);
    EXPECT_EQ(again[0].loop_blocks, again[0].blocks);
  }
}

}  // namespace
}  // namespace tilefuse
