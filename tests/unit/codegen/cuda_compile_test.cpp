// Compile-only CUDA tests (run in CI: NVRTC needs no GPU): every shared case
// and example, both plans, through the whole compiler and the CUDA emitter,
// then NVRTC for sm_80 and sm_90a. The ptxas report must show no spills for
// the default configs. Skips when NVRTC cannot be loaded.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "../codegen_passes/cuda_pass_test.h"
#include "codegen/cuda/emit.h"
#include "codegen/cuda/passes/epilogue.h"
#include "codegen/cuda/structure.h"
#include "common/cases.h"
#include "common/random_program.h"
#include "common/scoped_env.h"
#include "common/ws_programs.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/tune.h"
#include "frontend/frontend.h"
#include "runtime/cuda/loader.h"
#include "runtime/cuda/nvrtc.h"
#include "tir/parser.h"

namespace tilefuse {
namespace {

driver::CompiledProgram compile_for(const std::string& path, const char* target, PlanKind plan,
                                    const tir::CudaOptions& cuda = {}) {
  const Program p = load_program(path);
  driver::CompileOptions co;
  co.plan = plan;
  co.target = *tir::Target::parse(target);
  co.cuda = cuda;
  return driver::compile(p.graph, co);
}

// The tensor maps a kernel's epilogues store through (after the copies'):
// one an epilogue stored by TMA.
size_t store_maps(const codegen::CudaKernel& c) {
  size_t n = 0;
  for (const codegen::CudaEpilogue& e : c.epilogues) n += e.tma_store;
  return n;
}

class CudaCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::load_nvrtc(&why)) GTEST_SKIP() << "NVRTC unavailable: " << why;
  }
};

TEST_F(CudaCompile, EveryCaseBothPlansBothArchsWithoutSpills) {
  int compiled = 0;
  int n = 0;
  for (const std::string& path : testing::shared_cases())
    for (const char* arch : {"sm_80", "sm_90a"})
      for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
        if (path.find("out_of_range") != std::string::npos && plan == PlanKind::kUnfused) continue;
        driver::CompiledProgram prog = compile_for(path, arch, plan);
        for (const driver::CompiledKernel& ck : prog.kernels) {
          ASSERT_TRUE(ck.cuda.has_value());
          SCOPED_TRACE(path + " " + arch + " " + ck.kernel.name);
          // A unique program name per compile (see nvrtc.h on repeated compiles).
          const std::string name = ck.cuda->name + "_" + std::to_string(n++);
          cuda::CompiledKernel k;
          try {
            k = cuda::compile_cuda(ck.cuda->source, name, driver::cuda_compile_options(arch));
          } catch (const std::exception& e) {
            ADD_FAILURE() << e.what() << "\n" << ck.cuda->source;
            continue;
          }
          EXPECT_FALSE(k.cubin.empty());
          if (!k.usage.present) {
            EXPECT_TRUE(cuda::cuda_available()) << "no ptxas report:\n" << k.log;
            continue;
          }
          EXPECT_EQ(k.usage.spill_store_bytes, 0) << k.log;
          EXPECT_EQ(k.usage.spill_load_bytes, 0) << k.log;
          EXPECT_LE(k.usage.registers, 65536 / ck.cuda->num_threads) << k.log;
          // ptxas's C7514: a wgmma pipeline it had to serialize.
          EXPECT_EQ(k.log.find("are serialized"), std::string::npos) << k.log;
          ++compiled;
        }
      }
  EXPECT_GT(compiled, 20);
}

// The sm_90a wgmma main loop in its three forms. By default it is
// warp-specialized: a producer warpgroup after the MMA warpgroups issues the
// copies, and mbarriers hand the stages over (one wgmma group in flight).
// With the warp_specialize option off every warp copies and multiplies: 3
// stages wait for the MMAs of tile i at the end of the iteration; 4 stages
// keep one group in flight across the barrier (wait_group 1) and issue tiles
// S - 2 ahead. All compile without spills, within the register file, and
// without ptxas serializing the wgmma (C7514), for f16 and bf16 and the
// warpgroup arrangements of 128x128 (8 warps), 128x256 (8) and 64x128 (4).
TEST_F(CudaCompile, WgmmaMainLoopForms) {
  int n = 0;
  for (const bool ws : {true, false})
  for (const char* prog_path : {"/tests/cases/seed_gather_mm_f16.tfs", "/bench/programs/moe_up_proj_bf16.tfs"})
    for (const GemmConfig& cfg : {GemmConfig{128, 128, 64, 3, 8, 8}, GemmConfig{128, 256, 64, 4, 8, 8},
                                  GemmConfig{64, 128, 64, 4, 4, 8}}) {
      const Program p = load_program(std::string(TILEFUSE_SOURCE_DIR) + prog_path);
      driver::CompileOptions co;
      co.cuda.warp_specialize = ws;
      co.plan = PlanKind::kFused;
      co.target = *tir::Target::parse("sm_90a");
      co.lower.gemm_config = cfg;
      driver::CompiledProgram prog = driver::compile(p.graph, co);
      for (const driver::CompiledKernel& ck : prog.kernels) {
        if (ck.cuda->gemms.empty()) continue;
        SCOPED_TRACE(std::string(prog_path) + " " + ck.kernel.name + " " +
                     std::to_string(cfg.block_m) + "x" + std::to_string(cfg.block_n) + "/" +
                     std::to_string(cfg.num_stages) + (ws ? " warp-specialized" : ""));
        const std::string& src = ck.cuda->source;
        EXPECT_EQ(ck.cuda->gemms[0].family.rfind("wgmma.m64n", 0), 0u) << ck.cuda->gemms[0].family;
        EXPECT_NE(src.find(".mma_async("), std::string::npos) << src;
        EXPECT_EQ(src.find("tf::mbar_wait(") != std::string::npos, ws) << src;
        EXPECT_EQ(ck.cuda->producer_threads, ws ? 128 : 0);
        EXPECT_EQ(ck.cuda->num_threads, cfg.num_warps * 32 + (ws ? 128 : 0));
        EXPECT_EQ(src.find(".wait_prior()") != std::string::npos, ws || cfg.num_stages >= 4)
            << src;
        const cuda::CompiledKernel k =
            cuda::compile_cuda(src, ck.cuda->name + "_w" + std::to_string(n++),
                               driver::cuda_compile_options("sm_90a"));
        if (!k.usage.present) continue;
        EXPECT_EQ(k.usage.spill_store_bytes, 0) << k.log;
        EXPECT_LE(k.usage.registers, 65536 / ck.cuda->num_threads) << k.log;
        EXPECT_EQ(k.log.find("are serialized"), std::string::npos) << k.log;
        std::printf("%s %dx%dx%d/%d/%d%s: %d registers\n", prog_path, cfg.block_m, cfg.block_n,
                    cfg.block_k, cfg.num_stages, cfg.num_warps, ws ? " ws" : "",
                    k.usage.registers);
      }
    }
  EXPECT_GT(n, 0);
}

// What issue 4 asks of the seed's CUDA: the index load, wrap and check
// before the K loop; A and B by 16-byte cp.async in a >= 3-stage pipeline;
// ldmatrix + mma.sync for the f16 GEMM on sm_80, wgmma (A swizzled K-major,
// B MN-major, 1024-byte aligned) on sm_90a.
TEST_F(CudaCompile, SeedHoistsTheIndexAndPipelinesCpAsync16) {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    driver::CompiledProgram prog =
        compile_for(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/seed_gather_mm_f16.tfs", arch,
                    PlanKind::kFused);
    ASSERT_EQ(prog.kernels.size(), 1u);
    const codegen::CudaKernel& c = *prog.kernels[0].cuda;
    const std::string& src = c.source;
    const bool hopper = std::string(arch) == "sm_90a";
    // (sm_90a: the warp-specialized loop hands stages over by mbarrier.)
    const size_t loop = src.find(hopper ? "tf::mbar_wait(" : "tf::cp_async_wait<");
    ASSERT_NE(loop, std::string::npos) << src;
    const size_t k_loop = src.find("for (int tf_it");
    ASSERT_NE(k_loop, std::string::npos) << src;
    // Index reads, the wrap and the check all precede the K loop.
    const size_t first_index = src.find("index[");
    const size_t last_index = src.rfind("index[");
    ASSERT_NE(first_index, std::string::npos);
    EXPECT_LT(last_index, src.find("auto tf_issue =")) << src;
    EXPECT_LT(src.find("tf::report("), k_loop);
    EXPECT_EQ(src.find("tf::report", k_loop), std::string::npos) << "a check inside the K loop";
    // sm_80: the index rows and masks staged in shared memory; sm_90a
    // (producer_start): the producer loads them into its hoisted addresses
    // itself, after the mbarriers are set up at the entry (before the
    // check) and after the first stages of B are issued.
    ASSERT_EQ(c.copies.size(), hopper ? 2u : 4u);
    if (hopper) {
      EXPECT_EQ(src.find("index_rows["), std::string::npos) << src;
      EXPECT_EQ(src.find("index_ok["), std::string::npos) << src;
      EXPECT_LT(src.find("tf::mbar_init("), src.find("tf::report(")) << src;
      const size_t lead = src.find("tf_issue_affine(0 + tf_s, tf_s);");
      ASSERT_NE(lead, std::string::npos) << src;
      EXPECT_LT(lead, src.find("index[", src.find("tf::report("))) << src;
    }
    // sm_90a: the gathered A by cp.async 16 B, the affine B tile by TMA
    // (the producer warpgroup issues both).
    int async16 = 0;
    for (const codegen::CudaCopy& cp : c.copies)
      if (cp.dst == "A_s" || cp.dst == "B_s") {
        EXPECT_EQ(cp.mode, hopper && cp.dst == "B_s" ? "tma" : "cp_async") << cp.dst;
        EXPECT_EQ(cp.width, 16) << cp.dst;
        EXPECT_GE(cp.stages, 3) << cp.dst;
        ++async16;
      }
    EXPECT_EQ(async16, 2);
    ASSERT_EQ(c.gemms.size(), 1u);
    EXPECT_EQ(c.gemms[0].family, hopper ? "wgmma.m64n128k16" : "mma.sync.m16n8k16");
    for (const codegen::CudaSharedBuffer& s : c.shared) {
      if (s.name == "A_s") {
        EXPECT_EQ(s.layout, "swizzled");
      }
      if (s.name == "B_s") {
        EXPECT_EQ(s.layout, hopper ? "mn_swizzled" : "swizzled");
      }
      if (hopper && (s.name == "A_s" || s.name == "B_s")) {
        EXPECT_EQ(s.offset % 1024, 0) << s.name;
      }
    }
    if (hopper) {
      // MMAs of tile i in flight while tile i + S - 1 is copied; shared
      // writes fenced for the async proxy at every barrier.
      EXPECT_NE(src.find("C_f.mma_async("), std::string::npos) << src;
      EXPECT_EQ(src.find("__syncthreads()"), std::string::npos) << src;
    }
    // The gathered rows through L1 (cp.async.ca: repeated rows are served
    // there). sm_90a: the producer's row addresses are computed once, before
    // its loop (hoist_copy_addresses): no read of index_rows/index_ok in the
    // loop; the tile's cache level by its repeated rows, decided after the
    // addresses (gather_cache_by_repeats).
    if (hopper) {
      const size_t issue = src.find("auto tf_issue =");
      EXPECT_NE(src.find("tf::cp_async_16_l1_if(", issue), std::string::npos) << src;
      EXPECT_LT(src.find("tf::l1_by_repeated_rows(tf_hs"), issue) << src;
      EXPECT_EQ(src.find("index_rows[", issue), std::string::npos) << src;
      EXPECT_EQ(src.find("index_ok[", issue), std::string::npos) << src;
      EXPECT_LT(src.find("tf_hs"), issue) << src;
    } else {
      EXPECT_NE(src.find("tf::cp_async_16_ca(&A_s["), std::string::npos) << src;
    }
    if (hopper) {
      EXPECT_NE(src.find("tf::tma_load<2>(&B_s["), std::string::npos) << src;
      ASSERT_EQ(c.tensor_maps.size(), 1u + store_maps(c));
      EXPECT_EQ(c.tensor_maps[0].box, (std::vector<int>{64, 64}));
      EXPECT_EQ(c.tensor_maps[0].swizzle_bytes, 128);
      EXPECT_EQ(c.tensor_maps[0].dims, (std::vector<int64_t>{2048, 2048}));
      EXPECT_EQ(c.tensor_maps[0].strides, (std::vector<int64_t>{4096}));
    } else {
      EXPECT_NE(src.find("tf::cp_async_16(&B_s["), std::string::npos);
    }
  }
}

// The warp-specialized producer's TMA copies. A plain GEMM: both tiles by
// TMA (A K-major: one 128-byte-swizzled box; B MN-major: one box per 64-column
// strip). The seed with the tma_row_gather option: one 1-row box per gathered
// row, masked rows at row -1 (zero-filled); without it cp.async.
TEST_F(CudaCompile, WarpSpecializedProducerIssuesTma) {
  const std::string plain = std::string(TILEFUSE_SOURCE_DIR) + "/bench/programs/gemm_f16.tfs";
  driver::CompiledProgram p = compile_for(plain, "sm_90a", PlanKind::kFused);
  ASSERT_EQ(p.kernels.size(), 1u);
  const codegen::CudaKernel& c = *p.kernels[0].cuda;
  EXPECT_EQ(c.producer_threads, 128);
  // Its 16-bit row-major output goes out per warp by TMA, a box a 16-row
  // slab (warp_tma_store).
  ASSERT_EQ(store_maps(c), 1u) << c.source;
  ASSERT_EQ(c.tensor_maps.size(), 3u) << c.source;
  EXPECT_EQ(c.tensor_maps[0].box, (std::vector<int>{64, c.gemms[0].block_m}));
  EXPECT_EQ(c.tensor_maps[1].box, (std::vector<int>{64, 64}));
  EXPECT_EQ(c.tensor_maps[2].box, (std::vector<int>{64, 16}));
  EXPECT_NE(c.source.find("tf::tma_store_2d(&tf_map2, tf_esb"), std::string::npos) << c.source;
  for (const codegen::CudaCopy& cp : c.copies) EXPECT_EQ(cp.mode, "tma") << cp.dst;
  EXPECT_NE(c.source.find("tf::mbar_arrive_expect_tx("), std::string::npos) << c.source;
  EXPECT_EQ(c.source.find("cp_async_16"), std::string::npos) << c.source;
  cuda::CompiledKernel k =
      cuda::compile_cuda(c.source, c.name + "_tma", driver::cuda_compile_options("sm_90a"));
  if (k.usage.present) {
    EXPECT_EQ(k.usage.spill_store_bytes, 0) << k.log;
  }

  const std::string seed = std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/seed_gather_mm_f16.tfs";
  for (const bool gather : {false, true}) {
    tir::CudaOptions o;
    o.tma_row_gather = gather;
    driver::CompiledProgram s = compile_for(seed, "sm_90a", PlanKind::kFused, o);
    const codegen::CudaKernel& sc = *s.kernels[0].cuda;
    SCOPED_TRACE(gather ? "tma_row_gather=1" : "default");
    for (const codegen::CudaCopy& cp : sc.copies)
      if (cp.dst == "A_s") {
        EXPECT_EQ(cp.mode, gather ? "tma" : "cp_async");
      }
    EXPECT_EQ(sc.tensor_maps.size(), (gather ? 2u : 1u) + store_maps(sc));
    EXPECT_EQ(sc.source.find("(index_ok[i_3]) ? static_cast<int>(index_rows[i_3]) : -1") !=
                  std::string::npos,
              gather)
        << sc.source;
    cuda::CompiledKernel sk = cuda::compile_cuda(sc.source, sc.name + (gather ? "_g1" : "_g0"),
                                                 driver::cuda_compile_options("sm_90a"));
    if (sk.usage.present) {
      EXPECT_EQ(sk.usage.spill_store_bytes, 0) << sk.log;
    }
  }
}

// tests/gpu/ws_test.cpp names one test per variant by ws_variant_test_name:
// the names must be distinct and gtest-safe, or test_gpu aborts at start.
TEST(WsVariants, TestNamesAreDistinctAndGtestSafe) {
  std::set<std::string> names;
  for (const testing::WsVariant& v : testing::ws_variants()) {
    const std::string name = testing::ws_variant_test_name(v);
    EXPECT_TRUE(names.insert(name).second) << name;
    for (char c : name) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_') << name;
  }
  EXPECT_TRUE(names.count("register_a_1_persistent_1_fragment_l2_prefetch_1"));
  EXPECT_TRUE(names.count("default"));
}

// The edge programs of the warp-specialized loop (tests/common/ws_programs.h)
// under every switch and config: warp-specialized where expected, the
// expected tensor maps, compiled for sm_90a without spills or serialized
// wgmma. (tests/gpu/ws_test.cpp runs the same kernels on the device.)
TEST_F(CudaCompile, WarpSpecializedEdgeProgramsEveryVariant) {
  int n = 0, clusters = 0, split_clusters = 0, by_repeats = 0, register_a = 0, folds = 0,
      pingpong_folds = 0;
  for (const testing::WsProgram& wp : testing::ws_programs())
    for (const testing::WsVariant& v : testing::ws_variants())
      for (const GemmConfig& cfg : testing::ws_configs()) {
        const Program p = parse_program(wp.source, std::string(wp.name) + ".tfs");
        driver::CompileOptions co;
        co.cuda = v.options();
        co.plan = PlanKind::kFused;
        co.target = *tir::Target::parse("sm_90a");
        co.lower.gemm_config = cfg;
        const driver::CompiledProgram prog = driver::compile(p.graph, co);
        for (const driver::CompiledKernel& ck : prog.kernels) {
          if (ck.cuda->gemms.empty()) continue;
          const codegen::CudaKernel& c = *ck.cuda;
          SCOPED_TRACE(fmt::format("{} {} {}x{}x{}/{}/{} split {}", wp.name, v.name(), cfg.block_m,
                                   cfg.block_n, cfg.block_k, cfg.num_stages, cfg.num_warps,
                                   cfg.split_k));
          const bool ws = testing::ws_expected(wp, v, cfg);
          EXPECT_EQ(c.producer_threads, ws ? 128 : 0) << c.source;
          // (A row box is whole 128-byte rows: not at BLOCK_K 32. The hybrid
          // gather takes a quarter of the rows by such boxes.)
          const bool gather_tma =
              (v.options().tma_row_gather || v.options().hybrid_row_gather) &&
              std::string(wp.name).rfind("gather", 0) == 0 && cfg.block_k * 2 % 128 == 0;
          const int maps = !ws || !v.options().tma ? 0 : wp.tma_maps + (gather_tma ? 1 : 0);
          EXPECT_EQ(static_cast<int>(c.tensor_maps.size() - store_maps(c)), maps) << c.source;
          // The cluster variant forms a cluster where the grid pairs up
          // (the pass proves each pair shares B: neighbouring M tiles of one
          // N tile, and of one K split under split-K).
          // The split-K cluster variant reduces every split config's
          // warp-specialized kernel in a cluster of its splits.
          const bool split_cluster = c.source.find("tf::ld_shared_cluster") != std::string::npos;
          if (split_cluster) {
            EXPECT_TRUE(v.options().split_k_cluster && cfg.split_k > 1) << c.source;
            EXPECT_NE(c.source.find(fmt::format("__cluster_dims__({}, 1, 1)", cfg.split_k)),
                      std::string::npos)
                << c.source;
            ++split_clusters;
          } else {
            EXPECT_FALSE(v.options().split_k_cluster && cfg.split_k > 1 && ws) << c.source;
          }
          const bool cluster =
              !split_cluster && c.source.find("__cluster_dims__(2, 1, 1)") != std::string::npos;
          if (cluster) {
            EXPECT_TRUE(v.options().cluster_multicast && ws) << c.source;
            EXPECT_NE(c.source.find("tma_load_multicast"), std::string::npos) << c.source;
            ++clusters;
          }
          if (c.source.find(".mma_async_rs(") != std::string::npos) {
            // (register_a: the gathered A with K a multiple of 4 k-tiles of 64)
            EXPECT_TRUE(v.options().register_a && cfg.block_k == 64 && wp.k % 256 == 0)
                << c.source;
            // (B's 5-D box; multicast in a cluster)
            EXPECT_NE(c.source.find(cluster ? "tf::tma_load_multicast<5>" : "tf::tma_load<5>"),
                      std::string::npos)
                << c.source;
            // (fragment_word_loads: 32-bit loads into wgmma's register order)
            const std::string fn = v.options().fragment_word_loads ? "tf::load_a_fragment_words"
                                                                   : "tf::load_a_fragment";
            const std::string load =
                v.options().fragment_l2_prefetch
                    ? fmt::format("{}<{}, true>(", fn, v.options().fragment_no_allocate)
                : v.options().fragment_no_allocate ? fn + "<true>("
                                                   : fn + "(";
            EXPECT_NE(c.source.find(load), std::string::npos) << load << "\n" << c.source;
            ++register_a;
          }
          // The ring count folded after every tile (ring_fold_every_tile): by
          // the producer and the MMA warpgroups (a ping-pong kernel's teams
          // share the line), in every persistent kernel; else nowhere (these
          // kernels' counts stay far below 2^30).
          int fold_lines = 0;
          for (size_t at = c.source.find("// the ring count folded mod 2 * stages");
               at != std::string::npos;
               at = c.source.find("// the ring count folded mod 2 * stages", at + 1))
            ++fold_lines;
          if (c.persistent && v.options().ring_fold_every_tile) {
            EXPECT_EQ(fold_lines, 2) << c.source;
            EXPECT_NE(c.source.find("if (tf_git >= 1) tf_git = tf_git % "), std::string::npos)
                << c.source;
            ++folds;
            pingpong_folds += c.consumer_teams > 1;
          } else {
            EXPECT_EQ(fold_lines, 0) << c.source;
          }
          if (c.source.find("tf::l1_by_repeated_rows(") != std::string::npos) {
            EXPECT_TRUE(v.options().gather_cache_by_repeats) << c.source;
            EXPECT_NE(c.source.find("tf::cp_async_16_l1_if("), std::string::npos) << c.source;
            ++by_repeats;
          }
          const cuda::CompiledKernel k =
              cuda::compile_cuda(c.source, c.name + "_ws" + std::to_string(n++),
                                 driver::cuda_compile_options("sm_90a"));
          if (!k.usage.present) continue;
          EXPECT_EQ(k.usage.spill_store_bytes, 0) << k.log;
          EXPECT_LE(k.usage.registers, 65536 / c.num_threads) << k.log;
          EXPECT_EQ(k.log.find("are serialized"), std::string::npos) << k.log;
        }
      }
  EXPECT_GT(n, 0);
  EXPECT_GT(clusters, 0);
  EXPECT_GT(split_clusters, 0);
  EXPECT_GT(by_repeats, 0);  // the gathered edge programs take the by-repeats form
  EXPECT_GT(register_a, 0);
  EXPECT_GT(folds, 0);
  EXPECT_GT(pingpong_folds, 0);
}

// The block timeline (a measuring aid, CudaOptions::block_timeline): the
// module global, the start at the kernel's top, the first main loop's end
// right after it (in a warp-specialized loop, right after the MMA threads'
// last wgmma wait), the record last, all through the shared-memory slot
// after every other shared byte; compiled without spills or serialized
// wgmma for the warp-specialized, persistent, ping-pong, split-K and
// register_a kernels on sm_90a and the ring on sm_80 (the timeline held in
// registers spilled register_a's kernel, session 38). The timeline changes
// no decision the launch plan notes (the slot sits after the mbarriers: a
// kernel whose regions fill the device's shared memory to the byte, as
// gather_heavy's at 128x256x64/4/8/persistent, keeps its epilogue). Off,
// none of it is in the source.
TEST_F(CudaCompile, BlockTimelineRecordsThreePointsEverywhere) {
  const Program seed =
      load_program(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/seed_gather_mm_f16.tfs");
  const Program heavy =
      load_program(std::string(TILEFUSE_SOURCE_DIR) + "/bench/programs/gather_heavy_bf16.tfs");
  struct Case {
    const char* target;
    std::optional<GemmConfig> config;
    const Program* program = nullptr;  // (the seed where null)
  };
  GemmConfig full{128, 256, 64, 4, 8, 8, 1};  // (232448 bytes at gather_heavy)
  full.persistent = true;
  GemmConfig persistent{128, 256, 64, 3, 8, 8, 1};
  persistent.persistent = true;
  GemmConfig pingpong{128, 128, 64, 4, 4, 8, 1};
  pingpong.persistent = pingpong.pingpong = true;
  // (gather_heavy's tuned kernel, `128x256x64/4/8/persistent/ra256`)
  GemmConfig register_a{128, 256, 64, 4, 8, 8, 1};
  register_a.persistent = register_a.register_a = true;
  register_a.register_a_l2_prefetch = 256;
  const Case cases[] = {{"sm_90a", std::nullopt}, {"sm_90a", persistent},
                        {"sm_90a", pingpong},     {"sm_90a", GemmConfig{128, 128, 64, 6, 8, 8, 4}},
                        {"sm_90a", register_a},   {"sm_90a", full, &heavy},
                        {"sm_80", std::nullopt}};
  int n = 0;
  for (const Case& c : cases) {
    const Program& p = c.program ? *c.program : seed;
    std::vector<std::string> notes_off;  // the launch plan's notes without it
    for (const bool on : {false, true}) {
      driver::CompileOptions co;
      co.plan = PlanKind::kFused;
      co.target = *tir::Target::parse(c.target);
      co.cuda.block_timeline = on;
      if (c.config) co.lower.gemm_config = *c.config;
      const driver::CompiledProgram prog = driver::compile(p.graph, co);
      ASSERT_EQ(prog.kernels.size(), 1u);
      const codegen::CudaKernel& k = *prog.kernels[0].cuda;
      SCOPED_TRACE(fmt::format("{} {} timeline {}", c.target,
                               c.config ? driver::gemm_config_name(*c.config) : "default", on));
      EXPECT_EQ(k.block_timeline, on);
      const size_t global = k.source.find("__device__ unsigned long long tf_timeline[");
      // The slot: 8-byte aligned, within the device's shared memory.
      const int64_t slot = prog.kernels[0].kernel.launch.timeline_slot;
      const std::string at = fmt::format("tf_smem + {}", slot);
      const size_t start = k.source.find(fmt::format("tf::timeline_begin({}, tf_tid);", at));
      const size_t loop = k.source.find(fmt::format("tf::timeline_loop_end({}, tf_tid);", at));
      const size_t record =
          k.source.find(fmt::format("tf::record_timeline(tf_timeline, tf_tid, {});", at));
      // A warp-specialized loop records when its first stage landed, after
      // the consumer's first `full` wait, on its first iteration.
      const size_t landed = k.source.find(fmt::format("tf::timeline_first_stage({}, tf_tid);", at));
      if (!on) notes_off = k.notes;
      if (on) {
        EXPECT_EQ(slot % 8, 0);
        EXPECT_LE(slot + tir::LaunchPlan::kTimelineSlotBytes, k.dynamic_shared_bytes);
        EXPECT_LE(k.dynamic_shared_bytes, codegen::kMaxDynamicSharedBytes);
        // The same decisions, and a note on the timeline after them.
        ASSERT_EQ(k.notes.size(), notes_off.size() + 1);
        EXPECT_EQ(std::vector<std::string>(k.notes.begin(), k.notes.end() - 1), notes_off);
        EXPECT_EQ(k.notes.back().rfind("block timeline:", 0), 0u) << k.notes.back();
        EXPECT_EQ(landed != std::string::npos, k.producer_threads > 0) << k.source;
        if (landed != std::string::npos) {
          EXPECT_LT(k.source.rfind("tf::mbar_wait(&tf_full[", landed), landed);
          EXPECT_EQ(k.source.rfind("== 0) ", landed), landed - 6) << k.source;
          EXPECT_LT(landed, loop);
          // ... and its loop's end right after the MMA warps' last wgmma wait
          EXPECT_EQ(k.source.rfind(".wait();", loop),
                    k.source.find_last_not_of(" \n", loop - 1) - 7)
              << k.source;
        }
      } else {
        EXPECT_EQ(slot, -1);
      }
      if (!on) {
        EXPECT_EQ(global, std::string::npos) << k.source;
        EXPECT_EQ(start, std::string::npos) << k.source;
        EXPECT_EQ(record, std::string::npos) << k.source;
        continue;
      }
      ASSERT_NE(global, std::string::npos) << k.source;
      ASSERT_NE(start, std::string::npos) << k.source;
      ASSERT_NE(loop, std::string::npos) << k.source;
      ASSERT_NE(record, std::string::npos) << k.source;
      EXPECT_LT(global, start);
      EXPECT_LT(start, loop);
      EXPECT_LT(loop, record);
      // The record is the kernel's last statement.
      EXPECT_EQ(k.source.find_first_not_of(" \n", k.source.find(';', record) + 1),
                k.source.rfind('}'))
          << k.source;
      // The loop's end is recorded after the main loop: no MMA follows it.
      EXPECT_NE(k.source.rfind("mma", loop), std::string::npos) << k.source;
      EXPECT_EQ(k.source.find("mma_async(", loop), std::string::npos) << k.source;
      EXPECT_EQ(k.source.find(".mma(", loop), std::string::npos) << k.source;
      const cuda::CompiledKernel ck = cuda::compile_cuda(
          k.source, k.name + "_timeline" + std::to_string(n++), driver::cuda_compile_options(c.target));
      if (!ck.usage.present) continue;
      EXPECT_EQ(ck.usage.spill_store_bytes, 0) << ck.log;
      EXPECT_EQ(ck.log.find("are serialized"), std::string::npos) << ck.log;
    }
  }
}

// f8 operands (a plain GEMM, and one with a relu epilogue): the exact FMA
// tile converts each operand element (tf::cast) on sm_80 and sm_90a, both
// plans (a fresh-user finding: `static_cast<float>` of an f8 did not compile).
TEST_F(CudaCompile, F8GemmsCompile) {
  int n = 0;
  for (const char* src : {"def f8(x: f8e4m3[256, 256], y: f8e4m3[256, 128]):\n    return x @ y\n",
                          "def f8(x: f8e5m2[100, 72], y: f8e5m2[72, 40]):\n"
                          "    return torch.relu(x @ y)\n"})
    for (const char* arch : {"sm_80", "sm_90a"})
      for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
        const Program p = parse_program(src, "f8.tfs");
        driver::CompileOptions co;
        co.plan = plan;
        co.target = *tir::Target::parse(arch);
        const driver::CompiledProgram prog = driver::compile(p.graph, co);
        for (const driver::CompiledKernel& ck : prog.kernels) {
          SCOPED_TRACE(std::string(src) + arch);
          EXPECT_NO_THROW(cuda::compile_cuda(ck.cuda->source,
                                             ck.cuda->name + "_f8_" + std::to_string(n++),
                                             driver::cuda_compile_options(arch)))
              << ck.cuda->source;
        }
      }
  EXPECT_GT(n, 0);
}

TEST_F(CudaCompile, OddKGatherIsRegisterStagedAndRowsAlongKUseCpAsync) {
  driver::CompiledProgram odd =
      compile_for(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/gather_odd_k_f16.tfs", "sm_90a",
                  PlanKind::kFused);
  bool reg = false;
  for (const driver::CompiledKernel& ck : odd.kernels)
    for (const codegen::CudaCopy& cp : ck.cuda->copies)
      if (cp.dst == "A_s") {
        EXPECT_EQ(cp.mode, "register");
        reg = true;
      }
  EXPECT_TRUE(reg);
  // The emitted mode is lower_copies' decision (what explain reports).
  for (const driver::CompiledKernel& ck : odd.kernels) {
    std::map<std::string, std::string> decided;
    for (const passes::CopyDecision& d : ck.copies.copies) decided[d.dst] = d.mode;
    for (const codegen::CudaCopy& cp : ck.cuda->copies)
      EXPECT_EQ(decided[cp.dst], cp.mode) << cp.dst;
  }
}

// --allow-tf32 (issue 4: "an exact FFMA path for f32; tf32 MMA only under
// --allow-tf32"). The f32 programs: a plain GEMM with a bias + relu
// epilogue, and the shared case whose prologue casts f16 to f32.
constexpr const char* kF32Mlp =
    "def mlp(x: f32[300, 520], w: f32[520, 260], b: f32[260]):\n"
    "    return torch.relu(x @ w + b)\n";

driver::CompiledProgram compile_source(const std::string& src, const char* target, PlanKind plan,
                                       bool allow_tf32,
                                       std::optional<GemmConfig> config = std::nullopt) {
  const Program p = parse_program(src, "t.tfs");
  driver::CompileOptions co;
  co.plan = plan;
  co.target = *tir::Target::parse(target);
  co.allow_tf32 = allow_tf32;
  co.lower.gemm_config = config;
  return driver::compile(p.graph, co);
}

std::string read_case(const std::string& name) {
  std::ifstream in(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/" + name + ".tfs");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The gemm kernel of a program (the one kernel with a gemm).
const codegen::CudaKernel& gemm_kernel(const driver::CompiledProgram& prog) {
  const codegen::CudaKernel* found = nullptr;
  for (const driver::CompiledKernel& ck : prog.kernels)
    if (!ck.cuda->gemms.empty()) {
      EXPECT_EQ(found, nullptr) << "two gemm kernels";
      found = &*ck.cuda;
    }
  EXPECT_NE(found, nullptr) << "no gemm kernel";
  return *found;
}

TEST(CudaEmit, F32GemmIsExactFmaUnlessTf32IsAllowed) {
  for (const std::string& src : {std::string(kF32Mlp), read_case("upcast_prologue_epilogue")})
    for (const char* arch : {"sm_80", "sm_90a"})
      for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
        SCOPED_TRACE(std::string(arch) + " " + std::string(plan_kind_name(plan)) + "\n" + src);
        const driver::CompiledProgram exact = compile_source(src, arch, plan, false);
        const codegen::CudaKernel& e = gemm_kernel(exact);
        ASSERT_EQ(e.gemms.size(), 1u);
        EXPECT_EQ(e.gemms[0].family, "simt.fma");
        EXPECT_EQ(e.gemms[0].dtype, "f32");
        EXPECT_NE(e.source.find("tf::SimtTile<float, float,"), std::string::npos);
        EXPECT_EQ(e.source.find("Tf32MmaTile"), std::string::npos);
        EXPECT_EQ(e.source.find("swizzled"), std::string::npos);
        EXPECT_FALSE(exact.allow_tf32);

        const driver::CompiledProgram tf32 = compile_source(src, arch, plan, true);
        EXPECT_TRUE(tf32.allow_tf32);
        const codegen::CudaKernel& t = gemm_kernel(tf32);
        ASSERT_EQ(t.gemms.size(), 1u);
        const codegen::CudaGemm& g = t.gemms[0];
        EXPECT_EQ(g.family, "mma.sync.m16n8k8.tf32");
        EXPECT_EQ(g.dtype, "f32");
        EXPECT_GE(g.warps_m, 1);
        EXPECT_GE(g.warps_n, 1);
        EXPECT_EQ(g.warps_m * g.warps_n * 32, t.num_threads);
        EXPECT_EQ(g.block_m % (16 * g.warps_m), 0);
        EXPECT_EQ(g.block_n % (16 * g.warps_n), 0);
        EXPECT_EQ(g.elems_per_thread * t.num_threads, g.block_m * g.block_n);
        EXPECT_NE(t.source.find(fmt::format("tf::Tf32MmaTile<{}, {}, {}, {}, {}>", g.block_m,
                                            g.block_n, g.block_k, g.warps_m, g.warps_n)),
                  std::string::npos)
            << t.source;
        EXPECT_EQ(t.source.find("SimtTile"), std::string::npos);
        // A is read through 16-byte units (8 rows a load), B through 32-byte
        // units (4 rows a load); copies write through the same offsets.
        for (const codegen::CudaSharedBuffer& b : t.shared) {
          if (b.name == "A_s") {
            EXPECT_EQ(b.layout, "swizzled");
          } else if (b.name == "B_s") {
            EXPECT_EQ(b.layout, "swizzled32");
          }
        }
        EXPECT_NE(t.source.find(fmt::format("tf::swizzled<{}, 4>(", g.block_k)), std::string::npos);
        EXPECT_NE(t.source.find(fmt::format("tf::swizzled<{}, 4, 32>(", g.block_n)),
                  std::string::npos);
        bool noted = false;
        for (const std::string& n : t.notes) noted |= n.find("TF32") != std::string::npos;
        EXPECT_TRUE(noted);
        // The kernel cache keys on the source: the two must differ.
        EXPECT_NE(e.source, t.source);
        // The other kernels (pointwise steps) are the same either way.
        ASSERT_EQ(exact.kernels.size(), tf32.kernels.size());
        for (size_t i = 0; i < exact.kernels.size(); ++i)
          if (exact.kernels[i].cuda->gemms.empty()) {
            EXPECT_EQ(exact.kernels[i].cuda->source, tf32.kernels[i].cuda->source);
          }
      }
}

// CompileOptions::allow_tf32 and CudaOptions::allow_tf32 are one switch:
// either alone gives the program, its cuBLASLt steps (CompiledProgram::
// allow_tf32) and its kernels (cuda.allow_tf32) TF32, with the same source.
TEST(CudaEmit, EitherTf32SpellingTurnsItOn) {
  const Program p = parse_program(kF32Mlp, "t.tfs");
  driver::CompileOptions flag;
  flag.target = *tir::Target::parse("sm_90a");
  flag.allow_tf32 = true;
  driver::CompileOptions option;
  option.target = flag.target;
  option.cuda.allow_tf32 = true;
  const driver::CompiledProgram a = driver::compile(p.graph, flag);
  const driver::CompiledProgram b = driver::compile(p.graph, option);
  EXPECT_TRUE(a.allow_tf32);
  EXPECT_TRUE(b.allow_tf32);
  EXPECT_TRUE(a.cuda.allow_tf32);
  EXPECT_TRUE(b.cuda.allow_tf32);
  EXPECT_EQ(gemm_kernel(b).gemms.at(0).family, "mma.sync.m16n8k8.tf32");
  EXPECT_EQ(gemm_kernel(a).source, gemm_kernel(b).source);
  driver::CompileOptions neither;
  neither.target = flag.target;
  const driver::CompiledProgram c = driver::compile(p.graph, neither);
  EXPECT_FALSE(c.allow_tf32);
  EXPECT_FALSE(c.cuda.allow_tf32);
  EXPECT_EQ(gemm_kernel(c).gemms.at(0).family, "simt.fma");
}

// The flag changes f32 GEMMs only: f16 (MmaTile) and f64 (exact FMA) GEMMs
// emit the same source with and without it.
TEST(CudaEmit, AllowTf32LeavesOtherDtypesAlone) {
  const std::string f64 =
      "def f(x: f64[64, 48], w: f64[48, 40]):\n    return x @ w\n";
  for (const std::string& src : {read_case("seed_gather_mm_f16"), f64}) {
    const driver::CompiledProgram a = compile_source(src, "sm_90a", PlanKind::kFused, false);
    const driver::CompiledProgram b = compile_source(src, "sm_90a", PlanKind::kFused, true);
    ASSERT_EQ(a.kernels.size(), b.kernels.size());
    for (size_t i = 0; i < a.kernels.size(); ++i)
      EXPECT_EQ(a.kernels[i].cuda->source, b.kernels[i].cuda->source) << src;
  }
}

// NVRTC for sm_80 and sm_90a with no spills: the default configs of both
// plans, and configs of the tuner's space, up to 128 accumulators per
// thread (where an f16 GEMM would double-buffer its fragments; a TF32 one
// does not: that spilled).
TEST_F(CudaCompile, Tf32GemmsCompileWithoutSpills) {
  struct Case {
    std::string src;
    std::optional<GemmConfig> config;
  };
  auto cfg = [](int bm, int bn, int bk, int stages, int warps) {
    GemmConfig c;
    c.block_m = bm, c.block_n = bn, c.block_k = bk, c.num_stages = stages, c.num_warps = warps;
    c.group_m = 8;
    return c;
  };
  const std::string big = "def mm(x: f32[512, 512], w: f32[512, 512]):\n    return x @ w\n";
  const std::vector<Case> cases = {
      {kF32Mlp, std::nullopt},
      {read_case("upcast_prologue_epilogue"), std::nullopt},
      {big, cfg(64, 64, 16, 3, 4)},
      {big, cfg(128, 64, 32, 3, 4)},
      {big, cfg(128, 128, 32, 3, 8)},
      {big, cfg(256, 128, 16, 4, 8)},
      {big, cfg(128, 256, 32, 3, 8)},
  };
  int n = 0, compiled = 0;
  for (const Case& c : cases)
    for (const char* arch : {"sm_80", "sm_90a"})
      for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
        if (c.config && plan == PlanKind::kUnfused) continue;
        const driver::CompiledProgram prog = compile_source(c.src, arch, plan, true, c.config);
        const codegen::CudaKernel& k = gemm_kernel(prog);
        SCOPED_TRACE(std::string(arch) + " " + k.name + "\n" + c.src);
        ASSERT_EQ(k.gemms.size(), 1u);
        EXPECT_EQ(k.gemms[0].family, "mma.sync.m16n8k8.tf32");
        EXPECT_EQ(k.source.find("tf_fr[2]"), std::string::npos) << k.source;
        cuda::CompiledKernel out;
        try {
          out = cuda::compile_cuda(k.source, k.name + "_tf32_" + std::to_string(n++),
                                   driver::cuda_compile_options(arch));
        } catch (const std::exception& e) {
          ADD_FAILURE() << e.what() << "\n" << k.source;
          continue;
        }
        EXPECT_FALSE(out.cubin.empty());
        if (!out.usage.present) {
          EXPECT_TRUE(cuda::cuda_available()) << "no ptxas report:\n" << out.log;
          continue;
        }
        EXPECT_EQ(out.usage.spill_store_bytes, 0) << out.log;
        EXPECT_EQ(out.usage.spill_load_bytes, 0) << out.log;
        EXPECT_LE(out.usage.registers, 65536 / k.num_threads) << out.log;
        std::printf("tf32 %s %s %s: %d registers\n", arch, k.name.c_str(),
                    c.config ? driver::gemm_config_name(*c.config).c_str() : "default",
                    out.usage.registers);
        ++compiled;
      }
  EXPECT_GT(compiled, 0);
}

TEST(CudaEmit, CpuTargetIsRefusedForStageCuda) {
  const Program p =
      load_program(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/seed_gather_mm_f16.tfs");
  driver::CompiledProgram prog = driver::compile(p.graph, {});
  EXPECT_FALSE(prog.kernels[0].cuda.has_value());
  EXPECT_THROW(codegen::emit_cuda(prog.kernels[0].kernel, tir::Target::cpu()), InternalError);
}

}  // namespace
}  // namespace tilefuse

namespace tilefuse {
namespace {

// The emitter on random programs (the property tests' generator), both
// plans, sm_90a, half of them with allow_tf32: every kernel is emitted (no
// InternalError); every 10th program is also compiled with NVRTC. Catches what the GPU property test
// would, on any machine.
TEST_F(CudaCompile, RandomProgramsEmitAndCompile) {
  const uint64_t base = std::random_device{}();
  int nvrtc = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    const uint64_t seed = base + i;
    // The second half with element-wise register-staged copies (the
    // vector_loads option off; vector loads are the default).
    testing::RandomProgramOptions opts;
    opts.max_dim = 300;
    opts.edge_dim_chance = 0.2;
    opts.negative_index_chance = 0.5;
    opts.more_epilogues = true;
    std::optional<Graph> g;
    try {
      g = testing::RandomProgram(seed, opts).build();
    } catch (const UserError&) {
      continue;  // the generator's own rejects
    }
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      driver::CompileOptions co;
      co.plan = plan;
      co.target = *tir::Target::parse("sm_90a");
      // Every other block of ten with f32 GEMMs on TF32 (half the NVRTC
      // compiles below).
      co.allow_tf32 = i % 20 >= 10;
      co.cuda.vector_loads = i < 150;
      driver::CompiledProgram prog;
      try {
        prog = driver::compile(*g, co);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "seed " << seed << ": " << e.what() << "\n" << g->to_string();
        continue;
      }
      if (i % 10 != 0) continue;
      for (const driver::CompiledKernel& ck : prog.kernels) {
        try {
          const cuda::CompiledKernel k =
              cuda::compile_cuda(ck.cuda->source, ck.cuda->name + "_r" + std::to_string(nvrtc++),
                                 driver::cuda_compile_options("sm_90a"));
          // ptxas's C7514/C7515: a wgmma pipeline it had to serialize.
          EXPECT_EQ(k.log.find("are serialized"), std::string::npos) << "seed " << seed << "\n"
                                                                      << k.log;
        } catch (const std::exception& e) {
          ADD_FAILURE() << "seed " << seed << ": " << e.what();
        }
      }
    }
  }
  EXPECT_GT(nvrtc, 0);
}

}  // namespace
}  // namespace tilefuse

namespace tilefuse {
namespace {

// Fragment software pipelining is used where it costs no occupancy (128+
// accumulators per thread) and compiles without spills there (mma.sync:
// sm_90a with the wgmma option off).
TEST_F(CudaCompile, FragmentPipelineOnlyForLargeWarpTiles) {
  const Program p =
      load_program(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/seed_gather_mm_f16.tfs");
  for (bool large : {false, true}) {
    driver::CompileOptions co;
    co.target = *tir::Target::parse("sm_90a");
    std::string error;
    ASSERT_TRUE(co.cuda.set("wgmma=0", &error)) << error;
    GemmConfig c;
    c.block_m = 128, c.block_n = large ? 256 : 128, c.block_k = 32, c.num_stages = 3,
    c.num_warps = 8;
    co.lower.gemm_config = c;
    driver::CompiledProgram prog = driver::compile(p.graph, co);
    const std::string& src = prog.kernels[0].cuda->source;
    EXPECT_EQ(src.find("load_frags") != std::string::npos, large) << src;
    cuda::CompiledKernel k =
        cuda::compile_cuda(src, std::string("frag_pipe_") + (large ? "on" : "off"),
                           driver::cuda_compile_options("sm_90a"));
    ASSERT_TRUE(k.usage.present || cuda::cuda_available()) << k.log;
    if (k.usage.present) {
      EXPECT_EQ(k.usage.spill_store_bytes, 0) << k.log;
    }
  }
}

// The staged epilogue's copy-out as the plan says (EpiloguePlan,
// passes/epilogue.cpp): the wgmma GEMM of the pass tests through the
// epilogue and sync passes, storing f16(C_f) into `out2`, printed and
// compiled for sm_90a.
// - proved chunks, no mask: one address and one tf::store16 a chunk;
// - proved chunks under a mask constant on each chunk (N = 2040): one mask;
// - proved chunks under a mask that varies in a chunk (2044 columns of
//   2048-element rows): a mask per element, a store16 when all hold;
// - no proof (row stride 2044): the run-time pointer and alignment tests.
// No form compares pointers or tests alignment where the chunks are proved.
// (The copy-out with warp_tma_store=0: by default the first three forms,
// whose masks are only their bounds and whose rows are 16-byte aligned, go
// out by a TMA box a slab, with no copy-out; the fourth keeps it.)
TEST_F(CudaCompile, StagedCopyOutFollowsTheChunkProof) {
  struct Form {
    const char* param;
    const char* mask;
    bool proved, one_mask, tma;
  };
  int n = 0;
  for (const Form& f :
       {Form{"global f16[2048, 2048] strides [2048, 1] align 16", "", true, true, true},
        Form{"global f16[2048, 2040] strides [2040, 1] align 16", "pid_n*128 + j_2 < 2040", true,
             true, true},
        Form{"global f16[2048, 2044] strides [2048, 1] align 16", "pid_n*128 + j_2 < 2044", true,
             false, true},
        Form{"global f16[2048, 2044] strides [2044, 1] align 16", "pid_n*128 + j_2 < 2044",
             false, false, false}}) {
    SCOPED_TRACE(std::string(f.param) + " mask " + f.mask);
    codegen::testing::GemmText g = codegen::testing::wgmma_gemm("layout");
    g.params = std::string("  out2: ") + f.param + ",\n";
    g.store = std::string("out2[pid_m*128 + i_2, pid_n*128 + j_2] = f16(C_f[i_2, j_2])") +
              (*f.mask ? std::string(", mask=(") + f.mask + ")" : "");
    const tir::Kernel in = tir::parse_kernel(g.text());
    {
      tir::Kernel k = codegen::testing::cuda_pass("epilogue")(in);
      k = codegen::testing::cuda_pass("sync")(k);
      const codegen::CudaKernel ck = codegen::emit_cuda(k, *tir::Target::parse("sm_90a"));
      EXPECT_EQ(store_maps(ck), f.tma ? 1u : 0u) << ck.source;
      EXPECT_EQ(ck.source.find("tf::tma_store_2d(") != std::string::npos, f.tma) << ck.source;
      EXPECT_EQ(ck.source.find("tf::store16(") == std::string::npos, f.tma) << ck.source;
      const cuda::CompiledKernel c =
          cuda::compile_cuda(ck.source, ck.name + "_slab_tma" + std::to_string(n),
                             driver::cuda_compile_options("sm_90a"));
      ASSERT_TRUE(c.usage.present || cuda::cuda_available()) << c.log;
      if (c.usage.present) {
        EXPECT_EQ(c.usage.spill_store_bytes, 0) << c.log;
      }
    }
    const tir::CudaOptions copy_out = codegen::testing::options({"warp_tma_store=0"});
    tir::Kernel k = codegen::testing::cuda_pass("epilogue", copy_out)(in);
    k = codegen::testing::cuda_pass("sync", copy_out)(k);
    const codegen::CudaKernel ck = codegen::emit_cuda(k, *tir::Target::parse("sm_90a"));
    const std::string& src = ck.source;
    EXPECT_NE(src.find("tf::cast_pack2<tf::f16>(tf_v0, tf_v1)"), std::string::npos) << src;
    EXPECT_EQ(src.find("tf::aligned16(") == std::string::npos, f.proved) << src;
    EXPECT_EQ(src.find("== tf_p[0] +") == std::string::npos, f.proved) << src;
    EXPECT_EQ(src.find("tf::store16(&out2[") != std::string::npos, f.proved && f.one_mask) << src;
    EXPECT_EQ(src.find("tf::store16(tf_p, tf_src)") != std::string::npos,
              f.proved && !f.one_mask)
        << src;
    const cuda::CompiledKernel c =
        cuda::compile_cuda(src, ck.name + "_copy_out" + std::to_string(n++),
                           driver::cuda_compile_options("sm_90a"));
    ASSERT_TRUE(c.usage.present || cuda::cuda_available()) << c.log;
    if (c.usage.present) {
      EXPECT_EQ(c.usage.spill_store_bytes, 0) << c.log;
    }
  }
}

}  // namespace
}  // namespace tilefuse

namespace tilefuse {
namespace {

// Vectorized register-staged copies (the default; the vector_loads option
// turns them off): every case emits and compiles without spills, and the
// dequant case's B copy reads its main source 16 bytes at a time.
TEST_F(CudaCompile, VectorLoadsCompileForEveryCase) {
  int vectorized = 0, n = 0;
  for (const std::string& path : testing::shared_cases())
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      if (path.find("out_of_range") != std::string::npos && plan == PlanKind::kUnfused) continue;
      driver::CompiledProgram prog = compile_for(path, "sm_90a", plan);
      for (const driver::CompiledKernel& ck : prog.kernels) {
        SCOPED_TRACE(path + " " + ck.kernel.name);
        vectorized += ck.cuda->source.find("tf::load_vector<") != std::string::npos;
        cuda::CompiledKernel k =
            cuda::compile_cuda(ck.cuda->source, ck.cuda->name + "_v" + std::to_string(n++),
                               driver::cuda_compile_options("sm_90a"));
        if (k.usage.present) {
          EXPECT_EQ(k.usage.spill_store_bytes, 0) << k.log;
        }
      }
    }
  EXPECT_GT(vectorized, 0);
  const std::string dequant =
      std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/dequant_int8_prologue.tfs";
  // int8 B, 16 bytes: 16 elements per access.
  EXPECT_NE(compile_for(dequant, "sm_90a", PlanKind::kFused)
                .kernels[0]
                .cuda->source.find("tf::load_vector<16>("),
            std::string::npos);
  tir::CudaOptions off;
  off.vector_loads = false;
  driver::CompiledProgram dq = compile_for(dequant, "sm_90a", PlanKind::kFused, off);
  // Off: element by element.
  EXPECT_EQ(dq.kernels[0].cuda->source.find("tf::load_vector<"), std::string::npos);
}

// A gather's bounds check reports the index's value, its coordinates in the
// index tensor and the value again: 5 args over a 3-D index, 10
// (codegen::kStatusArgs, the status word's room) over an 8-D one. Such
// checks were refused by the emitter ("a check with more than 4 args", an
// InternalError for any x[i] with i of 3 dims or more); now they compile,
// both plans, for sm_80 and sm_90a, through NVRTC (tf::report's overload of
// five args or more), and the host has their arg count to word them. With
// a GEMM (x[i] @ w, i of 3 dims) under persistent register_a too, where the
// MMA warps' row checks at a later tile's start report through
// tf::report_cold.
TEST_F(CudaCompile, ChecksOverIndicesOfManyDimsCompile) {
  struct Case {
    const char* source;
    int args;  // the gather check's
    std::optional<GemmConfig> config;
  };
  GemmConfig ra;
  ra.block_m = 128, ra.block_n = 128, ra.block_k = 64, ra.num_stages = 4, ra.num_warps = 8;
  ra.register_a = true;
  ra.persistent = true;
  const Case cases[] = {
      {"def g3(x: f32[5, 4], i: i64[R, 3, 2]):\n    return x[i] * 2.0\n", 5, std::nullopt},
      {"def g8(x: f32[5], i: i64[1, 2, 1, 1, 2, 1, 1, 2]):\n    return x[i] * 2.0\n", 10,
       std::nullopt},
      {"def m3(x: bf16[64, 256], w: bf16[256, 128], i: i64[2, 4, 64]):\n    return x[i] @ w\n", 5,
       std::nullopt},
      {"def r3(x: bf16[64, 256], w: bf16[256, 128], i: i64[2, 4, 64]):\n    return x[i] @ w\n", 5,
       ra},
  };
  int n = 0;
  for (const Case& c : cases)
    for (const char* arch : {"sm_80", "sm_90a"})
      for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
        if (c.config && (std::string(arch) != "sm_90a" || plan != PlanKind::kFused)) continue;
        SCOPED_TRACE(std::string(c.source) + " " + arch + " " + std::string(plan_kind_name(plan)));
        driver::CompiledProgram prog;
        ASSERT_NO_THROW(prog = compile_source(c.source, arch, plan, false, c.config));
        bool found = false;
        for (const driver::CompiledKernel& ck : prog.kernels) {
          for (const codegen::CudaCheck& check : ck.cuda->checks) {
            EXPECT_LE(check.num_args, codegen::kStatusArgs);
            found = found || check.num_args == c.args;
          }
          if (c.config) {
            EXPECT_TRUE(codegen::has_register_a_loop(ck.kernel.body))
                << "the register_a pass declined the config";
            EXPECT_NE(ck.cuda->source.find("tf::report_cold("), std::string::npos)
                << "no register_a row check:\n"
                << ck.cuda->source;
          }
          const std::string name = ck.cuda->name + "_many" + std::to_string(n++);
          EXPECT_NO_THROW(
              cuda::compile_cuda(ck.cuda->source, name, driver::cuda_compile_options(arch)))
              << ck.cuda->source;
        }
        EXPECT_TRUE(found) << "no check of " << c.args << " args";
      }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace tilefuse

namespace tilefuse {
namespace {

// --target accepts what NVRTC accepts: sm_NN / sm_NNN from 80 up, the
// arch-specific `a` from sm_90 up; wgmma only on sm_90a.
TEST(TargetParse, AcceptsWhatNvrtcAccepts) {
  for (const char* ok : {"cpu", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a",
                         "sm_120"})
    EXPECT_TRUE(tir::Target::parse(ok).has_value()) << ok;
  for (const char* bad : {"sm_70", "sm_80a", "sm_89a", "sm_1000", "sm_090", "sm_9x", "gpu", "sm_"})
    EXPECT_FALSE(tir::Target::parse(bad).has_value()) << bad;
  EXPECT_EQ(tir::Target::parse("sm_120")->name(), "sm_120");
  EXPECT_TRUE(tir::Target::parse("sm_90a")->has_wgmma());
  EXPECT_FALSE(tir::Target::parse("sm_100a")->has_wgmma());
  EXPECT_FALSE(tir::Target::parse("sm_90")->has_wgmma());
}

}  // namespace
}  // namespace tilefuse
