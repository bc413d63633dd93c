// The shared cases: which kernels each plan has and which ops each fuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan_interpreter.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "schedule_test_util.h"

namespace tilefuse {
namespace {

using testing::checked_plan;
using testing::load_case;
using testing::nodes_of;
using testing::ops;
using testing::param_named;
using testing::steps_of;
using Ids = std::vector<ValueId>;
using Ops = std::vector<std::string>;

const std::vector<std::string> kAllCases = {"batched_gather",        "dequant_int8_prologue",
                                            "gather_b_rows_along_k", "gather_mm_bf16_repeats",
                                            "gather_negative_index", "gather_odd_k_f16",
                                            "gather_out_of_range",   "pointwise_both_operands",
                                            "seed_gather_mm_f16",    "upcast_prologue_epilogue"};

// The single GEMM step of a case's fused plan.
const KernelStep& only_gemm(const Plan& p) {
  static const KernelStep empty;
  if (p.steps.size() != 1 || p.steps[0].kind != StepKind::kGemm) {
    ADD_FAILURE() << "expected exactly one GEMM step";
    return empty;
  }
  return p.steps[0];
}

TEST(Cases, EveryFusedPlanIsOneGemmKernel) {
  for (const std::string& name : kAllCases) {
    SCOPED_TRACE(name);
    const Program prog = load_case(name);
    const Plan p = checked_plan(prog.graph, PlanKind::kFused);
    const KernelStep& s = only_gemm(p);
    EXPECT_EQ(s.name, "gemm0");
    EXPECT_EQ(s.output, prog.graph.outputs()[0]);
  }
}

TEST(Cases, UnfusedPlansHavePlainGemmsAndPointwiseSteps) {
  for (const std::string& name : kAllCases) {
    SCOPED_TRACE(name);
    const Program prog = load_case(name);
    const Graph& g = prog.graph;
    const Plan p = checked_plan(g, PlanKind::kUnfused);
    const auto gemms = steps_of(p, StepKind::kGemm);
    ASSERT_EQ(gemms.size(), 1u);
    const KernelStep& s = *gemms[0];
    // The GEMM reads materialized values (no prologue, no epilogue) and
    // stores its raw result.
    EXPECT_TRUE(s.a.nodes.empty());
    EXPECT_TRUE(s.b.nodes.empty());
    EXPECT_TRUE(s.epilogue.empty());
    EXPECT_EQ(s.output, s.anchor);
    EXPECT_EQ(s.a.reads, Ids{s.a.operand});
    EXPECT_EQ(s.b.reads, Ids{s.b.operand});
    // Every other step is pointwise, and the plan has one more kernel per
    // non-plain operand and per epilogue.
    EXPECT_EQ(steps_of(p, StepKind::kPointwise).size(), p.steps.size() - 1);
    EXPECT_GE(p.steps.size(), 2u);
  }
}

// Both plans, run step by step on the reference evaluator, reproduce the
// graph's eager results bit for bit (the seed is left out: 2048^3 is slow here).
TEST(Cases, PlansReproduceTheGraphsResults) {
  for (const std::string& name : kAllCases) {
    if (name == "seed_gather_mm_f16" || name == "gather_out_of_range") continue;
    SCOPED_TRACE(name);
    const Program prog = load_case(name);
    const Graph& g = prog.graph;
    const std::vector<Tensor> inputs = make_random_inputs(g, 7);
    const std::vector<Tensor> expected = evaluate(g, inputs);
    for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
      const std::vector<Tensor> got = testing::run_plan(g, checked_plan(g, kind), inputs);
      ASSERT_EQ(got.size(), expected.size());
      std::string why;
      EXPECT_TRUE(testing::same_tensor(got[0], expected[0], &why))
          << plan_kind_name(kind) << ": " << why;
    }
  }
}

TEST(Cases, SeedFusesTheGatherIntoA) {
  const Program prog = load_case("seed_gather_mm_f16");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  const KernelStep& s = only_gemm(p);
  const ValueId x = param_named(g, "x"), y = param_named(g, "y"), index = param_named(g, "index");
  EXPECT_EQ(s.anchor, nodes_of(g, OpKind::Matmul)[0]);
  EXPECT_EQ(s.a.nodes, nodes_of(g, OpKind::Index));
  EXPECT_EQ(s.a.reads, (Ids{x, index}));
  EXPECT_TRUE(s.b.nodes.empty());
  EXPECT_EQ(s.b.reads, Ids{y});
  EXPECT_FALSE(s.bias.has_value());
  EXPECT_TRUE(s.epilogue.empty());
  EXPECT_EQ(s.reads, (Ids{x, y, index}));
  EXPECT_EQ(s.gemm.m, 2048);
  EXPECT_EQ(s.gemm.n, 2048);
  EXPECT_EQ(s.gemm.k, 2048);
  EXPECT_TRUE(s.gemm.batch.empty());
  EXPECT_EQ(p.materialized, (Ids{x, y, index, s.output}));
}

TEST(Cases, SeedUnfusedMaterializesTheGather) {
  const Program prog = load_case("seed_gather_mm_f16");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kUnfused);
  ASSERT_EQ(p.steps.size(), 2u);
  const ValueId gather = nodes_of(g, OpKind::Index)[0];
  EXPECT_EQ(p.steps[0].kind, StepKind::kPointwise);
  EXPECT_EQ(p.steps[0].pointwise, Ids{gather});
  EXPECT_EQ(p.steps[0].reads, (Ids{param_named(g, "x"), param_named(g, "index")}));
  EXPECT_EQ(p.steps[1].kind, StepKind::kGemm);
  EXPECT_EQ(p.steps[1].a.reads, Ids{gather});
}

TEST(Cases, GatherOfBRowsAlongKIsInBsPrologue) {
  const Program prog = load_case("gather_b_rows_along_k");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  const KernelStep& s = only_gemm(p);
  EXPECT_EQ(ops(g, s.b.nodes), Ops{"index"});
  EXPECT_EQ(g.node(s.b.nodes[0]).dim, 0);
  EXPECT_EQ(s.b.reads, (Ids{param_named(g, "w"), param_named(g, "idx")}));
  EXPECT_TRUE(s.a.nodes.empty());
  EXPECT_EQ(s.a.reads, Ids{param_named(g, "x")});
  EXPECT_EQ(s.gemm.k, 333);
}

TEST(Cases, Int8DequantIsCastThenScaleInBsPrologue) {
  const Program prog = load_case("dequant_int8_prologue");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  const KernelStep& s = only_gemm(p);
  EXPECT_EQ(ops(g, s.b.nodes), (Ops{"cast", "mul"}));
  EXPECT_EQ(s.b.reads, (Ids{param_named(g, "wq"), param_named(g, "scale")}));
  EXPECT_TRUE(s.a.nodes.empty());
  EXPECT_TRUE(s.epilogue.empty());
}

TEST(Cases, UpcastPrologueAndBiasReluEpilogue) {
  const Program prog = load_case("upcast_prologue_epilogue");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  const KernelStep& s = only_gemm(p);
  EXPECT_EQ(ops(g, s.a.nodes), Ops{"cast"});
  EXPECT_EQ(s.a.reads, Ids{param_named(g, "x")});
  EXPECT_EQ(ops(g, s.epilogue), (Ops{"add", "relu"}));
  EXPECT_EQ(s.epilogue_reads, Ids{param_named(g, "b")});
  EXPECT_EQ(s.output, s.epilogue.back());
  EXPECT_EQ(g.node(s.output).unary, UnaryOp::Relu);
  // Unfused: cast kernel, plain GEMM, one pointwise kernel for add + relu.
  const Plan u = checked_plan(g, PlanKind::kUnfused);
  ASSERT_EQ(u.steps.size(), 3u);
  EXPECT_EQ(ops(g, u.steps[0].pointwise), Ops{"cast"});
  EXPECT_EQ(u.steps[1].kind, StepKind::kGemm);
  EXPECT_EQ(ops(g, u.steps[2].pointwise), (Ops{"add", "relu"}));
  EXPECT_EQ(u.steps[2].reads, (Ids{param_named(g, "b"), u.steps[1].output}));
}

TEST(Cases, BatchedGatherIsABatchedGemmWithAGatherOnA) {
  const Program prog = load_case("batched_gather");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  const KernelStep& s = only_gemm(p);
  EXPECT_EQ(s.gemm.batch, (Shape{4}));
  EXPECT_EQ(s.gemm.m, 96);
  EXPECT_EQ(s.gemm.n, 80);
  EXPECT_EQ(s.gemm.k, 64);
  EXPECT_FALSE(s.gemm.a_is_vector || s.gemm.b_is_vector);
  EXPECT_EQ(ops(g, s.a.nodes), Ops{"index"});
  EXPECT_EQ(g.node(s.a.nodes[0]).dim, 1);  // rows within each batch
  EXPECT_EQ(s.a.reads, (Ids{param_named(g, "x"), param_named(g, "idx")}));
  EXPECT_EQ(s.b.reads, Ids{param_named(g, "w")});
}

TEST(Cases, PointwiseProloguesOnBothOperandsAndAScalingEpilogue) {
  const Program prog = load_case("pointwise_both_operands");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  const KernelStep& s = only_gemm(p);
  EXPECT_EQ(ops(g, s.a.nodes), Ops{"sub"});
  EXPECT_EQ(s.a.reads, Ids{param_named(g, "x")});
  EXPECT_EQ(ops(g, s.b.nodes), (Ops{"mul", "add"}));
  EXPECT_EQ(s.b.reads, Ids{param_named(g, "y")});
  EXPECT_EQ(ops(g, s.epilogue), Ops{"mul"});
  EXPECT_TRUE(s.epilogue_reads.empty());  // the scale is a Scalar constant
  EXPECT_EQ(checked_plan(g, PlanKind::kUnfused).steps.size(), 4u);
}

TEST(Cases, GatherVariantsFuseTheSameWay) {
  for (const char* name : {"gather_mm_bf16_repeats", "gather_negative_index", "gather_odd_k_f16",
                           "gather_out_of_range"}) {
    SCOPED_TRACE(name);
    const Program prog = load_case(name);
    const Graph& g = prog.graph;
    const Plan p = checked_plan(g, PlanKind::kFused);
    const KernelStep& s = only_gemm(p);
    EXPECT_EQ(ops(g, s.a.nodes), Ops{"index"});
    EXPECT_EQ(s.a.reads, (Ids{param_named(g, "x"), param_named(g, "idx")}));
    EXPECT_TRUE(s.b.nodes.empty());
    EXPECT_TRUE(s.epilogue.empty());
  }
}

}  // namespace
}  // namespace tilefuse
