// The autotuner on the device (driver/tune.h; ctest label `gpu`, skipped
// without a GPU): the cold search of the seed stays within the 30 s,
// its winner is cached and a second tuning reads it, the winner's kernels
// all come from the kernel cache afterwards ("a second run compiles
// nothing"), and on bench/programs/fusion_loses_f16.tfs the measurement
// picks the unfused plan. The third plan, unfused+cuBLASLt: measured
// wherever libcublasLt loads and the unfused plan has a plain GEMM (the
// seed, fusion_loses, gemm_f32 under --allow-tf32), the chosen time is the
// least of the three, and `run --plan auto` / `bench` follow a cached
// cuBLASLt choice (the tilefuse binary, with a choice written to a private
// tuning cache).
#include <gtest/gtest.h>

#include <unistd.h>
#include <limits>
#include <tuple>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/cli.h"
#include "driver/bench.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/tune.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "runtime/cache/tuning_cache.h"
#include "runtime/cuda/cublaslt.h"

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

// The time of the plan the choice runs.
double chosen_us(const driver::TunedChoice& c) {
  return c.cublaslt ? c.cublaslt_us : c.plan == PlanKind::kFused ? c.fused_us : c.unfused_us;
}

// The chosen plan beat every plan before it in the order of preference
// (fused, unfused, unfused+cuBLASLt) by TuneOptions::plan_margin, and no
// plan after it beat it by that margin.
void expect_fastest_chosen(const driver::TunedChoice& c) {
  const double margin = driver::kDefaultPlanMargin;
  const double won = chosen_us(c);
  EXPECT_GT(won, 0) << c.summary();
  const double times[] = {c.fused_us, c.unfused_us, c.cublaslt_us};
  const size_t at = c.cublaslt ? 2 : c.plan == PlanKind::kFused ? 0 : 1;
  for (size_t i = 0; i < 3; ++i) {
    if (!(times[i] >= 0) || i == at) continue;
    if (i > at) {
      // A later plan did not beat the fastest before it by the margin.
      double fastest = std::numeric_limits<double>::infinity();
      for (size_t j = 0; j < i; ++j)
        if (times[j] >= 0) fastest = std::min(fastest, times[j]);
      EXPECT_GE(times[i], fastest * (1 - margin)) << c.summary();
    } else {
      EXPECT_LT(won, times[i] * (1 - margin)) << c.summary();
    }
  }
  if (c.cublaslt) {
    EXPECT_EQ(c.plan, PlanKind::kUnfused);
  }
}

// Where libcublasLt loads, a program whose unfused plan has a plain GEMM
// has a measured unfused+cuBLASLt candidate (one, flagged); else the note
// says why not.
void expect_cublaslt_candidate(const driver::TuneResult& r) {
  std::string why;
  int flagged = 0;
  for (const driver::TuneCandidate& c : r.choice.candidates) flagged += c.cublaslt ? 1 : 0;
  if (!cuda::cublaslt_available(&why)) {
    EXPECT_EQ(r.choice.cublaslt_us, -1);
    EXPECT_NE(r.choice.cublaslt_note.find("cuBLASLt unavailable"), std::string::npos)
        << r.choice.cublaslt_note;
    EXPECT_EQ(flagged, 0);
    return;
  }
  EXPECT_EQ(flagged, 1);
  EXPECT_GT(r.choice.cublaslt_us, 0) << r.choice.cublaslt_note;
  EXPECT_EQ(r.choice.cublaslt_note, "");
}

TEST(TuneGpu, SeedColdTuningIsCachedAndTheWinnerCompilesNothing) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  FreshCache cache("seed");
  const Program p = bench_program("seed_gather_mm_f16");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, gputest::fresh_seed());
  const driver::TuneOptions o = tune_options(p);
  const driver::TuneResult cold = driver::tune(p.graph, inputs, o);
  std::printf(
      "seed cold tuning: %d candidates (%d skipped, %d for spills), %d kernels (%d from the "
      "kernel cache), %.1f s (%s): %s\n",
      cold.candidates, cold.failed, cold.spilled, cold.nvrtc_kernels, cold.nvrtc_cache_hits,
      cold.seconds, driver::tune_phases(cold).c_str(), cold.choice.summary().c_str());
  for (const driver::TuneCandidate& c : cold.choice.candidates)
    std::printf("  %s %s: %.1f us x%d %s\n", std::string(plan_kind_name(c.plan)).c_str(),
                c.config ? driver::gemm_config_name(*c.config).c_str() : "default", c.median_us,
                c.repeats, c.error.c_str());
  EXPECT_FALSE(cold.from_cache);
  EXPECT_TRUE(cold.cache_written);
  EXPECT_GE(cold.candidates, 40);
  // Skipped only for spills (a spilling candidate never runs where its plan
  // has one that does not: spill_skips), each with its ptxas figures.
  EXPECT_EQ(cold.failed, cold.spilled);
  for (const driver::TuneCandidate& c : cold.choice.candidates)
    if (c.median_us < 0) {
      EXPECT_GT(c.spill_bytes, 0) << c.error;
    }
  EXPECT_LE(cold.seconds, 30.0) << "the issue's budget for a cold tuning of the seed";
  ASSERT_TRUE(cold.choice.gemm_config.has_value());
  EXPECT_GT(cold.choice.fused_us, 0);
  EXPECT_GT(cold.choice.unfused_us, 0);
  // The seed's unfused plan is a gather and a plain GEMM: cuBLASLt competes.
  expect_cublaslt_candidate(cold);
  // Three plans ran: their winners were timed again in alternation, and the
  // plans' times are the runoff's (each plan's winner has a candidate row
  // of its own, with its finals' time).
  EXPECT_TRUE(cold.choice.plan_runoff);
  EXPECT_NE(driver::tune_phases(cold).find("in alternation"), std::string::npos);
  for (const auto& [plan, blas, us] :
       {std::tuple{PlanKind::kFused, false, cold.choice.fused_us},
        std::tuple{PlanKind::kUnfused, false, cold.choice.unfused_us},
        std::tuple{PlanKind::kUnfused, true, cold.choice.cublaslt_us}}) {
    if (us < 0) continue;
    int rows = 0;
    for (const driver::TuneCandidate& c : cold.choice.candidates)
      rows += c.plan == plan && c.cublaslt == blas && c.median_us > 0 ? 1 : 0;
    EXPECT_GE(rows, 1) << plan_kind_name(plan) << (blas ? "+cuBLASLt " : " ") << us;
  }
  // Issue 5: the chosen plan is no slower than either unfused plan (nor fused).
  expect_fastest_chosen(cold.choice);

  const driver::TuneResult warm = driver::tune(p.graph, inputs, o);
  EXPECT_TRUE(warm.from_cache);
  EXPECT_EQ(warm.choice.summary(), cold.choice.summary());
  EXPECT_EQ(warm.choice.cublaslt, cold.choice.cublaslt);

  // The winner as `run` compiles it: every kernel of ours from the kernel
  // cache (cuBLASLt's steps compile nothing).
  driver::CompileOptions co;
  co.plan = warm.choice.plan;
  co.target = o.device.target;
  co.lower = warm.choice.lower_for(co.plan);
  const driver::CompiledProgram compiled = driver::compile(p.graph, co);
  driver::CudaProgramOptions po;
  po.cublaslt_gemms = warm.choice.cublaslt;
  driver::CudaProgram prog(compiled, driver::default_device(), po);
  const std::vector<size_t> blas = prog.cublaslt_steps();
  EXPECT_EQ(blas.empty(), !warm.choice.cublaslt);
  for (size_t i = 0; i < prog.stats().size(); ++i) {
    if (std::find(blas.begin(), blas.end(), i) == blas.end()) {
      EXPECT_TRUE(prog.stats()[i].from_cache) << prog.stats()[i].name << " was compiled again";
    }
  }
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
  expect_cublaslt_candidate(r);
  expect_fastest_chosen(r.choice);
}

// A plain f32 GEMM under --allow-tf32: the cuBLASLt candidate runs on TF32
// (FAST_TF32, the flag passed on), agrees within the TF32 tolerance, and the
// choice is still the fastest; the tuning without the flag is another one
// (exact f32 on both sides).
TEST(TuneGpu, PlainF32GemmCublasltCompetesUnderAllowTf32) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  FreshCache cache("gemm_f32");
  const Program p = bench_program("gemm_f32");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, gputest::fresh_seed());
  for (bool tf32 : {true, false}) {
    driver::TuneOptions o = tune_options(p);
    o.allow_tf32 = tf32;
    const driver::TuneResult r = driver::tune(p.graph, inputs, o);
    std::printf("gemm_f32%s: %d candidates (%d skipped), %.1f s: %s\n",
                tf32 ? " --allow-tf32" : "", r.candidates, r.failed, r.seconds,
                r.choice.summary().c_str());
    EXPECT_FALSE(r.from_cache);
    expect_cublaslt_candidate(r);
    expect_fastest_chosen(r.choice);
    // A plain GEMM has one plan of ours: its unfused plan is the fused one,
    // searched once (and cuBLASLt runs the fused winner's program).
    EXPECT_TRUE(r.choice.unfused_same_as_fused);
    for (const driver::TuneCandidate& c : r.choice.candidates)
      EXPECT_TRUE(c.plan == PlanKind::kFused || c.cublaslt) << r.choice.summary();
    EXPECT_EQ(r.choice.unfused_us, r.choice.fused_us);
  }
}

// A tuning cache whose only entry is a fabricated unfused+cuBLASLt choice
// for the seed on this GPU; the CLI (a child process) reads it.
class CublasltChoiceCache {
 public:
  CublasltChoiceCache() : fresh_("cli_cublaslt") {
    const Program p = bench_program("seed_gather_mm_f16");
    driver::TunedChoice c;
    c.plan = PlanKind::kUnfused;
    c.cublaslt = true;
    c.fused_us = 50.0;
    c.unfused_us = 60.0;
    c.cublaslt_us = 40.0;
    c.candidates.push_back({PlanKind::kFused, std::nullopt, 50.0, 20, ""});
    c.candidates.push_back({PlanKind::kUnfused, std::nullopt, 60.0, 20, ""});
    driver::TuneCandidate blas{PlanKind::kUnfused, std::nullopt, 40.0, 20, ""};
    blas.cublaslt = true;
    c.candidates.push_back(blas);
    c.tuned_at = "2026-11-30T00:00:00Z";
    c.device = driver::cuda_tune_device().key();
    ok_ = cache::TuningCache(cache::default_tuning_cache_dir())
              .put(driver::tuning_key(p.graph, driver::cuda_tune_device()).material(),
                   driver::choice_to_json(c));
  }
  bool ok() const { return ok_; }

 private:
  FreshCache fresh_;
  bool ok_ = false;
};

std::string seed_path() {
  return std::string(TILEFUSE_SOURCE_DIR) + "/bench/programs/seed_gather_mm_f16.tfs";
}

TEST(TuneGpu, RunFollowsACachedCublasltChoice) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  std::string why;
  if (!cuda::cublaslt_available(&why)) GTEST_SKIP() << "cuBLASLt unavailable: " << why;
  CublasltChoiceCache cache;
  ASSERT_TRUE(cache.ok());
  const testing::CliResult r = testing::run_cli("run " + seed_path() + " -v --check");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(unfused plan, GEMM steps on cuBLASLt, 2 steps, CUDA)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("tuning: cached choice (unfused+cuBLASLt, 40.0 us vs fused 50.0 us, "
                          "unfused 60.0 us)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("step 1 on cuBLASLt: cuBLASLt"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" ok\n"), std::string::npos) << r.output;  // --check
  // An explicit plan runs our kernels.
  const testing::CliResult u = testing::run_cli("run " + seed_path() + " --plan unfused -v --check");
  EXPECT_EQ(u.exit_code, 0) << u.output;
  EXPECT_NE(u.output.find("(unfused plan, 2 kernels, CUDA)"), std::string::npos) << u.output;
  EXPECT_EQ(u.output.find("on cuBLASLt:"), std::string::npos) << u.output;
}

TEST(TuneGpu, BenchChosenRowIsTheCublasltRowWhenItWon) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  std::string why;
  if (!cuda::cublaslt_available(&why)) GTEST_SKIP() << "cuBLASLt unavailable: " << why;
  CublasltChoiceCache cache;
  ASSERT_TRUE(cache.ok());
  for (const char* extra : {"", " --no-baselines"}) {
    const testing::CliResult r =
        testing::run_cli("bench " + seed_path() + " --json --warmup 1 --repeats 3 --no-check" +
                             extra,
                         {.with_stderr = false});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output);
    std::map<std::string, nlohmann::json> rows;
    for (const nlohmann::json& row : j.at("rows")) rows[row.at("name")] = row;
    ASSERT_TRUE(rows.count("chosen")) << j.dump(2);
    ASSERT_TRUE(rows.count("unfused+cuBLASLt")) << extra;
    EXPECT_EQ(rows.count("cuBLASLt GEMM only"), std::string(extra).empty() ? 1u : 0u) << extra;
    const nlohmann::json& chosen = rows.at("chosen");
    EXPECT_GT(chosen.at("median_us").get<double>(), 0) << chosen;
    EXPECT_EQ(chosen.at("median_us"), rows.at("unfused+cuBLASLt").at("median_us"));
    EXPECT_NE(chosen.at("note").get<std::string>().find("unfused+cuBLASLt, 40.0 us"),
              std::string::npos)
        << chosen;
    bool has_blas = false;
    for (const nlohmann::json& k : chosen.at("kernels"))
      has_blas = has_blas || k.at("name").get<std::string>().rfind("cuBLASLt", 0) == 0;
    EXPECT_TRUE(has_blas) << chosen;
  }
}

// bench's rows (fused, unfused, unfused+cuBLASLt, cuBLASLt GEMM only) read
// one device copy of the inputs: bench_gpu uploads them once
// (DeviceInputs::uploads; a row each had taken three copies, and a program
// with inputs above a third of the GPU's memory failed for memory), and
// every checked row still matches the oracle.
TEST(TuneGpu, BenchUploadsTheInputsOnceForEveryRow) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const Program p = bench_program("seed_gather_mm_f16");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, 17);
  driver::BenchOptions o;
  o.warmup = 1;
  o.repeats = 3;
  o.warmup_ms = 0;
  o.copy_bytes = 0;
  o.cublaslt_algorithms = 1;
  const int64_t before = driver::DeviceInputs::uploads();
  const driver::BenchReport r = driver::bench_gpu(p.graph, inputs, o);
  EXPECT_EQ(driver::DeviceInputs::uploads() - before, 1);
  std::set<std::string> names;
  for (const driver::BenchRow& row : r.rows) {
    names.insert(row.name);
    if (row.name == "cuBLASLt GEMM only") continue;  // (not checked: a part of the program)
    if (row.name == "unfused+cuBLASLt" && row.median_ms <= 0) continue;  // (unavailable: a note)
    EXPECT_GT(row.median_ms, 0) << row.name << ": " << row.note;
    EXPECT_GE(row.rel_err, 0) << row.name;
    EXPECT_LE(row.rel_err, check_tolerance(DType::F16)) << row.name;
  }
  EXPECT_TRUE(names.count("fused") && names.count("unfused")) << r.rows.size();
  std::string why;
  if (cuda::cublaslt_available(&why)) {
    EXPECT_TRUE(names.count("unfused+cuBLASLt") && names.count("cuBLASLt GEMM only"));
  }
}

// Two plans bound to one DeviceInputs: binding them allocates their outputs
// and intermediates, not the inputs again (device memory in use, from
// cuMemGetInfo, grows by far less than the 256 MiB table); each keeps the
// inputs alive; each matches the oracle; and re-binding one poisons its own
// outputs, not the inputs the other reads.
TEST(TuneGpu, PlansBoundToSharedInputsAllocateOnlyTheirOwnMemory) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const std::optional<tir::Target> target = gputest::device_target();
  if (!target) GTEST_SKIP() << "tilefuse needs sm_80 or newer";
  const Program p = parse_program(
      "def f(x: f16[1048576, 128], w: f16[128, 64], index: i64[256]):\n"
      "    return x[index] @ w\n",
      "shared_inputs.tfs");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, 5);
  EvalOptions eval;
  eval.mode = EvalMode::kOracle;
  const Tensor oracle = evaluate(p.graph, inputs, eval).at(0);
  cuda::Device& dev = driver::default_device();
  // Compiled and loaded first: the measure below sees the binds alone.
  std::vector<std::unique_ptr<driver::CompiledProgram>> compiled;
  std::vector<std::unique_ptr<driver::CudaProgram>> programs;
  for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
    driver::CompileOptions co;
    co.plan = plan;
    co.target = *target;
    compiled.push_back(std::make_unique<driver::CompiledProgram>(driver::compile(p.graph, co)));
    programs.push_back(std::make_unique<driver::CudaProgram>(*compiled.back(), dev));
  }
  ASSERT_EQ(compiled[1]->kernels.size(), 2u);  // (the gather, then the GEMM)
  const std::size_t free_before = dev.memory_info().free;
  auto shared = std::make_shared<const driver::DeviceInputs>(dev, inputs);
  const std::size_t free_uploaded = dev.memory_info().free;
  ASSERT_GE(shared->bytes(), std::size_t{256} << 20);
  EXPECT_GE(free_before - free_uploaded, shared->bytes());  // (the measure sees an upload)
  for (auto& prog : programs) prog->bind(shared, /*poison=*/true);
  const std::size_t free_bound = dev.memory_info().free;
  const double bound_bytes = static_cast<double>(free_uploaded) - static_cast<double>(free_bound);
  EXPECT_LT(bound_bytes, static_cast<double>(shared->bytes()) / 8)
      << "binding two plans took " << bound_bytes << " bytes beside inputs of " << shared->bytes();
  EXPECT_EQ(shared.use_count(), 3);
  const std::weak_ptr<const driver::DeviceInputs> weak = shared;
  shared.reset();  // (the programs keep it)
  auto run_and_check = [&](driver::CudaProgram& prog, const char* what) {
    prog.launch();
    prog.check_status();
    const std::vector<Tensor> out = prog.outputs();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_LE(oracle_error(out[0], oracle), check_tolerance(DType::F16)) << what;
  };
  run_and_check(*programs[0], "fused");
  run_and_check(*programs[1], "unfused");
  // Re-bound (outputs poisoned): the unfused plan still reads intact inputs.
  programs[0]->bind(weak.lock(), /*poison=*/true);
  EXPECT_EQ(gputest::count_nan(programs[0]->outputs().at(0)), programs[0]->outputs().at(0).numel());
  run_and_check(*programs[1], "unfused after the fused plan's re-bind");
  run_and_check(*programs[0], "fused, re-bound");
  programs.clear();
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace tilefuse
