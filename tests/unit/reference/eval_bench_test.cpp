// Timings of the reference evaluator on the seed program (x[index] @ y, f16,
// 2048^3). Not unit tests: disabled by default; run with
//   test_reference --gtest_also_run_disabled_tests --gtest_filter='*Bench*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <numeric>

#include "reference/eval.h"
#include "reference/matmul.h"
#include "test_util.h"

namespace tilefuse {
namespace {

using testing_util::Lcg;
using testing_util::param;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(EvalBench, DISABLED_SeedGatherMatmulF16_2048) {
  constexpr int64_t n = 2048;
  Graph g;
  const ValueId x = param(g, "x", DType::F16, {n, n});
  const ValueId y = param(g, "y", DType::F16, {n, n});
  const ValueId index = param(g, "index", DType::I64, {n});
  g.add_output(g.matmul(g.index(x, 0, index, {}), y, {}));
  Lcg rng(1);
  std::vector<Tensor> params = {Tensor::empty(DType::F16, {n, n}),
                                Tensor::empty(DType::F16, {n, n}), Tensor::empty(DType::I64, {n})};
  for (int p = 0; p < 2; ++p) {
    auto* d = reinterpret_cast<uint16_t*>(params[p].data_ptr());
    for (int64_t i = 0; i < n * n; ++i) d[i] = f32_to_f16_bits(static_cast<float>(rng.nonzero()));
  }
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.integer(0, i + 1)]);
  for (int64_t i = 0; i < n; ++i) params[2].set_linear(i, static_cast<double>(perm[i]));

  std::printf("microkernel: %s, threads: %u\n", reference::gemm_kernel_name(),
              std::thread::hardware_concurrency());
  // Wall time, and process CPU time (all threads): on a shared machine the
  // wall time mostly measures the other processes.
  for (int threads : {0, 1}) {
    for (EvalMode mode : {EvalMode::kEager, EvalMode::kOracle}) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::clock_t c0 = std::clock();
      const Tensor out = evaluate(g, params, {mode, threads}).at(0);
      const double wall = seconds_since(t0);
      const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
      std::printf("num_threads=%d %s: wall %.3f s (%.1f GFLOP/s), cpu %.3f s\n", threads,
                  mode == EvalMode::kEager ? "eager f16 " : "oracle f64", wall,
                  2.0 * n * n * n / wall * 1e-9, cpu);
      ASSERT_EQ(out.shape(), (Shape{n, n}));
    }
  }
}

}  // namespace
}  // namespace tilefuse
