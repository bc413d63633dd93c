// End-to-end tests of the CLI's CUDA side that need no GPU: `explain
// --target sm_*` reports the CUDA lowering, `emit --stage=cuda` prints the
// kernels, and `run --device cuda|auto` says why it cannot use a GPU here.
// On a machine with a usable GPU the device tests skip (they check the
// no-GPU messages).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "common/cli.h"

namespace tilefuse {
namespace {

using nlohmann::json;

using Result = testing::CliResult;
using testing::run_cli;

std::string seed_case() {
  return testing::case_path("seed_gather_mm_f16.tfs");
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(CliCuda, ExplainJsonReportsTheMmaLoweringOfTheSeed) {
  Result r = run_cli("explain " + seed_case() + " --json --target sm_90a", {.with_stderr = false});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json a = json::parse(r.output);
  EXPECT_EQ(a.at("target"), "sm_90a");
  const json& c = a.at("kernels").at(0).at("cuda");
  // sm_90a: wgmma, one m64n128 warpgroup tile per 64 rows of the 128x128 block.
  EXPECT_EQ(c.at("gemms").at(0).at("family"), "wgmma.m64n128k16") << c;
  EXPECT_EQ(c.at("gemms").at(0).at("dtype"), "f16") << c;
  EXPECT_EQ(c.at("gemms").at(0).at("warps_m"), 2) << c;
  EXPECT_EQ(c.at("gemms").at(0).at("warps_n"), 1) << c;
  // Warp-specialized: 8 MMA warps and the producer warpgroup.
  EXPECT_EQ(c.at("producer_threads"), 128) << c;
  EXPECT_EQ(c.at("threads"), 256 + 128) << c;
  for (const char* tile : {"A_s", "B_s"}) {
    int copies = 0, buffers = 0;
    for (const json& cp : c.at("copies"))
      if (cp.at("dst") == tile) {
        ++copies;
        // sm_90a: the gathered A by cp.async, the affine B tile by TMA.
        EXPECT_EQ(cp.at("mode"), std::string(tile) == "A_s" ? "cp_async" : "tma") << cp;
        EXPECT_EQ(cp.at("width_bytes"), 16) << cp;
        EXPECT_GE(cp.at("stages").get<int>(), 3) << cp;
        // The gathered rows' cache level by the tile's repeats (on by default).
        EXPECT_EQ(cp.value("l1_by_repeats", false), std::string(tile) == "A_s") << cp;
      }
    for (const json& b : c.at("shared"))
      if (b.at("name") == tile) {
        ++buffers;
        EXPECT_EQ(b.at("layout"), std::string(tile) == "A_s" ? "swizzled" : "mn_swizzled") << b;
        EXPECT_GE(b.at("stages").get<int>(), 3) << b;
      }
    EXPECT_EQ(copies, 1) << tile << "\n" << c;
    EXPECT_EQ(buffers, 1) << tile << "\n" << c;
  }
}

// The producer of a ring of affine TMA copies is one thread (single_issuer);
// the seed's gathered A is issued by all 128.
TEST(CliCuda, ExplainSaysWhenOneProducerThreadIssuesEveryCopy) {
  auto loop_of = [](const std::string& program) {
    Result r = run_cli("explain " + program + " --json --target sm_90a", {.with_stderr = false});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const json a = json::parse(r.output);
    return a.at("kernels").at(0).at("cuda").at("loops").at(0);
  };
  const json plain = loop_of(std::string(TILEFUSE_SOURCE_DIR) + "/bench/programs/gemm_f16.tfs");
  EXPECT_EQ(plain.at("form"), "warp_specialized") << plain;
  EXPECT_EQ(plain.at("single_issuer"), true) << plain;
  const json gathered = loop_of(seed_case());
  EXPECT_EQ(gathered.at("single_issuer"), false) << gathered;
  Result text = run_cli("explain " + std::string(TILEFUSE_SOURCE_DIR) + "/bench/programs/gemm_f16.tfs" +
                        " --target sm_90a");
  EXPECT_TRUE(contains(text.output, "producer 128 threads (thread 0 issues every copy, the rest leave)"))
      << text.output;
}

TEST(CliCuda, ExplainTextHasTheCudaSection) {
  Result r = run_cli("explain " + seed_case() + " --target sm_80");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "  CUDA: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "gemm mma.sync.m16n8k16 f16 ")) << r.output;
  EXPECT_TRUE(contains(r.output, "shared A_s swizzled ")) << r.output;
  EXPECT_TRUE(contains(r.output, "copy A_s cp.async.ca 16 B (")) << r.output;  // gathered: .ca
  EXPECT_TRUE(contains(r.output, "copy B_s cp.async 16 B (")) << r.output;
  EXPECT_TRUE(contains(r.output, "loop k ring, 3 stages")) << r.output;
  // sm_90a: the hoisted gather's level per tile, or .ca with the option off.
  Result hopper = run_cli("explain " + seed_case() + " --target sm_90a");
  ASSERT_EQ(hopper.exit_code, 0) << hopper.output;
  EXPECT_TRUE(contains(hopper.output,
                       "copy A_s cp.async .ca or .cg by the tile's repeated rows 16 B ("))
      << hopper.output;
  Result fixed = run_cli("explain " + seed_case() +
                         " --target sm_90a --cuda-option gather_cache_by_repeats=0");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.output;
  EXPECT_TRUE(contains(fixed.output, "copy A_s cp.async.ca 16 B (")) << fixed.output;
  Result cpu = run_cli("explain " + seed_case());
  ASSERT_EQ(cpu.exit_code, 0) << cpu.output;
  EXPECT_FALSE(contains(cpu.output, "CUDA:")) << cpu.output;
}

TEST(CliCuda, EmitCudaPrintsTheKernels) {
  Result r =
      run_cli("emit " + seed_case() + " --stage=cuda --target sm_80", {.with_stderr = false});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "extern \"C\" __global__")) << r.output;
  EXPECT_TRUE(contains(r.output, "tf::cp_async_16")) << r.output;
}

TEST(CliCuda, EmitCudaNeedsACudaTarget) {
  Result r = run_cli("emit " + seed_case() + " --stage=cuda");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--target")) << r.output;
  EXPECT_TRUE(contains(r.output, "sm_80")) << r.output;
}

// --allow-tf32: an f32 GEMM (the upcast case: its prologue casts f16 to
// f32) is exact FMA without it and TF32 mma.sync with it, in explain and in
// the emitted CUDA; every command that compiles for the GPU takes it.
TEST(CliCuda, AllowTf32SwitchesTheF32Gemm) {
  const std::string upcast = testing::case_path("upcast_prologue_epilogue.tfs");
  for (bool allow : {false, true}) {
    const std::string flag = allow ? " --allow-tf32" : "";
    Result r = run_cli("explain " + upcast + " --json --target sm_80" + flag,
                       {.with_stderr = false});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json a = json::parse(r.output);
    const json& c = a.at("kernels").at(0).at("cuda");
    ASSERT_EQ(c.at("gemms").size(), 1u) << c;
    const json& g = c.at("gemms").at(0);
    EXPECT_EQ(g.at("dtype"), "f32") << g;
    if (!allow) {
      EXPECT_EQ(g.at("family"), "simt.fma") << g;
      EXPECT_TRUE(g.at("warps_m").is_null()) << g;
      continue;
    }
    EXPECT_EQ(g.at("family"), "mma.sync.m16n8k8.tf32") << g;
    EXPECT_GE(g.at("warps_m").get<int>(), 1) << g;
    for (const json& b : c.at("shared")) {
      if (b.at("name") == "B_s") {
        EXPECT_EQ(b.at("layout"), "swizzled32") << b;
      }
    }
    Result text = run_cli("explain " + upcast + " --target sm_90a" + flag);
    ASSERT_EQ(text.exit_code, 0) << text.output;
    EXPECT_TRUE(contains(text.output, "gemm mma.sync.m16n8k8.tf32 f32 ")) << text.output;
  }
  Result exact =
      run_cli("emit " + upcast + " --stage=cuda --target sm_90a", {.with_stderr = false});
  Result tf32 = run_cli("emit " + upcast + " --stage=cuda --target sm_90a --allow-tf32",
                        {.with_stderr = false});
  ASSERT_EQ(exact.exit_code, 0) << exact.output;
  ASSERT_EQ(tf32.exit_code, 0) << tf32.output;
  EXPECT_FALSE(contains(exact.output, "Tf32MmaTile")) << exact.output;
  EXPECT_TRUE(contains(exact.output, "tf::SimtTile<float, float,")) << exact.output;
  EXPECT_TRUE(contains(tf32.output, "tf::Tf32MmaTile<")) << tf32.output;
  // `--cuda-option allow_tf32=1` is the same switch (it once had no effect:
  // the compiler copied the flag over it): the same kernel, and explain says
  // TF32. allow_tf32=0 does not turn the flag off.
  Result option =
      run_cli("emit " + upcast + " --stage=cuda --target sm_90a --cuda-option allow_tf32=1",
              {.with_stderr = false});
  ASSERT_EQ(option.exit_code, 0) << option.output;
  EXPECT_EQ(option.output, tf32.output);
  Result both = run_cli(
      "emit " + upcast + " --stage=cuda --target sm_90a --allow-tf32 --cuda-option allow_tf32=0",
      {.with_stderr = false});
  ASSERT_EQ(both.exit_code, 0) << both.output;
  EXPECT_EQ(both.output, tf32.output);
  // Given twice, an option is an error on every command, not the last value.
  for (const char* cmd : {"emit", "explain"}) {
    Result twice = run_cli(std::string(cmd) + " " + upcast +
                           " --target sm_90a --cuda-option wgmma=0 --cuda-option wgmma=1");
    EXPECT_EQ(twice.exit_code, 1) << cmd << "\n" << twice.output;
    EXPECT_TRUE(contains(twice.output, "--cuda-option gives `wgmma` twice")) << cmd << "\n"
                                                                             << twice.output;
  }
  Result explained = run_cli("explain " + upcast + " --target sm_80 --cuda-option allow_tf32=1");
  ASSERT_EQ(explained.exit_code, 0) << explained.output;
  EXPECT_TRUE(contains(explained.output, "gemm mma.sync.m16n8k8.tf32 f32 ")) << explained.output;
  for (const char* cmd : {"run", "emit", "explain", "bench"}) {
    Result help = run_cli(std::string(cmd) + " --help");
    EXPECT_EQ(help.exit_code, 0) << cmd;
    EXPECT_TRUE(contains(help.output, "--allow-tf32")) << cmd << "\n" << help.output;
  }
}

// The CPU executor is exact either way: `run --device cpu --allow-tf32
// --check` holds the f32 output to f32's tolerance.
TEST(CliCuda, AllowTf32OnTheCpuStaysExact) {
  const std::string upcast = testing::case_path("upcast_prologue_epilogue.tfs");
  Result r = run_cli("run " + upcast + " --device cpu --allow-tf32 --check");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "tol=1e-05 ok")) << r.output;
}

TEST(CliCuda, RunDeviceCudaSaysWhyNot) {
  Result r = run_cli("run " + seed_case() + " --device cuda");
  if (r.exit_code == 0) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--device cuda")) << r.output;
  // No GPU machine here: the driver library is missing (or it loads and
  // there is no device); either way the message names the cause.
  EXPECT_TRUE(contains(r.output, "libcuda") || contains(r.output, "CUDA device") ||
              contains(r.output, "CUDA driver"))
      << r.output;
}

TEST(CliCuda, RunDeviceAutoFallsBackToTheCpuAndSaysWhy) {
  Result r = run_cli("run " + seed_case() + " --device auto -v");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (!contains(r.output, "on cpu")) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_TRUE(contains(r.output, "device: cpu, because ")) << r.output;
  EXPECT_TRUE(contains(r.output, "libcuda") || contains(r.output, "CUDA device") ||
              contains(r.output, "CUDA driver"))
      << r.output;
}

}  // namespace
}  // namespace tilefuse
