// Helpers of the GPU tests (tests/gpu, ctest label `gpu`): the skip without
// a GPU, the shared cases, fresh seeds and NaN counting. The per-dtype
// tolerances of `tilefuse run --check` are check_tolerance
// (reference/eval.h).
#pragma once

#include "common/cases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/tolerance.h"
#include "core/tensor.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "reference/eval.h"
#include "runtime/cuda/loader.h"
#include "tir/target.h"

namespace tilefuse::gputest {

// Every GPU test starts with this: no usable GPU (no driver, no device) is a
// skip with the reason, never a failure.
#define TILEFUSE_SKIP_WITHOUT_GPU()                                                          \
  do {                                                                                       \
    std::string why_;                                                                        \
    if (!::tilefuse::cuda::cuda_available(&why_)) GTEST_SKIP() << "no usable GPU: " << why_; \
  } while (0)

// The start of a test of sm_90a's wgmma forms: the skip without a GPU, then
// `dev` (the process's device) and `target` (its std::optional<tir::Target>,
// asserted present), and a skip where the device has no wgmma.
#define TILEFUSE_WGMMA_TEST_START(dev, target)                                                    \
  TILEFUSE_SKIP_WITHOUT_GPU();                                                                    \
  ::tilefuse::cuda::Device& dev = ::tilefuse::driver::default_device();                           \
  const std::optional<::tilefuse::tir::Target> target = ::tilefuse::gputest::device_target();     \
  ASSERT_TRUE(target.has_value()) << dev.name() << " is " << dev.arch();                          \
  if (!target->has_wgmma()) GTEST_SKIP() << dev.arch() << " has no wgmma"

using testing::shared_cases;

inline std::string case_path(const std::string& name) {
  return std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/" + name + ".tfs";
}

inline std::string stem(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

// `name` from the environment (decimal or 0x…), else nullopt.
inline std::optional<uint64_t> env_u64(const char* name) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return std::nullopt;
  return std::stoull(s, nullptr, 0);
}

// A fresh seed (std::random_device), or $TILEFUSE_GPU_SEED to reproduce a run.
inline uint64_t fresh_seed() {
  if (std::optional<uint64_t> s = env_u64("TILEFUSE_GPU_SEED")) return *s;
  std::random_device rd;
  return ((static_cast<uint64_t>(rd()) << 32) ^ rd()) % 1000000007ULL;
}

// The target of the process's GPU (sm_90a on an H200).
inline std::optional<tir::Target> device_target() {
  return tir::Target::parse(driver::default_device().arch());
}

// NaN elements of `t` (0 for integer and bool tensors).
inline int64_t count_nan(const Tensor& t) {
  if (!is_floating(t.dtype())) return 0;
  int64_t n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) n += std::isnan(t.get_linear(i));
  return n;
}

using ::tilefuse::testing::all_finite;

// The f64 oracle's first output of `graph` on `inputs` and its check
// tolerance (reference/eval.h).
struct Oracle {
  Tensor output;
  double tol = 0;
};
inline Oracle oracle_of(const Graph& graph, const std::vector<Tensor>& inputs) {
  EvalOptions o;
  o.mode = EvalMode::kOracle;
  return {evaluate(graph, inputs, o).at(0), check_tolerance(graph, graph.outputs()[0])};
}

// `graph` compiled for the device with `config` (fused plan) and whether
// some kernel's CUDA source contains `marker` (what says the form under test
// was taken, else a test would pass on the kernel without it); then run with
// its outputs poisoned, its one output within the oracle's tolerance and
// free of NaN.
inline void expect_config_matches_oracle(const Graph& graph, const std::vector<Tensor>& inputs,
                                         const Oracle& oracle, const GemmConfig& config,
                                         const std::string& marker) {
  cuda::Device& dev = driver::default_device();
  driver::CompileOptions co;
  co.plan = PlanKind::kFused;
  co.target = *device_target();
  co.lower.gemm_config = config;
  const driver::CompiledProgram prog = driver::compile(graph, co);
  bool taken = false;
  for (const driver::CompiledKernel& ck : prog.kernels)
    taken = taken || (ck.cuda && ck.cuda->source.find(marker) != std::string::npos);
  ASSERT_TRUE(taken) << "no `" << marker << "` in\n" << prog.kernels.at(0).cuda->source;
  driver::CudaProgram run(prog, dev);
  const std::vector<Tensor> got = run.run(inputs, /*poison=*/true);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_LE(relative_error(got[0], oracle.output), oracle.tol);  // false for NaN
  EXPECT_EQ(count_nan(got[0]), 0);
}

}  // namespace tilefuse::gputest
