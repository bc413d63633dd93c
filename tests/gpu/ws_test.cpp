// The warp-specialized sm_90a main loop on the device: the edge programs of
// tests/common/ws_programs.h (M, N, K not multiples of the tiles: TMA boxes
// and masked cp.async rows past the edges, zero-filled; a gather; a bias +
// relu epilogue; a batched GEMM) under every emitter switch and two
// configs, fused, each against the f64 oracle within check_tolerance on
// fresh random inputs, outputs poisoned before the run. Skips without a GPU
// and on a GPU whose target has no wgmma (the kernels are then not
// warp-specialized, which the test checks first). TILEFUSE_GPU_SEED=<seed>
// reproduces a run.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include <fmt/format.h>

#include "common/scoped_env.h"
#include "common/ws_programs.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "reference/eval.h"
#include "reference/inputs.h"

namespace tilefuse {
namespace {

TEST(GpuWarpSpecialized, EdgeProgramsEveryVariantMatchTheOracle) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  const std::optional<tir::Target> target = gputest::device_target();
  ASSERT_TRUE(target.has_value());
  if (!target->has_wgmma()) GTEST_SKIP() << dev.arch() << " has no wgmma";
  const uint64_t seed = gputest::fresh_seed();
  std::printf("warp-specialized edge programs, seed %llu\n", static_cast<unsigned long long>(seed));
  int ran = 0;
  for (const testing::WsProgram& wp : testing::ws_programs()) {
    const Program p = parse_program(wp.source, std::string(wp.name) + ".tfs");
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
    EvalOptions o;
    o.mode = EvalMode::kOracle;
    const std::vector<Tensor> oracle = evaluate(p.graph, inputs, o);
    const double tol = check_tolerance(p.graph, p.graph.outputs()[0]);
    for (const testing::WsVariant& v : testing::ws_variants())
      for (const GemmConfig& cfg : testing::ws_configs()) {
        SCOPED_TRACE(fmt::format("{} {} {}x{}x{}/{}/{} seed {}", wp.name, v.name(), cfg.block_m,
                                 cfg.block_n, cfg.block_k, cfg.num_stages, cfg.num_warps, seed));
        driver::CompileOptions co;
        co.cuda = v.options();
        co.plan = PlanKind::kFused;
        co.target = *target;
        co.lower.gemm_config = cfg;
        const driver::CompiledProgram prog = driver::compile(p.graph, co);
        bool ws = false;
        for (const driver::CompiledKernel& ck : prog.kernels) ws |= ck.cuda->producer_threads > 0;
        EXPECT_EQ(ws, v.warp_specialized);
        driver::CudaProgram run(prog, dev);
        const std::vector<Tensor> got = run.run(inputs, /*poison=*/true);
        ASSERT_EQ(got.size(), 1u);
        const double err = relative_error(got[0], oracle[0]);
        EXPECT_LE(err, tol);  // false for NaN
        EXPECT_EQ(gputest::count_nan(got[0]), 0);
        ++ran;
      }
  }
  EXPECT_EQ(ran, static_cast<int>(testing::ws_programs().size() * testing::ws_variants().size() *
                                  testing::ws_configs().size()));
}

}  // namespace
}  // namespace tilefuse
