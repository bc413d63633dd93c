// The autotuner (driver/tune.h) on the CPU: the config space and its
// pruning, the search by wall time, and the tuning cache (written, read back
// without a search, ignored by retune, keyed by program and device, a corrupt
// entry searched again). The GPU search is the same code with the CUDA
// compile and timing steps; it runs on the device (`tilefuse run --retune`).
// The unfused+cuBLASLt candidate: the pure decision (pick_plan), which
// programs have one (cublaslt_gemm_kernels), its fields in the cache (with
// and without them), the summary and explain's account; its measurement is
// in tests/gpu/tune_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include "driver/compile.h"
#include "driver/cuda_program.h"
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
  std::set<uint64_t> kernels;
  for (const GemmConfig& c : space) {
    EXPECT_TRUE(names.insert(driver::gemm_config_name(c)).second) << "duplicate";
    // The compiler's own account of the config: within the limits, and a
    // kernel of its own.
    const driver::ConfigCost cost = driver::config_cost(g, PlanKind::kFused, c,
                                                        tir::Target::cuda(90, true), {}, limit, 128);
    EXPECT_TRUE(cost.feasible) << driver::gemm_config_name(c) << ": " << cost.why;
    EXPECT_LE(cost.shared_bytes, limit) << driver::gemm_config_name(c);
    EXPECT_LE(cost.accumulators, 128) << driver::gemm_config_name(c);
    EXPECT_TRUE(kernels.insert(cost.fingerprint).second) << "same kernel: " << driver::gemm_config_name(c);
    EXPECT_TRUE(c.block_k == 32 || c.block_k == 64) << driver::gemm_config_name(c);
    // (a persistent kernel also with one stage more and its deepest ring
    // of at most 8: its ring runs across tiles; a single-wave config also
    // with a deep ring of 8, 6 or 5)
    const bool single_wave = (2048 / c.block_m) * (2048 / c.block_n) < 132;
    EXPECT_TRUE(c.num_stages >= 2 &&
                c.num_stages <= (c.persistent || single_wave ? 8 : 4))
        << driver::gemm_config_name(c);
    EXPECT_TRUE(c.num_warps == 4 || c.num_warps == 8);
    EXPECT_EQ(c.group_m, 8);
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
    EXPECT_LE(driver::config_cost(g, PlanKind::kFused, pruned[i], tir::Target::cuda(80), {}, 0,
                                  128)
                  .shared_bytes,
              small)
        << driver::gemm_config_name(pruned[i]);
  EXPECT_EQ(driver::default_max_shared_bytes(tir::Target::cuda(90, true)), 227 * 1024);
  EXPECT_EQ(driver::default_max_shared_bytes(tir::Target::cuda(80)), 163 * 1024);
  // The compiler's shared memory for a config: the rings, the row indices of
  // the gather and the mbarriers, 1024-byte aligned where wgmma reads.
  const driver::ConfigCost cost = driver::config_cost(
      g, PlanKind::kFused, GemmConfig{128, 128, 64, 3, 8, 8}, tir::Target::cuda(90, true), {}, 0,
      128);
  EXPECT_TRUE(cost.feasible) << cost.why;
  EXPECT_GE(cost.shared_bytes, 3 * (128 * 64 + 64 * 128) * 2);
  EXPECT_EQ(cost.threads, 384);  // two MMA warpgroups and the producer
  EXPECT_EQ(cost.mma_threads, 256);
  EXPECT_EQ(cost.accumulators, 64);
  const driver::ConfigCost over = driver::config_cost(
      g, PlanKind::kFused, GemmConfig{256, 256, 64, 4, 8, 8}, tir::Target::cuda(90, true), {},
      227 * 1024, 128);
  EXPECT_FALSE(over.feasible);
  EXPECT_FALSE(over.why.empty());
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

// Issue 12, item 3: a GEMM with K and N of at most 256 (pointcloud_gather's
// shape, fewer rows) also gets tiles of the whole N and the whole K in one
// stage, with more rows and warps a block; a GEMM past 256 does not.
TEST(TuneSpace, BandwidthBoundGemmsGetWholeKAndWholeNTiles) {
  const Graph g = parse_graph(
      "def pc(x: f16[4096, 96], idx: i64[16384] in [0, 4096), w: f16[96, 128]):\n"
      "    return x[idx] @ w\n");
  const Plan plan = build_plan(g, PlanKind::kFused);
  const KernelStep& step = gemm_step(g, plan);
  EXPECT_TRUE(driver::bandwidth_bound_gemm(step.gemm));
  const tir::Target sm90a = tir::Target::cuda(90, true);
  const auto space = driver::gemm_config_space(g, step, sm90a, 227 * 1024);
  std::set<std::string> names;
  for (const GemmConfig& c : space) names.insert(driver::gemm_config_name(c));
  // Whole K (96 -> 128) in one stage, whole N (128), 64..256 rows.
  int whole = 0;
  for (const GemmConfig& c : space) {
    const driver::ConfigCost cost =
        driver::config_cost(g, PlanKind::kFused, c, sm90a, {}, 227 * 1024, 128);
    EXPECT_TRUE(cost.feasible) << driver::gemm_config_name(c) << ": " << cost.why;
    if (c.block_k == 128 && c.num_stages == 1 && c.block_n == 128) ++whole;
  }
  EXPECT_GE(whole, 3) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("64x128x128/1/4")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("128x128x128/1/8")) << ::testing::PrintToString(names);
  // K = 2048: not bandwidth-bound, no such tile.
  const Graph seed = parse_graph(kSeed);
  const Plan seed_plan = build_plan(seed, PlanKind::kFused);
  EXPECT_FALSE(driver::bandwidth_bound_gemm(gemm_step(seed, seed_plan).gemm));
  // N = 512 with K = 96: not either.
  const Graph wide = parse_graph(
      "def f(x: f16[4096, 96], w: f16[96, 512]):\n"
      "    return x @ w\n");
  const Plan wide_plan = build_plan(wide, PlanKind::kFused);
  EXPECT_FALSE(driver::bandwidth_bound_gemm(gemm_step(wide, wide_plan).gemm));
  for (const GemmConfig& c :
       driver::gemm_config_space(wide, gemm_step(wide, wide_plan), sm90a, 227 * 1024))
    EXPECT_LE(c.block_k, 64) << driver::gemm_config_name(c);
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

// Few tiles and a long K (the fewtiles bench shape: 32 tiles of 128x128 for
// 132 SMs): the space tries split-K on the configs that leave SMs idle,
// each split with at least 2 K tiles, none empty, within two waves; the
// many-tile seed with 128x128 tiles gets no split of that config. The
// name, the JSON form (absent split_k reads as 1) and explain's reason.
TEST(TuneSpace, FewTilesGetSplitKConfigs) {
  const Graph g = parse_graph(
      "def f(x: f16[2048, 8192], idx: i64[512] in [0, 2048), w: f16[8192, 1024]):\n"
      "    return x[idx] @ w\n");
  const Plan plan = build_plan(g, PlanKind::kFused);
  const KernelStep& step = gemm_step(g, plan);
  const auto space = driver::gemm_config_space(g, step, tir::Target::cuda(90, true), 227 * 1024,
                                               PlanKind::kFused, {}, /*sm_count=*/132);
  std::set<int> splits;
  for (const GemmConfig& c : space) {
    if (c.split_k == 1) continue;
    splits.insert(c.split_k);
    const int64_t tiles =
        ((512 + c.block_m - 1) / c.block_m) * ((1024 + c.block_n - 1) / c.block_n);
    const int64_t k_tiles = (8192 + c.block_k - 1) / c.block_k;
    const int64_t per = (k_tiles + c.split_k - 1) / c.split_k;
    EXPECT_LT(tiles, 132) << driver::gemm_config_name(c);
    EXPECT_LE(tiles * c.split_k, 264) << driver::gemm_config_name(c);
    EXPECT_GE(per, 2) << driver::gemm_config_name(c);
    EXPECT_LT((c.split_k - 1) * per, k_tiles) << driver::gemm_config_name(c);
    EXPECT_NE(driver::gemm_config_name(c).find("/splitk" + std::to_string(c.split_k)),
              std::string::npos);
    const std::optional<GemmConfig> back =
        driver::gemm_config_from_json(driver::gemm_config_to_json(c));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->split_k, c.split_k);
  }
  EXPECT_TRUE(splits.count(4)) << "no split of 4 for 32 tiles";
  // Without the SM count (0) no split is tried.
  for (const GemmConfig& c : driver::gemm_config_space(
           g, step, tir::Target::cuda(90, true), 227 * 1024, PlanKind::kFused, {}, /*sm_count=*/0))
    EXPECT_EQ(c.split_k, 1);
  GemmConfig four{128, 128, 64, 3, 8, 8, 4};
  EXPECT_EQ(driver::gemm_config_name(four), "128x128x64/3/8/splitk4");
  const std::string why = driver::split_k_reason(four, step, 132);
  EXPECT_NE(why.find("split-K 4: 32 tiles for 132 SMs"), std::string::npos) << why;
  EXPECT_NE(why.find("128 blocks, 32 of 128 K tiles each"), std::string::npos) << why;
  // A cache entry written before split-K (no "split_k") is a config of 1.
  nlohmann::json old = driver::gemm_config_to_json(GemmConfig{});
  EXPECT_FALSE(old.contains("split_k"));
  EXPECT_EQ(driver::gemm_config_from_json(old)->split_k, 1);
  old["split_k"] = 0;
  EXPECT_FALSE(driver::gemm_config_from_json(old).has_value());
}

// The gather_heavy bench shape (bf16 16384 x 1024 x 1024, a gathered A) and
// its fused plan's config space on sm_90a with 132 SMs.
struct GatherHeavySpace {
  Graph g = parse_graph(
      "def f(x: bf16[16384, 1024], idx: i64[16384] in [0, 16384), w: bf16[1024, 1024]):\n"
      "    return x[idx] @ w\n");
  Plan plan = build_plan(g, PlanKind::kFused);
  const KernelStep& step = gemm_step(g, plan);
  tir::Target sm90a = tir::Target::cuda(90, true);
  std::vector<GemmConfig> space =
      driver::gemm_config_space(g, step, sm90a, 227 * 1024, PlanKind::kFused, {}, 132);
};

// A gathered A on sm_90a (the gather_heavy bench shape): the space tries
// at most 4 register_a twins of its warp-specialized BLOCK_K 64 configs,
// largest tiles first, each one the register_a pass took (config_cost
// says so) beside its shared-memory twin, and the 2 deepest (persistent,
// most stages) again with a 256-byte L2 prefetch (/ra256, a kernel of its
// own); the name ends in
// "/ra" or "/ra256" and the JSON form round-trips. No twin for an
// ungathered GEMM or on sm_80.
// The split tail's twins (codegen/cuda/passes/split_tail.h): of the
// largest tile's one-tile-a-block arrangements (register A with or without
// its L2 prefetch, or none) the deepest ring again with /tailT, T the
// default tail, each a kernel the split_tail pass takes and a config that
// survives the tune cache's JSON; no persistent one (measured slower).
TEST(TuneSpace, SplitTailTwins) {
  const GatherHeavySpace gh;
  std::set<std::string> names;
  for (const GemmConfig& c : gh.space) names.insert(driver::gemm_config_name(c));
  int twins = 0;
  for (const GemmConfig& c : gh.space) {
    if (c.split_tail == 0) continue;
    ++twins;
    const std::string name = driver::gemm_config_name(c);
    GemmConfig plain = c;
    plain.split_tail = 0;
    EXPECT_TRUE(names.count(driver::gemm_config_name(plain))) << name << " has no plain twin";
    EXPECT_FALSE(c.persistent) << name;
    EXPECT_EQ(c.split_tail, std::min(c.register_a ? 3 : c.num_stages - 1, c.num_stages - 1))
        << name;
    const driver::ConfigCost cost =
        driver::config_cost(gh.g, PlanKind::kFused, c, gh.sm90a, {}, 227 * 1024, 128);
    EXPECT_TRUE(cost.feasible && cost.split_tail) << name << cost.why;
    const std::optional<GemmConfig> back =
        driver::gemm_config_from_json(driver::gemm_config_to_json(c));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(driver::gemm_config_name(*back), name);
  }
  EXPECT_GE(twins, 1) << ::testing::PrintToString(names);
  EXPECT_LE(twins, 3) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("128x256x64/4/8/tail3")) << ::testing::PrintToString(names);
}

TEST(TuneSpace, GatheredAGetsRegisterATwins) {
  const GatherHeavySpace gh;
  const Graph& g = gh.g;
  const KernelStep& step = gh.step;
  const tir::Target& sm90a = gh.sm90a;
  const std::vector<GemmConfig>& space = gh.space;
  std::set<std::string> names;
  for (const GemmConfig& c : space) names.insert(driver::gemm_config_name(c));
  int twins = 0, prefetch_twins = 0;
  for (const GemmConfig& c : space) {
    if (!c.register_a || c.split_tail > 0) continue;  // (split tails: SplitTailTwins)
    const std::string name = driver::gemm_config_name(c);
    const bool l2 = c.register_a_l2_prefetch == 256;
    EXPECT_TRUE(l2 || c.register_a_l2_prefetch == 0) << name;
    const std::string suffix = l2 ? "/ra256" : "/ra";
    ++(l2 ? prefetch_twins : twins);
    ASSERT_GT(name.size(), suffix.size());
    EXPECT_EQ(name.substr(name.size() - suffix.size()), suffix) << name;
    EXPECT_EQ(c.block_k, 64) << name;
    const std::string plain_name = name.substr(0, name.size() - suffix.size());
    EXPECT_TRUE(names.count(plain_name)) << name << " has no plain twin";
    if (l2) {
      EXPECT_TRUE(names.count(plain_name + "/ra")) << name << " has no /ra twin";
    }
    const driver::ConfigCost cost =
        driver::config_cost(g, PlanKind::kFused, c, sm90a, {}, 227 * 1024, 128);
    EXPECT_TRUE(cost.feasible && cost.register_a) << name << cost.why;
    const std::optional<GemmConfig> back =
        driver::gemm_config_from_json(driver::gemm_config_to_json(c));
    ASSERT_TRUE(back.has_value());
    EXPECT_TRUE(back->register_a);
    EXPECT_EQ(back->register_a_l2_prefetch, c.register_a_l2_prefetch);
    EXPECT_EQ(driver::gemm_config_name(*back), name);
  }
  EXPECT_GE(twins, 1) << ::testing::PrintToString(names);
  EXPECT_LE(twins, 4) << ::testing::PrintToString(names);
  EXPECT_EQ(prefetch_twins, std::min(twins, 2)) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("128x256x64/4/8/persistent/ra")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("128x256x64/4/8/persistent/ra256")) << ::testing::PrintToString(names);
  // The prefetch twin is a kernel of its own: its fragment loads say .L2::256B.
  {
    GemmConfig ra{128, 256, 64, 4, 8, 8};
    ra.persistent = ra.register_a = true;
    GemmConfig ra256 = ra;
    ra256.register_a_l2_prefetch = 256;
    const driver::ConfigCost a =
        driver::config_cost(g, PlanKind::kFused, ra, sm90a, {}, 227 * 1024, 128);
    const driver::ConfigCost b =
        driver::config_cost(g, PlanKind::kFused, ra256, sm90a, {}, 227 * 1024, 128);
    EXPECT_TRUE(a.register_a && b.register_a) << a.why << b.why;
    EXPECT_NE(a.fingerprint, b.fingerprint);
    // A prefetch size without register A, or another size, is not a config.
    nlohmann::json j = driver::gemm_config_to_json(ra256);
    EXPECT_EQ(j.at("register_a_l2_prefetch"), 256);
    j["register_a_l2_prefetch"] = 128;
    EXPECT_FALSE(driver::gemm_config_from_json(j).has_value());
    j["register_a_l2_prefetch"] = 256;
    j.erase("register_a");
    EXPECT_FALSE(driver::gemm_config_from_json(j).has_value());
  }
  // A plain config's kernel is not register_a; the JSON form of one has no key.
  GemmConfig plain{128, 256, 64, 4, 8, 8};
  EXPECT_FALSE(driver::config_cost(g, PlanKind::kFused, plain, sm90a, {}, 227 * 1024, 128).register_a);
  EXPECT_FALSE(driver::gemm_config_to_json(plain).contains("register_a"));
  // No twin on sm_80, nor for a GEMM without a gather.
  for (const GemmConfig& c : driver::gemm_config_space(g, step, tir::Target::cuda(80), 163 * 1024,
                                                       PlanKind::kFused, {}, 132))
    EXPECT_FALSE(c.register_a) << driver::gemm_config_name(c);
  const Graph dense = parse_graph(
      "def f(x: bf16[16384, 1024], w: bf16[1024, 1024]):\n    return x @ w\n");
  const Plan dense_plan = build_plan(dense, PlanKind::kFused);
  for (const GemmConfig& c : driver::gemm_config_space(dense, gemm_step(dense, dense_plan), sm90a,
                                                       227 * 1024, PlanKind::kFused, {}, 132))
    EXPECT_FALSE(c.register_a) << driver::gemm_config_name(c);
}

// Many tiles (the gather_heavy bench shape: 512 tiles of 128x256 for 132
// SMs): the space tries persistent kernels of the largest tiles, with their
// stages and one fewer, each one the persistent pass took (its source says
// so); a single-wave problem, a symbolic size or sm_80 gets none. The name
// and the JSON form round-trip (absent "persistent" reads as false).
TEST(TuneSpace, ManyTilesGetPersistentConfigs) {
  const GatherHeavySpace gh;
  const Graph& g = gh.g;
  const KernelStep& step = gh.step;
  const tir::Target& sm90a = gh.sm90a;
  const std::vector<GemmConfig>& space = gh.space;
  std::set<std::string> names;
  int persistent = 0;
  for (const GemmConfig& c : space) {
    names.insert(driver::gemm_config_name(c));
    if (!c.persistent) continue;
    ++persistent;
    EXPECT_EQ(c.split_k, 1);
    const int64_t tiles = (16384 / c.block_m) * ((1024 + c.block_n - 1) / c.block_n);
    EXPECT_GT(tiles, 132) << driver::gemm_config_name(c);
    const driver::ConfigCost cost =
        driver::config_cost(g, PlanKind::kFused, c, sm90a, {}, 227 * 1024, 128);
    EXPECT_TRUE(cost.feasible && cost.persistent) << driver::gemm_config_name(c) << cost.why;
    // (A ping-pong config is persistent too, and its kernel has two teams.)
    EXPECT_EQ(cost.pingpong, c.pingpong) << driver::gemm_config_name(c);
    EXPECT_NE(driver::gemm_config_name(c).find(c.pingpong      ? "/pingpong"
                                               : c.stream_k > 0 ? "/streamk"
                                                                : "/persistent"),
              std::string::npos);
    const std::optional<GemmConfig> back =
        driver::gemm_config_from_json(driver::gemm_config_to_json(c));
    ASSERT_TRUE(back.has_value());
    EXPECT_TRUE(back->persistent);
    EXPECT_EQ(back->pingpong, c.pingpong);
  }
  EXPECT_GE(persistent, 2) << ::testing::PrintToString(names);
  // (12, register_a's two /ra256 twins of persistent ones, and at most 4
  // split-tail twins: SplitTailTwins)
  EXPECT_LE(persistent, 18) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("128x256x64/3/8/persistent")) << ::testing::PrintToString(names);
  // No persistent kernel on sm_80, or without the SM count.
  for (const GemmConfig& c : driver::gemm_config_space(g, step, tir::Target::cuda(80), 163 * 1024,
                                                       PlanKind::kFused, {}, 132))
    EXPECT_FALSE(c.persistent) << driver::gemm_config_name(c);
  for (const GemmConfig& c :
       driver::gemm_config_space(g, step, sm90a, 227 * 1024, PlanKind::kFused, {}, 0))
    EXPECT_FALSE(c.persistent) << driver::gemm_config_name(c);
  // A cache entry without "persistent" is not persistent; a wrong type is a miss.
  nlohmann::json old = driver::gemm_config_to_json(GemmConfig{});
  EXPECT_FALSE(old.contains("persistent"));
  EXPECT_FALSE(driver::gemm_config_from_json(old)->persistent);
  old["persistent"] = 1;
  EXPECT_FALSE(driver::gemm_config_from_json(old).has_value());
}

// A short K loop (K = 96: two K tiles a tile) also gets its persistent
// kernels with one stage more than the base config: the ring then holds
// the next tiles' stages (pointcloud_gather: 128x128x64/3/8/persistent).
// Stream-K: a GEMM of a few waves whose last is at most half full (180
// tiles of 128x256 for 132 SMs) gets the largest persistent config again
// with stream-K over the SMs, which the persistent pass takes; gather_heavy
// (512 tiles: the last wave 88% full), the same shape with a gathered A, a
// single partial wave and sm_80 get none. Its name and JSON form
// round-trip.
TEST(TuneSpace, APartLastWaveGetsAStreamKConfig) {
  const tir::Target sm90a = tir::Target::cuda(90, true);
  auto stream_k_configs = [&](const char* source, const tir::Target& target) {
    const Graph g = parse_graph(source);
    const Plan plan = build_plan(g, PlanKind::kFused);
    std::vector<GemmConfig> out;
    for (const GemmConfig& c : driver::gemm_config_space(g, gemm_step(g, plan), target,
                                                         227 * 1024, PlanKind::kFused, {}, 132))
      if (c.stream_k > 0) {
        out.push_back(c);
        EXPECT_TRUE(driver::config_cost(g, PlanKind::kFused, c, target, {}, 227 * 1024, 128)
                        .persistent)
            << driver::gemm_config_name(c);
      }
    return out;
  };
  const char* waves = "def f(x: f16[2304, 4096], w: f16[4096, 2560]):\n    return x @ w\n";
  const std::vector<GemmConfig> sk = stream_k_configs(waves, sm90a);
  ASSERT_EQ(sk.size(), 1u);
  EXPECT_EQ(sk[0].stream_k, 132);
  EXPECT_TRUE(sk[0].persistent);
  EXPECT_EQ(sk[0].split_k, 1);
  const std::string name = driver::gemm_config_name(sk[0]);
  EXPECT_NE(name.find("/streamk132"), std::string::npos) << name;
  const std::optional<GemmConfig> back =
      driver::gemm_config_from_json(driver::gemm_config_to_json(sk[0]));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->stream_k, 132);
  EXPECT_TRUE(back->persistent);
  EXPECT_TRUE(stream_k_configs(waves, tir::Target::cuda(80)).empty());
  EXPECT_TRUE(stream_k_configs("def f(x: bf16[16384, 1024], idx: i64[16384] in [0, 16384), "
                               "w: bf16[1024, 1024]):\n    return x[idx] @ w\n",
                               sm90a)
                  .empty());
  EXPECT_TRUE(
      stream_k_configs("def f(x: f16[512, 8192], w: f16[8192, 1024]):\n    return x @ w\n", sm90a)
          .empty());
  EXPECT_TRUE(stream_k_configs("def f(x: f16[2304, 4096], idx: i64[2304] in [0, 2304), "
                               "w: f16[4096, 2560]):\n    return x[idx] @ w\n",
                               sm90a)
                  .empty());
}

TEST(TuneSpace, ShortKLoopsGetAPersistentStageMore) {
  const Graph g = parse_graph(
      "def pc(x: f16[262144, 96], idx: i64[1048576] in [0, 262144), w: f16[96, 128]):\n"
      "    return x[idx] @ w\n");
  const Plan plan = build_plan(g, PlanKind::kFused);
  const tir::Target sm90a = tir::Target::cuda(90, true);
  std::set<std::string> names;
  for (const GemmConfig& c : driver::gemm_config_space(g, gemm_step(g, plan), sm90a, 227 * 1024,
                                                       PlanKind::kFused, {}, 132))
    names.insert(driver::gemm_config_name(c));
  EXPECT_TRUE(names.count("128x128x64/2/8")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("128x128x64/3/8/persistent")) << ::testing::PrintToString(names);
  // BLOCK_K 32 (wgmma, 64-byte rows): each base's deepest ring that fits
  // beside the staged epilogue (256x128 with 8 stages would not: its
  // epilogue would be stored from registers).
  EXPECT_TRUE(names.count("256x128x32/6/8/persistent")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("128x128x32/8/4/persistent")) << ::testing::PrintToString(names);
  EXPECT_FALSE(names.count("256x128x32/8/8/persistent")) << ::testing::PrintToString(names);
}

// Small M on sm_90a (issue 12, item 2): M = 32 also gets the 64-row wgmma
// tile (rows past M masked), and with few tiles a deep ring (8 stages where
// they fit), with and without a K split; sm_80 keeps tiles no larger than M.
TEST(TuneSpace, SmallMGetsTheWgmmaTileAndDeepRings) {
  const Graph g = parse_graph(
      "def d(x: f16[4096, 4096], idx: i64[32] in [0, 4096), w: f16[4096, 11008]):\n"
      "    return x[idx] @ w\n");
  const Plan plan = build_plan(g, PlanKind::kFused);
  std::set<std::string> names;
  for (const GemmConfig& c : driver::gemm_config_space(g, gemm_step(g, plan),
                                                       tir::Target::cuda(90, true), 227 * 1024,
                                                       PlanKind::kFused, {}, 132))
    names.insert(driver::gemm_config_name(c));
  EXPECT_TRUE(names.count("64x128x64/8/4")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("64x128x64/8/4/splitk2")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("32x128x64/3/4")) << ::testing::PrintToString(names);
  for (const GemmConfig& c : driver::gemm_config_space(g, gemm_step(g, plan), tir::Target::cuda(80),
                                                       163 * 1024, PlanKind::kFused, {}, 108))
    EXPECT_LE(c.block_m, 32) << driver::gemm_config_name(c);
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
  // Tunes `g` on the CPU afresh (not from the cache); `material` is its
  // entry's key material in `tc`, the default tuning cache.
  static void tune_afresh(const Graph& g, const std::vector<Tensor>& inputs,
                          std::string& material, std::optional<cache::TuningCache>& tc) {
    ASSERT_FALSE(driver::tune(g, inputs, quick()).from_cache);
    material = driver::tuning_key(g, driver::cpu_tune_device()).material();
    tc = cache::default_tuning_cache();
    ASSERT_TRUE(tc.has_value());
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
  // Where the time went: passes and timing ran, NVRTC did not (the CPU), and
  // the phases fit in the call's wall time.
  EXPECT_GT(r.compile_seconds, 0);
  EXPECT_GT(r.timing_seconds, 0);
  EXPECT_LT(r.nvrtc_seconds, 0.01);
  EXPECT_EQ(r.nvrtc_longest_seconds, 0);
  EXPECT_LE(r.compile_seconds + r.nvrtc_seconds + r.timing_seconds, r.seconds);
  const std::string phases = driver::tune_phases(r);
  EXPECT_EQ(phases.rfind("passes ", 0), 0u) << phases;
  EXPECT_NE(phases.find(", NVRTC 0.0 s (slowest kernel 0.0 s), timing "), std::string::npos)
      << phases;
  // No cuBLASLt on the CPU: not a candidate, and said so.
  EXPECT_FALSE(r.choice.cublaslt);
  EXPECT_EQ(r.choice.cublaslt_us, -1);
  EXPECT_EQ(r.choice.cublaslt_note, "not a candidate on the CPU");
  for (const driver::TuneCandidate& c : r.choice.candidates) EXPECT_FALSE(c.cublaslt);
  EXPECT_EQ(r.choice.summary().find("cuBLASLt"), std::string::npos) << r.choice.summary();

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
  EXPECT_EQ(account["cublaslt"], false);
  EXPECT_EQ(account["cublaslt_us"], -1);
  EXPECT_EQ(account["cublaslt_note"], "not a candidate on the CPU");
  EXPECT_TRUE(account["speedup"].is_number());
  EXPECT_GE(account["speedup"].get<double>(), 1.0);
  const std::string text = driver::render_tuning_text(account);
  EXPECT_EQ(text.rfind("tuning (cpu, ", 0), 0u) << text;
  EXPECT_NE(text.find(driver::gemm_config_name(*r.choice.gemm_config) + " won"), std::string::npos)
      << text;
  EXPECT_NE(text.find("x faster); " + std::to_string(r.candidates) + " candidates (0 skipped)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" s; unfused+cuBLASLt not a candidate on the CPU"), std::string::npos)
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
  EXPECT_EQ(second.compile_seconds + second.nvrtc_seconds + second.timing_seconds, 0);
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
  std::string material;
  std::optional<cache::TuningCache> tc;
  ASSERT_NO_FATAL_FAILURE(tune_afresh(g, inputs, material, tc));
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

// Fields read with a default (device, a candidate's repeats and error) of the
// wrong JSON type make the entry a miss: json::value threw, an internal error.
TEST_F(TuneCache, WrongTypedOptionalFieldsAreAMissNotAnError) {
  const Graph g = parse_graph(kSmall);
  const std::vector<Tensor> inputs = make_random_inputs(g, 3);
  std::string material;
  std::optional<cache::TuningCache> tc;
  ASSERT_NO_FATAL_FAILURE(tune_afresh(g, inputs, material, tc));
  const nlohmann::json good = tc->get(material).value();
  ASSERT_TRUE(driver::choice_from_json(good).has_value());
  ASSERT_FALSE(good["times"]["candidates"].empty());
  std::vector<nlohmann::json> bad(4, good);
  bad[0]["device"] = 5;
  bad[1]["times"]["candidates"][0]["repeats"] = "20";
  bad[2]["times"]["candidates"][0]["error"] = nlohmann::json::array();
  bad[3]["times"]["candidates"][0]["repeats"] = -3;
  for (const nlohmann::json& j : bad) {
    EXPECT_FALSE(driver::choice_from_json(j).has_value()) << j.dump();
    ASSERT_TRUE(tc->put(material, j));
    EXPECT_NO_THROW(EXPECT_EQ(driver::tuning_account(g, "")["tuned"], false));
    EXPECT_NO_THROW(EXPECT_EQ(driver::tuning_account(g, "cpu")["tuned"], false));
    EXPECT_FALSE(driver::tune(g, inputs, quick()).from_cache) << j.dump();
  }
  // An entry (any hex name) whose key material has fields of other types:
  // skipped while explain reads the directory.
  for (const char* key : {R"({"program":1})", R"({"program":"x","device":[]})", R"([1])"}) {
    const nlohmann::json entry{{"format", "tilefuse-tuning-1"}, {"key", key}, {"value", good}};
    ASSERT_TRUE(tc->store().put("abcd", entry.dump()));
    EXPECT_NO_THROW(driver::tuning_account(g, "")) << key;
    EXPECT_NO_THROW(driver::tuning_account(g, "sm_90a")) << key;
  }
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

// A program with nothing to fuse (a plain GEMM): the unfused plan has the
// fused plan's steps, so its candidates would be the fused ones again; the
// tuner times one plan, reports it under both names and keeps that in the
// cache and in explain's account. A program with a gather keeps two plans.
TEST_F(TuneCache, APlainGemmIsTunedAsOnePlan) {
  const Graph g = parse_graph(
      "def mm(x: f32[40, 24], y: f32[24, 36]):\n"
      "    return x @ y\n");
  driver::TuneResult r = driver::tune(g, make_random_inputs(g, 4), quick());
  EXPECT_TRUE(r.choice.unfused_same_as_fused);
  EXPECT_EQ(r.failed, 0);
  ASSERT_FALSE(r.choice.candidates.empty());
  for (const driver::TuneCandidate& c : r.choice.candidates)
    EXPECT_EQ(c.plan, PlanKind::kFused) << driver::gemm_config_name(*c.config);
  EXPECT_EQ(r.candidates, static_cast<int>(r.choice.candidates.size()));
  EXPECT_EQ(r.choice.plan, PlanKind::kFused);
  EXPECT_GE(r.choice.fused_us, 0);
  EXPECT_EQ(r.choice.unfused_us, r.choice.fused_us);
  ASSERT_TRUE(r.choice.unfused_config.has_value());
  EXPECT_TRUE(same(*r.choice.unfused_config, *r.choice.fused_config));
  EXPECT_EQ(r.choice.summary().rfind("fused = unfused, ", 0), 0u) << r.choice.summary();
  EXPECT_EQ(r.choice.summary().find("no candidate ran"), std::string::npos) << r.choice.summary();
  std::optional<driver::TunedChoice> cached = driver::cached_choice(g, driver::cpu_tune_device());
  ASSERT_TRUE(cached.has_value());
  EXPECT_TRUE(cached->unfused_same_as_fused);
  // explain: one plan, so no runner-up plan and no speedup over one.
  const nlohmann::json account = driver::tuning_account(g, "cpu");
  EXPECT_EQ(account["unfused_same_as_fused"], true);
  EXPECT_TRUE(account["speedup"].is_null()) << account.dump();
  const std::string text = driver::render_tuning_text(account);
  EXPECT_NE(text.find("): fused = unfused "), std::string::npos) << text;
  EXPECT_EQ(text.find("faster"), std::string::npos) << text;
  if (account["config_runner_up"].is_object()) {  // (under the winner's name)
    EXPECT_NE(text.find("; runner-up fused = unfused "), std::string::npos) << text;
  }

  const Graph gathered = parse_graph(kSmall);
  driver::TuneResult two = driver::tune(gathered, make_random_inputs(gathered, 4), quick());
  EXPECT_FALSE(two.choice.unfused_same_as_fused);
  bool unfused = false;
  for (const driver::TuneCandidate& c : two.choice.candidates)
    unfused = unfused || c.plan == PlanKind::kUnfused;
  EXPECT_TRUE(unfused);
}

TEST_F(TuneCache, AProgramWithoutAGemmTunesThePlansAlone) {
  const Graph g = parse_graph(
      "def f(x: f32[64, 48], y: f32[64, 48]):\n"
      "    return torch.relu(x * y + 1.0)\n");
  driver::TuneResult r = driver::tune(g, make_random_inputs(g, 2), quick());
  // One: its two plans are the same pointwise kernel (nothing to unfuse).
  EXPECT_EQ(r.candidates, 1);
  EXPECT_TRUE(r.choice.unfused_same_as_fused);
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
  driver::TuneCandidate spilled{PlanKind::kFused, GemmConfig{256, 128, 64, 2, 8, 8, 2}};
  spilled.spill_bytes = 680;
  spilled.error = "ptxas spills 680 bytes to local memory";
  c.candidates.push_back(spilled);
  c.tuned_at = "2026-11-30T05:00:00Z";
  c.tuning_seconds = 12.5;
  c.device = "NVIDIA H200 sm_90a";
  std::optional<driver::TunedChoice> back = driver::choice_from_json(driver::choice_to_json(c));
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->unfused_same_as_fused);
  {
    driver::TunedChoice one = c;
    one.unfused_same_as_fused = true;
    std::optional<driver::TunedChoice> b = driver::choice_from_json(driver::choice_to_json(one));
    ASSERT_TRUE(b.has_value());
    EXPECT_TRUE(b->unfused_same_as_fused);
    // (an entry from before the field loads as two plans; a mistyped one is a miss)
    nlohmann::json j = driver::choice_to_json(one);
    j.erase("unfused_same_as_fused");
    ASSERT_TRUE(driver::choice_from_json(j).has_value());
    EXPECT_FALSE(driver::choice_from_json(j)->unfused_same_as_fused);
    j["unfused_same_as_fused"] = "yes";
    EXPECT_FALSE(driver::choice_from_json(j).has_value());
  }
  EXPECT_EQ(back->plan, PlanKind::kUnfused);
  EXPECT_TRUE(same(*back->gemm_config, *c.gemm_config));
  EXPECT_TRUE(same(*back->fused_config, *c.fused_config));
  EXPECT_DOUBLE_EQ(back->unfused_us, 38.1);
  ASSERT_EQ(back->candidates.size(), 2u);
  EXPECT_EQ(back->candidates[0].error, t.error);
  EXPECT_EQ(back->candidates[0].median_us, -1);
  EXPECT_EQ(back->candidates[0].spill_bytes, 0);
  EXPECT_EQ(back->candidates[1].spill_bytes, 680);
  EXPECT_EQ(back->candidates[1].error, spilled.error);
  EXPECT_EQ(back->candidates[1].config->split_k, 2);
  // A negative or oversized spill_bytes makes the entry a miss (re-tuned).
  for (const nlohmann::json& bad : {nlohmann::json(-1), nlohmann::json(int64_t{1} << 40),
                                    nlohmann::json(1.5), nlohmann::json("680")}) {
    nlohmann::json j = driver::choice_to_json(c);
    j["times"]["candidates"][1]["spill_bytes"] = bad;
    EXPECT_FALSE(driver::choice_from_json(j).has_value()) << bad;
  }
  EXPECT_EQ(back->summary(), "unfused, 64x128x64/2/4, 38.1 us vs fused 52.0 us");
  EXPECT_TRUE(same(*back->lower_for(PlanKind::kFused).gemm_config, *c.fused_config));
  EXPECT_FALSE(back->cublaslt);
  EXPECT_EQ(back->cublaslt_us, -1);
}

// The seed's choice when unfused+cuBLASLt won (the H200's figures).
driver::TunedChoice cublaslt_choice() {
  driver::TunedChoice c;
  c.plan = PlanKind::kUnfused;
  c.cublaslt = true;
  c.fused_config = GemmConfig{128, 256, 64, 4, 8, 8};
  c.unfused_config = GemmConfig{128, 128, 64, 3, 8, 8};
  c.gemm_config = c.unfused_config;
  c.fused_us = 53.3;
  c.unfused_us = 64.8;
  c.cublaslt_us = 41.7;
  driver::TuneCandidate fused{PlanKind::kFused, c.fused_config, 53.3, 100, ""};
  driver::TuneCandidate unfused{PlanKind::kUnfused, c.unfused_config, 64.8, 100, ""};
  driver::TuneCandidate blas{PlanKind::kUnfused, c.unfused_config, 41.7, 100, ""};
  blas.cublaslt = true;
  c.candidates = {fused, unfused, blas};
  c.tuned_at = "2026-11-30T06:00:00Z";
  c.tuning_seconds = 9.5;
  c.device = "NVIDIA H200 sm_90a";
  return c;
}

TEST(TunePick, TheFastestWinsAndTiesGoToOurKernels) {
  auto pick = [](double f, double u, double b) {
    const std::optional<driver::PlanPick> p = driver::pick_plan(f, u, b);
    if (!p) return std::string("none");
    return p->cublaslt ? std::string("cublaslt") : std::string(plan_kind_name(p->plan));
  };
  // The H200 seed: the library GEMM after the gather beats both our plans.
  EXPECT_EQ(pick(53.5, 65.0, 41.7), "cublaslt");
  EXPECT_EQ(pick(38.1, 52.0, 41.7), "fused");
  EXPECT_EQ(pick(60.0, 40.0, 41.7), "unfused");
  // Not measured (-1): never wins; the others decide.
  EXPECT_EQ(pick(53.5, 65.0, -1), "fused");
  EXPECT_EQ(pick(-1, 65.0, -1), "unfused");
  EXPECT_EQ(pick(-1, -1, 41.7), "cublaslt");
  EXPECT_EQ(pick(-1, -1, -1), "none");
  EXPECT_EQ(pick(53.5, 65.0, std::nan("")), "fused");
  // Ties: fused, then unfused, then cuBLASLt (it must be strictly faster).
  EXPECT_EQ(pick(40.0, 40.0, 40.0), "fused");
  EXPECT_EQ(pick(50.0, 40.0, 40.0), "unfused");
  EXPECT_EQ(pick(40.0, 50.0, 40.0), "fused");
  // With a margin, a later plan must be faster by more than it: moe_up_proj
  // in session 27 (fused 1453.2, unfused 1450.2 us) stays fused at 1%, and
  // cuBLASLt 1% faster than our best is not enough either.
  auto pick_m = [](double f, double u, double b) {
    const std::optional<driver::PlanPick> p = driver::pick_plan(f, u, b, 0.01);
    return p->cublaslt ? std::string("cublaslt") : std::string(plan_kind_name(p->plan));
  };
  EXPECT_EQ(pick(1453.2, 1450.2, -1), "unfused");
  EXPECT_EQ(pick_m(1453.2, 1450.2, -1), "fused");
  EXPECT_EQ(pick_m(1453.2, 1430.0, -1), "unfused");
  // cuBLASLt against the faster of ours, even when that one was not chosen.
  EXPECT_EQ(pick_m(100.0, 99.5, 98.6), "fused");
  EXPECT_EQ(pick_m(100.0, 99.5, 98.4), "cublaslt");
  EXPECT_EQ(pick_m(100.0, 99.5, 99.1), "fused");
  EXPECT_EQ(pick_m(100.0, 98.0, 97.5), "unfused");
  EXPECT_EQ(pick_m(-1, 98.0, 97.5), "unfused");
  EXPECT_EQ(pick_m(-1, -1, 97.5), "cublaslt");
  EXPECT_EQ(driver::kDefaultPlanMargin, 0.01);
  // The two-plan form is the old rule: fused unless unfused is faster.
  EXPECT_EQ(driver::pick_plan(10, 10)->plan, PlanKind::kFused);
  EXPECT_EQ(driver::pick_plan(10, 9)->plan, PlanKind::kUnfused);
  EXPECT_FALSE(driver::pick_plan(10, 9)->cublaslt);
}

// A candidate whose kernels spill is not timed where its plan has one that
// does not; a plan whose every compiled candidate spills keeps them all, and
// candidates already skipped and unfused+cuBLASLt are left alone.
TEST(TuneSpills, ASpillingCandidateIsSkippedWhereItsPlanHasACleanOne) {
  using driver::TuneCandidate;
  auto cand = [](PlanKind plan, int spill, const char* error = "") {
    TuneCandidate c;
    c.plan = plan;
    c.config = GemmConfig{128, 128, 64, 3, 8, 8};
    c.spill_bytes = spill;
    c.error = error;
    return c;
  };
  TuneCandidate blas = cand(PlanKind::kUnfused, 0);
  blas.cublaslt = true;
  const std::vector<TuneCandidate> cands = {
      cand(PlanKind::kFused, 0),                    // clean: the fused plan has one
      cand(PlanKind::kFused, 680),                  // skipped
      cand(PlanKind::kFused, 12, "NVRTC: failed"),  // skipped already: its error stays
      cand(PlanKind::kUnfused, 96, ""),             // every unfused candidate spills ...
      cand(PlanKind::kUnfused, 0, "run: failed"),   // (a failed one is not clean)
      cand(PlanKind::kUnfused, 40, ""),             // ... so both run
      blas};
  const std::vector<std::string> skips = driver::spill_skips(cands);
  ASSERT_EQ(skips.size(), cands.size());
  EXPECT_EQ(skips[0], "");
  EXPECT_EQ(skips[1],
            "ptxas spills 680 bytes to local memory (stores and loads); not timed: the fused plan "
            "has candidates that do not spill");
  for (size_t i : {2, 3, 4, 5, 6}) EXPECT_EQ(skips[i], "") << i;
  // With a clean unfused candidate the spilling ones are skipped too.
  std::vector<TuneCandidate> more = cands;
  more.push_back(cand(PlanKind::kUnfused, 0));
  const std::vector<std::string> skips2 = driver::spill_skips(more);
  EXPECT_NE(skips2[3].find("ptxas spills 96 bytes"), std::string::npos);
  EXPECT_NE(skips2[5].find("the unfused plan"), std::string::npos);
  EXPECT_EQ(skips2[4], "");
  EXPECT_EQ(skips2[7], "");
}

TEST(TuneSummary, SaysEachPlansTime) {
  driver::TunedChoice c = cublaslt_choice();
  EXPECT_EQ(c.summary(), "unfused+cuBLASLt, 41.7 us vs fused 53.3 us, unfused 64.8 us");
  // Ours won with cuBLASLt measured: it is listed last.
  c.cublaslt = false;
  c.plan = PlanKind::kFused;
  c.gemm_config = c.fused_config;
  c.fused_us = 38.1;
  EXPECT_EQ(c.summary(),
            "fused, 128x256x64/4/8, 38.1 us vs unfused 64.8 us, unfused+cuBLASLt 41.7 us");
  c.plan = PlanKind::kUnfused;
  c.gemm_config = c.unfused_config;
  c.unfused_us = 30.0;
  EXPECT_EQ(c.summary(),
            "unfused, 128x128x64/3/8, 30.0 us vs fused 38.1 us, unfused+cuBLASLt 41.7 us");
  // A faster plan that lost by the margin (moe_up_proj, session 27).
  {
    driver::TunedChoice m = c;
    m.plan = PlanKind::kFused;
    m.gemm_config = m.fused_config;
    m.fused_us = 1453.2;
    m.unfused_us = 1450.2;
    m.cublaslt_us = -1;
    EXPECT_EQ(m.summary(),
              "fused, 128x256x64/4/8, 1453.2 us vs unfused 1450.2 us; fused kept: unfused is "
              "0.2% faster, inside the plan margin");
  }
  // cuBLASLt not a candidate: the two-plan text of before.
  c.cublaslt_us = -1;
  c.cublaslt_note = "not a candidate: no plain GEMM step in the unfused plan";
  EXPECT_EQ(c.summary(), "unfused, 128x128x64/3/8, 30.0 us vs fused 38.1 us");
  // A plan of ours with no time says so; cuBLASLt's absence does not.
  c.fused_us = -1;
  EXPECT_EQ(c.summary(), "unfused, 128x128x64/3/8, 30.0 us (fused: no candidate ran)");
  c = cublaslt_choice();
  c.fused_us = -1;
  EXPECT_EQ(c.summary(), "unfused+cuBLASLt, 41.7 us vs unfused 64.8 us (fused: no candidate ran)");
  // An unfused plan that is the fused plan (a plain GEMM): one plan, under
  // both names, not timed twice and not "no candidate ran".
  c = cublaslt_choice();
  c.unfused_same_as_fused = true;
  c.unfused_us = c.fused_us;
  c.unfused_config = c.fused_config;
  EXPECT_EQ(c.summary(), "unfused+cuBLASLt, 41.7 us vs fused = unfused 53.3 us");
  c.cublaslt = false;
  c.plan = PlanKind::kFused;
  c.gemm_config = c.fused_config;
  c.fused_us = c.unfused_us = 38.1;
  EXPECT_EQ(c.summary(), "fused = unfused, 128x256x64/4/8, 38.1 us vs unfused+cuBLASLt 41.7 us");
  c.cublaslt_us = -1;
  EXPECT_EQ(c.summary(), "fused = unfused, 128x256x64/4/8, 38.1 us");
}

TEST(TuneJson, CublasltChoiceRoundTrips) {
  const driver::TunedChoice c = cublaslt_choice();
  const nlohmann::json j = driver::choice_to_json(c);
  EXPECT_EQ(j.at("format"), "tilefuse-tune-1");  // old entries stay valid: same format
  EXPECT_EQ(j.at("cublaslt"), true);
  EXPECT_DOUBLE_EQ(j.at("times").at("cublaslt_us").get<double>(), 41.7);
  std::optional<driver::TunedChoice> back = driver::choice_from_json(j);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->plan, PlanKind::kUnfused);
  EXPECT_TRUE(back->cublaslt);
  EXPECT_DOUBLE_EQ(back->cublaslt_us, 41.7);
  EXPECT_DOUBLE_EQ(back->fused_us, 53.3);
  EXPECT_EQ(back->cublaslt_note, "");
  ASSERT_EQ(back->candidates.size(), 3u);
  EXPECT_FALSE(back->candidates[0].cublaslt);
  EXPECT_FALSE(back->candidates[1].cublaslt);
  EXPECT_TRUE(back->candidates[2].cublaslt);
  EXPECT_DOUBLE_EQ(back->candidates[2].median_us, 41.7);
  EXPECT_EQ(back->summary(), c.summary());
  // run compiles the unfused plan at its tuned config (its other kernels).
  EXPECT_TRUE(same(*back->lower_for(PlanKind::kUnfused).gemm_config, *c.unfused_config));
  EXPECT_EQ(driver::choice_to_json(*back), j);

  // A note (cuBLASLt not a candidate) round-trips too.
  driver::TunedChoice n = c;
  n.cublaslt = false;
  n.cublaslt_us = -1;
  n.unfused_us = 50.0;
  n.candidates.pop_back();
  n.cublaslt_note = "not a candidate: cuBLASLt unavailable: libcublasLt.so.13 not found";
  back = driver::choice_from_json(driver::choice_to_json(n));
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->cublaslt);
  EXPECT_EQ(back->cublaslt_note, n.cublaslt_note);
  EXPECT_EQ(back->summary(), "unfused, 128x128x64/3/8, 50.0 us vs fused 53.3 us");
}

TEST(TuneJson, EntriesWithoutTheCublasltFieldsLoadAsOurKernels) {
  // An entry as written before unfused+cuBLASLt competed (no "cublaslt",
  // "cublaslt_us", "cublaslt_note", no candidate flag).
  const nlohmann::json old = nlohmann::json::parse(R"({
    "format": "tilefuse-tune-1", "plan": "fused",
    "gemm_config": {"block_m": 128, "block_n": 256, "block_k": 64, "num_stages": 4,
                    "num_warps": 8, "group_m": 8},
    "fused_config": {"block_m": 128, "block_n": 256, "block_k": 64, "num_stages": 4,
                     "num_warps": 8, "group_m": 8},
    "unfused_config": null,
    "times": {"fused_us": 53.5, "unfused_us": 65.0,
              "candidates": [{"plan": "fused", "config": null, "median_us": 53.5, "repeats": 100}]},
    "tuned_at": "2026-11-29T05:00:00Z", "tuning_seconds": 8.25, "device": "NVIDIA H200 sm_90a"})");
  std::optional<driver::TunedChoice> c = driver::choice_from_json(old);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->plan, PlanKind::kFused);
  EXPECT_FALSE(c->cublaslt);
  EXPECT_EQ(c->cublaslt_us, -1);
  EXPECT_NE(c->cublaslt_note.find("not measured"), std::string::npos) << c->cublaslt_note;
  ASSERT_EQ(c->candidates.size(), 1u);
  EXPECT_FALSE(c->candidates[0].cublaslt);
  EXPECT_EQ(c->summary(), "fused, 128x256x64/4/8, 53.5 us vs unfused 65.0 us");
  // Written back, it gains the fields (with the note) and reads the same.
  std::optional<driver::TunedChoice> again = driver::choice_from_json(driver::choice_to_json(*c));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->cublaslt_note, c->cublaslt_note);
  EXPECT_EQ(again->summary(), c->summary());

  // Present but wrong: a miss, like any malformed field.
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = driver::choice_to_json(cublaslt_choice());
    edit(j);
    return driver::choice_from_json(j).has_value();
  };
  EXPECT_TRUE(with([](nlohmann::json&) {}));
  EXPECT_FALSE(with([](nlohmann::json& j) { j["cublaslt"] = "yes"; }));
  EXPECT_FALSE(with([](nlohmann::json& j) { j["times"]["cublaslt_us"] = "41.7"; }));
  EXPECT_FALSE(with([](nlohmann::json& j) { j["cublaslt_note"] = 3; }));
  EXPECT_FALSE(with([](nlohmann::json& j) { j["times"]["candidates"][2]["cublaslt"] = 1; }));
  // cuBLASLt won but has no time, or won a fused plan: not a choice.
  EXPECT_FALSE(with([](nlohmann::json& j) { j["times"]["cublaslt_us"] = -1; }));
  EXPECT_FALSE(with([](nlohmann::json& j) { j["times"].erase("cublaslt_us"); }));
  EXPECT_FALSE(with([](nlohmann::json& j) { j["plan"] = "fused"; }));
}

TEST_F(TuneCache, ExplainsACachedCublasltChoice) {
  const Graph g = parse_graph(kSeed);
  TuneDevice h200;
  h200.name = "NVIDIA H200";
  h200.target = tir::Target::cuda(90, true);
  std::optional<cache::TuningCache> tc = cache::default_tuning_cache();
  ASSERT_TRUE(tc.has_value());
  ASSERT_TRUE(
      tc->put(driver::tuning_key(g, h200).material(), driver::choice_to_json(cublaslt_choice())));
  std::optional<driver::TunedChoice> cached = driver::cached_choice(g, h200);
  ASSERT_TRUE(cached.has_value());
  EXPECT_TRUE(cached->cublaslt);

  const nlohmann::json a = driver::tuning_account(g, "sm_90a");
  EXPECT_EQ(a["tuned"], true);
  EXPECT_EQ(a["plan"], "unfused");
  EXPECT_EQ(a["cublaslt"], true);
  EXPECT_DOUBLE_EQ(a["cublaslt_us"].get<double>(), 41.7);
  EXPECT_EQ(a["cublaslt_note"], "");
  EXPECT_EQ(a["config"], "128x128x64/3/8");
  EXPECT_EQ(a["candidates"], 3);
  // By how much it won: the runner-up (fused) over the winner.
  EXPECT_NEAR(a["speedup"].get<double>(), 53.3 / 41.7, 1e-9);
  EXPECT_EQ(driver::render_tuning_text(a),
            "tuning (NVIDIA H200 sm_90a, 2026-11-30T06:00:00Z): unfused+cuBLASLt won, 41.7 us vs "
            "fused 53.3 us, unfused 64.8 us (1.28x faster); 3 candidates (0 skipped) in 9.5 s");

  // Fused won over a measured cuBLASLt: the runner-up is cuBLASLt.
  driver::TunedChoice f = cublaslt_choice();
  f.cublaslt = false;
  f.plan = PlanKind::kFused;
  f.gemm_config = f.fused_config;
  f.fused_us = 38.1;
  ASSERT_TRUE(tc->put(driver::tuning_key(g, h200).material(), driver::choice_to_json(f)));
  const nlohmann::json b = driver::tuning_account(g, "NVIDIA H200 sm_90a");
  EXPECT_EQ(b["cublaslt"], false);
  EXPECT_NEAR(b["speedup"].get<double>(), 41.7 / 38.1, 1e-9);
  EXPECT_EQ(driver::render_tuning_text(b),
            "tuning (NVIDIA H200 sm_90a, 2026-11-30T06:00:00Z): fused 128x256x64/4/8 won, 38.1 us "
            "vs unfused 64.8 us, unfused+cuBLASLt 41.7 us (1.09x faster); 3 candidates (0 "
            "skipped) in 9.5 s");
  EXPECT_TRUE(b["config_runner_up"].is_null());  // no other fused config ran

  // Another fused config ran (persistent): the winner's runner-up within its plan.
  {
    driver::TunedChoice p = f;
    GemmConfig pc{128, 256, 64, 3, 8, 8};
    pc.persistent = true;
    p.candidates.push_back({PlanKind::kFused, pc, 39.5, 100, ""});
    p.candidates.push_back({PlanKind::kFused, GemmConfig{64, 64, 64, 3, 4, 8}, 45.0, 100, ""});
    // Skipped for its spills: counted, and never the runner-up.
    driver::TuneCandidate spilled{PlanKind::kFused, GemmConfig{256, 128, 64, 2, 8, 8, 2}};
    spilled.spill_bytes = 680;
    spilled.error = "ptxas spills 680 bytes to local memory";
    p.candidates.push_back(spilled);
    ASSERT_TRUE(tc->put(driver::tuning_key(g, h200).material(), driver::choice_to_json(p)));
    const nlohmann::json r = driver::tuning_account(g, "NVIDIA H200 sm_90a");
    EXPECT_EQ(r["config_runner_up"]["config"], "128x256x64/3/8/persistent");
    EXPECT_EQ(r["failed"], 1);
    EXPECT_EQ(r["spilled"], 1);
    EXPECT_NE(driver::render_tuning_text(r).find(
                  "6 candidates (1 skipped, 1 for spills) in 9.5 s; runner-up fused "
                  "128x256x64/3/8/persistent, 39.5 us"),
              std::string::npos)
        << driver::render_tuning_text(r);
  }

  // Not a candidate: the reason ends the line.
  f.cublaslt_us = -1;
  f.cublaslt_note = "not a candidate: cuBLASLt unavailable: libcublasLt not found";
  f.candidates.pop_back();
  ASSERT_TRUE(tc->put(driver::tuning_key(g, h200).material(), driver::choice_to_json(f)));
  const nlohmann::json n = driver::tuning_account(g, "sm_90a");
  EXPECT_EQ(n["cublaslt_us"], -1);
  EXPECT_NEAR(n["speedup"].get<double>(), 64.8 / 38.1, 1e-9);
  EXPECT_EQ(driver::render_tuning_text(n),
            "tuning (NVIDIA H200 sm_90a, 2026-11-30T06:00:00Z): fused 128x256x64/4/8 won, 38.1 us "
            "vs unfused 64.8 us (1.70x faster); 2 candidates (0 skipped) in 9.5 s; "
            "unfused+cuBLASLt not a candidate: cuBLASLt unavailable: libcublasLt not found");
}

// Which kernels the unfused+cuBLASLt candidate hands to cuBLASLt (no GPU
// needed): the plain GEMM steps, so the seed's unfused plan has one and its
// fused plan none.
TEST(TuneCublaslt, PlainGemmStepsAreTheCandidatesLibraryCalls) {
  auto kernels = [](const std::string& source, PlanKind plan) {
    driver::CompileOptions co;
    co.plan = plan;
    co.target = tir::Target::cuda(90, true);
    return driver::cublaslt_gemm_kernels(driver::compile(parse_graph(source), co));
  };
  // The seed: a gather kernel, then x[index] @ y as a plain GEMM.
  EXPECT_EQ(kernels(kSeed, PlanKind::kUnfused), std::vector<size_t>{1});
  EXPECT_TRUE(kernels(kSeed, PlanKind::kFused).empty());  // the gather is the A prologue
  // An unfused epilogue is its own kernel: the GEMM stays plain.
  EXPECT_EQ(kernels("def f(x: f32[64, 32], y: f32[32, 48]):\n    return torch.relu(x @ y)\n",
                    PlanKind::kUnfused),
            std::vector<size_t>{0});
  // f64 and integer GEMMs are not cuBLASLt's (f16/bf16/f32 only).
  EXPECT_TRUE(
      kernels("def f(x: f64[64, 32], y: f64[32, 48]):\n    return x @ y\n", PlanKind::kUnfused)
          .empty());
  // No GEMM at all.
  EXPECT_TRUE(kernels("def f(x: f32[64, 48]):\n    return torch.relu(x)\n", PlanKind::kUnfused)
                  .empty());
}

// The slow sources (register_a kernels) go first, each group keeping its
// order; nothing is lost or repeated.
TEST(TuneCompileOrder, SlowSourcesFirstInTheirOrder) {
  EXPECT_EQ(driver::nvrtc_compile_order({false, true, false, false, true}),
            (std::vector<size_t>{1, 4, 0, 2, 3}));
  EXPECT_EQ(driver::nvrtc_compile_order({false, false}), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(driver::nvrtc_compile_order({true, true}), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(driver::nvrtc_compile_order({}).empty());
}

}  // namespace
}  // namespace tilefuse
