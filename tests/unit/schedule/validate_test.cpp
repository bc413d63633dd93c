// The validator accepts the plans the builder makes and rejects broken ones,
// naming the violation.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "schedule_test_util.h"

namespace tilefuse {
namespace {

using testing::checked_plan;
using testing::parse;

const char* kProgram =
    "def f(x: f16[64, 32], idx: i64[16], w: f16[32, 8], b: f16[8]):\n"
    "    return torch.relu(x[idx] @ w + b)\n";

// Breaks a valid plan of kProgram with `edit` and expects a violation
// containing `needle`.
void expect_violation(PlanKind kind, const std::function<void(Plan&)>& edit,
                      const std::string& needle) {
  const Program prog = parse(kProgram);
  Plan p = checked_plan(prog.graph, kind);
  edit(p);
  const std::vector<std::string> errors = validate_plan(prog.graph, p);
  std::string all;
  for (const std::string& e : errors) all += e + "\n";
  EXPECT_NE(all.find(needle), std::string::npos)
      << "expected a violation containing: " << needle << "\ngot:\n"
      << all << to_string(prog.graph, p);
}

TEST(ValidatePlan, AcceptsBuiltPlans) {
  const Program prog = parse(kProgram);
  EXPECT_TRUE(validate_plan(prog.graph, build_fused_plan(prog.graph)).empty());
  EXPECT_TRUE(validate_plan(prog.graph, build_unfused_plan(prog.graph)).empty());
}

TEST(ValidatePlan, RejectsAMissingOutput) {
  expect_violation(
      PlanKind::kFused, [](Plan& p) { p.steps.clear(); }, "is written by 0 steps");
}

TEST(ValidatePlan, RejectsAValueWrittenTwice) {
  expect_violation(
      PlanKind::kFused,
      [](Plan& p) {
        p.steps.push_back(p.steps[0]);
        p.steps.back().name = "again";
      },
      "a second time");
}

TEST(ValidatePlan, RejectsReadsBeforeWrites) {
  expect_violation(
      PlanKind::kUnfused, [](Plan& p) { std::swap(p.steps[0], p.steps[1]); },
      "before any step writes it");
}

TEST(ValidatePlan, RejectsAnUnclosedPrologue) {
  expect_violation(
      PlanKind::kFused, [](Plan& p) { p.steps[0].a.reads = {p.steps[0].a.reads[0]}; },
      "which is neither computed before it nor read");
}

TEST(ValidatePlan, RejectsAnUnusedRead) {
  expect_violation(
      PlanKind::kFused,
      [](Plan& p) {
        p.steps[0].epilogue_reads.insert(p.steps[0].epilogue_reads.begin(), 0);
        p.steps[0].reads = {0, 1, 2, 3};
      },
      "never uses it");
}

TEST(ValidatePlan, RejectsOutOfOrderNodes) {
  expect_violation(
      PlanKind::kFused, [](Plan& p) { std::swap(p.steps[0].epilogue[0], p.steps[0].epilogue[1]); },
      "out of topological order");
}

TEST(ValidatePlan, RejectsAGatherInAnUnfusedPrologue) {
  const Program prog = parse(kProgram);
  const Plan fused = checked_plan(prog.graph, PlanKind::kFused);
  Plan p = fused;
  p.kind = PlanKind::kUnfused;
  const auto errors = validate_plan(prog.graph, p);
  std::string all;
  for (const std::string& e : errors) all += e + "\n";
  EXPECT_NE(all.find("computes non-view"), std::string::npos) << all;
  EXPECT_NE(all.find("unfused plan with an epilogue"), std::string::npos) << all;
}

TEST(ValidatePlan, RejectsAnEpilogueThatReadsTheAccumulatorElsewhere) {
  const Program prog = parse(
      "def f(x: f32[8, 8], w: f32[8, 8]):\n"
      "    return (x @ w).T\n");
  const Graph& g = prog.graph;
  Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 2u);
  // Move the transpose into the GEMM's epilogue: it would read the
  // accumulator at another index than the one it writes.
  p.steps[0].epilogue = p.steps[1].pointwise;
  p.steps[0].output = p.steps[1].output;
  p.steps.pop_back();
  p.materialized.pop_back();
  p.materialized.back() = p.steps[0].output;
  std::string all;
  for (const std::string& e : validate_plan(g, p)) all += e + "\n";
  EXPECT_NE(all.find("reads the accumulator but is not elementwise of its shape"),
            std::string::npos)
      << all;
}

TEST(ValidatePlan, RejectsAnUncomputedLiveNode) {
  expect_violation(
      PlanKind::kFused,
      [](Plan& p) {
        p.steps[0].a.nodes.clear();
        p.steps[0].a.reads = {p.steps[0].a.operand};
      },
      "is computed by no step");
}

TEST(ValidatePlan, RejectsAWrongMaterializedList) {
  expect_violation(
      PlanKind::kFused, [](Plan& p) { p.materialized.pop_back(); }, "`materialized` is not");
}

}  // namespace
}  // namespace tilefuse
