// The CLI with symbolic dims: --shape on run / bench / emit / explain, and
// `tilefuse tune --shapes` (which tunes nothing on the CPU).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "io/npy.h"

namespace fs = std::filesystem;
namespace tilefuse {
namespace {

using testing::CliOptions;
using testing::run_cli;

// A program with two symbolic dims in a temporary file.
class CliShape : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tilefuse_e2e_shape_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    prog_ = (dir_ / "g.tfs").string();
    std::ofstream(prog_) << "def g(x: f16[T, 64], w: f16[64, 40], idx: i64[M] in [0, T)):\n"
                            "    return torch.relu(x[idx] @ w)\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string prog_;
};

// "  out0: f16[7, 40]  sum=...  xxh64=..." -> the whole line.
std::string output_line(const std::string& out) {
  std::smatch m;
  std::regex re("  out0: [^\n]*");
  return std::regex_search(out, m, re) ? m.str() : "";
}

TEST_F(CliShape, RunsAtEverySizeAndMatchesTheReference) {
  for (const char* shape : {"T=100,M=7", "T=1,M=1", "T=64 --shape M=0", "T=300,M=257"}) {
    SCOPED_TRACE(shape);
    auto r = run_cli("run " + prog_ + " --device cpu --check --shape " + shape);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("check: out0"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(" ok"), std::string::npos) << r.output;
    // The executor and the reference evaluator agree bit for bit (f32
    // accumulation in the same order, one rounding to f16).
    auto ref = run_cli("run " + prog_ + " --engine reference --shape " + shape);
    EXPECT_EQ(output_line(r.output), output_line(ref.output)) << r.output << ref.output;
  }
  auto r = run_cli("run " + prog_ + " --device cpu --shape T=100,M=7");
  EXPECT_NE(r.output.find("out0: f16[7, 40]"), std::string::npos) << r.output;
}

TEST_F(CliShape, Errors) {
  auto missing = run_cli("run " + prog_ + " --device cpu --shape T=5");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("symbolic dim M needs a size: give --shape M=..."),
            std::string::npos)
      << missing.output;
  EXPECT_EQ(missing.output.find("--shape T="), std::string::npos) << missing.output;  // T is given
  auto unknown = run_cli("run " + prog_ + " --device cpu --shape T=5,M=2,Q=1");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.output.find("`Q` is not a symbolic dim"), std::string::npos) << unknown.output;
  // An unknown name is reported before the missing one it may misspell.
  auto misspelt = run_cli("run " + prog_ + " --device cpu --shape T=5,Q=1");
  EXPECT_EQ(misspelt.exit_code, 1);
  EXPECT_NE(misspelt.output.find("`Q` is not a symbolic dim"), std::string::npos)
      << misspelt.output;
  // Blanks around an item are not part of its name or size.
  for (const char* spaced : {"'T=5, M=2'", "' T=5 ,M = 2 '"}) {
    auto r = run_cli("run " + prog_ + " --device cpu --shape " + spaced);
    EXPECT_EQ(r.exit_code, 0) << spaced << "\n" << r.output;
    EXPECT_NE(r.output.find("out0: f16[2, 40]"), std::string::npos) << r.output;
  }
  auto blank = run_cli("run " + prog_ + " --device cpu --shape ' =5'");
  EXPECT_EQ(blank.exit_code, 1);
  EXPECT_NE(blank.output.find("--shape expects NAME=SIZE"), std::string::npos) << blank.output;
  // A size is decimal digits: no sign (strtoll took "+1"), no other base.
  for (const char* size : {"-5", "+5", "0x10", "1e3", "4.0", "5 5", "99999999999999999999"}) {
    auto bad = run_cli("run " + prog_ + " --device cpu --shape 'T=" + size + ",M=2'");
    EXPECT_EQ(bad.exit_code, 1) << size;
    EXPECT_NE(bad.output.find("--shape expects NAME=SIZE"), std::string::npos) << bad.output;
  }
  auto plus = run_cli("tune " + prog_ + " --device cpu --shapes T=+4 --shapes M=1");
  EXPECT_EQ(plus.exit_code, 1);
  EXPECT_NE(plus.output.find("`+4` is not a size"), std::string::npos) << plus.output;
  const std::string fixed = (dir_ / "f.tfs").string();
  std::ofstream(fixed) << "def f(x: f32[4]):\n    return x\n";
  auto on_fixed = run_cli("run " + fixed + " --device cpu --shape T=5");
  EXPECT_EQ(on_fixed.exit_code, 1);
  EXPECT_NE(on_fixed.output.find("has no symbolic dims"), std::string::npos) << on_fixed.output;
  // An index out of the bound range is a run-time error naming the size.
  const std::string npy = (dir_ / "idx.npy").string();
  {
    const Tensor idx = Tensor::empty(DType::I64, {3});
    for (int64_t i = 0; i < 3; ++i) idx.set_linear(i, i == 1 ? 9 : i);
    write_npy(npy, idx);
  }
  auto oob = run_cli("run " + prog_ + " --device cpu --shape T=9,M=3 --input idx=" + npy);
  EXPECT_EQ(oob.exit_code, 1) << oob.output;
  EXPECT_NE(oob.output.find("index 9 is out of bounds for dim 0 of `x` (size 9): `idx`[1] = 9"),
            std::string::npos)
      << oob.output;
}

// An index without a range into a dim bound to 0: no random index can be
// drawn. The error says so at the index parameter and names the indexed dim,
// rather than a run-time "index 0 is out of bounds" blaming the program;
// given as an --input, the parameter is not drawn and the run reports its
// values as usual.
TEST_F(CliShape, RandomIndexIntoAnEmptyDimIsAClearError) {
  const std::string prog = (dir_ / "e.tfs").string();
  std::ofstream(prog) << "def e(x: f16[T, 64], i: i64[M]):\n    return x[i]\n";
  for (const char* command : {"run", "bench"}) {
    SCOPED_TRACE(command);
    auto r = run_cli(std::string(command) + " " + prog + " --device cpu --shape T=0,M=3");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("e.tfs:1:22: error: cannot draw a random index for parameter `i`: it "
                            "indexes dim 0 of `x` (f16[T, 64] with T = 0), whose size is 0, so no "
                            "index value is valid"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("out of bounds"), std::string::npos) << r.output;
  }
  // M = 0 too: nothing to draw, and the run works.
  auto empty = run_cli("run " + prog + " --device cpu --check --shape T=0,M=0");
  EXPECT_EQ(empty.exit_code, 0) << empty.output;
  // Given by --input, `i` is the user's: its bad value is the run's error.
  const std::string npy = (dir_ / "i.npy").string();
  {
    const Tensor i = Tensor::empty(DType::I64, {3});
    for (int64_t k = 0; k < 3; ++k) i.set_linear(k, 0);
    write_npy(npy, i);
  }
  auto given = run_cli("run " + prog + " --device cpu --shape T=0,M=3 --input i=" + npy);
  EXPECT_EQ(given.exit_code, 1) << given.output;
  EXPECT_NE(given.output.find("index 0 is out of bounds for dim 0 of `x` (size 0)"),
            std::string::npos)
      << given.output;
}

// --input files bind the symbolic dims of their parameters (no --shape
// needed for them); a size that disagrees with --shape or with another file
// is an error naming both.
TEST_F(CliShape, InputFilesBindSymbolicDims) {
  const std::string prog = (dir_ / "b.tfs").string();
  std::ofstream(prog) << "def b(x: f16[M, 64], y: f16[M, 64]):\n    return x + y\n";
  auto write = [&](const std::string& name, int64_t rows) {
    const std::string path = (dir_ / name).string();
    const Tensor t = Tensor::empty(DType::F16, {rows, 64});
    for (int64_t i = 0; i < t.numel(); ++i) t.set_linear(i, 0.5);
    write_npy(path, t);
    return path;
  };
  const std::string a10 = write("a10.npy", 10), b10 = write("b10.npy", 10),
                    b12 = write("b12.npy", 12);
  auto r = run_cli("run " + prog + " --device cpu --check --input x=" + a10 + " --input y=" + b10);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("out0: f16[10, 64]  sum=640"), std::string::npos) << r.output;
  // One file binds M; the other parameter is drawn at that size.
  auto one = run_cli("run " + prog + " --device cpu --input x=" + a10);
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("out0: f16[10, 64]"), std::string::npos) << one.output;
  // The same size as --shape is fine; another is an error naming both.
  auto same = run_cli("run " + prog + " --device cpu --shape M=10 --input x=" + a10);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  auto shape = run_cli("run " + prog + " --device cpu --shape M=12 --input x=" + a10);
  EXPECT_EQ(shape.exit_code, 1) << shape.output;
  EXPECT_NE(
      shape.output.find("symbolic dim `M` is 12 in --shape but 10 in `x` (" + a10 + ", dim 0)"),
      std::string::npos)
      << shape.output;
  auto files =
      run_cli("bench " + prog + " --device cpu --repeats 1 --input x=" + a10 + " --input y=" + b12);
  EXPECT_EQ(files.exit_code, 1) << files.output;
  EXPECT_NE(files.output.find("symbolic dim `M` is 10 in `x` (" + a10 + ", dim 0) but 12 in `y` (" +
                              b12 + ", dim 0)"),
            std::string::npos)
      << files.output;
  // A file of another rank names the parameter's type and the file's shape.
  const std::string flat = (dir_ / "flat.npy").string();
  write_npy(flat, Tensor::empty(DType::F16, {64}));
  auto rank = run_cli("run " + prog + " --device cpu --input x=" + flat);
  EXPECT_EQ(rank.exit_code, 1) << rank.output;
  EXPECT_NE(rank.output.find("input `x` has 2 dims (f16[M, 64]) but " + flat + " holds [64]"),
            std::string::npos)
      << rank.output;
}

// Without a usable GPU, `tune --device auto` says why once, not at the end
// of every shape's line (the reason lists every libcuda path tried).
TEST_F(CliShape, TuneWithoutAGpuSaysWhyOnce) {
  const CliOptions no_cuda{.env = "TILEFUSE_LIBCUDA=/nonexistent/libcuda.so.1 "};
  auto r = run_cli("tune " + prog_ + " --shapes T=64 --shapes M=1,16,100", no_cuda);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  size_t count = 0;
  for (size_t at = r.output.find("/nonexistent/libcuda.so.1"); at != std::string::npos;
       at = r.output.find("/nonexistent/libcuda.so.1", at + 1))
    ++count;
  EXPECT_EQ(count, 1u) << r.output;
  EXPECT_EQ(r.output.rfind("device: cpu, because ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("g: T=64, M=16 (bucket T=64, M=16): not tuned: on the CPU the executor "
                          "runs the fused plan at its heuristic config\n"),
            std::string::npos)
      << r.output;
  // --device cpu: no reason to give, and no empty "()" after each line.
  auto cpu = run_cli("tune " + prog_ + " --device cpu --shapes T=64 --shapes M=1");
  EXPECT_EQ(cpu.output.find("()"), std::string::npos) << cpu.output;
  EXPECT_EQ(cpu.output.find("device: cpu"), std::string::npos) << cpu.output;
}

TEST_F(CliShape, EmitAndExplain) {
  auto tir = run_cli("emit " + prog_ + " --stage=tir");
  EXPECT_EQ(tir.exit_code, 0) << tir.output;
  EXPECT_NE(tir.output.find("  T: i32,\n  M: i32,"), std::string::npos) << tir.output;
  auto graph = run_cli("emit " + prog_ + " --stage=graph --shape T=10,M=3");
  EXPECT_NE(graph.output.find("symbols T=10, M=3"), std::string::npos) << graph.output;
  auto explain = run_cli("explain " + prog_ + " --json --target sm_80 --shape T=64,M=100",
                         {.with_stderr = false});
  ASSERT_EQ(explain.exit_code, 0) << explain.output;
  const nlohmann::json j = nlohmann::json::parse(explain.output);
  EXPECT_EQ(j.at("symbols"), nlohmann::json::array({"T", "M"}));
  EXPECT_EQ(j.at("specialization"), "T%16 M i32");
  // M = 100 is in bucket 128: BLOCK_M is the GPU heuristic's for 128 rows.
  EXPECT_EQ(j.at("kernels")[0].at("config").at("BLOCK_M"), 128);
  EXPECT_FALSE(j.at("kernels")[0].at("config").contains("index_bits"));
  // On a CUDA target the kernel takes the symbols as arguments and computes
  // its program ids from them.
  auto cuda = run_cli("emit " + prog_ + " --stage=cuda --target sm_80");
  EXPECT_EQ(cuda.exit_code, 0) << cuda.output;
  EXPECT_NE(cuda.output.find("    int T,\n    int M,\n    tf::Status* __restrict__ tf_status"),
            std::string::npos)
      << cuda.output;
}

TEST_F(CliShape, TuneOnTheCpuTunesNothing) {
  auto r = run_cli("tune " + prog_ + " --device cpu --shapes T=64 --shapes M=1,16,100");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("g: T=64, M=100 (bucket T=64, M=128): not tuned"), std::string::npos)
      << r.output;
  auto missing = run_cli("tune " + prog_ + " --device cpu --shapes M=1");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("--shapes T=..."), std::string::npos) << missing.output;
  // Two symbols in one flag: the message quotes the flag and says how.
  auto two = run_cli("tune " + prog_ + " --device cpu --shapes T=4,M=1");
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_NE(two.output.find("--shapes T=4,M=1: `M=1` is not a size"), std::string::npos)
      << two.output;
  EXPECT_NE(two.output.find("one symbol per flag"), std::string::npos) << two.output;
  // Combinations past 10,000 are refused before any is made (9 million
  // bindings were built and printed one by one; more filled the memory).
  std::string sizes = "1";
  for (int i = 2; i <= 101; ++i) sizes += "," + std::to_string(i);
  auto many =
      run_cli("tune " + prog_ + " --device cpu --shapes T=" + sizes + " --shapes M=" + sizes);
  EXPECT_EQ(many.exit_code, 1) << many.output.substr(0, 2000);
  EXPECT_NE(many.output.find("--shapes gives 10201 shapes to tune (the sizes of each symbol "
                             "multiplied: T 101 x M 101); one command tunes at most 10000"),
            std::string::npos)
      << many.output.substr(0, 2000);
  auto bench = run_cli("bench " + prog_ + " --device cpu --repeats 1 --shape T=50,M=20");
  EXPECT_EQ(bench.exit_code, 0) << bench.output;
  // run's --shape works on tune too (one size each), alone or with --shapes;
  // --cuda-option is taken (part of the tuning's key) and checked.
  for (const char* flags :
       {" --shape T=64,M=100", " --shape T=64 --shape M=100", " --shape T=64 --shapes M=100"}) {
    auto single =
        run_cli("tune " + prog_ + " --device cpu" + flags + " --cuda-option persistent=1");
    EXPECT_EQ(single.exit_code, 0) << flags << "\n" << single.output;
    EXPECT_NE(single.output.find("g: T=64, M=100 (bucket T=64, M=128): not tuned"),
              std::string::npos)
        << flags << "\n"
        << single.output;
  }
  auto bad_option =
      run_cli("tune " + prog_ + " --device cpu --shape T=64,M=1 --cuda-option nope=1");
  EXPECT_EQ(bad_option.exit_code, 1) << bad_option.output;
  EXPECT_NE(bad_option.output.find("--cuda-option"), std::string::npos) << bad_option.output;
  auto no_pair = run_cli("tune " + prog_ + " --device cpu --shape T=64,100");
  EXPECT_EQ(no_pair.exit_code, 1) << no_pair.output;
  EXPECT_NE(no_pair.output.find("--shapes NAME=S1,S2"), std::string::npos) << no_pair.output;
}

// Eight symbolic dims on one tensor: the generic graph's placeholder sizes
// multiply past int64, yet the program compiles without sizes and runs at
// small ones, matching the reference; sizes the user gives that overflow are
// named as given (the placeholders never appear in a message).
// A program of many symbolic dims that are not given: the message names the
// first few and counts the rest (it listed all of them, 5.5 MB at 200,000),
// and the one that is given is not asked for.
TEST_F(CliShape, ManyMissingSizesAreCountedNotListed) {
  const std::string prog = (dir_ / "many.tfs").string();
  {
    std::ofstream out(prog);
    out << "def many(";
    for (int i = 0; i < 3000; ++i) out << "p" << i << ": f32[S" << i << "], ";
    out << "x: f32[4, 4]):\n    return x @ x\n";
  }
  auto r = run_cli("run " + prog + " --device cpu --shape S1=3");
  EXPECT_EQ(r.exit_code, 1) << r.output.substr(0, 2000);
  EXPECT_LT(r.output.size(), 600u) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("symbolic dims S0, S2, S3, S4, S5, S6, S7, S8 and 2991 more need a size: "
                          "give --shape S0=... --shape S2=... --shape S3=... --shape S4=... ... "
                          "(2995 more, one --shape each)"),
            std::string::npos)
      << r.output;
  auto t = run_cli("tune " + prog + " --device cpu --shapes S0=1");
  EXPECT_EQ(t.exit_code, 1) << t.output.substr(0, 2000);
  EXPECT_NE(t.output.find("need the sizes to tune at: --shapes S1=... --shapes S2=... --shapes "
                          "S3=... --shapes S4=... ... (2995 more, one --shapes each)"),
            std::string::npos)
      << t.output.substr(0, 2000);
}

TEST_F(CliShape, EightSymbolicDimsOnOneTensor) {
  const std::string prog = (dir_ / "eight.tfs").string();
  std::ofstream(prog) << "def eight(x: f32[A, B, C, D, E, F, G, H], w: f32[H, 4]):\n"
                         "    return torch.relu(x @ w + 1.0)\n";
  auto graph = run_cli("emit " + prog + " --stage=graph");
  EXPECT_EQ(graph.exit_code, 0) << graph.output;
  EXPECT_EQ(graph.output,
            "symbols A=1041, B=1073, C=1105, D=1137, E=1169, F=1201, G=1233, H=1265\n"
            "%0 = parameter x : f32[A, B, C, D, E, F, G, H]\n"
            "%1 = parameter w : f32[H, 4]\n"
            "%2 = matmul %0, %1 : f32[A, B, C, D, E, F, G, 4]\n"
            "%3 = scalar 1.0 : f32[]\n"
            "%4 = add %2, %3 : f32[A, B, C, D, E, F, G, 4]\n"
            "%5 = relu %4 : f32[A, B, C, D, E, F, G, 4]\n"
            "return %5\n");
  for (const char* args : {"emit --stage=tir-opt", "emit --stage=cuda --target sm_90a",
                           "explain --target sm_80", "explain"}) {
    auto r = run_cli(std::string(args) + " " + prog);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output.substr(0, 2000);
  }
  const std::string shape = "A=2,B=1,C=3,D=2,E=1,F=2,G=2,H=3";
  for (const char* plan : {"fused", "unfused"}) {
    SCOPED_TRACE(plan);
    auto r = run_cli("run " + prog + " --device cpu --check --plan " + std::string(plan) +
                     " --shape " + shape);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("  out0: f32[2, 1, 3, 2, 1, 2, 2, 4]  sum="), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("check: out0 rel_err="), std::string::npos) << r.output;
    auto ref = run_cli("run " + prog + " --engine reference --shape " + shape);
    EXPECT_EQ(output_line(r.output), output_line(ref.output)) << r.output << ref.output;
  }
  auto huge = run_cli("run " + prog + " --device cpu --shape " +
                      "A=100000,B=100000,C=100000,D=100000,E=1,F=1,G=1,H=1");
  EXPECT_EQ(huge.exit_code, 1);
  EXPECT_EQ(huge.output,
            prog +
                ":1:27: error: the shape of 'x' has too many elements with D = 100000 (the "
                "product of its dims overflows)\n"
                "  def eight(x: f32[A, B, C, D, E, F, G, H], w: f32[H, 4]):\n"
                "                            ^\n");
}

}  // namespace
}  // namespace tilefuse
