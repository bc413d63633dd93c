// End-to-end tests of the tuning options of the `tilefuse` binary on the CPU:
// `run --plan auto` (the default) runs the fused plan there, `--retune` is
// accepted, a bad --plan lists auto, and `bench` has its "chosen" row. The
// GPU side (tuning, the cached choice) runs on the device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "common/cli.h"

namespace tilefuse {
namespace {

namespace fs = std::filesystem;

using Result = testing::CliResult;
using testing::case_path;

// The CLI with a TILEFUSE_CACHE_DIR of this process's own.
Result run_cli(const std::string& args) {
  const fs::path cache =
      fs::temp_directory_path() / ("tilefuse_tune_cli_" + std::to_string(::getpid()));
  return testing::run_cli(args, {.env = "TILEFUSE_CACHE_DIR=" + cache.string() + " "});
}

TEST(TuneCli, PlanAutoRunsTheFusedPlanOnTheCpu) {
  Result r =
      run_cli("run " + case_path("gather_odd_k_f16.tfs") + " --device cpu --plan auto --check -v");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("fused plan"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tuning: none on the CPU (--plan auto runs the fused plan)"),
            std::string::npos)
      << r.output;
  // auto is the default.
  Result d = run_cli("run " + case_path("gather_odd_k_f16.tfs") + " --device cpu");
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("fused plan"), std::string::npos) << d.output;
}

TEST(TuneCli, RetuneIsAcceptedAndExplicitPlansStay) {
  Result r = run_cli("run " + case_path("gather_odd_k_f16.tfs") + " --device cpu --retune -v");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tuning: none on the CPU"), std::string::npos) << r.output;
  Result u = run_cli("run " + case_path("gather_odd_k_f16.tfs") +
                     " --device cpu --plan unfused --retune --check");
  ASSERT_EQ(u.exit_code, 0) << u.output;
  EXPECT_NE(u.output.find("unfused plan"), std::string::npos) << u.output;
}

TEST(TuneCli, BadPlanListsAuto) {
  Result r = run_cli("run " + case_path("gather_odd_k_f16.tfs") + " --plan best");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("auto"), std::string::npos) << r.output;
}

TEST(TuneCli, BenchHasAChosenRow) {
  Result r = run_cli("bench " + case_path("gather_odd_k_f16.tfs") +
                     " --device cpu --warmup 0 --repeats 1 --no-check --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  std::vector<std::string> names;
  for (const auto& row : j["rows"]) names.push_back(row["name"]);
  ASSERT_EQ(names.size(), 3u) << r.output;
  EXPECT_EQ(names[0], "fused");
  EXPECT_EQ(names[1], "unfused");
  EXPECT_EQ(names[2], "chosen");
  EXPECT_EQ(j["rows"][2]["median_us"], j["rows"][0]["median_us"]);  // the fused row
  EXPECT_NE(j["rows"][2]["note"].get<std::string>().find("fused plan"), std::string::npos);

  Result t = run_cli("bench " + case_path("gather_odd_k_f16.tfs") +
                     " --device cpu --warmup 0 --repeats 1 --gemm-config 32x32x16/2/4");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("chosen               not tuned: --gemm-config"), std::string::npos)
      << t.output;
}

}  // namespace
}  // namespace tilefuse
