// Timing of make_random_inputs on the seed program (two f16[2048, 2048] and
// an i64[2048] index: ~8.4M elements), on one thread and on all of them. Not
// a unit test: disabled by default; run with
//   test_reference --gtest_also_run_disabled_tests --gtest_filter='InputsBench*'
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include "frontend/frontend.h"
#include "reference/inputs.h"

namespace tilefuse {
namespace {

TEST(InputsBench, DISABLED_SeedGatherMatmulF16_2048) {
  const Program p =
      load_program(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/seed_gather_mm_f16.tfs");
  int64_t numel = 0;
  for (ValueId v : p.graph.parameters()) {
    int64_t n = 1;
    for (int64_t d : p.graph.node(v).shape) n *= d;
    numel += n;
  }
  std::printf("%lld elements, hardware threads: %u\n", static_cast<long long>(numel),
              std::thread::hardware_concurrency());
  for (int threads : {1, 2, 0}) {
    // Best of 7, wall time and process CPU time (all threads): on a shared
    // machine the wall time also measures the other processes.
    double wall = 1e9, cpu = 1e9;
    for (int rep = 0; rep < 7; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::clock_t c0 = std::clock();
      const std::vector<Tensor> in = make_random_inputs(p.graph, 1, threads);
      wall = std::min(wall,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      cpu = std::min(cpu, static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
      ASSERT_EQ(in.size(), 3u);
    }
    std::printf(
        "make_random_inputs, num_threads=%d: wall %.1f ms (%.2f ms per million elements), "
        "cpu %.1f ms\n",
        threads, wall * 1e3, wall * 1e3 / (static_cast<double>(numel) * 1e-6), cpu * 1e3);
  }
}

}  // namespace
}  // namespace tilefuse
