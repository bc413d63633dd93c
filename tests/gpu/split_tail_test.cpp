// The split tail of sm_90a warp-specialized kernels (PipelinePlan::
// split_tail, codegen/cuda/passes/split_tail.h): the main loop's last T
// k-tiles N half by N half, the per-warp epilogue cut between the halves.
// Every form it has: A from shared memory by cp.async (a gather) or TMA,
// BLOCK_K 64 and 32, one tile a block and persistent (more tiles than SMs:
// the tail's stages go back to the producer for the next tile), and
// register A (the tail's deferred fragment loads of the next tile), each
// against the f64 oracle on fresh random inputs with the outputs poisoned,
// and each kernel checked to take the split tail (else the test would pass
// on the kernel without it). TILEFUSE_GPU_SEED=<seed> reproduces a run.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/tune.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "reference/eval.h"
#include "reference/inputs.h"

namespace tilefuse {
namespace {

TEST(GpuSplitTail, EveryFormMatchesTheOracle) {
  TILEFUSE_WGMMA_TEST_START(dev, target);
  const uint64_t seed = gputest::fresh_seed();
  // 36 x 4 = 144 tiles of 128x256: more than the SMs, so a persistent block
  // runs a second tile; K 256 (4 k-tiles of 64, 8 of 32).
  const char* gathered =
      "def f(x: f16[700, 256], idx: i64[4608] in [0, 700), w: f16[256, 1024]):\n"
      "    return x[idx] @ w\n";
  const char* plain =
      "def f(x: bf16[4608, 256], w: bf16[256, 1024]):\n"
      "    return torch.relu(x @ w)\n";
  struct Case {
    const char* source;
    GemmConfig config;
  };
  auto cfg = [](int bk, int stages, bool persistent, bool register_a, int tail) {
    GemmConfig c{128, 256, bk, stages, 8, 8, 1, persistent, false};
    c.register_a = register_a;
    c.split_tail = tail;
    return c;
  };
  // (every tail below the ring: one as long as it is refused, SplitTail.DeclinedWithAReason)
  const Case cases[] = {
      {gathered, cfg(64, 4, false, false, 3)}, {gathered, cfg(64, 4, false, false, 1)},
      {gathered, cfg(64, 4, true, false, 2)},  {gathered, cfg(64, 4, false, true, 3)},
      {gathered, cfg(64, 4, true, true, 3)},   {gathered, cfg(64, 4, true, true, 1)},
      {plain, cfg(64, 4, false, false, 3)},    {plain, cfg(32, 8, false, false, 7)},
      {plain, cfg(64, 4, true, false, 2)},
  };
  int ran = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{}{} seed {}", c.source, driver::gemm_config_name(c.config), seed));
    const Program p = parse_program(c.source, "split_tail.tfs");
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
    gputest::expect_config_matches_oracle(p.graph, inputs, gputest::oracle_of(p.graph, inputs),
                                          c.config, "the split tail: half 1 done");
    ++ran;
  }
  EXPECT_EQ(ran, 9);
}

}  // namespace
}  // namespace tilefuse
