// `tilefuse bench` on the CPU (no GPU here): its table, its JSON, the inputs
// it saves, and clear errors for bad options.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/cli.h"
#include "runtime/cuda/loader.h"

namespace tilefuse {
namespace {

using testing::case_path;
using testing::run_cli;

TEST(Bench, CpuTableJsonAndSavedInputs) {
  const std::string prog = case_path("gather_negative_index.tfs");
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tf-bench-" + std::to_string(::getpid())))
          .string();
  auto r =
      run_cli("bench " + prog + " --device cpu --warmup 0 --repeats 2 --json --save-inputs " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j.at("device"), "cpu");
  EXPECT_EQ(j.at("repeats"), 2);
  EXPECT_GT(j.at("gemm_flops").get<double>(), 0);
  // x[idx] @ y, f32: 50 gathered rows of 96, y 96x80, 50 i64 indices, a 50x80 output.
  EXPECT_EQ(j.at("min_bytes").get<double>(), 50 * 96 * 4 + 96 * 80 * 4 + 50 * 8 + 50 * 80 * 4);
  EXPECT_EQ(j.at("copy_gbps").get<double>(), 0);  // the device copy is a GPU figure
  EXPECT_FALSE(j.at("copy_note").get<std::string>().empty());
  std::set<std::string> names;
  for (const auto& row : j.at("rows")) {
    names.insert(row.at("name").get<std::string>());
    if (row.at("name") == "fused" || row.at("name") == "unfused") {
      EXPECT_GT(row.at("median_us").get<double>(), 0) << row;
      EXPECT_LE(row.at("rel_err").get<double>(), 1e-5) << row;  // f32 program
      // GB/s is the bytes the program must move over the median time.
      EXPECT_NEAR(row.at("gbps").get<double>(),
                  j.at("min_bytes").get<double>() / (row.at("median_us").get<double>() * 1e3),
                  1e-9 * row.at("gbps").get<double>())
          << row;
      EXPECT_EQ(row.at("copy_fraction").get<double>(), 0) << row;
    }
  }
  EXPECT_TRUE(names.count("fused") && names.count("unfused")) << r.output;
  for (const char* p : {"x", "idx", "y"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + p + ".npy")) << p;
  std::filesystem::remove_all(dir);
}

// A plain GEMM's unfused plan runs the fused plan's kernels: bench times them
// once, and the unfused row repeats the fused row's times with a note saying
// so (in the JSON and the text). A gathered GEMM's rows are timed apart.
TEST(Bench, APlainGemmsUnfusedRowIsTheFusedKernels) {
  const std::string plain = (std::filesystem::temp_directory_path() /
                             ("tf-bench-plain-" + std::to_string(::getpid()) + ".tfs"))
                                .string();
  std::ofstream(plain) << "def g(x: f32[64, 48], w: f32[48, 40]):\n    return x @ w\n";
  for (const std::string& prog : {plain, case_path("gather_negative_index.tfs")}) {
    SCOPED_TRACE(prog);
    const bool same = prog == plain;
    auto r = run_cli("bench " + prog + " --device cpu --warmup 0 --repeats 3 --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
    std::map<std::string, nlohmann::json> rows;
    for (const auto& row : j.at("rows")) rows[row.at("name").get<std::string>()] = row;
    ASSERT_TRUE(rows.count("fused") && rows.count("unfused")) << r.output;
    const std::string note = rows["unfused"].at("note").get<std::string>();
    EXPECT_EQ(note.find("the fused plan's kernels") != std::string::npos, same) << note;
    if (same) {
      EXPECT_EQ(rows["unfused"].at("median_us"), rows["fused"].at("median_us"));
      EXPECT_EQ(rows["unfused"].at("min_us"), rows["fused"].at("min_us"));
      EXPECT_GT(rows["unfused"].at("median_us").get<double>(), 0);
    }
    auto text = run_cli("bench " + prog + " --device cpu --warmup 0 --repeats 1");
    ASSERT_EQ(text.exit_code, 0) << text.output;
    EXPECT_EQ(text.output.find("unfused: the fused plan's kernels") != std::string::npos, same)
        << text.output;
  }
  std::filesystem::remove(plain);
}

// bench's rel_err is `run --check`'s figure on the same inputs: both compare
// with the oracle rounded once to the output's dtype. (bench once compared
// with the unrounded oracle: for an f16 output ~2e-4, ten times run's, the
// dtype's own rounding.)
TEST(Bench, RelErrIsRunChecksFigure) {
  const std::string prog = case_path("gather_odd_k_f16.tfs");
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tf-bench-err-" + std::to_string(::getpid())))
          .string();
  auto b = run_cli("bench " + prog +
                   " --device cpu --warmup 0 --repeats 1 --json --seed 7 --save-inputs " + dir);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const nlohmann::json j = nlohmann::json::parse(b.output.substr(b.output.find('{')));
  double bench_err = -1;
  for (const auto& row : j.at("rows"))
    if (row.at("name") == "fused") bench_err = row.at("rel_err").get<double>();
  auto r = run_cli("run " + prog + " --device cpu --check --input x=" + dir +
                   "/x.npy --input y=" + dir + "/y.npy --input idx=" + dir + "/idx.npy");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t at = r.output.find("rel_err=");
  ASSERT_NE(at, std::string::npos) << r.output;
  const double run_err = std::stod(r.output.substr(at + 8));
  EXPECT_GT(run_err, 0) << r.output;  // random f16 inputs: not exact
  EXPECT_LT(run_err, 1e-4) << r.output;
  EXPECT_NEAR(bench_err, run_err, 1e-3 * run_err) << b.output << r.output;
  std::filesystem::remove_all(dir);
}

TEST(Bench, BadOptionsAreUserErrors) {
  const std::string prog = case_path("gather_negative_index.tfs");
  const std::pair<const char*, const char*> bad_options[] = {
      {" --gemm-config 128x128", "--gemm-config"},
      {" --gemm-config 100x128x32/3/8", "--gemm-config"},
      {" --gemm-config 128x128x32/0/8", "--gemm-config"},
      {" --gemm-config 1024x512x512/1/4",
       "--gemm-config `1024x512x512/1/4`: BLOCK_M is 1024; it must be a power of two or a "
       "multiple of 64, 1..512 on the CPU"},
      {" --gemm-config 64x64x48/1/4",
       "BLOCK_K is 48; it must be a power of two, 1..512 on the CPU"},
      {" --gemm-config 64x64x64/1/3", "num_warps is 3; it must be a power of two, 1..16"},
      {" --gemm-config 64x64x64/17/4", "num_stages is 17; it must be 1..16"},
      {" --repeats 0", "--repeats: must be 1 to 100000, got 0"},
      {" --repeats 1000000000", "--repeats: must be 1 to 100000, got 1000000000"},
      {" --warmup -1", "--warmup: must be 0 to 100000, got -1"},
      {" --warmup 100001", "--warmup: must be 0 to 100000, got 100001"},
      {" --threads -2", "--threads: must be 0 (all) to 1024, got -2"},
      {" --threads 1025", "--threads: must be 0 (all) to 1024, got 1025"},
      {" --seed -1", "--seed: not a non-negative integer: -1"},
      {" --seed 18446744073709551616", "--seed: must be at most 18446744073709551615"},
  };
  for (const auto& [bad, says] : bad_options) {
    auto r = run_cli("bench " + prog + " --device cpu" + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << "\n" << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << bad << "\n" << r.output;
  }
  // The CPU's own default config (512 x 512 x 512 on large GEMMs) can be
  // asked for on the CPU; the CUDA target keeps its range.
  const std::string seed = case_path("seed_gather_mm_f16.tfs");
  auto cpu_config = run_cli("emit --stage=tir-opt --gemm-config 512x512x512/1/4 " + seed);
  EXPECT_EQ(cpu_config.exit_code, 0) << cpu_config.output;
  EXPECT_NE(cpu_config.output.find("BLOCK_K = 512, BLOCK_M = 512, BLOCK_N = 512"),
            std::string::npos);
  auto cuda_config =
      run_cli("emit --stage=cuda --target sm_90a --gemm-config 512x512x512/1/4 " + seed);
  EXPECT_EQ(cuda_config.exit_code, 1) << cuda_config.output;
  EXPECT_NE(cuda_config.output.find("BLOCK_M is 512; it must be a power of two or a multiple of "
                                    "64, 16..256"),
            std::string::npos)
      << cuda_config.output;
  if (!cuda::cuda_available()) {
    auto r = run_cli("bench " + prog + " --device cuda");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("--device cuda"), std::string::npos) << r.output;
  }
}

TEST(Run, AnInputGivenTwiceIsAUserError) {
  const std::string prog = case_path("gather_negative_index.tfs");
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tf-in2-" + std::to_string(::getpid()))).string();
  ASSERT_EQ(run_cli("bench " + prog +
                    " --device cpu --repeats 1 --warmup 0 --no-check "
                    "--save-inputs " +
                    dir)
                .exit_code,
            0);
  auto r = run_cli("run " + prog + " --device cpu --input x=" + dir + "/x.npy --input x=" + dir +
                   "/x.npy");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--input gives `x` twice"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

// --input replaces a random input: bench with another seed but every input
// given from the first run's saved files times (and saves) those same inputs.
TEST(Bench, TimesTheGivenInputs) {
  const std::string prog = case_path("gather_negative_index.tfs");
  const std::string base =
      (std::filesystem::temp_directory_path() / ("tf-bin-" + std::to_string(::getpid()))).string();
  const std::string first = base + "-a", second = base + "-b";
  ASSERT_EQ(run_cli("bench " + prog + " --device cpu --repeats 1 --warmup 0 --no-check " +
                    "--save-inputs " + first)
                .exit_code,
            0);
  auto r =
      run_cli("bench " + prog + " --device cpu --repeats 1 --warmup 0 --seed 7 --input x=" + first +
              "/x.npy --input idx=" + first + "/idx.npy --input y=" + first +
              "/y.npy --save-inputs " + second);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  for (const char* p : {"x", "idx", "y"}) {
    const std::string a = bytes(first + "/" + p + ".npy"), b = bytes(second + "/" + p + ".npy");
    EXPECT_FALSE(a.empty()) << p;
    EXPECT_EQ(a, b) << p;
  }
  // Without --input the other seed draws other values.
  const std::string third = base + "-c";
  ASSERT_EQ(run_cli("bench " + prog + " --device cpu --repeats 1 --warmup 0 --no-check --seed 7 " +
                    "--save-inputs " + third)
                .exit_code,
            0);
  EXPECT_NE(bytes(first + "/x.npy"), bytes(third + "/x.npy"));
  r = run_cli("bench " + prog + " --device cpu --repeats 1 --input w=" + first + "/x.npy");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--input names `w`, which is not a parameter"), std::string::npos)
      << r.output;
  for (const std::string& d : {first, second, third}) std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace tilefuse
