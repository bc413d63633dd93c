// The issue-3 benchmark (not a test): a gather-GEMM kernel, 128x128x32 f32
// tiles, at 2048^3 on the CPU executor, next to the reference GEMM (the same
// microkernel, no interpretation) on the ungathered product. Runs only with
// TILEFUSE_BENCH=1:
//   TILEFUSE_BENCH=1 build/tests/test_runtime --gtest_filter='*Bench*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "exec_test_util.h"
#include "reference/matmul.h"
#include "runtime/cpu/executor.h"

namespace tilefuse::runtime::testing {
namespace {

double seconds_of(const std::function<void()>& fn, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

TEST(CpuExecutorBench, GatherGemm2048) {
  if (!std::getenv("TILEFUSE_BENCH")) GTEST_SKIP() << "set TILEFUSE_BENCH=1";
  const int64_t S =
      std::getenv("TILEFUSE_BENCH_SIZE") ? std::atoll(std::getenv("TILEFUSE_BENCH_SIZE")) : 2048;
  const int threads =
      std::getenv("TILEFUSE_BENCH_THREADS") ? std::atoi(std::getenv("TILEFUSE_BENCH_THREADS")) : 0;
  Kernel k = gemm_kernel(DType::F32, 128, 128, 32, /*gather=*/true,
                         /*hoisted=*/!std::getenv("TILEFUSE_BENCH_RAW"));
  Tensor A = random_tensor(DType::F32, {S, S}, 1), B = random_tensor(DType::F32, {S, S}, 2);
  Tensor index = Tensor::empty(DType::I64, {S});
  for (int64_t m = 0; m < S; ++m)
    index.set_linear(m, static_cast<double>((m * 17) % S - (m % 3 == 0 ? S : 0)));
  Tensor C = poisoned(DType::F32, {S, S});
  const double flops = 2.0 * S * S * S;
  const double t_exec = seconds_of(
      [&] {
        execute(k,
                {{"M", S},
                 {"N", S},
                 {"K", S},
                 {"R", S},
                 {"A", A},
                 {"B", B},
                 {"index", index},
                 {"C", C}},
                {.num_threads = threads});
      },
      3);
  reference::ThreadPool pool(threads);
  std::vector<float> c_ref(static_cast<size_t>(S * S));
  reference::GemmItem item{{A.data_ptr(), DType::F32, S, S, S, 1},
                           {B.data_ptr(), DType::F32, S, S, S, 1},
                           reinterpret_cast<std::byte*>(c_ref.data()),
                           std::nullopt};
  const double t_ref = seconds_of([&] { reference::gemm({item}, {}, pool); }, 3);
  std::printf("gather-GEMM %lldx%lldx%lld f32, tiles 128x128x32 (%s), %d threads, microkernel %s\n",
              static_cast<long long>(S), static_cast<long long>(S), static_cast<long long>(S),
              std::getenv("TILEFUSE_BENCH_RAW") ? "rows gathered in every copy"
                                                : "rows hoisted as licm does",
              pool.num_threads(), reference::gemm_kernel_name());
  std::printf("  cpu executor:            %.3f s  %.1f GFLOP/s\n", t_exec, flops / t_exec * 1e-9);
  std::printf("  reference gemm (no gather, same microkernel): %.3f s  %.1f GFLOP/s\n", t_ref,
              flops / t_ref * 1e-9);
  std::printf("  ratio executor / reference: %.2f\n", t_ref / t_exec);
  EXPECT_FALSE(std::isnan(C.get_linear(S * S - 1)));
}

}  // namespace
}  // namespace tilefuse::runtime::testing
