// The autotuner (driver/tune.h) on the CPU: the config space and its
// pruning, the search by wall time, and the tuning cache (written, read back
// without a search, ignored by retune, keyed by program and device, a corrupt
// entry searched again). The GPU search is the same code with the CUDA
// compile and timing steps; it runs on the device (`tilefuse run --retune`).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "driver/compile.h"
#include "driver/execute.h"
#include "driver/tune.h"
#include "frontend/frontend.h"
#include "reference/inputs.h"
#include "runtime/cache/tuning_cache.h"
#include "schedule/schedule.h"

namespace tilefuse {
namespace {

namespace fs = std::filesystem;
using driver::TuneDevice;

Graph parse_graph(const std::string& source) {
  return parse_program(source, "test.tfs").graph;
}

const char* kSeed =
    "def gather_mm(x: f16[2048, 2048], y: f16[2048, 2048], index: i64[2048]):\n"
    "    return x[index] @ y\n";
const char* kSmall =
    "def small(x: f32[40, 24], y: f32[24, 36], index: i64[20]):\n"
    "    return torch.relu(x[index] @ y)\n";

const KernelStep& gemm_step(const Graph& g, const Plan& plan) {
  const KernelStep* s = driver::largest_gemm_step(plan);
  EXPECT_NE(s, nullptr);
  return *s;
}

bool same(const GemmConfig& a, const GemmConfig& b) {
  return driver::gemm_config_name(a) == driver::gemm_config_name(b) && a.group_m == b.group_m;
}

TEST(TuneSpace, SeedSpaceIsPrunedAndStartsWithTheDefault) {
  const Graph g = parse_graph(kSeed);
  const Plan plan = build_plan(g, PlanKind::kFused);
  const KernelStep& step = gemm_step(g, plan);
  const int64_t limit = 227 * 1024;
  const std::vector<GemmConfig> space =
      driver::gemm_config_space(g, step, tir::Target::cuda(90, true), limit);
  ASSERT_FALSE(space.empty());
  // sm_90a: the wgmma default (BLOCK_K 64) first.
  EXPECT_TRUE(same(space[0], default_gemm_config(g, step, /*wgmma=*/true)));
  EXPECT_EQ(space[0].block_k, 64);
  EXPECT_GE(space.size(), 20u);
  EXPECT_LE(space.size(), 80u);
  std::set<std::string> names;
  bool has_256 = false, has_bk64 = false, has_8_warps = false, has_4_warps = false;
  for (const GemmConfig& c : space) {
    EXPECT_TRUE(names.insert(driver::gemm_config_name(c)).second) << "duplicate";
    EXPECT_LE(driver::gemm_config_shared_bytes(c, 2), limit) << driver::gemm_config_name(c);
    EXPECT_LE(c.block_m * c.block_n / (c.num_warps * 32), 128) << driver::gemm_config_name(c);
    EXPECT_TRUE(c.block_k == 32 || c.block_k == 64) << driver::gemm_config_name(c);
    EXPECT_TRUE(c.num_stages >= 2 && c.num_stages <= 4);
    EXPECT_TRUE(c.num_warps == 4 || c.num_warps == 8);
    EXPECT_EQ(c.group_m, 8);
    // Warp tiles of 16x16 or more: some WM x WN = num_warps divides the tile.
    bool fits = false;
    for (int wm = 1; wm <= c.num_warps; wm *= 2)
      fits = fits || (c.block_m % (wm * 16) == 0 && c.block_n % (c.num_warps / wm * 16) == 0);
    EXPECT_TRUE(fits) << driver::gemm_config_name(c);
    has_256 = has_256 || c.block_m == 256 || c.block_n == 256;
    has_bk64 = has_bk64 || c.block_k == 64;
    has_8_warps = has_8_warps || c.num_warps == 8;
    has_4_warps = has_4_warps || c.num_warps == 4;
  }
  EXPECT_TRUE(has_256 && has_bk64 && has_8_warps && has_4_warps);
  EXPECT_EQ(names.count("256x256x32/3/8"), 0u);  // 256 accumulators a thread
}

TEST(TuneSpace, SharedMemoryLimitPrunes) {
  const Graph g = parse_graph(kSeed);
  const Plan plan = build_plan(g, PlanKind::kFused);
  const KernelStep& step = gemm_step(g, plan);
  const int64_t small = 48 * 1024;
  const auto big = driver::gemm_config_space(g, step, tir::Target::cuda(90, true), 227 * 1024);
  const auto pruned = driver::gemm_config_space(g, step, tir::Target::cuda(80), small);
  EXPECT_LT(pruned.size(), big.size());
  for (size_t i = 1; i < pruned.size(); ++i)  // the default (first) is always kept
    EXPECT_LE(driver::gemm_config_shared_bytes(pruned[i], 2), small)
        << driver::gemm_config_name(pruned[i]);
  EXPECT_EQ(driver::default_max_shared_bytes(tir::Target::cuda(90, true)), 227 * 1024);
  EXPECT_EQ(driver::default_max_shared_bytes(tir::Target::cuda(80)), 163 * 1024);
  EXPECT_EQ(driver::gemm_config_shared_bytes(GemmConfig{128, 128, 64, 3, 8, 8}, 2),
            3 * (128 * 64 + 64 * 128) * 2 + 2048);
}

TEST(TuneSpace, TilesAreNoLargerThanTheProblem) {
  const Graph g = parse_graph(
      "def f(x: f16[20, 40], y: f16[40, 70]):\n"
      "    return x @ y\n");
  const Plan plan = build_plan(g, PlanKind::kFused);
  const KernelStep& step = gemm_step(g, plan);
  const auto space = driver::gemm_config_space(g, step, tir::Target::cuda(80), 163 * 1024);
  ASSERT_FALSE(space.empty());
  EXPECT_TRUE(same(space[0], default_gemm_config(g, step)));
  for (const GemmConfig& c : space) {
    EXPECT_LE(c.block_m, 32) << driver::gemm_config_name(c);   // next_pow2(20)
    EXPECT_LE(c.block_n, 128) << driver::gemm_config_name(c);  // next_pow2(70)
    EXPECT_LE(c.block_k, 64) << driver::gemm_config_name(c);   // next_pow2(40)
    EXPECT_GE(c.block_m, 16);
    EXPECT_LE(c.num_stages, 3);  // ceil(40 / 16) K tiles at most
  }
}

TEST(TuneSpace, F32UsesSmallerKTilesAndTheCpuSpaceIsSmall) {
  const Graph g = parse_graph(
      "def f(x: f32[512, 512], y: f32[512, 512]):\n"
      "    return x @ y\n");
  const Plan plan = build_plan(g, PlanKind::kFused);
  const KernelStep& step = gemm_step(g, plan);
  for (const GemmConfig& c : driver::gemm_config_space(g, step, tir::Target::cuda(80), 163 * 1024))
    EXPECT_LE(c.block_k, 32) << driver::gemm_config_name(c);
  const auto cpu = driver::gemm_config_space(g, step, tir::Target::cpu(), 0);
  EXPECT_GE(cpu.size(), 2u);
  EXPECT_LE(cpu.size(), 4u);
  EXPECT_TRUE(same(cpu[0], default_gemm_config(g, step)));
}

// A fresh TILEFUSE_CACHE_DIR per test.
class TuneCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tilefuse_tune_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    const char* old = std::getenv("TILEFUSE_CACHE_DIR");
    if (old) old_ = old;
    had_old_ = old != nullptr;
    ::setenv("TILEFUSE_CACHE_DIR", dir_.c_str(), 1);
    ::unsetenv("TILEFUSE_NO_CACHE");
  }
  void TearDown() override {
    if (had_old_)
      ::setenv("TILEFUSE_CACHE_DIR", old_.c_str(), 1);
    else
      ::unsetenv("TILEFUSE_CACHE_DIR");
    fs::remove_all(dir_);
  }
  static driver::TuneOptions quick() {
    driver::TuneOptions o;
    o.warmup = 0;
    o.repeats = 1;
    o.flush_l2 = false;
    o.cpu_threads = 1;
    o.threads = 2;
    o.progress = false;
    return o;
  }
  fs::path dir_;
  std::string old_;
  bool had_old_ = false;
};

TEST_F(TuneCache, CpuTuningPicksAConfigAndWritesTheCache) {
  const Graph g = parse_graph(kSmall);
  const std::vector<Tensor> inputs = make_random_inputs(g, 3);
  driver::TuneResult r = driver::tune(g, inputs, quick());
  EXPECT_FALSE(r.from_cache);
  EXPECT_TRUE(r.cache_written);
  EXPECT_EQ(r.failed, 0);
  EXPECT_GE(r.candidates, 4);  // two plans, at least two configs each
  EXPECT_EQ(r.choice.candidates.size(), static_cast<size_t>(r.candidates));
  ASSERT_TRUE(r.choice.gemm_config.has_value());
  EXPECT_GE(r.choice.fused_us, 0);
  EXPECT_GE(r.choice.unfused_us, 0);
  const double winner = r.choice.plan == PlanKind::kFused ? r.choice.fused_us : r.choice.unfused_us;
  EXPECT_LE(winner, std::min(r.choice.fused_us, r.choice.unfused_us));
  for (const driver::TuneCandidate& c : r.choice.candidates) {
    EXPECT_GE(c.median_us, 0) << c.error;
    EXPECT_EQ(c.repeats, 1);
  }
  EXPECT_EQ(r.choice.device, "cpu");
  EXPECT_FALSE(r.choice.tuned_at.empty());

  std::optional<driver::TunedChoice> cached = driver::cached_choice(g, driver::cpu_tune_device());
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->plan, r.choice.plan);
  EXPECT_TRUE(same(*cached->gemm_config, *r.choice.gemm_config));
  EXPECT_EQ(cached->candidates.size(), r.choice.candidates.size());

  // explain's account.
  nlohmann::json account = driver::tuning_account(g, "cpu");
  EXPECT_EQ(account["tuned"], true);
  EXPECT_EQ(account["plan"], std::string(plan_kind_name(r.choice.plan)));
  EXPECT_EQ(account["config"], driver::gemm_config_name(*r.choice.gemm_config));
  EXPECT_EQ(account["candidates"], r.candidates);
  EXPECT_TRUE(account["speedup"].is_number());
  EXPECT_GE(account["speedup"].get<double>(), 1.0);
  const std::string text = driver::render_tuning_text(account);
  EXPECT_EQ(text.rfind("tuning (cpu, ", 0), 0u) << text;
  EXPECT_NE(text.find(driver::gemm_config_name(*r.choice.gemm_config) + " won"), std::string::npos)
      << text;
  EXPECT_NE(text.find("x faster); " + std::to_string(r.candidates) + " candidates (0 skipped)"),
            std::string::npos)
      << text;
  EXPECT_EQ(driver::render_tuning_text({{"tuned", false}}).rfind("tuning: none cached", 0), 0u);
  EXPECT_EQ(driver::tuning_account(g, "")["tuned"], true);  // found by reading the directory
  EXPECT_EQ(driver::tuning_account(g, "sm_90a")["tuned"], false);
  EXPECT_EQ(driver::tuning_account(parse_graph(kSeed), "")["tuned"], false);
}

TEST_F(TuneCache, SecondCallReadsTheCacheAndRetuneSearchesAgain) {
  const Graph g = parse_graph(kSmall);
  const std::vector<Tensor> inputs = make_random_inputs(g, 3);
  driver::TuneResult first = driver::tune(g, inputs, quick());
  ASSERT_FALSE(first.from_cache);
  driver::TuneResult second = driver::tune(g, inputs, quick());
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.choice.plan, first.choice.plan);
  EXPECT_EQ(second.choice.tuned_at, first.choice.tuned_at);
  EXPECT_EQ(second.nvrtc_kernels, 0);

  driver::TuneOptions retune = quick();
  retune.retune = true;
  driver::TuneResult third = driver::tune(g, inputs, retune);
  EXPECT_FALSE(third.from_cache);
  EXPECT_TRUE(third.cache_written);

  driver::TuneOptions no_cache = quick();
  no_cache.use_cache = false;
  EXPECT_FALSE(driver::tune(g, inputs, no_cache).from_cache);
}

TEST_F(TuneCache, KeyDependsOnShapesProgramAndDevice) {
  const Graph a = parse_graph(kSmall);
  const Graph b = parse_graph(
      "def small(x: f32[40, 24], y: f32[24, 38], index: i64[20]):\n"
      "    return torch.relu(x[index] @ y)\n");
  const Graph c = parse_graph(
      "def small(x: f16[40, 24], y: f16[24, 36], index: i64[20]):\n"
      "    return torch.relu(x[index] @ y)\n");
  TuneDevice h200;
  h200.name = "NVIDIA H200";
  h200.target = tir::Target::cuda(90, true);
  TuneDevice a100;
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.target = tir::Target::cuda(80);
  EXPECT_EQ(h200.key(), "NVIDIA H200 sm_90a");
  const TuneDevice cpu = driver::cpu_tune_device();
  const std::string ka = driver::tuning_key(a, cpu).material();
  EXPECT_EQ(ka, driver::tuning_key(parse_graph(kSmall), cpu).material());
  EXPECT_NE(ka, driver::tuning_key(b, cpu).material());
  EXPECT_NE(ka, driver::tuning_key(c, cpu).material());
  EXPECT_NE(ka, driver::tuning_key(a, h200).material());
  EXPECT_NE(driver::tuning_key(a, h200).material(), driver::tuning_key(a, a100).material());
  // A tuning with allow_tf32 is one of its own (other kernels).
  EXPECT_EQ(driver::tuning_key(a, h200, false).material(), driver::tuning_key(a, h200).material());
  EXPECT_NE(driver::tuning_key(a, h200, true).material(), driver::tuning_key(a, h200).material());

  // A tuning of one shape is not another's.
  driver::tune(a, make_random_inputs(a, 1), quick());
  EXPECT_TRUE(driver::cached_choice(a, cpu).has_value());
  EXPECT_FALSE(driver::cached_choice(b, cpu).has_value());
  EXPECT_FALSE(driver::cached_choice(a, h200).has_value());
  EXPECT_FALSE(driver::cached_choice(a, cpu, /*allow_tf32=*/true).has_value());
  driver::TuneOptions tf32 = quick();
  tf32.allow_tf32 = true;
  EXPECT_FALSE(driver::tune(a, make_random_inputs(a, 1), tf32).from_cache);
  EXPECT_TRUE(driver::cached_choice(a, cpu, true).has_value());
  EXPECT_TRUE(driver::tuning_account(a, "cpu", true)["tuned"].get<bool>());
}

TEST_F(TuneCache, CorruptOrMalformedEntriesAreTunedAgain) {
  const Graph g = parse_graph(kSmall);
  const std::vector<Tensor> inputs = make_random_inputs(g, 3);
  ASSERT_FALSE(driver::tune(g, inputs, quick()).from_cache);
  const std::string material = driver::tuning_key(g, driver::cpu_tune_device()).material();
  std::optional<cache::TuningCache> tc = cache::default_tuning_cache();
  ASSERT_TRUE(tc.has_value());
  const std::string path = tc->store().entry_path(cache::TuningCache::key_of(material));
  ASSERT_TRUE(fs::exists(path));

  // Garbage bytes in the entry file.
  { std::ofstream(path, std::ios::binary | std::ios::trunc) << "not a cache entry"; }
  EXPECT_FALSE(driver::cached_choice(g, driver::cpu_tune_device()).has_value());
  driver::TuneResult r = driver::tune(g, inputs, quick());
  EXPECT_FALSE(r.from_cache);
  EXPECT_TRUE(r.cache_written);
  EXPECT_TRUE(driver::cached_choice(g, driver::cpu_tune_device()).has_value());

  // A well-formed entry whose value is not a tuning.
  for (const nlohmann::json& bad :
       {nlohmann::json{{"plan", 3}}, nlohmann::json::array(),
        nlohmann::json{{"format", "tilefuse-tune-1"}, {"plan", "fused"}}}) {
    ASSERT_TRUE(tc->put(material, bad));
    EXPECT_FALSE(driver::cached_choice(g, driver::cpu_tune_device()).has_value()) << bad.dump();
    EXPECT_FALSE(driver::tune(g, inputs, quick()).from_cache) << bad.dump();
  }
  // A config with a wrong field type.
  nlohmann::json v = tc->get(material).value();
  v["gemm_config"]["block_m"] = "128";
  ASSERT_TRUE(tc->put(material, v));
  EXPECT_FALSE(driver::tune(g, inputs, quick()).from_cache);
}

TEST_F(TuneCache, EveryCandidateFailingIsTheRunsOwnErrorAndIsNotCached) {
  const Graph g = parse_graph(
      "def f(x: f32[6, 5], w: f32[5, 3], i: i64[4] in [6, 7)):\n"
      "    return x[i] @ w\n");
  const std::vector<Tensor> inputs = make_random_inputs(g, 1);
  driver::CompileOptions co;
  std::string expected;
  try {
    driver::execute(driver::compile(g, co), inputs);
  } catch (const UserError& e) {
    expected = e.what();
  }
  ASSERT_FALSE(expected.empty());
  try {
    driver::tune(g, inputs, quick());
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
  EXPECT_FALSE(driver::cached_choice(g, driver::cpu_tune_device()).has_value());
}

TEST_F(TuneCache, AProgramWithoutAGemmTunesThePlansAlone) {
  const Graph g = parse_graph(
      "def f(x: f32[64, 48], y: f32[64, 48]):\n"
      "    return torch.relu(x * y + 1.0)\n");
  driver::TuneResult r = driver::tune(g, make_random_inputs(g, 2), quick());
  EXPECT_EQ(r.candidates, 2);  // one per plan
  EXPECT_FALSE(r.choice.gemm_config.has_value());
  EXPECT_GE(r.choice.fused_us, 0);
  EXPECT_TRUE(driver::tune(g, make_random_inputs(g, 2), quick()).from_cache);
}

TEST(TuneJson, ChoiceRoundTrips) {
  driver::TunedChoice c;
  c.plan = PlanKind::kUnfused;
  c.gemm_config = GemmConfig{64, 128, 64, 2, 4, 8};
  c.unfused_config = c.gemm_config;
  c.fused_config = GemmConfig{128, 128, 32, 3, 8, 8};
  c.fused_us = 52.0;
  c.unfused_us = 38.1;
  driver::TuneCandidate t;
  t.plan = PlanKind::kFused;
  t.config = c.fused_config;
  t.error = "NVRTC: too many resources";
  c.candidates.push_back(t);
  c.tuned_at = "2026-11-30T05:00:00Z";
  c.tuning_seconds = 12.5;
  c.device = "NVIDIA H200 sm_90a";
  std::optional<driver::TunedChoice> back = driver::choice_from_json(driver::choice_to_json(c));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->plan, PlanKind::kUnfused);
  EXPECT_TRUE(same(*back->gemm_config, *c.gemm_config));
  EXPECT_TRUE(same(*back->fused_config, *c.fused_config));
  EXPECT_DOUBLE_EQ(back->unfused_us, 38.1);
  ASSERT_EQ(back->candidates.size(), 1u);
  EXPECT_EQ(back->candidates[0].error, t.error);
  EXPECT_EQ(back->candidates[0].median_us, -1);
  EXPECT_EQ(back->summary(), "unfused, 64x128x64/2/4, 38.1 us vs fused 52.0 us");
  EXPECT_TRUE(same(*back->lower_for(PlanKind::kFused).gemm_config, *c.fused_config));
}

}  // namespace
}  // namespace tilefuse
