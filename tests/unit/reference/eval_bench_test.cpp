// Timings of the reference evaluator on the seed program (x[index] @ y, f16,
// 2048^3). Not unit tests: disabled by default; run with
//   test_reference --gtest_also_run_disabled_tests --gtest_filter='*Bench*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
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
  for (int threads : {0, 1}) {
    auto t0 = std::chrono::steady_clock::now();
    const Tensor eager = evaluate(g, params, {EvalMode::kEager, threads}).at(0);
    const double t_eager = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const Tensor oracle = evaluate(g, params, {EvalMode::kOracle, threads}).at(0);
    const double t_oracle = seconds_since(t0);
    std::printf(
        "num_threads=%d: eager f16 %.3f s (%.1f GFLOP/s), oracle f64 %.3f s (%.1f GFLOP/s), "
        "relative error %.3g\n",
        threads, t_eager, 2.0 * n * n * n / t_eager * 1e-9, t_oracle,
        2.0 * n * n * n / t_oracle * 1e-9, relative_error(eager, oracle));
  }
}

}  // namespace
}  // namespace tilefuse
