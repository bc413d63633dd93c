// End-to-end tests of the `tilefuse` binary: every shared case runs with
// --check against the f64 oracle, errors come back with the right exit code
// and message, and .npy inputs/outputs round-trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "frontend/frontend.h"
#include "io/npy.h"
#include "reference/eval.h"
#include "reference/inputs.h"

namespace fs = std::filesystem;
namespace tilefuse {
namespace {

using Result = testing::CliResult;
using testing::case_path;
using testing::run_cli;

fs::path temp_dir(const std::string& tag) {
  fs::path dir =
      fs::temp_directory_path() / ("tilefuse_e2e_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Every shared case that must succeed, run with --check: compiled (fused
// plan, then unfused) and run on the CPU executor, and evaluated by the
// reference evaluator; the relative error printed for each output must be
// within the tolerance printed beside it.
class SharedCase : public ::testing::TestWithParam<std::string> {};

void expect_checked(const std::string& args, const std::string& engine) {
  Result r = run_cli("run " + args + " --check --seed 7");
  ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(engine), std::string::npos) << args << "\n" << r.output;
  std::regex line(R"(check: (\S+) rel_err=(\S+) tol=(\S+) ok)");
  int checked = 0;
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), line), end; it != end; ++it) {
    double err = std::stod((*it)[2]), tol = std::stod((*it)[3]);
    EXPECT_LE(err, tol) << (*it)[1];
    ++checked;
  }
  EXPECT_GE(checked, 1) << r.output;
  EXPECT_EQ(r.output.find("FAILED"), std::string::npos) << r.output;
}

TEST_P(SharedCase, RunsAndMatchesOracle) {
  expect_checked(case_path(GetParam()), "fused plan, 1 kernel, CPU executor");
}

TEST_P(SharedCase, UnfusedPlanMatchesOracle) {
  expect_checked(case_path(GetParam()) + " --plan unfused", "unfused plan");
}

TEST_P(SharedCase, ReferenceEngineMatchesOracle) {
  expect_checked(case_path(GetParam()) + " --engine reference", "reference evaluator");
}

// Split-K on the CPU executor through `run --gemm-config`: 3 splits of
// 128x128x32 tiles (fused) and 5 of 64x128x16 (unfused), the shared cases' K
// tails and empty splits included, within the oracle's tolerance.
TEST_P(SharedCase, SplitKMatchesOracle) {
  expect_checked(case_path(GetParam()) + " --device cpu --gemm-config 128x128x32/1/4/splitk3",
                 "fused plan");
  expect_checked(
      case_path(GetParam()) + " --device cpu --plan unfused --gemm-config 64x128x16/1/4/splitk5",
      "unfused plan");
}

// Stream-K on the CPU executor through `run --gemm-config`: 5 and 3 units
// (every piece a program instance; whole tiles first where the tiles are
// many), within the oracle's tolerance.
TEST_P(SharedCase, StreamKMatchesOracle) {
  expect_checked(case_path(GetParam()) + " --device cpu --gemm-config 128x128x32/1/4/streamk5",
                 "fused plan");
  expect_checked(
      case_path(GetParam()) + " --device cpu --plan unfused --gemm-config 64x64x16/1/4/streamk3",
      "unfused plan");
}

// Tiles that are not powers of two (multiples of 64: 192 and 320) on the
// CPU executor, plain and with split-K, and tiles below 16 (the CPU's
// default config goes down to 1), the shared cases' M, N and K tails
// inside them, within the oracle's tolerance.
TEST_P(SharedCase, TilesOfMultiplesOf64MatchTheOracle) {
  expect_checked(case_path(GetParam()) + " --device cpu --gemm-config 192x320x64/1/4",
                 "fused plan");
  expect_checked(case_path(GetParam()) + " --device cpu --gemm-config 8x4x2/1/4", "fused plan");
  expect_checked(
      case_path(GetParam()) + " --device cpu --plan unfused --gemm-config 320x192x32/1/4/splitk2",
      "unfused plan");
}

INSTANTIATE_TEST_SUITE_P(Cases, SharedCase,
                         ::testing::Values("batched_gather.tfs", "dequant_int8_prologue.tfs",
                                           "gather_b_rows_along_k.tfs",
                                           "gather_mm_bf16_repeats.tfs",
                                           "gather_negative_index.tfs", "gather_odd_k_f16.tfs",
                                           "pointwise_both_operands.tfs", "seed_gather_mm_f16.tfs",
                                           "upcast_prologue_epilogue.tfs"),
                         [](const auto& info) {
                           return info.param.substr(0, info.param.size() - 4);
                         });

TEST(Cli, OutOfRangeIndexIsAUserErrorNamingTensorPositionAndValue) {
  for (const char* how : {"", " --plan unfused", " --engine reference"}) {
    Result r = run_cli("run " + case_path("gather_out_of_range.tfs") + how);
    EXPECT_EQ(r.exit_code, 1) << how << "\n" << r.output;
    EXPECT_NE(
        r.output.find("gather_out_of_range.tfs:5:14: error: index 64 is out of bounds for dim 0 of "
                      "`x` (size 64): `idx`["),
        std::string::npos)
        << how << "\n"
        << r.output;
    EXPECT_NE(r.output.find("] = 64"), std::string::npos) << how << "\n" << r.output;
    // The run-time error is a diagnostic at the gather: the source line, a caret under x[idx].
    EXPECT_NE(r.output.find("    return x[idx] @ y\n"), std::string::npos) << how << "\n" << r.output;
  }
  // One program instance covers the 50 rows, so the executor meets the same
  // first bad position as the reference: the messages are identical.
  auto error_line = [](const std::string& out) {
    const size_t at = out.find("error:");
    return at == std::string::npos ? out : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_EQ(
      error_line(run_cli("run " + case_path("gather_out_of_range.tfs")).output),
      error_line(
          run_cli("run " + case_path("gather_out_of_range.tfs") + " --engine reference").output));
}

// Valid programs whose results are empty (a hostile-input pass found both
// exiting non-zero): an empty slice with a step past 2^31 (an internal error,
// exit 2, in the lowering) and a bmm with a 2^40 batch of empty matrices
// ("out of host memory" from --check's oracle and --engine reference). Each
// command succeeds and --check holds.
TEST(Cli, EmptyResultsWithHugeStepsAndBatchesRun) {
  const std::string slice = ::testing::TempDir() + "/empty_huge_step.tfs";
  std::ofstream(slice) << "def f(x: f32[6, 4], w: f32[4, 5]):\n"
                          "    return x[:, 5::9223372036854775807] * 2.0, "
                          "x[6::2147483648] @ w\n";
  const std::string bmm = ::testing::TempDir() + "/empty_huge_batch.tfs";
  std::ofstream(bmm) << "def f(x: f32[1099511627776, 0, 1], y: f32[1099511627776, 1, 0]):\n"
                        "    return torch.bmm(x, y)\n";
  for (const std::string& prog : {slice, bmm}) {
    for (const char* how : {" --check", " --check --plan unfused", " --engine reference"}) {
      Result r = run_cli("run " + prog + " --device cpu" + how);
      EXPECT_EQ(r.exit_code, 0) << prog << how << "\n" << r.output;
    }
    Result b = run_cli("bench " + prog + " --device cpu --repeats 1 --warmup 0");
    EXPECT_EQ(b.exit_code, 0) << prog << "\n" << b.output;
    Result e = run_cli("explain " + prog + " --target sm_90a");
    EXPECT_EQ(e.exit_code, 0) << prog << "\n" << e.output;
  }
}

// A CUDA launch holds at most 2^31 - 1 blocks, while a program may have
// 2^40 elements: a kernel whose constant grid is larger (a batch of 2^34
// one-tile matmuls; an output of 2^40 elements in 16x16 tiles) is a user
// error naming the kernel, its grid and the limit, as at run time for a
// symbolic grid, not an internal error. The same program in tiles that fit
// still compiles.
TEST(Cli, GridsPastALaunchsBlocksAreUserErrors) {
  const std::string bmm = ::testing::TempDir() + "/grid_huge_batch.tfs";
  std::ofstream(bmm) << "def f(a: f16[17179869184, 1, 16], b: f16[17179869184, 16, 1]):\n"
                        "    return a @ b\n";
  const std::string mm = ::testing::TempDir() + "/grid_small_tiles.tfs";
  std::ofstream(mm) << "def f(a: f16[1048576, 16], b: f16[16, 1048576]):\n    return a @ b\n";
  struct Case {
    std::string args;
    std::string blocks;
  };
  const Case cases[] = {
      {"emit " + bmm + " --stage=cuda --target sm_90a", "17179869184"},
      {"emit " + bmm + " --stage=cuda --target sm_80 --plan unfused", "17179869184"},
      {"explain " + bmm + " --target sm_90a", "17179869184"},
      {"emit " + mm + " --stage=cuda --target sm_90a --gemm-config 16x16x16/1/1", "4294967296"},
      {"explain " + mm + " --target sm_80 --gemm-config 16x16x16/1/1", "4294967296"},
  };
  for (const Case& c : cases) {
    Result r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_TRUE(std::regex_search(
        r.output, std::regex("error: kernel \\w+ needs a grid of [0-9 x]+ = " + c.blocks +
                             " blocks at these sizes, more than a CUDA launch allows \\(at most "
                             "2147483647 blocks\\)")))
        << c.args << "\n" << r.output;
  }
  Result fits = run_cli("emit " + mm + " --stage=cuda --target sm_90a --gemm-config 128x128x16/1/4");
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
  EXPECT_NE(fits.output.find("__global__"), std::string::npos) << fits.output;
}

// explain names a stream-K config's schedule and why (text and JSON), and
// on sm_80, where no persistent kernel runs it, that the pass declined it.
TEST(Cli, ExplainSaysWhyStreamK) {
  const std::string prog = ::testing::TempDir() + "/stream_k_waves.tfs";
  std::ofstream(prog) << "def f(x: f16[2304, 4096], w: f16[4096, 2560]):\n    return x @ w\n";
  Result t = run_cli("explain " + prog + " --target sm_90a --gemm-config 128x256x64/4/8/streamk132");
  EXPECT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("stream-K over 132 blocks: 180 tiles of 64 K tiles would take 2 wave(s) "
                          "of 132 SMs, the last 36% full; the first 132 tiles go round robin"),
            std::string::npos)
      << t.output;
  Result j = run_cli("explain " + prog + " --target sm_80 --gemm-config 128x256x64/4/8/streamk132 --json");
  EXPECT_EQ(j.exit_code, 0) << j.output;
  EXPECT_NE(j.output.find("\"persistent\": false"), std::string::npos) << j.output;
  EXPECT_NE(j.output.find("\"STREAM_K\""), std::string::npos) << j.output;
}

TEST(Cli, BadSplitKConfigsAreUsageErrors) {
  const std::string prog = case_path("seed_gather_mm_f16.tfs");
  for (const char* bad : {"32x32x32/1/4/splitk0",
                          "32x32x32/1/4/splitk65",
                          "32x32x32/1/4/split4",
                          "32x32x32/1/4/splitk4x",
                          "32x32x32/1/4/",
                          "32x32x32/1/4/persistentx",
                          "32x32x32/1/4/persistent/splitk2",
                          "32x32x32/1/4/pingpongx",
                          "32x32x32/1/4/pingpong/persistent",
                          "32x32x32/1/4/persistent/pingpong",
                          "32x32x32/17/4",
                          "96x128x32/1/4",
                          "128x160x32/1/4",
                          "128x128x96/1/4",
                          "128x128x192/1/4",
                          "576x128x32/1/4",
                          "32x32x32/0/4",
                          "4294967328x32x32/1/4",
                          "32x32x32/1/4/splitk4294967298",
                          " 32x32x32/1/4",
                          "+32x32x32/1/4",
                          "32x32x32/1/4/splitk 2",
                          "32x32x32/1/4/splitk+2",
                          "32x32x32/1/4/streamk0",
                          "32x32x32/1/4/streamk4097",
                          "32x32x32/1/4/streamk",
                          "32x32x32/1/4/streamk2x",
                          "32x32x32/1/4/splitk2/streamk2",
                          "32x32x32/1/4/streamk2/splitk2",
                          "32x32x32/1/4/rax",
                          "32x32x32/1/4/ra/persistent",
                          "32x32x32/1/4/persistent/ra/ra",
                          "32x32x32/1/4/ra/splitk2",
                          "32x32x32/1/4/ra128",
                          "32x32x32/1/4/ra256/ra",
                          "32x32x32/1/4/ra2560",
                          "32x32x32/1/4/tail",
                          "32x32x32/1/4/tail0",
                          "32x32x32/1/4/tail65",
                          "32x32x32/1/4/tailx",
                          "32x32x32/1/4/tail+3",
                          "32x32x32/1/4/tail3/ra",
                          "32x32x32/1/4/tail3/tail3",
                          ""}) {
    // (quoted: the blanks and the empty value reach the parser)
    Result r = run_cli("run " + prog + " --device cpu --gemm-config '" + bad + "'");
    EXPECT_NE(r.exit_code, 0) << bad << "\n" << r.output;
    EXPECT_NE(r.output.find("--gemm-config"), std::string::npos) << bad << "\n" << r.output;
  }
  // Split-K needs constant sizes: a symbolic M is named once ("M", not
  // "M = M"), with the way out.
  {
    const std::string sym = ::testing::TempDir() + "/split_symbolic.tfs";
    std::ofstream(sym) << "def f(x: f16[M, 64], w: f16[64, 32]):\n    return x @ w\n";
    Result s = run_cli("emit " + sym + " --stage tir --gemm-config 32x32x32/2/4/splitk2");
    EXPECT_EQ(s.exit_code, 1) << s.output;
    EXPECT_NE(s.output.find("needs constant sizes, but M is a symbolic dim; use a config without "
                            "/splitk2"),
              std::string::npos)
        << s.output;
  }
  // Up to 16 stages: a deep ring of small stages (weight streaming at small
  // M, what cuBLAS does with 13 of 16 KB).
  Result deep = run_cli("emit " + prog +
                        " --target sm_90a --stage cuda --gemm-config 64x64x64/12/4/splitk2");
  EXPECT_EQ(deep.exit_code, 0) << deep.output;
  EXPECT_NE(deep.output.find("(12 stages)"), std::string::npos) << deep.output;
  // "/persistent" (after an optional split) asks the persistent pass for the
  // kernel: sm_90a takes it, a split-K kernel says why not.
  Result r = run_cli("emit " + prog +
                     " --target sm_90a --stage cuda --gemm-config 128x256x64/3/8/persistent");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("// persistent: each block takes tiles"), std::string::npos) << r.output;
  r = run_cli("emit " + prog +
              " --target sm_90a --stage cuda --gemm-config 128x128x64/3/8/splitk2/persistent");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("not persistent: split-K"), std::string::npos) << r.output;
  // BLOCK_N 192 (not a power of two): wgmma m64n192 on two warpgroups of
  // 64x192, persistent too.
  r = run_cli("emit " + prog +
              " --target sm_90a --stage cuda --gemm-config 128x192x64/4/8/persistent");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tf::WgmmaTile<tf::f16, 128, 192, 64, 2, 1>"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("// persistent: each block takes tiles"), std::string::npos) << r.output;
  // "/pingpong": persistent with two consumer teams, where the tile is one
  // warpgroup; a two-warpgroup tile stays persistent and says why not.
  r = run_cli("emit " + prog + " --target sm_90a --stage cuda --gemm-config 128x128x64/4/4/pingpong");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("// ping-pong: two teams of 128 MMA threads"), std::string::npos)
      << r.output;
  r = run_cli("emit " + prog + " --target sm_90a --stage cuda --gemm-config 128x256x64/3/8/pingpong");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("not ping-pong: teams of one MMA warpgroup"), std::string::npos)
      << r.output;
  // "/ra" last asks the register_a pass for the kernel (the seed's gathered
  // A into wgmma's register fragments); at BLOCK_K 32 it says why not.
  r = run_cli("emit " + prog +
              " --target sm_90a --stage cuda --gemm-config 128x256x64/4/8/persistent/ra");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("// register A: the MMA warps load"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("mma_async_rs("), std::string::npos) << r.output;
  // (an out-of-range index is still reported: the index checks moved into
  // the MMA threads, at the first tile and at each later tile's start)
  EXPECT_NE(r.output.find("// the index checks of this thread's rows"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("if (tf_git > 0)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tf::report(tf_status, 1"), std::string::npos) << r.output;
  // (a later tile's checks report out of line: inline, ptxas issued the
  // fragment loads one k-tile ahead instead of three)
  EXPECT_NE(r.output.find("tf::report_cold(tf_status, 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tf::load_a_fragment(tf_ra["), std::string::npos) << r.output;
  // "/ra256": the same with the fragment loads' 256-byte L2 prefetch.
  r = run_cli("emit " + prog +
              " --target sm_90a --stage cuda --gemm-config 128x256x64/4/8/persistent/ra256");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tf::load_a_fragment<false, true>(tf_ra["), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("tf::load_a_fragment(tf_ra["), std::string::npos) << r.output;
  r = run_cli("explain " + prog + " --target sm_90a --gemm-config 128x256x64/4/8/persistent/ra256");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("fragment (.L2::256B)"), std::string::npos) << r.output;
  r = run_cli("emit " + prog + " --target sm_90a --stage cuda --gemm-config 128x256x32/3/8/ra");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no register A: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("mma_async_rs("), std::string::npos) << r.output;
  r = run_cli("explain " + prog + " --target sm_90a --json --gemm-config 128x256x32/3/8/ra");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"REGISTER_A\""), std::string::npos) << r.output;
}

TEST(Cli, MainExampleRuns) {
  Result r = run_cli("run " + std::string(TILEFUSE_SOURCE_DIR) + "/examples/gather_mm.tfs");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("f16[2048, 2048]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("time:"), std::string::npos) << r.output;
}

TEST(Cli, SeedsAreReproducibleAndDistinct) {
  std::string prog = case_path("pointwise_both_operands.tfs");
  auto hash = [](const std::string& out) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(out, m, std::regex("xxh64=([0-9a-f]+)"))) << out;
    return m.size() > 1 ? m[1].str() : std::string();
  };
  Result a = run_cli("run " + prog + " --seed 1"), b = run_cli("run " + prog + " --seed 1"),
         c = run_cli("run " + prog + " --seed 2");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(hash(a.output), hash(b.output));
  EXPECT_NE(hash(a.output), hash(c.output));
}

TEST(Cli, NpyInputsAndSavedOutputsRoundTrip) {
  fs::path dir = temp_dir("npy");
  std::string prog = case_path("gather_negative_index.tfs");
  Program p = load_program(prog);
  std::vector<Tensor> inputs = make_random_inputs(p.graph, 99);
  const char* names[] = {"x", "y", "idx"};
  std::string args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string file = (dir / (std::string(names[i]) + ".npy")).string();
    write_npy(file, inputs[i]);
    args += " --input " + std::string(names[i]) + "=" + file;
  }
  // The reference engine reproduces the in-process evaluation bit for bit
  // (the inputs were read exactly); the compiled kernels sum over K in
  // another order, so they agree to f32 rounding.
  Tensor expected = evaluate(p.graph, inputs)[0];
  for (const char* engine : {"reference", "executor"}) {
    fs::path out = dir / engine;
    Result r =
        run_cli("run " + prog + args + " --engine " + engine + " --save-output " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    Tensor saved = read_npy((out / "out0.npy").string());
    ASSERT_EQ(saved.shape(), expected.shape());
    if (std::string(engine) == "reference")
      EXPECT_EQ(relative_error(saved, expected), 0.0);
    else
      EXPECT_LE(relative_error(saved, expected), 1e-5);
  }
  fs::remove_all(dir);
}

// Every output gets a file of its own, whatever the values are named: a
// repeated output's suffix skips names other outputs already have.
TEST(Cli, SavedOutputsHaveDistinctNames) {
  fs::path dir = temp_dir("names");
  const std::string prog = (dir / "names.tfs").string();
  std::ofstream(prog) << "def f(x: f32[4, 4], z_1: f32[4, 4]):\n    z = x @ x\n    return z, z, z_1\n";
  const Program p = load_program(prog);
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, 5);
  const std::string z1 = (dir / "z1.npy").string();
  write_npy(z1, inputs[1]);
  const fs::path out = dir / "out";
  Result r = run_cli("run " + prog + " --input z_1=" + z1 + " --save-output " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int files = 0;
  for (const auto& e : fs::directory_iterator(out)) files += e.path().extension() == ".npy";
  EXPECT_EQ(files, 3) << r.output;
  // z_1 is the parameter returned as is; the repeated z is z_2.
  ASSERT_TRUE(fs::exists(out / "z_2.npy")) << r.output;
  EXPECT_EQ(relative_error(read_npy((out / "z_1.npy").string()), inputs[1]), 0.0);
  EXPECT_EQ(relative_error(read_npy((out / "z_2.npy").string()), read_npy((out / "z.npy").string())),
            0.0);
  fs::remove_all(dir);
}

// A generated name (out<i>, an unnamed output) never takes a name the
// program gave another output: the user's out0 is out0.npy.
TEST(Cli, GeneratedOutputNamesGiveWayToTheProgramsNames) {
  fs::path dir = temp_dir("names_out0");
  const std::string prog = (dir / "names.tfs").string();
  std::ofstream(prog) << "def f(x: f32[4, 4]):\n    out0 = x * 3.0\n    return x * 2.0, out0\n";
  const Program p = load_program(prog);
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, 5);
  const std::string xf = (dir / "x.npy").string();
  write_npy(xf, inputs[0]);
  const fs::path out = dir / "out";
  Result r = run_cli("run " + prog + " --input x=" + xf + " --save-output " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("out0_1: f32[4, 4]"), std::string::npos) << r.output;
  const Tensor user = read_npy((out / "out0.npy").string());
  const Tensor gen = read_npy((out / "out0_1.npy").string());
  // out0 = 3x, the unnamed output 2x.
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(user.get_linear(i), static_cast<float>(inputs[0].get_linear(i) * 3.0f)) << i;
    EXPECT_EQ(gen.get_linear(i), static_cast<float>(inputs[0].get_linear(i) * 2.0f)) << i;
  }
  fs::remove_all(dir);
}

// Integer literals past 2^53 stay exact on every engine (they went through
// a double: x == 2^53 + 1 was true for x = 2^53, and --check agreed).
TEST(Cli, IntegerLiteralsAreExact) {
  fs::path dir = temp_dir("intlit");
  const std::string prog = (dir / "lit.tfs").string();
  std::ofstream(prog) << "def f(x: i64[2]):\n"
                         "    return x == 9007199254740993, x + 9007199254740993, "
                         "torch.where(x > 0, 9223372036854775806, x)\n";
  const std::string x = (dir / "x.npy").string();
  auto i64_at = [](const Tensor& t, int i) {
    int64_t v = 0;
    std::memcpy(&v, t.data_ptr() + 8 * i, 8);
    return v;
  };
  Tensor xs = Tensor::empty(DType::I64, {2});
  const int64_t xv[2] = {9007199254740992, 9007199254740993};
  std::memcpy(xs.data_ptr(), xv, sizeof xv);
  write_npy(x, xs);
  for (const char* engine : {"executor", "reference"}) {
    SCOPED_TRACE(engine);
    const fs::path out = dir / engine;
    Result r = run_cli("run " + prog + " --input x=" + x + " --engine " + engine +
                       " --check --save-output " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const Tensor eq = read_npy((out / "out0.npy").string());
    const Tensor sum = read_npy((out / "out1.npy").string());
    const Tensor where = read_npy((out / "out2.npy").string());
    EXPECT_EQ(eq.get_linear(0), 0.0);
    EXPECT_EQ(eq.get_linear(1), 1.0);
    ASSERT_EQ(sum.dtype(), DType::I64);
    EXPECT_EQ(i64_at(sum, 0), 18014398509481985);
    EXPECT_EQ(i64_at(sum, 1), 18014398509481986);
    EXPECT_EQ(i64_at(where, 1), 9223372036854775806);
  }
  fs::remove_all(dir);
}

// INT64_MIN as a literal and as a range bound runs on every engine: the
// bound's values are drawn, the literal is added exactly (wrapping as int64
// does in PyTorch). 2**63 without its '-' is a located error.
TEST(Cli, Int64MinIsALiteral) {
  fs::path dir = temp_dir("int64min");
  const std::string prog = (dir / "min.tfs").string();
  std::ofstream(prog) << "def f(x: i64[2], i: i64[3] in [-9223372036854775808, "
                         "-9223372036854775807)):\n"
                         "    return x * 0 + -9223372036854775808, i\n";
  auto i64_at = [](const Tensor& t, int i) {
    int64_t v = 0;
    std::memcpy(&v, t.data_ptr() + 8 * i, 8);
    return v;
  };
  for (const char* engine : {"executor", "reference"}) {
    SCOPED_TRACE(engine);
    const fs::path out = dir / engine;
    Result r =
        run_cli("run " + prog + " --engine " + engine + " --check --save-output " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const Tensor sum = read_npy((out / "out0.npy").string());
    const Tensor i = read_npy((out / "i.npy").string());
    for (int k = 0; k < 2; ++k) EXPECT_EQ(i64_at(sum, k), INT64_MIN);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(i64_at(i, k), INT64_MIN);
  }
  const std::string bad = (dir / "bad.tfs").string();
  std::ofstream(bad) << "def f(x: i64[2]):\n    return x + 9223372036854775808\n";
  Result r = run_cli("emit " + bad);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, bad +
                          ":2:16: error: integer literal '9223372036854775808' is too large (the "
                          "limit is 2**63 - 1)\n"
                          "      return x + 9223372036854775808\n"
                          "                 ^~~~~~~~~~~~~~~~~~~\n");
  fs::remove_all(dir);
}

// A program saved with a UTF-8 byte order mark runs as without it, and a
// diagnostic's columns count from after the mark.
TEST(Cli, ByteOrderMarkIsSkipped) {
  fs::path dir = temp_dir("bom");
  const std::string prog = (dir / "bom.tfs").string();
  std::ofstream(prog) << "\xEF\xBB\xBF"
                      << "def f(x: f32[4]):\n    return x + 1.0\n";
  Result r = run_cli("emit " + prog + " --stage=graph");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "%0 = parameter x : f32[4]\n%1 = scalar 1.0 : f32[]\n%2 = add %0, %1 : f32[4]\n"
            "return %2\n");
  Result run = run_cli("run " + prog + " --device cpu --check");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const std::string bad = (dir / "bad.tfs").string();
  std::ofstream(bad) << "\xEF\xBB\xBF"
                     << "def f(x: f32[4]) $:\n    return x\n";
  Result e = run_cli("emit " + bad);
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(e.output, bad + ":1:18: error: unexpected character '$'\n  def f(x: f32[4]) $:\n" +
                          std::string(19, ' ') + "^\n");
  fs::remove_all(dir);
}

TEST(Cli, BadInputFilesAreUserErrors) {
  fs::path dir = temp_dir("badnpy");
  std::string prog = case_path("gather_negative_index.tfs");
  std::string wrong_dtype = (dir / "x64.npy").string();
  write_npy(wrong_dtype, Tensor::full(DType::F64, {64, 96}, 0.5));
  std::string wrong_shape = (dir / "x32.npy").string();
  write_npy(wrong_shape, Tensor::full(DType::F32, {64, 95}, 0.5));
  struct Case {
    std::string args, needle;
  } cases[] = {
      {"--input x=" + wrong_dtype, "is f32 but"},
      {"--input x=" + wrong_shape, "[64, 95]"},
      {"--input z=" + wrong_shape, "not a parameter"},
      {"--input x", "name=file.npy"},
      {"--input x=" + (dir / "missing.npy").string(), "missing.npy"},
  };
  for (const Case& c : cases) {
    Result r = run_cli("run " + prog + " " + c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.needle), std::string::npos) << c.args << "\n" << r.output;
  }
  fs::remove_all(dir);
}

TEST(Cli, MalformedProgramGivesLocatedDiagnostic) {
  fs::path dir = temp_dir("bad");
  fs::path prog = dir / "bad.tfs";
  std::ofstream(prog) << "def f(x: f32[4, 5], y: f32[6, 7]):\n    return x @ y\n";
  Result r = run_cli("run " + prog.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bad.tfs:2:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[4, 5]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[6, 7]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("^"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

TEST(Cli, UsageErrorsAndHelp) {
  EXPECT_EQ(run_cli("").exit_code, 1);
  EXPECT_EQ(run_cli("frobnicate").exit_code, 1);
  EXPECT_EQ(run_cli("run").exit_code, 1);
  EXPECT_EQ(run_cli("run x.tfs --device tpu").exit_code, 1);
  Result missing = run_cli("run /nonexistent/prog.tfs");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("/nonexistent/prog.tfs"), std::string::npos) << missing.output;
  Result help = run_cli("run --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* opt :
       {"--device", "--plan", "--engine", "--seed", "--input", "--save-output", "--check"})
    EXPECT_NE(help.output.find(opt), std::string::npos) << opt;
  EXPECT_EQ(run_cli("run x.tfs --plan sideways").exit_code, 1);
  EXPECT_EQ(run_cli("run x.tfs --engine abacus").exit_code, 1);
  // A thread each: an absurd count is refused before any is started (it
  // used to exhaust the machine's thread limit); a seed past 2^64 - 1 is
  // refused rather than saturated (fresh-user findings).
  const std::string example = std::string(TILEFUSE_SOURCE_DIR) + "/examples/gather_mm.tfs";
  // Integers are written as integers on every option (--threads took " 2"
  // and "+2", which --seed refused).
  for (const char* bad : {"--threads 100000", "--threads -1", "--threads two",
                          "--seed 99999999999999999999999", "--seed -3", "--threads ' 2'",
                          "--threads +2", "--seed ' 5'", "--max-program-size ' 16M'"}) {
    Result r = run_cli("run " + example + " " + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << "\n" << r.output;
    EXPECT_NE(r.output.find(std::string(bad).substr(0, std::string(bad).find(' '))),
              std::string::npos)
        << r.output;
  }
  EXPECT_EQ(run_cli("bench " + example + " --threads 5000").exit_code, 1);
  EXPECT_EQ(run_cli("bench " + example + " --device cpu --repeats ' 3'").exit_code, 1);
  // An empty --save-inputs is refused before anything is timed, as run's
  // empty --save-output (it was taken as "not given").
  Result empty_dir = run_cli("bench " + example + " --device cpu --save-inputs ''");
  EXPECT_EQ(empty_dir.exit_code, 1) << empty_dir.output;
  EXPECT_NE(empty_dir.output.find("--save-inputs needs a directory"), std::string::npos)
      << empty_dir.output;
  // A single-valued option twice is an error in our words (CLI11's were
  // "--device: At Most 1 required but received 2").
  Result twice = run_cli("run " + example + " --device cpu --device cuda");
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.output.find("tilefuse: error: --device was given 2 times; it takes one value"),
            std::string::npos)
      << twice.output;
}

// --check holds an output to the oracle rounded to the output's dtype: an f8
// output's own rounding (~3-5%, over f8's 1e-2) and a correct f16 result that
// overflows to inf (as in PyTorch) pass.
TEST(Cli, CheckComparesWithTheOracleRoundedToTheOutputDtype) {
  fs::path dir = temp_dir("check");
  const std::pair<const char*, const char*> programs[] = {
      {"f8.tfs",
       "def f(x: f32[64, 64], w: f32[64, 64]):\n    return (x @ w).to(torch.float8_e4m3fn)\n"},
      {"f8e5.tfs",
       "def f(x: f8e4m3[32, 48], w: f8e4m3[48, 16]):\n    return (x @ w).to(torch.float8_e5m2)\n"},
      {"inf.tfs",
       "def f(x: f16[4, 4], w: f16[4, 4]):\n    return torch.exp(torch.abs(x @ w) * 1000 + 20)\n"},
  };
  for (auto [name, text] : programs) {
    const fs::path prog = dir / name;
    std::ofstream(prog) << text;
    for (const char* plan : {"fused", "unfused"}) {
      Result r = run_cli("run " + prog.string() + " --check --device cpu --plan " + plan);
      EXPECT_EQ(r.exit_code, 0) << name << " " << plan << "\n" << r.output;
      EXPECT_NE(r.output.find(" ok"), std::string::npos) << r.output;
    }
  }
  // The inf program's output really is inf everywhere (the check is not vacuous).
  Result inf = run_cli("run " + (dir / "inf.tfs").string() + " --device cpu");
  EXPECT_NE(inf.output.find("sum=inf"), std::string::npos) << inf.output;
  fs::remove_all(dir);
}

// The tester's report: [[+NaN, -NaN], [-NaN, +NaN]] @ ones gives NaNs whose
// signs may differ between the CPU executor and the f64 oracle. --check
// matches NaN with NaN whatever the sign (relative_error), so that is no
// failure, with either plan and with the reference engine; and `run`'s sum
// and xxh64 count every NaN as one value, so the engines print the same.
TEST(Cli, CheckMatchesNaNsOfEitherSign) {
  fs::path dir = temp_dir("nan_sign");
  const fs::path prog = dir / "dot.tfs";
  std::ofstream(prog) << "def dot(a: f32[2, 2], b: f32[2, 2]):\n    return a @ b\n";
  const Tensor a = Tensor::empty(DType::F32, {2, 2}), b = Tensor::empty(DType::F32, {2, 2});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double av[] = {nan, -nan, -nan, nan};
  for (int64_t i = 0; i < 4; ++i) {
    a.set_linear(i, av[i]);
    b.set_linear(i, 1.0);
  }
  ASSERT_TRUE(std::signbit(a.get_linear(1)) && !std::signbit(a.get_linear(0)));
  write_npy((dir / "a.npy").string(), a);
  write_npy((dir / "b.npy").string(), b);
  const std::string inputs =
      " --input a=" + (dir / "a.npy").string() + " --input b=" + (dir / "b.npy").string();
  std::vector<std::vector<std::string>> hashes;
  for (const char* how : {"--plan fused", "--plan unfused", "--engine reference"}) {
    Result r = run_cli("run " + prog.string() + " --device cpu --check " + how + inputs);
    EXPECT_EQ(r.exit_code, 0) << how << "\n" << r.output;
    // Every element is NaN. Its sign is the engine's (the executor's is
    // negative, the reference evaluator's positive), which is no difference
    // of value: the sum prints as nan and the hash is the same everywhere.
    EXPECT_NE(r.output.find("sum=nan  xxh64="), std::string::npos) << r.output;
    hashes.push_back(testing::output_hashes(r.output));
    EXPECT_EQ(hashes.back().size(), 1u) << r.output;
    EXPECT_EQ(hashes.back(), hashes.front()) << how << "\n" << r.output;
    EXPECT_NE(r.output.find("check: out0 rel_err=0.000e+00 tol=1e-05 ok"), std::string::npos)
        << r.output;
  }
  fs::remove_all(dir);
}

// A program that computes nothing emits a comment saying so, at every
// kernel stage, not an empty text.
TEST(Cli, EmitSaysWhenThereAreNoKernels) {
  fs::path dir = temp_dir("no_kernels");
  const fs::path prog = dir / "ident.tfs";
  std::ofstream(prog) << "def f(x: f32[4, 3]):\n    return x\n";
  for (const char* stage : {"--stage cuda --target sm_90a", "--stage tir", "--stage tir-opt"}) {
    Result r = run_cli("emit " + prog.string() + " " + stage);
    EXPECT_EQ(r.exit_code, 0) << stage << "\n" << r.output;
    EXPECT_NE(r.output.find("no kernels: nothing to compute"), std::string::npos)
        << stage << "\n" << r.output;
  }
  fs::remove_all(dir);
}

// A NaN the sum makes itself (inf + -inf, no NaN element) prints as `nan`
// too, not x86's negative default NaN (`-nan`), as the README says.
TEST(Cli, ASumOfPlusAndMinusInfPrintsNan) {
  fs::path dir = temp_dir("inf_sum");
  const fs::path prog = dir / "div.tfs";
  std::ofstream(prog) << "def div(a: f32[4]):\n    return a / 0.0\n";
  Tensor a = Tensor::empty(DType::F32, {4});
  const double av[] = {1.0, -1.0, 2.0, -2.0};
  for (int64_t i = 0; i < 4; ++i) a.set_linear(i, av[i]);
  write_npy((dir / "a.npy").string(), a);
  Result r = run_cli("run " + prog.string() + " --device cpu --input a=" +
                     (dir / "a.npy").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("sum=nan  xxh64="), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("-nan"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

// ---- explain and emit ----------------------------------------------------------

using nlohmann::json;

json explain_json(const std::string& args) {
  Result r = run_cli("explain " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
  json j = json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << r.output;
  return j;
}

// The copies of `k` into operand `operand`'s tile (the one gemm() reads).
std::vector<json> tile_copies(const json& k, const std::string& operand) {
  std::vector<json> out;
  for (const json& c : k.at("copies"))
    if (c.at("operand") == operand && c.at("role") == "tile") out.push_back(c);
  return out;
}

// DESIGN.md's motivating case on sm_90a (issue 3, "What must show"): one
// kernel; the index load, its negative wrap and its bounds check hoisted
// out of the K loop by licm; A copied with 16-byte cp.async, B with 16-byte
// cp.async or TMA.
void expect_seed_account(const std::string& program) {
  const json a = explain_json(program + " --target sm_90a");
  EXPECT_EQ(a.at("target"), "sm_90a");
  EXPECT_EQ(a.at("plan"), "fused");
  ASSERT_EQ(a.at("kernels").size(), 1u) << a.dump(2);
  const json& k = a.at("kernels")[0];
  EXPECT_EQ(k.at("kind"), "gemm");
  ASSERT_EQ(k.at("fused").at("prologue").at("A").size(), 1u);
  EXPECT_NE(k.at("fused").at("prologue").at("A")[0].get<std::string>().find("=index(x, index)"),
            std::string::npos);

  // The GEMM template's K loop is `for k`; what licm took out of it.
  bool load_and_wrap = false, check = false;
  for (const json& h : k.at("hoisted")) {
    if (h.at("from_loop") != "k") continue;
    const std::string what = h.at("what");
    if (what.find("index[") != std::string::npos && what.find("select(") != std::string::npos &&
        what.find("< 0") != std::string::npos && what.find("+ 2048") != std::string::npos)
      load_and_wrap = true;
    if (h.at("kind") == "check" && what.find("check(") != std::string::npos &&
        what.find("index[") != std::string::npos)
      check = true;
  }
  EXPECT_TRUE(load_and_wrap) << k.at("hoisted").dump(2);
  EXPECT_TRUE(check) << k.at("hoisted").dump(2);
  // And the generated kernel agrees: the producer reads the index once, for
  // its hoisted row addresses (producer_start forwards the staged rows into
  // them, so the Tile IR's copy shows the index under its `hoist` plan);
  // from its per-stage issue on, nothing reads the index or checks it.
  Result cuda = run_cli("emit " + program + " --stage=cuda --target sm_90a");
  ASSERT_EQ(cuda.exit_code, 0) << cuda.output;
  const size_t issue = cuda.output.find("auto tf_issue =");
  ASSERT_NE(issue, std::string::npos) << cuda.output;
  EXPECT_EQ(cuda.output.find("index[", issue), std::string::npos) << cuda.output;
  EXPECT_EQ(cuda.output.find("tf::report", issue), std::string::npos) << cuda.output;

  const std::vector<json> a_copies = tile_copies(k, "A"), b_copies = tile_copies(k, "B");
  ASSERT_EQ(a_copies.size(), 1u) << k.at("copies").dump(2);
  EXPECT_EQ(a_copies[0].at("mode"), "cp_async") << a_copies[0];
  EXPECT_EQ(a_copies[0].at("width_bytes"), 16) << a_copies[0];
  ASSERT_EQ(b_copies.size(), 1u) << k.at("copies").dump(2);
  EXPECT_TRUE(b_copies[0].at("mode") == "cp_async" || b_copies[0].at("mode") == "tma")
      << b_copies[0];
  EXPECT_EQ(b_copies[0].at("width_bytes"), 16) << b_copies[0];
}

TEST(Explain, SeedOnSm90a) {
  expect_seed_account(case_path("seed_gather_mm_f16.tfs"));
}

TEST(Explain, SeedInF32OnSm90a) {
  fs::path dir = temp_dir("seed_f32");
  std::ifstream in(case_path("seed_gather_mm_f16.tfs"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t at; (at = text.find("f16[")) != std::string::npos;) text.replace(at, 3, "f32");
  fs::path prog = dir / "seed_gather_mm_f32.tfs";
  std::ofstream(prog) << text;
  ASSERT_NE(text.find("x: f32[2048, 2048], y: f32[2048, 2048]"), std::string::npos) << text;
  expect_seed_account(prog.string());
  fs::remove_all(dir);
}

TEST(Explain, OddKGatherIsRegisterStagedForAlignment) {
  for (const char* target : {"sm_80", "sm_90a"}) {
    const json a = explain_json(case_path("gather_odd_k_f16.tfs") + " --target " + target);
    ASSERT_EQ(a.at("kernels").size(), 1u);
    const std::vector<json> copies = tile_copies(a.at("kernels")[0], "A");
    ASSERT_EQ(copies.size(), 1u) << a.dump(2);
    EXPECT_EQ(copies[0].at("mode"), "register") << copies[0];
    const std::string reason = copies[0].at("reason");
    EXPECT_NE(reason.find("aligned"), std::string::npos) << reason;
    EXPECT_NE(reason.find("cp.async needs 4, 8 or 16"), std::string::npos) << reason;
  }
}

TEST(Explain, TextAndDefaults) {
  Result r = run_cli("explain " + case_path("seed_gather_mm_f16.tfs"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gather_mm: fused plan for cpu, 1 kernel"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("hoisted by licm:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("direct"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("decisions:"), std::string::npos) << r.output;
  r = run_cli("explain " + case_path("upcast_prologue_epilogue.tfs") + " --plan unfused");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("unfused plan for cpu"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(pointwise)"), std::string::npos) << r.output;
}

// What a config asks for and does not get is said where the config is
// shown: a persistent form the pass declined (sm_80 has no warp-specialized
// loop), and shared memory beyond the target's (emit warns, explain says
// so; run, bench and the tuner reject it).
TEST(Explain, DeclinedFormsAndSharedMemoryBeyondTheTarget) {
  Result r = run_cli("explain " + case_path("seed_gather_mm_f16.tfs") +
                     " --target sm_80 --gemm-config 128x128x32/3/8/persistent");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("PERSISTENT=1 (declined: see the notes)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("note: not persistent:"), std::string::npos) << r.output;
  r = run_cli("explain " + case_path("seed_gather_mm_f16.tfs") +
              " --target sm_90a --gemm-config 128x256x64/4/8/persistent");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("(declined"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("error:"), std::string::npos) << r.output;
  // A split tail as long as the ring is declined with the reason; a shorter
  // one is taken and named.
  r = run_cli("explain " + case_path("seed_gather_mm_f16.tfs") +
              " --target sm_90a --gemm-config 128x256x64/4/8/tail4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("SPLIT_TAIL=4 (declined: see the notes)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("note: no split tail: a tail of 4 k-tiles in a ring of 4 stages"),
            std::string::npos)
      << r.output;
  r = run_cli("explain " + case_path("seed_gather_mm_f16.tfs") +
              " --target sm_90a --gemm-config 128x256x64/4/8/tail3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("(declined"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("note: split tail: each MMA warpgroup's 256 columns as two m64n128 "
                          "chains; the last 3 k-tiles"),
            std::string::npos)
      << r.output;
  r = run_cli("explain " + case_path("seed_gather_mm_f16.tfs") +
              " --target sm_90a --gemm-config 128x256x64/8/8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  const json& k = j.at("kernels").at(0);
  EXPECT_GT(k.at("shared_bytes").get<int64_t>(), 227 * 1024) << k.dump(2);
  EXPECT_NE(k.at("shared_memory_error").get<std::string>().find("sm_90a allows 232448"),
            std::string::npos)
      << k.dump(2);
  r = run_cli("emit " + case_path("seed_gather_mm_f16.tfs") +
              " --target sm_90a --stage cuda --gemm-config 128x256x64/8/8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: kernel gemm0 needs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("__global__"), std::string::npos) << r.output;
}

TEST(Emit, EveryStageProducesItsForm) {
  const std::string prog = case_path("gather_negative_index.tfs");
  struct Stage {
    std::string args, needle;
  } stages[] = {
      {"--stage=graph", "= matmul"},
      {"--stage=plan", "plan fused: 1 step"},
      {"--stage=plan --plan unfused", "plan unfused:"},
      {"--stage=tir", "for k in pipelined("},
      {"--stage=tir --plan unfused", "kernel pointwise"},
      {"--stage=tir-opt", "plan(gemm_pack, width="},
      {"--stage=tir-opt --target sm_80", "plan(cp_async, width="},
      {"--stage=tir-opt --dump-after=licm", "# after licm\nkernel gemm0("},
      {"--stage=tir --dump-after=all", "# after dce\n"},
  };
  for (const Stage& s : stages) {
    Result r = run_cli("emit " + prog + " " + s.args);
    EXPECT_EQ(r.exit_code, 0) << s.args << "\n" << r.output;
    EXPECT_NE(r.output.find(s.needle), std::string::npos) << s.args << "\n" << r.output;
  }
  // tir is the kernel before the passes: no copy decisions yet.
  Result tir = run_cli("emit " + prog + " --stage=tir --target sm_80");
  EXPECT_EQ(tir.output.find("plan("), std::string::npos) << tir.output;
}

TEST(Emit, BadTargetStagePlanOrPassIsAUserErrorListingTheValidValues) {
  const std::string prog = case_path("gather_negative_index.tfs");
  struct Case {
    std::string args, needles[3];
  } cases[] = {
      {"emit " + prog + " --target sm_70", {"sm_70", "sm_80", "sm_90a"}},
      {"explain " + prog + " --target gpu", {"gpu", "cpu", "sm_90a"}},
      {"emit " + prog + " --stage=asm", {"asm", "tir-opt", "cuda"}},
      {"emit " + prog + " --stage=cuda", {"--stage=cuda", "--target", "sm_80"}},
      {"emit " + prog + " --plan half", {"half", "fused", "unfused"}},
      {"emit " + prog + " --stage=tir-opt --dump-after=licn", {"licn", "licm", "lower_copies"}},
      {"emit " + prog + " --stage=graph --dump-after=licm", {"--dump-after", "tir", "tir-opt"}},
      // A CUDA backend pass on the CPU target: the message says to give a
      // CUDA target.
      {"emit " + prog + " --stage=tir-opt --dump-after=warp_specialize",
       {"'warp_specialize' is a pass of the CUDA backend", "--target sm_90a", "licm"}},
      // --cuda-option and --gemm-config are checked on every path, though
      // only a GPU compile uses them: at --stage=graph, and in a CPU run.
      {"emit " + prog + " --stage=graph --cuda-option foo=1", {"--cuda-option", "`foo`", "wgmma"}},
      {"emit " + prog + " --stage=graph --gemm-config abc", {"--gemm-config", "`abc`", "128x"}},
      {"run " + prog + " --device cpu --cuda-option foo=1", {"--cuda-option", "`foo`", "wgmma"}},
      {"run " + prog + " --engine reference --cuda-option wgmma=2",
       {"--cuda-option", "wgmma=2", "NAME=0"}},
      // Exactly 0 or 1, as --help says: no other spelling of a boolean.
      {"emit " + prog + " --stage=graph --cuda-option wgmma=true",
       {"--cuda-option: a CUDA option is NAME=0 or NAME=1, got `wgmma=true`", "", ""}},
      {"emit " + prog + " --stage=graph --cuda-option tma=off",
       {"--cuda-option: a CUDA option is NAME=0 or NAME=1, got `tma=off`", "", ""}},
      {"run " + prog + " --device cpu --cuda-option tma=false",
       {"--cuda-option: a CUDA option is NAME=0 or NAME=1, got `tma=false`", "", ""}},
      {"explain " + prog + " --cuda-option wgmma=on", {"got `wgmma=on`", "", ""}},
      {"explain " + prog + " --cuda-option wgmma=01", {"got `wgmma=01`", "", ""}},
      {"explain " + prog + " --cuda-option wgmma", {"got `wgmma`", "", ""}},
      {"run " + prog + " --device cpu --gemm-config abc", {"--gemm-config", "`abc`", "128x"}},
  };
  for (const Case& c : cases) {
    Result r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    for (const std::string& n : c.needles)
      EXPECT_NE(r.output.find(n), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(Emit, HelpListsEveryOption) {
  Result emit = run_cli("emit --help"), explain = run_cli("explain --help"),
         top = run_cli("--help");
  EXPECT_EQ(emit.exit_code, 0);
  for (const char* opt : {"--stage", "--plan", "--target", "--dump-after", "tir-opt", "licm"})
    EXPECT_NE(emit.output.find(opt), std::string::npos) << opt << "\n" << emit.output;
  EXPECT_EQ(explain.exit_code, 0);
  for (const char* opt : {"--json", "--target", "--plan"})
    EXPECT_NE(explain.output.find(opt), std::string::npos) << opt << "\n" << explain.output;
  for (const char* cmd : {"run", "emit", "explain"})
    EXPECT_NE(top.output.find(cmd), std::string::npos) << cmd << "\n" << top.output;
}

}  // namespace
}  // namespace tilefuse
