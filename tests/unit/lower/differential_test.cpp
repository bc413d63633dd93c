// Differential tests: the lowered kernels of both plans, run by the CPU
// executor step by step on random inputs, against the reference evaluator.
// Fused and unfused plans round at the same points (plan.h), so they differ
// from eager results only by the GEMM's summation order.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "lower_test_util.h"
#include "random_program.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "runtime/cpu/executor.h"

namespace tilefuse {
namespace {

// Runs every kernel of `plan` in order; returns the graph's outputs.
std::vector<Tensor> run_lowered(const Graph& g, const Plan& plan,
                                const std::vector<Tensor>& params) {
  std::map<ValueId, Tensor> memory;
  for (size_t i = 0; i < params.size(); ++i) memory[g.parameters()[i]] = params[i];
  runtime::ExecOptions eo;
  eo.num_threads = 2;
  for (const LoweredKernel& lk : lower_plan(g, plan)) {
    const Node& out = g.node(lk.step.output);
    // Poisoned, so an element the kernel fails to write shows up.
    Tensor t = Tensor::full(out.dtype, out.shape, is_floating(out.dtype) ? NAN : -77);
    memory[lk.step.output] = t;
    std::vector<runtime::KernelArg> args;
    for (size_t i = 0; i < lk.bindings.size(); ++i)
      args.emplace_back(lk.kernel.params[i].name(), memory.at(lk.bindings[i]));
    runtime::execute(lk.kernel, args, eo);
  }
  std::vector<Tensor> outs;
  for (ValueId o : g.outputs()) outs.push_back(memory.at(o));
  return outs;
}

double tolerance(DType dt) {
  switch (dt) {
    case DType::F16:
      return 5e-3;
    case DType::BF16:
      return 3e-2;
    case DType::F8E4M3:
    case DType::F8E5M2:
      return 0.15;
    case DType::F32:
    case DType::F64:
      return 1e-5;
    default:
      return 1e-2;  // integers / bools computed from rounded floats
  }
}

// Both plans against the eager reference; a failure prints the program.
void expect_plans_match(const Graph& g, uint64_t seed, const std::string& what) {
  const std::vector<Tensor> inputs = make_random_inputs(g, seed);
  EvalOptions eager;
  eager.num_threads = 1;
  const std::vector<Tensor> expected = evaluate(g, inputs, eager);
  for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
    const Plan plan = build_plan(g, kind);
    std::vector<Tensor> got;
    ASSERT_NO_THROW(got = run_lowered(g, plan, inputs))
        << what << " (" << plan_kind_name(kind) << ")\n"
        << g.to_string() << to_string(g, plan);
    for (size_t i = 0; i < expected.size(); ++i) {
      const double err = relative_error(got[i], expected[i]);
      EXPECT_LE(err, tolerance(expected[i].dtype()))
          << what << " (" << plan_kind_name(kind) << "), output " << i << "\n"
          << g.to_string() << to_string(g, plan);
    }
  }
}

TEST(LowerDifferential, SeedSmall) {
  const Program p = testing::parse(
      "def f(x: f16[64, 48], y: f16[48, 40], index: i64[64] in [-64, 64)):\n"
      "    return x[index] @ y\n");
  expect_plans_match(p.graph, 7, "seed");
}

TEST(LowerDifferential, SharedCasesShrunk) {
  // The shared cases at their own shapes are large for a 2-core executor;
  // the ones small enough run as they are.
  for (const char* name : {"batched_gather", "gather_negative_index", "gather_b_rows_along_k",
                           "pointwise_both_operands", "upcast_prologue_epilogue"}) {
    const std::string path = std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/" + name + ".tfs";
    const Program p = load_program(path);
    int64_t work = 0;
    for (const Node& n : p.graph.nodes()) work = std::max(work, shape_numel(n.shape));
    if (work > (int64_t{1} << 20)) continue;
    expect_plans_match(p.graph, 3, name);
  }
}

TEST(LowerDifferential, OutOfRangeIndexIsAUserError) {
  const Program p = testing::parse(
      "def f(x: f32[6, 5], w: f32[5, 3], i: i64[4] in [6, 7)):\n"
      "    return x[i] @ w\n");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, 1);
  for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
    try {
      run_lowered(p.graph, build_plan(p.graph, kind), inputs);
      ADD_FAILURE() << "no error from the " << plan_kind_name(kind) << " plan";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("index 6 is out of bounds for dim 0 of `x` (size 6)"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(LowerDifferential, RandomPrograms) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const Graph g = testing::RandomProgram(seed).build();
    expect_plans_match(g, seed, "seed " + std::to_string(seed));
    if (::testing::Test::HasFailure()) break;  // one program's report is enough
  }
}

}  // namespace
}  // namespace tilefuse
