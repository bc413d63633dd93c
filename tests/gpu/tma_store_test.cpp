// The TMA-store epilogue of persistent sm_90a kernels (EpiloguePlan::
// tma_store): the staged tile in 128-byte swizzled strips, one box a strip
// stored by cp.async.bulk.tensor. Unmasked 2-D stores (the tiles divide M
// and N), cooperative and ping-pong, f16 and a bf16 relu epilogue,
// each against the f64 oracle on fresh random inputs with the outputs
// poisoned, and the kernel checked to take the TMA path (else the test
// would pass on the copy-out). TILEFUSE_GPU_SEED=<seed> reproduces a run.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "reference/eval.h"
#include "reference/inputs.h"

namespace tilefuse {
namespace {

TEST(GpuTmaStoreEpilogue, PersistentAndPingPongMatchTheOracle) {
  TILEFUSE_WGMMA_TEST_START(dev, target);
  const uint64_t seed = gputest::fresh_seed();
  const char* programs[] = {
      "def f(x: f16[700, 512], idx: i64[1024] in [0, 700), w: f16[512, 256]):\n"
      "    return x[idx] @ w\n",
      "def f(x: bf16[1024, 256], w: bf16[256, 384]):\n"
      "    return torch.relu(x @ w)\n",
  };
  int ran = 0;
  for (const char* source : programs) {
    const Program p = parse_program(source, "tma_store.tfs");
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
    const gputest::Oracle oracle = gputest::oracle_of(p.graph, inputs);
    GemmConfig persistent{128, 128, 64, 3, 8, 8, 1, true, false};
    GemmConfig bk32{128, 128, 32, 6, 8, 8, 1, true, false};
    GemmConfig pingpong{128, 128, 64, 3, 4, 8, 1, true, true};
    for (const GemmConfig& cfg : {persistent, bk32, pingpong}) {
      SCOPED_TRACE(fmt::format("{} {}x{}x{}/{}/{}{} seed {}", source, cfg.block_m, cfg.block_n,
                               cfg.block_k, cfg.num_stages, cfg.num_warps,
                               cfg.pingpong ? "/pingpong" : "/persistent", seed));
      gputest::expect_config_matches_oracle(p.graph, inputs, oracle, cfg, "tf::tma_store_2d(");
      ++ran;
    }
  }
  EXPECT_EQ(ran, 6);
}

}  // namespace
}  // namespace tilefuse
