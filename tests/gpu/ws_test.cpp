// The warp-specialized sm_90a main loop on the device: the edge programs of
// tests/common/ws_programs.h (M, N, K not multiples of the tiles: TMA boxes
// and masked cp.async rows past the edges, zero-filled; a gather; a bias +
// relu epilogue; a batched GEMM) under every emitter switch and two
// configs, fused, each against the f64 oracle within check_tolerance on
// fresh random inputs, outputs poisoned before the run. Skips without a GPU
// and on a GPU whose target has no wgmma (the kernels are then not
// warp-specialized, which the test checks first). TILEFUSE_GPU_SEED=<seed>
// reproduces a run.
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/scoped_env.h"
#include "common/ws_programs.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "reference/eval.h"
#include "reference/inputs.h"

namespace tilefuse {
namespace {

// One test per emitter variant (GpuWarpSpecialized/EdgeProgramsMatchTheOracle/
// <variant>), so a short device call can run a few of them by
// --gtest_filter; every program and config under each.
class GpuWarpSpecializedVariant : public ::testing::TestWithParam<size_t> {};

TEST_P(GpuWarpSpecializedVariant, EdgeProgramsMatchTheOracle) {
  TILEFUSE_WGMMA_TEST_START(dev, target);
  const testing::WsVariant& v = testing::ws_variants().at(GetParam());
  const uint64_t seed = gputest::fresh_seed();
  std::printf("warp-specialized edge programs, variant %s, seed %llu\n", v.name(),
              static_cast<unsigned long long>(seed));
  int ran = 0;
  for (const testing::WsProgram& wp : testing::ws_programs()) {
    const Program p = parse_program(wp.source, std::string(wp.name) + ".tfs");
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
    const gputest::Oracle oracle = gputest::oracle_of(p.graph, inputs);
    for (const GemmConfig& cfg : testing::ws_configs()) {
      SCOPED_TRACE(fmt::format("{} {} {}x{}x{}/{}/{} split {} seed {}", wp.name, v.name(),
                               cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_stages,
                               cfg.num_warps, cfg.split_k, seed));
      driver::CompileOptions co;
      co.cuda = v.options();
      co.plan = PlanKind::kFused;
      co.target = *target;
      co.lower.gemm_config = cfg;
      const driver::CompiledProgram prog = driver::compile(p.graph, co);
      bool ws = false;
      for (const driver::CompiledKernel& ck : prog.kernels) ws |= ck.cuda->producer_threads > 0;
      EXPECT_EQ(ws, testing::ws_expected(wp, v, cfg));
      driver::CudaProgram run(prog, dev);
      const std::vector<Tensor> got = run.run(inputs, /*poison=*/true);
      ASSERT_EQ(got.size(), 1u);
      const double err = relative_error(got[0], oracle.output);
      EXPECT_LE(err, oracle.tol);  // false for NaN
      EXPECT_EQ(gputest::count_nan(got[0]), 0);
      ++ran;
    }
  }
  EXPECT_EQ(ran, static_cast<int>(testing::ws_programs().size() * testing::ws_configs().size()));
}

INSTANTIATE_TEST_SUITE_P(
    GpuWarpSpecialized, GpuWarpSpecializedVariant,
    ::testing::Range<size_t>(0, testing::ws_variants().size()),
    [](const ::testing::TestParamInfo<size_t>& info) {
      return testing::ws_variant_test_name(testing::ws_variants().at(info.param));
    });

// Split-K results do not depend on which block of a tile arrives last: the
// partials are summed in split order; reduced in a cluster
// (split_k_cluster) they are the same bits as through the workspace. Ten launches of one loaded program
// (the tile counters allocated once: each launch relies on the last block
// of every tile resetting its counter) give the same bits, on the
// warp-specialized sm_90a kernel and the sm_80-style one, and match the
// oracle; so does a fresh load.
TEST(GpuSplitK, BitIdenticalAcrossTenRuns) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  const std::optional<tir::Target> target = gputest::device_target();
  ASSERT_TRUE(target.has_value());
  const uint64_t seed = gputest::fresh_seed();
  const char* source =
      "def f(x: f16[300, 2000], w: f16[2000, 264], idx: i64[333] in [0, 300), b: f32[264]):\n"
      "    return torch.relu(x[idx] @ w + b).to(torch.float16)\n";
  const Program p = parse_program(source, "split_k.tfs");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
  const gputest::Oracle oracle = gputest::oracle_of(p.graph, inputs);
  // The default form's bits a config, which the cluster's sum (the same
  // order) must give too.
  std::vector<std::vector<unsigned char>> workspace_bits;
  for (const char* option :
       {static_cast<const char*>(nullptr), "warp_specialize=0", "split_k_cluster=1"}) {
    // K = 2000 is 32 tiles of 64: 5 splits of 7 (the last of 4); 12 of 3
    // (the last one empty: and 12 blocks are too many for a cluster); 8 of 4.
    const GemmConfig configs[] = {GemmConfig{128, 128, 64, 3, 8, 8, 5},
                                  GemmConfig{64, 128, 64, 3, 4, 8, 12},
                                  GemmConfig{64, 128, 64, 4, 4, 8, 8}};
    for (size_t ci = 0; ci < std::size(configs); ++ci) {
      const GemmConfig& cfg = configs[ci];
      SCOPED_TRACE(
          fmt::format("{} split {} seed {}", option ? option : "default", cfg.split_k, seed));
      driver::CompileOptions co;
      if (option) {
        std::string error;
        co.cuda.set(option, &error);
      }
      co.plan = PlanKind::kFused;
      co.target = *target;
      co.lower.gemm_config = cfg;
      const driver::CompiledProgram prog = driver::compile(p.graph, co);
      driver::CudaProgram run(prog, dev);
      const std::vector<Tensor> first = run.run(inputs, /*poison=*/true);
      EXPECT_LE(relative_error(first[0], oracle.output), oracle.tol);
      EXPECT_EQ(gputest::count_nan(first[0]), 0);
      const size_t bytes = static_cast<size_t>(first[0].numel()) * dtype_size(first[0].dtype());
      const auto* data = reinterpret_cast<const unsigned char*>(first[0].data_ptr());
      if (!option) {
        workspace_bits.emplace_back(data, data + bytes);
      } else if (std::string(option) == "split_k_cluster=1") {
        bool in_cluster = false;
        for (const driver::CompiledKernel& ck : prog.kernels)
          in_cluster |= ck.cuda->source.find("tf::ld_shared_cluster") != std::string::npos;
        EXPECT_EQ(in_cluster, cfg.split_k <= 8);
        ASSERT_EQ(workspace_bits.at(ci).size(), bytes);
        EXPECT_EQ(std::memcmp(workspace_bits.at(ci).data(), data, bytes), 0)
            << "the cluster's sum differs from the workspace form's";
      }
      for (int r = 0; r < 10; ++r) {
        // Fresh outputs, poisoned; the counters stay those of the first run.
        const std::vector<Tensor> again = run.run(inputs, /*poison=*/true);
        EXPECT_EQ(std::memcmp(first[0].data_ptr(), again[0].data_ptr(), bytes), 0) << "run " << r;
      }
      driver::CudaProgram fresh(prog, dev);
      const std::vector<Tensor> other = fresh.run(inputs, /*poison=*/true);
      EXPECT_EQ(std::memcmp(first[0].data_ptr(), other[0].data_ptr(), bytes), 0);
    }
  }
}

// Stream-K (GemmConfig::stream_k): the persistent warp-specialized kernel
// (each block its whole tiles, then its pieces of the last tiles' K
// iterations), the sm_90a kernel without warp specialization and the
// mma.sync one (each work item a block) against the f64 oracle; ten
// launches of one loaded program and a fresh load give the same bits (the
// pieces' partials are summed in K order, whoever arrives last). Unit
// counts: 4 (whole tiles round robin first), 5, 7, and the SMs' count (a
// tile cut into up to 17 pieces of 2 K tiles), the persistent kernel's ring
// count folded after every item too. Then the ws edge programs
// (M, N, K tails, a gather, bias + relu, batched) at 7 units and the SMs'.
TEST(GpuStreamK, BitIdenticalAndEdgeProgramsMatchTheOracle) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  const std::optional<tir::Target> target = gputest::device_target();
  ASSERT_TRUE(target.has_value());
  const uint64_t seed = gputest::fresh_seed();
  std::printf("stream-K, seed %llu\n", static_cast<unsigned long long>(seed));
  const int sms = dev.sm_count();
  auto streamed = [](GemmConfig c, int units) {
    c.stream_k = units;
    c.persistent = true;
    return c;
  };
  auto compile_with = [&](const Graph& g, const char* option, const GemmConfig& cfg) {
    driver::CompileOptions co;
    if (option) {
      std::string error;
      EXPECT_TRUE(co.cuda.set(option, &error)) << error;
    }
    co.plan = PlanKind::kFused;
    co.target = *target;
    co.lower.gemm_config = cfg;
    return driver::compile(g, co);
  };
  {
    const char* source =
        "def f(x: f16[300, 2000], w: f16[2000, 264], idx: i64[333] in [0, 300), b: f32[264]):\n"
        "    return torch.relu(x[idx] @ w + b).to(torch.float16)\n";
    const Program p = parse_program(source, "stream_k.tfs");
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
    const gputest::Oracle oracle = gputest::oracle_of(p.graph, inputs);
    // (ring_fold_every_tile: a block's items after its first run on the
    // folded ring count, as past 2^30)
    for (const char* option : {static_cast<const char*>(nullptr), "warp_specialize=0", "wgmma=0",
                               "ring_fold_every_tile=1"}) {
      const bool persistent_form = !option || std::string(option) == "ring_fold_every_tile=1";
      for (int units : {4, 5, 7, sms}) {
        const GemmConfig cfg = streamed(GemmConfig{128, 128, 64, 3, 8, 8}, units);
        SCOPED_TRACE(fmt::format("{} stream-K {} seed {}", option ? option : "default", units,
                                 seed));
        const driver::CompiledProgram prog = compile_with(p.graph, option, cfg);
        bool persistent = false;
        for (const driver::CompiledKernel& ck : prog.kernels)
          persistent |= ck.cuda->stream_k_units > 0;
        EXPECT_EQ(persistent, persistent_form && target->has_wgmma());
        driver::CudaProgram run(prog, dev);
        const std::vector<Tensor> first = run.run(inputs, /*poison=*/true);
        EXPECT_LE(relative_error(first[0], oracle.output), oracle.tol);
        EXPECT_EQ(gputest::count_nan(first[0]), 0);
        const size_t bytes = static_cast<size_t>(first[0].numel()) * dtype_size(first[0].dtype());
        for (int r = 0; r < 10; ++r) {
          const std::vector<Tensor> again = run.run(inputs, /*poison=*/true);
          EXPECT_EQ(std::memcmp(first[0].data_ptr(), again[0].data_ptr(), bytes), 0)
              << "run " << r;
        }
        driver::CudaProgram fresh(prog, dev);
        const std::vector<Tensor> other = fresh.run(inputs, /*poison=*/true);
        EXPECT_EQ(std::memcmp(first[0].data_ptr(), other[0].data_ptr(), bytes), 0);
      }
    }
  }
  int ran = 0;
  for (const testing::WsProgram& wp : testing::ws_programs()) {
    const Program p = parse_program(wp.source, std::string(wp.name) + ".tfs");
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
    const gputest::Oracle oracle = gputest::oracle_of(p.graph, inputs);
    for (const GemmConfig& base : {GemmConfig{128, 256, 64, 4, 8, 8}, GemmConfig{64, 128, 64, 3, 4, 8}})
      for (int units : {7, sms}) {
        const GemmConfig cfg = streamed(base, units);
        SCOPED_TRACE(fmt::format("{} {}x{}x{} stream-K {} seed {}", wp.name, cfg.block_m,
                                 cfg.block_n, cfg.block_k, units, seed));
        const driver::CompiledProgram prog = compile_with(p.graph, nullptr, cfg);
        driver::CudaProgram run(prog, dev);
        const std::vector<Tensor> got = run.run(inputs, /*poison=*/true);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_LE(relative_error(got[0], oracle.output), oracle.tol);  // false for NaN
        EXPECT_EQ(gputest::count_nan(got[0]), 0);
        ++ran;
      }
  }
  EXPECT_EQ(ran, static_cast<int>(testing::ws_programs().size() * 4));
}

// The ring count's fold (LaunchPlan::ring_fold_at; ring_fold_every_tile
// folds after every tile, as a block past 2^30 ring iterations does): over
// 528 tiles, 4 or more a block (2 a ping-pong team), the persistent
// kernel with the fold gives the bits of the one without, which match the
// oracle: plain, with register_a (its not-the-first-tile test), in a
// multicast cluster (its drain) and ping-pong (each team's count); the
// ws variants' edge programs have too few tiles for a block to take a
// second one after its fold.
TEST(GpuRingFold, FoldedRingCountGivesTheSameBits) {
  TILEFUSE_WGMMA_TEST_START(dev, target);
  const uint64_t seed = gputest::fresh_seed();
  std::printf("ring fold, seed %llu\n", static_cast<unsigned long long>(seed));
  // 8448 x 512 out of gathered rows, K = 8 tiles of 64 (register_a takes it).
  const char* source =
      "def g(x: bf16[3000, 512], w: bf16[512, 512], idx: i64[8448] in [0, 3000)):\n"
      "    return x[idx] @ w\n";
  const Program p = parse_program(source, "ring_fold.tfs");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
  const gputest::Oracle oracle = gputest::oracle_of(p.graph, inputs);
  GemmConfig plain{64, 128, 64, 3, 4, 8};  // 132 x 4 tiles
  plain.persistent = true;
  GemmConfig pingpong{128, 64, 64, 4, 4, 8};  // 66 x 8 tiles, two teams of 4 warps
  pingpong.persistent = pingpong.pingpong = true;
  int folded = 0;
  for (const char* option :
       {"persistent=1", "persistent=1,register_a=1", "persistent=1,cluster_multicast=1"})
    for (const GemmConfig& cfg : {plain, pingpong}) {
      SCOPED_TRACE(fmt::format("{} {}x{}x{}{} seed {}", option, cfg.block_m, cfg.block_n,
                               cfg.block_k, cfg.pingpong ? " ping-pong" : "", seed));
      std::vector<Tensor> got[2];
      for (const bool fold : {false, true}) {
        driver::CompileOptions co;
        co.cuda = testing::WsVariant{option, true}.options();
        co.cuda.ring_fold_every_tile = fold;
        co.plan = PlanKind::kFused;
        co.target = *target;
        co.lower.gemm_config = cfg;
        const driver::CompiledProgram prog = driver::compile(p.graph, co);
        bool fold_line = false;
        for (const driver::CompiledKernel& ck : prog.kernels) {
          EXPECT_TRUE(ck.cuda->gemms.empty() || ck.cuda->persistent) << ck.cuda->source;
          fold_line |= ck.cuda->source.find("tf_git = tf_git % ") != std::string::npos;
        }
        EXPECT_EQ(fold_line, fold);
        driver::CudaProgram run(prog, dev);
        got[fold] = run.run(inputs, /*poison=*/true);
        ASSERT_EQ(got[fold].size(), 1u);
        EXPECT_LE(relative_error(got[fold][0], oracle.output), oracle.tol);  // false for NaN
        EXPECT_EQ(gputest::count_nan(got[fold][0]), 0);
      }
      const size_t bytes = static_cast<size_t>(got[0][0].numel()) * dtype_size(got[0][0].dtype());
      EXPECT_EQ(std::memcmp(got[0][0].data_ptr(), got[1][0].data_ptr(), bytes), 0)
          << "the folded ring count changed the result";
      ++folded;
    }
  EXPECT_EQ(folded, 6);
}

}  // namespace
}  // namespace tilefuse
