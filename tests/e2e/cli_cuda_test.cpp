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
  EXPECT_EQ(c.at("gemms").at(0).at("family"), "mma.sync.m16n8k16") << c;
  EXPECT_EQ(c.at("gemms").at(0).at("dtype"), "f16") << c;
  for (const char* tile : {"A_s", "B_s"}) {
    int copies = 0, buffers = 0;
    for (const json& cp : c.at("copies"))
      if (cp.at("dst") == tile) {
        ++copies;
        EXPECT_EQ(cp.at("mode"), "cp_async") << cp;
        EXPECT_EQ(cp.at("width_bytes"), 16) << cp;
        EXPECT_GE(cp.at("stages").get<int>(), 3) << cp;
      }
    for (const json& b : c.at("shared"))
      if (b.at("name") == tile) {
        ++buffers;
        EXPECT_EQ(b.at("layout"), "swizzled") << b;
        EXPECT_GE(b.at("stages").get<int>(), 3) << b;
      }
    EXPECT_EQ(copies, 1) << tile << "\n" << c;
    EXPECT_EQ(buffers, 1) << tile << "\n" << c;
  }
}

TEST(CliCuda, ExplainTextHasTheCudaSection) {
  Result r = run_cli("explain " + seed_case() + " --target sm_80");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "  CUDA: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "gemm mma.sync.m16n8k16 f16 ")) << r.output;
  EXPECT_TRUE(contains(r.output, "shared A_s swizzled ")) << r.output;
  EXPECT_TRUE(contains(r.output, "copy A_s cp.async 16 B (")) << r.output;
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
