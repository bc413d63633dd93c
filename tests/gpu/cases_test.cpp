// The differential cases on the GPU (DESIGN.md, "Testing"): every shared case
// and example, both plans, compiled for the device's arch and run with
// CudaProgram on fresh random inputs with every output poisoned first, against
// the f64 oracle with the tolerances of `tilefuse run --check`; the
// out-of-range case fails with the check's message and leaves the process
// able to run again, and so does one under register_a (the index checked by
// the MMA warps); poisoned outputs are all written; the kernel cache
// serves a second CudaProgram of the same program.
//
// Every test skips (with the reason) where CUDA or a GPU is missing. Seeds are
// fresh per run and printed with every failure; TILEFUSE_GPU_SEED=<seed>
// reproduces a run.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/structure.h"
#include "common/reference_error.h"
#include "core/error.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "reference/eval.h"
#include "reference/inputs.h"

namespace tilefuse {
namespace {

using gputest::case_path;
using gputest::count_nan;
using gputest::fresh_seed;
using gputest::stem;

std::string seed_note(uint64_t seed, uint64_t base) {
  return "seed " + std::to_string(seed) + " (TILEFUSE_GPU_SEED=" + std::to_string(base) +
         " reproduces this run)";
}

driver::CompiledProgram compile_for_device(const Graph& g, PlanKind plan) {
  std::optional<tir::Target> target = gputest::device_target();
  if (!target)
    throw UserError("the GPU is " + driver::default_device().arch() +
                    "; tilefuse needs sm_80 or newer");
  driver::CompileOptions co;
  co.plan = plan;
  co.target = *target;
  return driver::compile(g, co);
}

std::vector<Tensor> oracle_of(const Graph& g, const std::vector<Tensor>& inputs) {
  EvalOptions o;
  o.mode = EvalMode::kOracle;
  return evaluate(g, inputs, o);
}

// "" when every output is within check_tolerance of the oracle, else a report.
std::string compare_with_oracle(const std::vector<Tensor>& outs, const std::vector<Tensor>& refs) {
  if (outs.size() != refs.size())
    return "got " + std::to_string(outs.size()) + " outputs, the reference has " +
           std::to_string(refs.size()) + "\n";
  std::string report;
  for (size_t i = 0; i < outs.size(); ++i) {
    const double err = relative_error(outs[i], refs[i]);
    const double tol = check_tolerance(outs[i].dtype());
    if (!(err <= tol)) {  // NaN fails
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "output %zu (%s%s): rel_err %.3e > tolerance %.0e (%lld NaN elements)\n", i,
                    std::string(dtype_name(outs[i].dtype())).c_str(),
                    shape_to_string(outs[i].shape()).c_str(), err, tol,
                    static_cast<long long>(count_nan(outs[i])));
      report += buf;
    }
  }
  return report;
}

// The out-of-range case (x: f32[64, 96], y, idx: i64[50] in [0, 65)): the
// run must throw the reference's UserError, "index 64 is out of bounds for
// dim 0 of `x` (size 64): `idx`[P] = 64", P a position where idx is 64 (the
// GPU may meet another bad position first than the reference). "" when it
// does, else what went wrong.
template <class Run>
std::string expect_out_of_range_of(Run run, const std::vector<Tensor>& inputs) {
  const std::string want_head = "index 64 is out of bounds for dim 0 of `x` (size 64): `idx`[";
  const std::string want_tail = "] = 64";
  std::string got;
  try {
    run(inputs);
    return "the run did not fail\n";
  } catch (const UserError& e) {
    got = e.what();
  }
  if (got.find("is out of bounds") == std::string::npos || got.find(want_head) != 0 ||
      got.size() < want_tail.size() ||
      got.compare(got.size() - want_tail.size(), want_tail.size(), want_tail) != 0)
    return "the error is `" + got + "`, expected `" + want_head + "P" + want_tail + "`\n";
  const std::string pos =
      got.substr(want_head.size(), got.size() - want_tail.size() - want_head.size());
  int64_t p = -1;
  try {
    p = std::stoll(pos);
  } catch (const std::exception&) {
    return "the error `" + got + "` has no position\n";
  }
  const Tensor& idx = inputs.at(2);
  if (p < 0 || p >= idx.numel()) return "the error `" + got + "` names no position of idx\n";
  if (idx.get_linear(p) != 64)
    return "the error `" + got + "` names idx[" + pos + "], which is " +
           std::to_string(idx.get_linear(p)) + ", not 64\n";
  return "";
}

std::string expect_out_of_range(driver::CudaProgram& program, const std::vector<Tensor>& inputs) {
  return expect_out_of_range_of(
      [&](const std::vector<Tensor>& in) { return program.run(in, /*poison=*/true); }, inputs);
}

// The reference's own error for the same inputs, for the comparison above.
std::string reference_error(const Graph& g, const std::vector<Tensor>& inputs) {
  const std::optional<testing::ReferenceError> e = testing::reference_error_of(g, inputs);
  return e ? e->message : "";
}

TEST(GpuCases, EverySharedCaseBothPlans) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  ASSERT_TRUE(gputest::device_target().has_value()) << dev.name() << " is " << dev.arch();
  const uint64_t base = fresh_seed();
  std::printf("GPU cases on %s (%s), TILEFUSE_GPU_SEED=%llu\n", dev.name().c_str(),
              dev.arch().c_str(), static_cast<unsigned long long>(base));
  std::fflush(stdout);
  int ran = 0, errors = 0;
  uint64_t seed = base;
  for (const std::string& path : gputest::shared_cases()) {
    const std::string name = stem(path);
    ++seed;
    const Program p = load_program(path);
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
    const bool out_of_range = name == "gather_out_of_range";
    std::vector<Tensor> refs;
    if (out_of_range) {
      const std::string ref = reference_error(p.graph, inputs);
      ASSERT_NE(ref.find("index 64 is out of bounds for dim 0 of `x` (size 64): `idx`["),
                std::string::npos)
          << ref << "\n"
          << seed_note(seed, base);
    } else {
      refs = oracle_of(p.graph, inputs);
    }
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      const std::string what =
          name + " (" + std::string(plan_kind_name(plan)) + " plan), " + seed_note(seed, base);
      std::string failure;
      try {
        const driver::CompiledProgram compiled = compile_for_device(p.graph, plan);
        driver::CudaProgram program(compiled, dev);
        if (out_of_range) {
          failure = expect_out_of_range(program, inputs);
          ++errors;
        } else {
          failure = compare_with_oracle(program.run(inputs, /*poison=*/true), refs);
        }
      } catch (const std::exception& e) {
        failure = std::string("threw: ") + e.what() + "\n";
      }
      if (!failure.empty()) ADD_FAILURE() << what << ":\n" << failure;
      ++ran;
    }
  }
  EXPECT_GE(ran, 2 * 11) << "every tests/cases/*.tfs and examples/*.tfs, both plans";
  EXPECT_EQ(errors, 2) << "gather_out_of_range, both plans";
}

// idx with every 64 replaced by 63: the same program then runs cleanly.
std::vector<Tensor> in_range(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out = inputs;
  const Tensor& idx = inputs.at(2);
  Tensor fixed = Tensor::empty(idx.dtype(), idx.shape());
  for (int64_t i = 0; i < idx.numel(); ++i) fixed.set_linear(i, std::min(idx.get_linear(i), 63.0));
  out[2] = fixed;
  return out;
}

TEST(GpuCases, OutOfRangeThenTheSameProcessRunsAgain) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  ASSERT_TRUE(gputest::device_target().has_value()) << dev.name() << " is " << dev.arch();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed, seed));

  const Program oob = load_program(case_path("gather_out_of_range"));
  const std::vector<Tensor> bad = make_random_inputs(oob.graph, seed);
  const driver::CompiledProgram oob_compiled = compile_for_device(oob.graph, PlanKind::kFused);
  driver::CudaProgram oob_program(oob_compiled, dev);
  EXPECT_EQ(expect_out_of_range(oob_program, bad), "") << "first run";

  // Another program in the same process runs and is right.
  const Program seed_case = load_program(case_path("seed_gather_mm_f16"));
  const std::vector<Tensor> inputs = make_random_inputs(seed_case.graph, seed + 1);
  const driver::CompiledProgram compiled = compile_for_device(seed_case.graph, PlanKind::kFused);
  driver::CudaProgram program(compiled, dev);
  const std::vector<Tensor> outs = program.run(inputs, /*poison=*/true);
  const std::vector<Tensor> refs = oracle_of(seed_case.graph, inputs);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_LE(relative_error(outs[0], refs[0]), 1e-2) << "the seed program after the error";

  // The failed program fails again (its status word was cleared after the
  // first error and is set anew)...
  EXPECT_EQ(expect_out_of_range(oob_program, bad), "") << "second run";
  // ...and runs cleanly on in-range indices: nothing is left of the error.
  const std::vector<Tensor> good = in_range(bad);
  std::vector<Tensor> good_outs;
  ASSERT_NO_THROW(good_outs = oob_program.run(good, /*poison=*/true));
  EXPECT_EQ(compare_with_oracle(good_outs, oracle_of(oob.graph, good)), "");
  // And the error comes back once more with the bad indices.
  EXPECT_EQ(expect_out_of_range(oob_program, bad), "") << "third run";
}

// A later kernel's failed check is worded as its own: every kernel numbers
// its checks from 1, and with one status word for the whole program the
// second gather's report (y[j], id 1 of its kernel) was read as the first
// kernel's check 1 (x[i]) and named `x`, `i` and line 2. Each kernel now
// reports into its own word. Both plans (fused: the GEMM with x[i], then
// y[j]; unfused: three kernels), j bad and i good, then i bad too (the
// first kernel's error wins, as on the CPU), then both good.
TEST(GpuCases, ALaterKernelsIndexErrorIsWordedAsItsOwn) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  const Program p = parse_program(
      "def two(x: f32[8, 4], w: f32[4, 3], i: i64[2], j: i64[3]):\n"
      "    y = x[i] @ w\n"
      "    return y[j] * 2.0\n",
      "two.tfs");
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed, seed));
  std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
  auto set = [&](size_t param, std::vector<int64_t> values) {
    for (size_t k = 0; k < values.size(); ++k)
      inputs[param].set_linear(static_cast<int64_t>(k), static_cast<double>(values[k]));
  };
  for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
    SCOPED_TRACE(plan_kind_name(plan));
    const driver::CompiledProgram compiled = compile_for_device(p.graph, plan);
    driver::CudaProgram program(compiled, dev);
    ASSERT_GE(compiled.kernels.size(), 2u);
    struct Bad {
      std::vector<int64_t> i, j;
      std::string message;
      int line, col;
    };
    const Bad bads[] = {{{1, 2},
                         {0, 1, 5},
                         "index 5 is out of bounds for dim 0 of `y` (size 2): `j`[2] = 5",
                         3,
                         14},
                        {{1, 9},
                         {0, 1, 5},
                         "index 9 is out of bounds for dim 0 of `x` (size 8): `i`[1] = 9",
                         2,
                         11}};
    for (const Bad& bad : bads) {
      set(2, bad.i);
      set(3, bad.j);
      EXPECT_EQ(reference_error(p.graph, inputs), bad.message);
      try {
        program.run(inputs, /*poison=*/true);
        ADD_FAILURE() << "no error for " << bad.message;
      } catch (const UserError& e) {
        EXPECT_EQ(std::string(e.what()), bad.message);
        EXPECT_EQ(e.loc().line, bad.line) << e.what();
        EXPECT_EQ(e.loc().col, bad.col) << e.what();
      }
    }
    set(2, {1, -8});
    set(3, {0, 1, -1});
    std::vector<Tensor> outs;
    ASSERT_NO_THROW(outs = program.run(inputs, /*poison=*/true));
    EXPECT_EQ(compare_with_oracle(outs, oracle_of(p.graph, inputs)), "");
  }
}

// Where two gathers both have an index out of range, the error is the first
// one's in program order, as in PyTorch, the reference and the CPU executor
// (DriverExecute.OfTwoBadGathersTheFirstInProgramOrderIsReported). The
// fused plan launches `x[i * 2] @ w` first (the other GEMM's epilogue adds
// its result), so the first status word in launch order held the later
// gather's report. One bad position per gather, so the message is exact.
TEST(GpuCases, OfTwoBadGathersTheFirstInProgramOrderIsReported) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed, seed));
  for (const char* src : {
           "def f(x: f32[6, 5], w: f32[5, 3], i: i64[4]):\n"
           "    return x[i] @ w + x[i * 2] @ w\n",
           "def f(x: f32[6, 5], w: f32[5, 3], i: i32[4]):\n"
           "    return x.index_select(0, i) @ w + x[i + 0] @ w\n",
           "def f(x: f32[6, 5], w: f32[5, 3], i: i64[4], j: i64[4]):\n"
           "    return torch.relu(x[i] @ w) + x[j] @ w[:, :1]\n",
       }) {
    SCOPED_TRACE(src);
    const Program p = parse_program(src, "f.tfs");
    std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
    auto set = [&](std::vector<int64_t> i, std::vector<int64_t> j) {
      for (size_t k = 0; k < 4; ++k) {
        inputs[2].set_linear(static_cast<int64_t>(k), static_cast<double>(i[k]));
        if (inputs.size() > 3)
          inputs[3].set_linear(static_cast<int64_t>(k), static_cast<double>(j[k]));
      }
    };
    set({0, 1, 6, 2}, {0, -1, -9, 1});
    const std::optional<testing::ReferenceError> expected = testing::reference_error_of(p.graph, inputs);
    ASSERT_TRUE(expected.has_value());
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      SCOPED_TRACE(plan_kind_name(plan));
      const driver::CompiledProgram compiled = compile_for_device(p.graph, plan);
      driver::CudaProgram program(compiled, dev);
      try {
        program.run(inputs, /*poison=*/true);
        ADD_FAILURE() << "no error";
      } catch (const UserError& e) {
        EXPECT_EQ(std::string(e.what()), expected->message);
        EXPECT_EQ(e.loc().line, expected->loc.line) << e.what();
        EXPECT_EQ(e.loc().col, expected->loc.col) << e.what();
        EXPECT_EQ(e.kind(), expected->kind);
      }
      // The program runs right afterwards (every word was cleared).
      set({0, 1, 2, 1}, {0, -1, -6, 5});
      std::vector<Tensor> outs;
      ASSERT_NO_THROW(outs = program.run(inputs, /*poison=*/true));
      EXPECT_EQ(compare_with_oracle(outs, oracle_of(p.graph, inputs)), "");
      set({0, 1, 6, 2}, {0, -1, -9, 1});
    }
  }
}

// A bind that throws leaves the program unbound: launch() refuses, where it
// ran on the previous bind's buffers (bind's index check throws before the
// old buffers are dropped).
TEST(GpuCases, AFailedBindLeavesNothingToLaunch) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const Program p = parse_program(
      "def s0(x: f32[5, 4], w: f32[4, 3], i: i64[2]):\n    return x[i][0] @ w\n", "s0.tfs");
  std::vector<Tensor> inputs = make_random_inputs(p.graph, fresh_seed());
  inputs[2].set_linear(0, 1);
  inputs[2].set_linear(1, 2);
  const driver::CompiledProgram compiled = compile_for_device(p.graph, PlanKind::kFused);
  driver::CudaProgram program(compiled, driver::default_device());
  program.bind(inputs);
  program.launch();
  program.check_status();
  inputs[2].set_linear(1, 7);  // unread by any kernel: bind's host check
  EXPECT_THROW(program.bind(inputs), UserError);
  EXPECT_THROW(program.launch(), InternalError);
  // Nor are outputs read from an unbound program (a bind that throws once
  // the previous buffers are freed leaves their addresses in its table).
  EXPECT_THROW(program.outputs(), InternalError);
  // The same for a bind to shared device inputs that fails its own checks.
  inputs[2].set_linear(1, 2);
  program.bind(inputs);
  EXPECT_THROW(program.bind(std::shared_ptr<const driver::DeviceInputs>()), InternalError);
  EXPECT_THROW(program.launch(), InternalError);
  EXPECT_THROW(program.outputs(), InternalError);
}

// `good` with the index parameter `param` at row-major position `at` set to
// `value` (one bad position, so the GPU meets no other).
std::vector<Tensor> with_index_at(const std::vector<Tensor>& good, size_t param, int64_t at,
                                  double value) {
  std::vector<Tensor> bad = good;
  const Tensor& idx = good.at(param);
  Tensor one_bad = Tensor::empty(idx.dtype(), idx.shape());
  for (int64_t i = 0; i < idx.numel(); ++i) one_bad.set_linear(i, idx.get_linear(i));
  one_bad.set_linear(at, value);
  bad[param] = one_bad;
  return bad;
}

// The gathered GEMM `p` (x: bf16[64, 256], its index parameter `param` in
// [0, 64) over 33792 rows: 264 tiles of 128) compiled fused at
// 128x128x64/4/8/ra and 128x128x64/4/8/persistent/ra, both asserted to be
// register_a kernels (persistent where asked). For each of `rows`, the
// index with that row set to 64 (the only bad one) goes to `check_bad`;
// then in-range indices run to the oracle's answer on the same program.
void run_register_a_with_bad_rows(
    const Program& p, size_t param, const std::vector<int64_t>& rows,
    const std::function<void(driver::CudaProgram&, const std::vector<Tensor>&, int64_t)>&
        check_bad) {
  cuda::Device& dev = driver::default_device();
  const std::optional<tir::Target> target = gputest::device_target();
  ASSERT_TRUE(target.has_value());
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed, seed));
  const std::vector<Tensor> good = make_random_inputs(p.graph, seed);
  const std::vector<Tensor> refs = oracle_of(p.graph, good);
  for (bool persistent : {false, true}) {
    SCOPED_TRACE(persistent ? "128x128x64/4/8/persistent/ra" : "128x128x64/4/8/ra");
    driver::CompileOptions co;
    co.plan = PlanKind::kFused;
    co.target = *target;
    GemmConfig cfg;
    cfg.block_m = 128, cfg.block_n = 128, cfg.block_k = 64, cfg.num_stages = 4, cfg.num_warps = 8;
    cfg.persistent = persistent;
    cfg.register_a = true;
    co.lower.gemm_config = cfg;
    const driver::CompiledProgram compiled = driver::compile(p.graph, co);
    ASSERT_EQ(compiled.kernels.size(), 1u);
    ASSERT_TRUE(codegen::has_register_a_loop(compiled.kernels[0].kernel.body))
        << "the register_a pass declined the config";
    ASSERT_EQ(compiled.kernels[0].cuda->persistent, persistent)
        << "the persistent pass declined the config";
    driver::CudaProgram program(compiled, dev);
    for (int64_t row : rows) {
      SCOPED_TRACE("index row " + std::to_string(row) + " = 64");
      check_bad(program, with_index_at(good, param, row, 64), row);
    }
    std::vector<Tensor> outs;
    ASSERT_NO_THROW(outs = program.run(good, /*poison=*/true));
    EXPECT_EQ(compare_with_oracle(outs, refs), "") << "in-range indices after the errors";
  }
}

// register_a (the MMA warps load the gathered rows straight into their wgmma
// A fragments and check those rows' indices themselves, CopyPlan::row_checks)
// reports an index one past the end with its position, reads nothing out of
// bounds, and the same program then runs in-range indices to the oracle's
// answer. One bad position at a time: in block 0's first tile (warpgroup 0's
// rows), and in tiles 140 and 263 of 264, which a persistent kernel of one
// block an SM (132 on the H200) runs as a block's second tile, checked at that
// tile's start from the index loaded a tile ahead (row 33791 is warpgroup 1's
// second fragment row); the non-persistent kernel runs every tile first.
TEST(GpuCases, OutOfRangeUnderRegisterA) {
  TILEFUSE_WGMMA_TEST_START(dev, target);
  const Program p = parse_program(
      "def oob_ra(x: bf16[64, 256], y: bf16[256, 128], idx: i64[33792] in [0, 64)):\n"
      "    return x[idx] @ y\n",
      "oob_ra.tfs");
  run_register_a_with_bad_rows(p, 2, {5, 128 * 140 + 77, 33791},
                               [](driver::CudaProgram& program, const std::vector<Tensor>& bad,
                                  int64_t) { EXPECT_EQ(expect_out_of_range(program, bad), ""); });
}

// A gather's check over an index tensor of 3 dims or more reports the
// value, its coordinates and the value again: 5 args over a 3-D index, 10
// over an 8-D one, more than the 4 a status word held (the emitter refused
// them: an InternalError "a check with more than 4 args" for any x[i] with
// i of 3 dims or more). The error is the reference's word for word, in both
// plans and under register_a (persistent too: a block's second tile's row
// checks report through tf::report_cold, tile 140 of 264 on the H200's
// 132 SMs), and the same program then runs in-range indices to the
// oracle's answer. One bad position at a time, so the GPU meets no other.
TEST(GpuCases, AnIndexOfManyDimsIsWordedInItsDims) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  const std::optional<tir::Target> target = gputest::device_target();
  ASSERT_TRUE(target.has_value()) << dev.name() << " is " << dev.arch();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed, seed));
  auto gpu_error = [](driver::CudaProgram& program, const std::vector<Tensor>& inputs) {
    try {
      program.run(inputs, /*poison=*/true);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  struct Case {
    const char* source;
    int64_t at;
    double value;
    const char* message;
  };
  const Case cases[] = {
      {"def g3(x: f32[5, 4], i: i64[2, 3, 2] in [0, 5)):\n    return x[i] * 2.0\n", 10, 9,
       "index 9 is out of bounds for dim 0 of `x` (size 5): `i`[1, 2, 0] = 9"},
      {"def g8(x: f32[5], i: i64[1, 2, 1, 1, 2, 1, 1, 2] in [0, 5)):\n    return x[i] * 2.0\n", 5,
       -6, "index -6 is out of bounds for dim 0 of `x` (size 5): `i`[0, 1, 0, 0, 0, 0, 0, 1] = -6"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    const Program p = parse_program(c.source, "many.tfs");
    const std::vector<Tensor> good = make_random_inputs(p.graph, seed);
    const std::vector<Tensor> bad = with_index_at(good, 1, c.at, c.value);
    EXPECT_EQ(reference_error(p.graph, bad), c.message);
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      SCOPED_TRACE(plan_kind_name(plan));
      const driver::CompiledProgram compiled = compile_for_device(p.graph, plan);
      driver::CudaProgram program(compiled, dev);
      EXPECT_EQ(gpu_error(program, bad), c.message);
      std::vector<Tensor> outs;
      ASSERT_NO_THROW(outs = program.run(good, /*poison=*/true));
      EXPECT_EQ(compare_with_oracle(outs, oracle_of(p.graph, good)), "");
    }
  }
  if (!target->has_wgmma()) GTEST_SKIP() << dev.arch() << " has no wgmma (register_a)";
  const Program p = parse_program(
      "def oob_ra3(x: bf16[64, 256], y: bf16[256, 128], idx: i64[2, 132, 128] in [0, 64)):\n"
      "    return x[idx] @ y\n",
      "oob_ra3.tfs");
  run_register_a_with_bad_rows(
      p, 2, {5, 128 * 140 + 77, 33791},
      [&](driver::CudaProgram& program, const std::vector<Tensor>& bad, int64_t row) {
        const std::string want = reference_error(p.graph, bad);
        EXPECT_NE(want.find("`idx`[" + std::to_string(row / (132 * 128)) + ", " +
                            std::to_string(row / 128 % 132) + ", " + std::to_string(row % 128) +
                            "] = 64"),
                  std::string::npos)
            << want;
        EXPECT_EQ(gpu_error(program, bad), want);
      });
}

TEST(GpuCases, PoisonedOutputsAreAllWritten) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  ASSERT_TRUE(gputest::device_target().has_value()) << dev.name() << " is " << dev.arch();
  const uint64_t seed = fresh_seed();
  struct Run {
    const char* name;
    PlanKind plan;
  };
  // The seed in both plans; an unfused plan with tails in every dim (the
  // gather materialized by its own kernel) and a bf16 one.
  for (const Run& r :
       {Run{"seed_gather_mm_f16", PlanKind::kFused}, Run{"seed_gather_mm_f16", PlanKind::kUnfused},
        Run{"gather_odd_k_f16", PlanKind::kUnfused},
        Run{"gather_mm_bf16_repeats", PlanKind::kUnfused}}) {
    SCOPED_TRACE(std::string(r.name) + " (" + std::string(plan_kind_name(r.plan)) + " plan), " +
                 seed_note(seed, seed));
    const Program p = load_program(case_path(r.name));
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
    const driver::CompiledProgram compiled = compile_for_device(p.graph, r.plan);
    driver::CudaProgram program(compiled, dev);
    program.bind(inputs, /*poison=*/true);
    // The poison is there before the launch (0xFF bytes read as NaN)...
    for (const Tensor& t : program.outputs()) {
      ASSERT_TRUE(is_floating(t.dtype()));
      EXPECT_EQ(count_nan(t), t.numel()) << "the outputs are not poisoned before the launch";
    }
    program.launch();
    program.check_status();
    // ...and none is left after it: every element was written.
    const std::vector<Tensor> outs = program.outputs();
    for (const Tensor& t : outs) EXPECT_EQ(count_nan(t), 0) << "of " << t.numel() << " elements";
    EXPECT_EQ(compare_with_oracle(outs, oracle_of(p.graph, inputs)), "");
  }
}

// Sets an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(GpuCases, KernelCacheServesASecondInstance) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  ASSERT_TRUE(gputest::device_target().has_value()) << dev.name() << " is " << dev.arch();
  // A cache of its own (the cache root is read on every compile), enabled.
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "tilefuse-gpu-cache-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir_template.data()), nullptr);
  const std::string dir = dir_template;
  {
    ScopedEnv cache_dir("TILEFUSE_CACHE_DIR", dir.c_str());
    ScopedEnv no_cache("TILEFUSE_NO_CACHE", nullptr);
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE(seed_note(seed, seed));
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      SCOPED_TRACE(std::string(plan_kind_name(plan)) + " plan");
      const Program p = load_program(case_path("gather_odd_k_f16"));
      const driver::CompiledProgram compiled = compile_for_device(p.graph, plan);
      const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
      std::vector<Tensor> first_outs;
      {
        driver::CudaProgram first(compiled, dev);
        ASSERT_EQ(first.stats().size(), compiled.kernels.size());
        // Only the fused plan's kernels are new to the empty cache; the
        // unfused plan may share one with it.
        if (plan == PlanKind::kFused) {
          for (const driver::CudaKernelStats& st : first.stats())
            EXPECT_FALSE(st.from_cache) << st.name << ": the cache was empty";
        }
        first_outs = first.run(inputs, /*poison=*/true);
      }
      driver::CudaProgram second(compiled, dev);
      ASSERT_EQ(second.stats().size(), compiled.kernels.size());
      for (const driver::CudaKernelStats& st : second.stats())
        EXPECT_TRUE(st.from_cache) << st.name << " was compiled again";
      // The cached kernels compute what the compiled ones did, bit for bit.
      const std::vector<Tensor> outs = second.run(inputs, /*poison=*/true);
      ASSERT_EQ(outs.size(), first_outs.size());
      for (size_t i = 0; i < outs.size(); ++i)
        EXPECT_EQ(relative_error(outs[i], first_outs[i]), 0.0) << "output " << i;
    }
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / "kernels"));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace tilefuse
