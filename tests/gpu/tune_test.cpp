// The autotuner on the device (driver/tune.h; ctest label `gpu`, skipped
// without a GPU): the cold search of the seed stays within the 30 s,
// its winner is cached and a second tuning reads it, the winner's kernels
// all come from the kernel cache afterwards ("a second run compiles
// nothing"), and on bench/programs/fusion_loses_f16.tfs the measurement
// picks the unfused plan.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/tune.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "reference/inputs.h"

namespace tilefuse {
namespace {

namespace fs = std::filesystem;

// A fresh TILEFUSE_CACHE_DIR (kernels and tunings) for one test.
class FreshCache {
 public:
  explicit FreshCache(const std::string& tag)
      : dir_(fs::temp_directory_path() /
             ("tilefuse_gpu_tune_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    if (const char* old = std::getenv("TILEFUSE_CACHE_DIR")) old_ = old;
    had_old_ = std::getenv("TILEFUSE_CACHE_DIR") != nullptr;
    if (const char* nc = std::getenv("TILEFUSE_NO_CACHE")) no_cache_ = nc;
    had_no_cache_ = std::getenv("TILEFUSE_NO_CACHE") != nullptr;
    ::setenv("TILEFUSE_CACHE_DIR", dir_.c_str(), 1);
    ::unsetenv("TILEFUSE_NO_CACHE");
  }
  ~FreshCache() {
    if (had_old_)
      ::setenv("TILEFUSE_CACHE_DIR", old_.c_str(), 1);
    else
      ::unsetenv("TILEFUSE_CACHE_DIR");
    if (had_no_cache_) ::setenv("TILEFUSE_NO_CACHE", no_cache_.c_str(), 1);
    fs::remove_all(dir_);
  }

 private:
  fs::path dir_;
  std::string old_, no_cache_;
  bool had_old_ = false, had_no_cache_ = false;
};

Program bench_program(const std::string& name) {
  return load_program(std::string(TILEFUSE_SOURCE_DIR) + "/bench/programs/" + name + ".tfs");
}

// The tuning options of these tests: the GPU's tuning device, quietly.
driver::TuneOptions tune_options(const Program& p) {
  driver::TuneOptions o;
  o.device = driver::cuda_tune_device();
  o.name = p.name;
  o.progress = false;
  return o;
}

TEST(TuneGpu, SeedColdTuningIsCachedAndTheWinnerCompilesNothing) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  FreshCache cache("seed");
  const Program p = bench_program("seed_gather_mm_f16");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, gputest::fresh_seed());
  const driver::TuneOptions o = tune_options(p);
  const driver::TuneResult cold = driver::tune(p.graph, inputs, o);
  std::printf(
      "seed cold tuning: %d candidates (%d skipped), %d kernels (%d from the kernel "
      "cache), %.1f s: %s\n",
      cold.candidates, cold.failed, cold.nvrtc_kernels, cold.nvrtc_cache_hits, cold.seconds,
      cold.choice.summary().c_str());
  for (const driver::TuneCandidate& c : cold.choice.candidates)
    std::printf("  %s %s: %.1f us x%d %s\n", std::string(plan_kind_name(c.plan)).c_str(),
                c.config ? driver::gemm_config_name(*c.config).c_str() : "default", c.median_us,
                c.repeats, c.error.c_str());
  EXPECT_FALSE(cold.from_cache);
  EXPECT_TRUE(cold.cache_written);
  EXPECT_GE(cold.candidates, 40);
  EXPECT_EQ(cold.failed, 0);
  EXPECT_LE(cold.seconds, 30.0) << "the issue's budget for a cold tuning of the seed";
  ASSERT_TRUE(cold.choice.gemm_config.has_value());
  EXPECT_GT(cold.choice.fused_us, 0);
  EXPECT_GT(cold.choice.unfused_us, 0);

  const driver::TuneResult warm = driver::tune(p.graph, inputs, o);
  EXPECT_TRUE(warm.from_cache);
  EXPECT_EQ(warm.choice.summary(), cold.choice.summary());

  // The winner as `run` compiles it: every kernel from the kernel cache.
  driver::CompileOptions co;
  co.plan = warm.choice.plan;
  co.target = o.device.target;
  co.lower = warm.choice.lower_for(co.plan);
  const driver::CompiledProgram compiled = driver::compile(p.graph, co);
  driver::CudaProgram prog(compiled, driver::default_device());
  for (const driver::CudaKernelStats& st : prog.stats())
    EXPECT_TRUE(st.from_cache) << st.name << " was compiled again";
  (void)prog.run(inputs);
}

TEST(TuneGpu, FusionLosesPicksTheUnfusedPlan) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  FreshCache cache("fusion_loses");
  const Program p = bench_program("fusion_loses_f16");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, gputest::fresh_seed());
  const driver::TuneOptions o = tune_options(p);
  const driver::TuneResult r = driver::tune(p.graph, inputs, o);
  std::printf("fusion_loses: %d candidates (%d skipped), %.1f s: %s\n", r.candidates, r.failed,
              r.seconds, r.choice.summary().c_str());
  EXPECT_EQ(r.choice.plan, PlanKind::kUnfused) << r.choice.summary();
  EXPECT_LT(r.choice.unfused_us, r.choice.fused_us);
}

}  // namespace
}  // namespace tilefuse
