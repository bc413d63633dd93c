// Issue 14's reproductions, each a test: no input crashes, hangs or blows up
// tilefuse. Every command exits 0 or 1 within 20 s and 2 GiB of resident
// memory (measured: wait4's peak RSS), and where a program runs, the CPU
// executor's outputs are the reference evaluator's bit for bit (same xxh64).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/cli.h"
#include "common/stress_programs.h"
#include "core/tensor.h"
#include "io/npy.h"
#include "runtime/cuda/loader.h"

namespace fs = std::filesystem;
namespace tilefuse {
namespace {

using testing::MeasuredCliResult;
using testing::run_cli_measured;

constexpr double kSeconds = 20;
constexpr long kMaxRssKb = 2L << 20;  // 2 GiB

fs::path temp_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("tilefuse_robust_" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::string write_program(const std::string& name, const std::string& source) {
  const fs::path p = temp_dir() / (name + ".tfs");
  std::ofstream(p) << source;
  return p.string();
}

// Runs `args` within the budget and returns the result; the exit code must
// be one of `allowed`.
MeasuredCliResult within_budget(const std::string& args, std::initializer_list<int> allowed = {0},
                                const testing::CliOptions& options = {}) {
  MeasuredCliResult r = run_cli_measured(args, kSeconds, options);
  EXPECT_FALSE(r.timed_out) << args << " ran past " << kSeconds << " s";
  EXPECT_LE(r.max_rss_kb, kMaxRssKb) << args << " used " << r.max_rss_kb / 1024 << " MiB";
  EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), r.exit_code) != allowed.end())
      << args << " exited " << r.exit_code << "\n"
      << r.output.substr(0, 2000);
  return r;
}

// run (compared with the reference), emit --stage=tir-opt and explain
// --target sm_90a, each within the budget; for both plans unless
// `fused_only` (the largest programs, to keep CI short: the unfused plan
// only has more, smaller kernels).
void survives(const std::string& name, const std::string& source, bool fused_only = false) {
  SCOPED_TRACE(name);
  const std::string path = write_program(name, source);
  const MeasuredCliResult ref = within_budget("run --engine reference --threads 2 " + path);
  for (const char* plan : {"fused", "unfused"}) {
    if (fused_only && std::string(plan) == "unfused") continue;
    const MeasuredCliResult run =
        within_budget(std::string("run --device cpu --threads 2 --plan ") + plan + " " + path);
    EXPECT_FALSE(testing::output_hashes(run.output).empty()) << run.output.substr(0, 2000);
    EXPECT_EQ(testing::output_hashes(run.output), testing::output_hashes(ref.output))
        << plan << " plan vs the reference";
    within_budget(std::string("emit --stage=tir-opt --plan ") + plan + " " + path + " > /dev/null");
  }
  within_budget("explain --target sm_90a " + path + " > /dev/null");
}

TEST(Robustness, TwoThousandChainedStatements) {
  survives("chain2000", testing::chain_program(2000));
}

TEST(Robustness, FiveThousandChainedStatements) {
  survives("chain5000", testing::chain_program(5000));
}

TEST(Robustness, HundredThousandStatements) {
  survives("chain100000", testing::chain_program(100000), /*fused_only=*/true);
}

TEST(Robustness, TwoHundredThousandTermLine) {
  survives("line200000", testing::long_line_program(200000), /*fused_only=*/true);
}

TEST(Robustness, TwentyThousandRepeatedGemms) {
  survives("repeated20000", testing::repeated_gemm_program(20000));
}

TEST(Robustness, FiveThousandParametersWithTheirGemmsSummed) {
  survives("params5000", testing::many_params_program(5000), /*fused_only=*/true);
}

TEST(Robustness, ChainedGathers) {
  survives("gathers8", testing::gather_chain_program(8));
  survives("gathers9", testing::gather_chain_program(9));
}

TEST(Robustness, RepeatedSquaresInTheEpilogue) {
  survives("squares20", testing::square_chain_program(20));
  survives("squares25", testing::square_chain_program(25));
}

// Under a small `ulimit -s` every command either runs or stops with a
// located "program too large" error (exit 1), never a SIGSEGV: the parser's
// nesting (a few KiB of stack a level) is checked against the stack too, not
// only against its 256 levels.
TEST(Robustness, SmallStacksGiveAnErrorNotACrash) {
  const std::vector<std::pair<std::string, std::string>> programs = {
      {"parens250", testing::nested_parens_program(250)},
      {"chain5000s", testing::chain_program(5000)},
      {"line20000s", testing::long_line_program(20000)},
      {"gathers300s", testing::gather_chain_program(300)}};
  for (const char* stack_kib : {"256", "1024"}) {
    testing::CliOptions env;
    env.env = std::string("ulimit -s ") + stack_kib + "; ";
    for (const auto& [name, source] : programs) {
      const std::string path = write_program(name, source);
      for (const char* command : {"run --device cpu --threads 2", "run --engine reference",
                                  "emit --stage=tir-opt", "explain --target sm_90a"}) {
        SCOPED_TRACE(std::string("ulimit -s ") + stack_kib + ": " + command + " " + name);
        const MeasuredCliResult r =
            within_budget(std::string(command) + " " + path + " > /dev/null", {0, 1}, env);
        if (r.exit_code == 1) {
          EXPECT_NE(r.output.find("program too large"), std::string::npos) << r.output;
          EXPECT_NE(r.output.find(name + ".tfs:"), std::string::npos) << r.output;
        }
      }
    }
  }
}

// Reading /dev/zero stops at the program size limit.
TEST(Robustness, DevZeroIsAProgramTooLong) {
  const MeasuredCliResult r = within_budget("run /dev/zero", {1});
  EXPECT_NE(r.output.find("longer than 16 MiB, the most a program may be (--max-program-size "
                          "raises the limit)"),
            std::string::npos)
      << r.output;
  EXPECT_LE(r.max_rss_kb, 256L << 10);
  const MeasuredCliResult small = within_budget(
      "run --max-program-size 1K " + write_program("chain100", testing::chain_program(100)), {1});
  EXPECT_NE(small.output.find("longer than 1 KiB"), std::string::npos) << small.output;
  // A size past 2^63 is too large, not "not positive"; a bad unit says so.
  const std::string chain = write_program("chain1", testing::chain_program(1));
  const MeasuredCliResult huge =
      within_budget("run --max-program-size 99999999999999999999 " + chain, {1});
  EXPECT_NE(huge.output.find("too large: 99999999999999999999"), std::string::npos) << huge.output;
  const MeasuredCliResult unit = within_budget("run --max-program-size 1X " + chain, {1});
  EXPECT_NE(unit.output.find("unknown unit in 1X"), std::string::npos) << unit.output;
  within_budget("run --device cpu --max-program-size 1G " + chain + " > /dev/null", {0});
}

// A billion repeats is an option error, not 8 GB of timing samples.
TEST(Robustness, BenchRepeatsAreBounded) {
  const std::string prog = write_program("small", testing::chain_program(3));
  const MeasuredCliResult r = within_budget("bench --device cpu --repeats 1000000000 " + prog, {1});
  EXPECT_NE(r.output.find("--repeats: must be 1 to 100000"), std::string::npos) << r.output;
  EXPECT_LE(r.max_rss_kb, 256L << 10);
  within_budget("bench --device cpu --warmup 1000000000 " + prog, {1});
}

// A program path that is a FIFO nothing writes to is an error at once, on
// every command (it hung: the diagnostic re-opened the file to quote it).
// A pipe with a writer is read until the writer closes it, and a located
// error quotes the text read (a pipe cannot be read twice).
TEST(Robustness, AProgramFifoWithNoWriterIsNotWaitedOn) {
  const fs::path fifo = temp_dir() / "fifo.tfs";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  for (const char* command : {"run", "emit", "explain", "bench", "tune"}) {
    SCOPED_TRACE(command);
    const MeasuredCliResult r = within_budget(std::string(command) + " " + fifo.string(), {1});
    EXPECT_LT(r.seconds, 10.0);
    EXPECT_EQ(r.output, fifo.string() + ": error: cannot read '" + fifo.string() +
                            "': not a regular file (a FIFO) and nothing is writing to it\n");
  }
  fs::remove(fifo);
  const std::string prog = write_program("piped", "def piped(x: f32[4]):\n    return x * 2.0\n");
  testing::CliOptions slow_writer;
  slow_writer.env = "(sleep 0.5; cat " + prog + ") | ";
  const MeasuredCliResult piped = within_budget("emit /dev/stdin --stage=graph", {0}, slow_writer);
  EXPECT_EQ(piped.output,
            "%0 = parameter x : f32[4]\n%1 = scalar 2.0 : f32[]\n%2 = mul %0, %1 : f32[4]\n"
            "return %2\n");
  testing::CliOptions bad_writer;
  bad_writer.env = "printf 'def bad(x: f32[4]):\\n    return x $ 2\\n' | ";
  const MeasuredCliResult bad = within_budget("emit /dev/stdin", {1}, bad_writer);
  EXPECT_EQ(bad.output,
            "/dev/stdin:2:14: error: unexpected character '$'\n      return x $ 2\n"
            "               ^\n");
}

// A FIFO named like a tuning-cache entry (or a symlink) is not an entry:
// explain reads every entry of the tuning folder and must not block on it.
TEST(Robustness, AFifoInTheTuningCacheDoesNotBlock) {
  const fs::path cache = temp_dir() / "cache";
  fs::create_directories(cache / "tuning");
  const fs::path fifo = cache / "tuning" / "0123456789abcdef0123456789abcdef.tfc";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  fs::create_symlink("/dev/zero", cache / "tuning" / "fedcba9876543210fedcba9876543210.tfc");
  testing::CliOptions env;
  env.env = "TILEFUSE_CACHE_DIR=" + cache.string() + " ";
  const std::string seed = testing::case_path("seed_gather_mm_f16.tfs");
  const MeasuredCliResult r = within_budget("explain --target sm_90a " + seed, {0}, env);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_NE(r.output.find("tuning"), std::string::npos) << r.output.substr(0, 2000);
}

// A failed --check is exit 3 (not 2, an internal error): catastrophic
// cancellation in f32 is far from the f64 oracle, correctly.
TEST(Robustness, AFailedCheckExitsThree) {
  // f16 overflows to inf where the oracle stays finite: no allowance.
  const std::string prog = write_program(
      "overflow", "def overflow(x: f16[64]):\n    return (x * 1000.0 * 1000.0) / 1000000.0\n");
  const MeasuredCliResult r = within_budget("run --device cpu --check " + prog, {3});
  EXPECT_NE(r.output.find("rel_err=inf tol=0.01 FAILED (the program op by op at its dtypes is "
                          "inf from the oracle)"),
            std::string::npos)
      << r.output;
  const MeasuredCliResult ok = within_budget(
      "run --device cpu --check " + write_program("fine", testing::chain_program(3)), {0});
  EXPECT_EQ(ok.output.find("FAILED"), std::string::npos) << ok.output;
}

// A program as far from the oracle as its dtypes make it, however it is
// computed (cancellation of large intermediates, products below the dtype's
// normal range), passes --check with the op-by-op evaluation's error named,
// in both engines. (AFailedCheckExitsThree: no allowance where that
// evaluation leaves the oracle's range.)
TEST(Robustness, CheckAllowsWhatTheProgramsDtypesCost) {
  const std::vector<std::pair<std::string, std::string>> programs = {
      {"cancel", "def cancel(x: f32[64]):\n    return (x + 100000000.0) - 100000000.0\n"},
      {"cancel16",
       "def cancel16(x: f16[16, 16], w: f16[16, 16]):\n    return (x @ w + 100.0) - 100.0\n"},
      {"tiny",
       "def tiny(x: f32[8, 8], w: f32[8, 8]):\n    return (x * 1e-20) @ (w * 1e-20)\n"}};
  for (const auto& [name, source] : programs)
    for (const char* engine : {"executor", "reference"}) {
      const MeasuredCliResult r = within_budget(
          fmt::format("run --device cpu --check --engine {} {}", engine,
                      write_program(name, source)),
          {0});
      EXPECT_NE(r.output.find(" ok (the program op by op at its dtypes is "), std::string::npos)
          << name << " " << engine << "\n"
          << r.output;
      EXPECT_NE(r.output.find("from the oracle: within 2x of that)"), std::string::npos)
          << r.output;
    }
}

// An index out of range that no kernel reads: with K = 0 (x f32[5, 0]: the
// GEMM loads no A tile), N = 0 (w f32[4, 0]: no block runs), or behind a
// view or gather that keeps only some rows (x[i][0]), the plans ran silently
// where PyTorch and the reference raise. Every plan and the
// reference give the same error, at the subscript, naming x, i, the position
// and the value; a computed index (i + 0) too, and a valid index still runs.
TEST(Robustness, AnIndexOutOfRangeIntoAnEmptyGemmIsAnError) {
  const fs::path idx = temp_dir() / "idx_7.npy";
  Tensor bad = Tensor::empty(DType::I64, {2});
  bad.set_linear(0, 0);
  bad.set_linear(1, 7);
  write_npy(idx.string(), bad);
  const std::vector<std::pair<std::string, std::string>> programs = {
      {"k0", "def k0(x: f32[5, 0], w: f32[0, 3], i: i64[2]):\n    return x[i] @ w\n"},
      {"n0", "def n0(x: f32[5, 4], w: f32[4, 0], i: i64[2]):\n    return x[i] @ w\n"},
      {"c0", "def c0(x: f32[5, 0], w: f32[0, 3], i: i64[2]):\n    return x[i + 0] @ w\n"},
      // Views that drop a gathered position: only i[0] is read.
      {"s0", "def s0(x: f32[5, 4], w: f32[4, 3], i: i64[2]):\n    return x[i][0] @ w\n"},
      {"s1", "def s1(x: f32[5, 4], i: i64[2]):\n    return x[i][0:1] * 2.0\n"},
      {"s2", "def s2(x: f32[5, 4], i: i64[2]):\n    return x[i][i - i] * 2.0\n"}};
  for (const auto& [name, source] : programs) {
    SCOPED_TRACE(name);
    const std::string path = write_program(name, source);
    const std::string col = name == "c0" ? ":2:14: error: index 7 is out of bounds for dim 0 of "
                                           "`x` (size 5): (the result of add)[1] = 7"
                                         : ":2:14: error: index 7 is out of bounds for dim 0 of "
                                           "`x` (size 5): `i`[1] = 7";
    for (const char* how : {"--engine reference", "--plan fused", "--plan unfused"}) {
      const MeasuredCliResult r = within_budget(
          std::string("run --device cpu ") + how + " --input i=" + idx.string() + " " + path, {1});
      EXPECT_NE(r.output.find(name + ".tfs" + col), std::string::npos) << how << "\n" << r.output;
    }
  }
  // In range, the empty GEMM runs (all zeros; N = 0: no elements).
  Tensor good = Tensor::empty(DType::I64, {2});
  good.set_linear(0, -5);
  good.set_linear(1, 4);
  const fs::path ok = temp_dir() / "idx_ok.npy";
  write_npy(ok.string(), good);
  const MeasuredCliResult k0 = within_budget("run --device cpu --input i=" + ok.string() + " " +
                                             write_program("k0", programs[0].second));
  EXPECT_NE(k0.output.find("out0: f32[2, 3]  sum=0 "), std::string::npos) << k0.output;
}

// With every index out of range, the CPU executor's error is the same on
// every run and at every thread count: the lowest failing grid instance's
// (the first error to be caught used to win, so the position changed from
// run to run).
TEST(Robustness, AnIndexErrorIsTheSameAtEveryThreadCount) {
  const fs::path idx = temp_dir() / "idx_all_bad.npy";
  Tensor bad = Tensor::empty(DType::I64, {512});
  for (int64_t i = 0; i < 512; ++i) bad.set_linear(i, 5000);
  write_npy(idx.string(), bad);
  const std::string path = write_program(
      "allbad", "def allbad(x: f16[64, 32], w: f16[32, 16], i: i64[512]):\n    return x[i] @ w\n");
  std::string first;
  for (const char* threads : {"1", "2", "7", "16", "16", "16"}) {
    for (const char* plan : {"fused", "unfused"}) {
      const MeasuredCliResult r =
          within_budget(std::string("run --device cpu --plan ") + plan + " --threads " + threads +
                            " --input i=" + idx.string() + " " + path,
                        {1});
      const size_t at = r.output.find("error: ");
      ASSERT_NE(at, std::string::npos) << r.output;
      const std::string msg = r.output.substr(at, r.output.find('\n', at) - at);
      EXPECT_NE(msg.find("index 5000 is out of bounds for dim 0 of `x` (size 64): `i`["),
                std::string::npos)
          << msg;
      if (first.empty()) first = msg;
      EXPECT_EQ(msg, first) << plan << " --threads " << threads;
    }
  }
}

TEST(Robustness, SmallMessages) {
  // f8's tolerance prints as itself.
  const MeasuredCliResult f8 = within_budget(
      "run --device cpu --check " + write_program("f8",
                                                  "def f8(x: f32[4, 8], w: f32[8, 3]):\n"
                                                  "    return (x @ w).to(torch.float8_e4m3fn)\n"));
  EXPECT_NE(f8.output.find("tol=0.15"), std::string::npos) << f8.output;
  // A rank above 8 is an error at its place in the program.
  const MeasuredCliResult rank = within_budget(
      "run --device cpu " + write_program("rank",
                                          "def rank(x: f32[1, 1, 1, 1, 1, 1, 1, 1, 1]):\n"
                                          "    return x\n"),
      {1});
  EXPECT_NE(rank.output.find("rank.tfs:1:"), std::string::npos) << rank.output;
  EXPECT_NE(rank.output.find("at most 8 dims"), std::string::npos) << rank.output;
  const MeasuredCliResult rank2 = within_budget(
      "run --device cpu " +
          write_program(
              "rank2",
              "def rank2(x: f32[2, 2]):\n    return x.expand(1, 1, 1, 1, 1, 1, 1, 2, 2)\n"),
      {1});
  EXPECT_NE(rank2.output.find("rank2.tfs:2:"), std::string::npos) << rank2.output;
  // -x on a bool names an operation that exists, and it works.
  const MeasuredCliResult neg = within_budget(
      "run --device cpu " + write_program("neg", "def neg(x: f32[4]):\n    return -(x > 0)\n"),
      {1});
  EXPECT_NE(neg.output.find("torch.logical_not"), std::string::npos) << neg.output;
  const MeasuredCliResult lnot =
      within_budget("run --device cpu --check " +
                    write_program("lnot",
                                  "def lnot(x: f32[4]):\n"
                                  "    return torch.logical_not(x > 0), (x > 0).logical_not(), "
                                  "torch.logical_not(x)\n"));
  EXPECT_NE(lnot.output.find("out2: bool[4]"), std::string::npos) << lnot.output;
  // An unknown command says so.
  const MeasuredCliResult cmd = within_budget("runn x.tfs", {1});
  EXPECT_NE(cmd.output.find("unknown command 'runn'"), std::string::npos) << cmd.output;
  // --save-output "" is an error, not silently ignored.
  const MeasuredCliResult save = within_budget(
      "run --device cpu --save-output '' " + write_program("save", testing::chain_program(1)), {1});
  EXPECT_NE(save.output.find("--save-output needs a directory"), std::string::npos) << save.output;
}

// Where no GPU is usable, `run --device auto` opens no GPU library but the
// driver it probes for: no libnvrtc, no libcublasLt (541 MB). glibc's
// LD_DEBUG=files lists every library the process opens or tries to open.
TEST(Robustness, NoGpuLibrariesWithoutAGpu) {
  if (cuda::cuda_available()) GTEST_SKIP() << "a GPU is usable here";
  testing::CliOptions env;
  env.env = "LD_DEBUG=files ";
  const MeasuredCliResult r = within_budget(
      "run --device auto " + write_program("tiny", testing::chain_program(2)), {0}, env);
  EXPECT_NE(r.output.find("on cpu"), std::string::npos) << r.output.substr(0, 2000);
  EXPECT_EQ(r.output.find("cublasLt"), std::string::npos) << r.output.substr(0, 4000);
  EXPECT_EQ(r.output.find("nvrtc"), std::string::npos) << r.output.substr(0, 4000);
}

}  // namespace
}  // namespace tilefuse
