// The stress corpus (tests/common/stress_programs.h) through every CLI
// command: run on the CPU (both plans, outputs equal to the reference
// evaluator's bit for bit), bench, emit at every stage (cuda for sm_90a),
// explain (text and JSON, cpu and sm_90a). Each command must exit 0 within
// 20 s and 2 GiB resident. The corpus is sized so that the whole test takes
// a few seconds a program in CI; TILEFUSE_STRESS_SCALE=N multiplies every
// count (for a longer run by hand).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/cli.h"
#include "common/stress_programs.h"

namespace fs = std::filesystem;
namespace tilefuse {
namespace {

using testing::MeasuredCliResult;
using testing::StressProgram;

int scale() {
  const char* s = std::getenv("TILEFUSE_STRESS_SCALE");
  return s && *s ? std::max(1, std::atoi(s)) : 1;
}

class StressCorpus : public ::testing::TestWithParam<StressProgram> {};

TEST_P(StressCorpus, EveryCommandWithinBudget) {
  const StressProgram& p = GetParam();
  const fs::path dir =
      fs::temp_directory_path() / ("tilefuse_stress_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / (p.name + ".tfs")).string();
  std::ofstream(path) << p.source;
  auto run = [&](const std::string& args) {
    const MeasuredCliResult r = testing::run_cli_measured(args, 20.0);
    EXPECT_FALSE(r.timed_out) << args;
    EXPECT_LE(r.max_rss_kb, 2L << 20) << args << ": " << r.max_rss_kb / 1024 << " MiB";
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output.substr(0, 2000);
    return r;
  };
  const MeasuredCliResult ref = run("run --engine reference --threads 2 " + path);
  for (const char* plan : {"fused", "unfused"}) {
    const MeasuredCliResult r =
        run(std::string("run --device cpu --threads 2 --plan ") + plan + " " + path);
    EXPECT_EQ(testing::output_hashes(r.output), testing::output_hashes(ref.output))
        << plan << " plan vs the reference";
  }
  run("bench --device cpu --threads 2 --warmup 0 --repeats 1 --no-check " + path + " > /dev/null");
  for (const char* stage : {"graph", "plan", "tir", "tir-opt"})
    run(std::string("emit --stage=") + stage + " " + path + " > /dev/null");
  run("emit --stage=cuda --target sm_90a " + path + " > /dev/null");
  run("explain --json " + path + " > /dev/null");
  run("explain --target sm_90a " + path + " > /dev/null");
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Corpus, StressCorpus, ::testing::ValuesIn(testing::stress_corpus(scale())),
                         [](const ::testing::TestParamInfo<StressProgram>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace tilefuse
