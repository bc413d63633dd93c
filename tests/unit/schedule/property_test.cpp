// Random programs (tests/common/random_program.h): random prologue chains on
// either operand (gathers of rows/columns, slices, transposes, broadcasts,
// casts, int8 dequant, elementwise ops, shared producers), random epilogues,
// GEMMs feeding GEMMs and extra outputs. Both plans must validate (validate.h:
// every output written once, reads before writes, closed node lists, every
// live node computed), build deterministically, reproduce the graph's eager
// results bit for bit when run step by step (plan_interpreter.h), and the
// fused plan may only add pointwise kernels for outputs or for values a rule
// materialized.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "common/random_program.h"
#include "plan_interpreter.h"
#include "reference/inputs.h"
#include "schedule_test_util.h"

namespace tilefuse {
namespace {

constexpr int kPrograms = 300;

int live_gemms(const Graph& g) {
  std::vector<bool> live(static_cast<size_t>(g.size()), false);
  for (ValueId o : g.outputs()) live[o] = true;
  int count = 0;
  for (ValueId v = g.size() - 1; v >= 0; --v) {
    if (!live[v]) continue;
    for (ValueId in : g.node(v).inputs) live[in] = true;
    const OpKind k = g.node(v).kind;
    count += k == OpKind::Matmul || k == OpKind::Addmm;
  }
  return count;
}

TEST(PlanProperty, RandomProgramsGiveValidPlans) {
  int fused_prologue_ops = 0, fused_epilogue_ops = 0;
  for (uint64_t seed = 1; seed <= kPrograms; ++seed) {
    const Graph g = testing::RandomProgram(seed).build();
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + g.to_string());
    const std::vector<Tensor> inputs = make_random_inputs(g, seed);
    EvalOptions eager;
    eager.num_threads = 1;
    const std::vector<Tensor> expected = evaluate(g, inputs, eager);
    for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
      const Plan p = build_plan(g, kind);
      const std::vector<std::string> errors = validate_plan(g, p);
      std::string all;
      for (const std::string& e : errors) all += "  " + e + "\n";
      ASSERT_TRUE(errors.empty()) << plan_kind_name(kind) << " plan is invalid:\n"
                                  << all << to_string(g, p);
      ASSERT_EQ(to_string(g, p), to_string(g, build_plan(g, kind))) << "not deterministic";
      // Executed step by step, the plan gives the graph's results bit for bit.
      const std::vector<Tensor> got = testing::run_plan(g, p, inputs);
      for (size_t i = 0; i < expected.size(); ++i) {
        std::string why;
        ASSERT_TRUE(testing::same_tensor(got[i], expected[i], &why))
            << plan_kind_name(kind) << " plan, output " << i << ": " << why << "\n"
            << to_string(g, p);
      }
      const auto gemms = testing::steps_of(p, StepKind::kGemm);
      EXPECT_EQ(static_cast<int>(gemms.size()), live_gemms(g)) << to_string(g, p);
      if (kind == PlanKind::kUnfused) continue;
      for (const KernelStep* s : gemms) {
        fused_prologue_ops += static_cast<int>(s->a.nodes.size() + s->b.nodes.size());
        fused_epilogue_ops += static_cast<int>(s->epilogue.size());
      }
      // A fused pointwise kernel exists only for an output or a materialization.
      for (const KernelStep* s : testing::steps_of(p, StepKind::kPointwise)) {
        const bool is_output =
            std::find(g.outputs().begin(), g.outputs().end(), s->output) != g.outputs().end();
        std::string mark = "materialize %";
        mark += std::to_string(s->output);
        mark += "=";
        EXPECT_TRUE(is_output || testing::has_decision(p, mark))
            << "unexplained pointwise kernel for %" << s->output << "\n"
            << to_string(g, p);
      }
    }
  }
  // The generator does exercise fusion.
  EXPECT_GT(fused_prologue_ops, kPrograms);
  EXPECT_GT(fused_epilogue_ops, kPrograms / 2);
}

}  // namespace
}  // namespace tilefuse
