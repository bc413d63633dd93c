// The fusion rules (fusion.cpp, R1-R8) one at a time, on small programs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schedule/fusion.h"
#include "schedule_test_util.h"

namespace tilefuse {
namespace {

using testing::checked_plan;
using testing::has_decision;
using testing::nodes_of;
using testing::ops;
using testing::param_named;
using testing::parse;
using testing::steps_of;
using Ids = std::vector<ValueId>;
using Ops = std::vector<std::string>;

std::string dump(const Graph& g, const Plan& p) {
  return g.to_string() + to_string(g, p);
}

// R6: a cheap producer with two consumers is recomputed in both GEMMs.
TEST(SharedProducer, CheapGatherIsRecomputedInEachGemm) {
  const Program prog = parse(
      "def f(x: f16[64, 32], idx: i64[16], w: f16[32, 8], v: f16[32, 4]):\n"
      "    h = x[idx]\n"
      "    return h @ w, h @ v\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 2u) << dump(g, p);
  for (const KernelStep& s : p.steps) {
    EXPECT_EQ(s.kind, StepKind::kGemm);
    EXPECT_EQ(ops(g, s.a.nodes), Ops{"index"});
    EXPECT_EQ(s.a.reads, (Ids{param_named(g, "x"), param_named(g, "idx")}));
  }
  EXPECT_TRUE(has_decision(p, "recomputed by each of its 2 uses (1 op)")) << dump(g, p);
}

// R6: an expensive shared producer is materialized once and loaded by both.
TEST(SharedProducer, ExpensiveChainIsMaterialized) {
  const std::string src =
      "def f(x: f32[64, 32], w: f32[32, 8], v: f32[32, 4]):\n"
      "    h = torch.exp(torch.tanh(torch.sigmoid(x * 2.0 + 1.0) - 0.5) * 3.0) / 7.0 + 2.0\n"
      "    return h @ w, h @ v\n";
  const Program prog = parse(src);
  const Graph& g = prog.graph;
  const ValueId h = g.node(nodes_of(g, OpKind::Matmul)[0]).inputs[0];
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 3u) << dump(g, p);
  EXPECT_EQ(p.steps[0].kind, StepKind::kPointwise);
  EXPECT_EQ(p.steps[0].output, h);
  EXPECT_EQ(p.steps[0].pointwise.size(), 9u);
  for (size_t i : {1, 2}) {
    EXPECT_TRUE(p.steps[i].a.nodes.empty());
    EXPECT_EQ(p.steps[i].a.reads, Ids{h});
  }
  EXPECT_TRUE(has_decision(p, "has 2 uses and 9 ops > max_recompute_ops 8")) << dump(g, p);

  // The limit is a parameter, not a rule: raise it and both GEMMs recompute.
  FusionOptions opts;
  opts.max_recompute_ops = 9;
  const Plan r = build_plan(g, PlanKind::kFused, opts);
  EXPECT_TRUE(validate_plan(g, r).empty());
  ASSERT_EQ(r.steps.size(), 2u) << dump(g, r);
  EXPECT_EQ(r.steps[0].a.nodes.size(), 9u);
}

// R5's limit: an operand expression past max_prologue_ops is materialized.
TEST(Prologue, TooLongAChainIsMaterialized) {
  std::string expr = "x";
  for (int i = 0; i < 17; ++i) expr = "(" + expr + " * 1.5)";
  const Program prog = parse("def f(x: f32[8, 4], w: f32[4, 2]):\n    return " + expr + " @ w\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 2u) << dump(g, p);
  EXPECT_EQ(p.steps[0].pointwise.size(), 17u);
  EXPECT_TRUE(p.steps[1].a.nodes.empty());
  EXPECT_TRUE(has_decision(p, "has 17 ops > max_prologue_ops 16")) << dump(g, p);

  FusionOptions opts;
  opts.max_prologue_ops = 17;
  const Plan r = build_plan(g, PlanKind::kFused, opts);
  ASSERT_EQ(r.steps.size(), 1u) << dump(g, r);
  EXPECT_EQ(r.steps[0].a.nodes.size(), 17u);
}

TEST(Prologue, ViewsAndGatherOnBColumnsAndSlices) {
  const Program prog = parse(
      "def f(x: f16[40, 64], w: f16[16, 100], idx: i32[24], s: f16[20]):\n"
      "    a = x[0:40:2, 32:48]\n"
      "    b = w[:, idx] * s.expand(24, 20).t()[0:16]\n"
      "    return a.T.t() @ b\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 1u) << dump(g, p);
  const KernelStep& s = p.steps[0];
  EXPECT_EQ(ops(g, s.a.nodes), (Ops{"slice", "slice", "permute", "permute"}));
  EXPECT_EQ(s.a.reads, Ids{param_named(g, "x")});
  EXPECT_EQ(ops(g, s.b.nodes), (Ops{"index", "expand", "permute", "slice", "mul"}));
  EXPECT_EQ(s.b.reads, (Ids{param_named(g, "w"), param_named(g, "idx"), param_named(g, "s")}));
  // Unfused: the views of x stay views of a parameter (no copy); the
  // gathered B is materialized.
  const Plan u = checked_plan(g, PlanKind::kUnfused);
  ASSERT_EQ(u.steps.size(), 2u) << dump(g, u);
  EXPECT_EQ(ops(g, u.steps[0].pointwise), (Ops{"index", "expand", "permute", "slice", "mul"}));
  EXPECT_EQ(ops(g, u.steps[1].a.nodes), (Ops{"slice", "slice", "permute", "permute"}));
  EXPECT_EQ(u.steps[1].a.reads, Ids{param_named(g, "x")});
}

// R4: a gather whose index is itself gathered gets the index materialized.
TEST(Prologue, NestedGatherIndexIsMaterialized) {
  const Program prog = parse(
      "def f(x: f32[64, 8], w: f32[8, 4], i1: i64[16] in [0, 32), i2: i64[32] in [0, 64)):\n"
      "    return x[i2[i1]] @ w\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 2u) << dump(g, p);
  const ValueId inner = nodes_of(g, OpKind::Index)[0];
  EXPECT_EQ(p.steps[0].pointwise, Ids{inner});
  EXPECT_EQ(ops(g, p.steps[1].a.nodes), Ops{"index"});
  EXPECT_EQ(p.steps[1].a.reads, (Ids{param_named(g, "x"), inner}));
  EXPECT_TRUE(has_decision(p, "is itself gathered")) << dump(g, p);
}

// An elementwise expression of a leaf is a legal index.
TEST(Prologue, ElementwiseIndexStaysFused) {
  const Program prog = parse(
      "def f(x: f32[64, 8], w: f32[8, 4], i: i32[16] in [0, 32)):\n"
      "    return x[i * 2 + 1] @ w\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 1u) << dump(g, p);
  EXPECT_EQ(ops(g, p.steps[0].a.nodes), (Ops{"mul", "add", "index"}));
}

// R2: a GEMM result is never fused into another GEMM's prologue.
TEST(MatmulChain, MatmulFeedingMatmulIsTwoGemms) {
  const Program prog = parse(
      "def f(x: f32[16, 8], w: f32[8, 12], v: f32[12, 4], b: f32[12]):\n"
      "    return torch.relu(x @ w + b) @ v\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 2u) << dump(g, p);
  EXPECT_EQ(ops(g, p.steps[0].epilogue), (Ops{"add", "relu"}));
  EXPECT_TRUE(p.steps[1].a.nodes.empty());
  EXPECT_EQ(p.steps[1].a.reads, Ids{p.steps[0].output});
  EXPECT_TRUE(has_decision(p, "(a GEMM result: never fused into a prologue)")) << dump(g, p);
}

TEST(MatmulChain, TransposedGemmResultIsAViewPrologue) {
  const Program prog = parse(
      "def f(x: f32[16, 8], w: f32[8, 12], v: f32[16, 4]):\n"
      "    return (x @ w).T @ v\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 2u) << dump(g, p);
  EXPECT_EQ(ops(g, p.steps[1].a.nodes), Ops{"permute"});
  EXPECT_EQ(p.steps[1].a.reads, Ids{p.steps[0].output});
  EXPECT_TRUE(has_decision(p, "is not elementwise")) << dump(g, p);
}

// R3 (d): two GEMMs feeding one add: the earlier anchor claims it and loads
// the other's result, which is therefore computed first.
TEST(MatmulChain, SumOfTwoGemmsIsOneEpilogue) {
  const Program prog = parse(
      "def f(a: f32[16, 8], b: f32[8, 4], c: f32[16, 6], d: f32[6, 4]):\n"
      "    return a @ b + c @ d\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 2u) << dump(g, p);
  const Ids mms = nodes_of(g, OpKind::Matmul);
  EXPECT_EQ(p.steps[0].anchor, mms[1]);
  EXPECT_EQ(p.steps[0].output, mms[1]);
  EXPECT_EQ(p.steps[1].anchor, mms[0]);
  EXPECT_EQ(ops(g, p.steps[1].epilogue), Ops{"add"});
  EXPECT_EQ(p.steps[1].epilogue_reads, Ids{mms[1]});
  EXPECT_TRUE(has_decision(p, "is in the epilogue of")) << dump(g, p);
}

// R3 (a): a chain node with a second use is stored; its users are pointwise.
TEST(Epilogue, StoppedByASecondUser) {
  const Program prog = parse(
      "def f(x: f32[16, 8], w: f32[8, 4], b: f32[4]):\n"
      "    t = x @ w + b\n"
      "    return torch.relu(t), t * 2.0\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 3u) << dump(g, p);
  const KernelStep& gemm = p.steps[0];
  EXPECT_EQ(ops(g, gemm.epilogue), Ops{"add"});
  EXPECT_EQ(gemm.epilogue_reads, Ids{param_named(g, "b")});
  EXPECT_EQ(ops(g, p.steps[1].pointwise), Ops{"relu"});
  EXPECT_EQ(ops(g, p.steps[2].pointwise), Ops{"mul"});
  EXPECT_EQ(p.steps[1].reads, Ids{gemm.output});
  EXPECT_EQ(p.steps[2].reads, Ids{gemm.output});
  EXPECT_TRUE(has_decision(p, "has 2 uses")) << dump(g, p);
}

TEST(Epilogue, StoppedByAGraphOutput) {
  const Program prog = parse(
      "def f(x: f32[16, 8], w: f32[8, 4]):\n"
      "    t = torch.sigmoid(x @ w)\n"
      "    return t, torch.relu(t)\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 2u) << dump(g, p);
  EXPECT_EQ(ops(g, p.steps[0].epilogue), Ops{"sigmoid"});
  EXPECT_EQ(ops(g, p.steps[1].pointwise), Ops{"relu"});
}

// R3 (c): an op that broadcasts the accumulator to a larger shape.
TEST(Epilogue, StoppedByABroadcastToALargerShape) {
  const Program prog = parse(
      "def f(x: f32[16, 8], w: f32[8, 4], z: f32[3, 16, 4]):\n"
      "    return x @ w + z\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 2u) << dump(g, p);
  EXPECT_TRUE(p.steps[0].epilogue.empty());
  EXPECT_EQ(ops(g, p.steps[1].pointwise), Ops{"add"});
  EXPECT_TRUE(has_decision(p, "not the result's [16, 4]")) << dump(g, p);
}

// R3: side inputs are computed at the output index (cast of a bias, a gather).
TEST(Epilogue, SideInputExpressionsAreComputedInTheEpilogue) {
  const Program prog = parse(
      "def f(x: f16[16, 8], w: f16[8, 4], b: f16[4], t: f32[32, 4], i: i64[16] in [0, 32)):\n"
      "    return ((x @ w).float() + b.float() * 0.5) * t[i]\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 1u) << dump(g, p);
  const KernelStep& s = p.steps[0];
  EXPECT_EQ(ops(g, s.epilogue), (Ops{"cast", "cast", "mul", "add", "index", "mul"}));
  EXPECT_EQ(s.epilogue_reads, (Ids{param_named(g, "b"), param_named(g, "t"), param_named(g, "i")}));
}

TEST(Epilogue, AddmmBiasIsAnOperandAndTheRestAnEpilogue) {
  const Program prog = parse(
      "def f(b: f32[4], x: f32[32, 8], i: i64[16] in [0, 32), w: f32[8, 4]):\n"
      "    return torch.clamp(torch.addmm(b, x[i], w, beta=0.5), 0.0, 6.0)\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 1u) << dump(g, p);
  const KernelStep& s = p.steps[0];
  EXPECT_EQ(g.node(s.anchor).kind, OpKind::Addmm);
  ASSERT_TRUE(s.bias.has_value());
  EXPECT_EQ(s.bias->reads, Ids{param_named(g, "b")});
  EXPECT_EQ(ops(g, s.a.nodes), Ops{"index"});
  EXPECT_EQ(ops(g, s.epilogue), Ops{"clamp"});
  EXPECT_EQ(s.gemm.m, 16);
  EXPECT_EQ(s.gemm.k, 8);
  EXPECT_EQ(s.gemm.n, 4);
}

TEST(Geometry, VectorOperandsAndBroadcastBatches) {
  const Program prog = parse(
      "def f(x: f32[16, 8], v: f32[8], y: f32[3, 16, 8], w: f32[8, 5]):\n"
      "    return x @ v, v @ w, y @ w\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 3u) << dump(g, p);
  EXPECT_TRUE(p.steps[0].gemm.b_is_vector);
  EXPECT_EQ(p.steps[0].gemm.m, 16);
  EXPECT_EQ(p.steps[0].gemm.n, 1);
  EXPECT_TRUE(p.steps[1].gemm.a_is_vector);
  EXPECT_EQ(p.steps[1].gemm.m, 1);
  EXPECT_EQ(p.steps[1].gemm.n, 5);
  EXPECT_EQ(p.steps[2].gemm.batch, (Shape{3}));
  EXPECT_EQ(p.steps[2].gemm.m, 16);
}

// R8: outputs that are views are written by a pointwise copy.
TEST(Outputs, ViewOutputsAreCopied) {
  const Program prog = parse(
      "def f(x: f32[16, 8], w: f32[8, 4]):\n"
      "    return x.T, (x @ w).T, x[2:4]\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 4u) << dump(g, p);
  EXPECT_EQ(ops(g, p.steps[0].pointwise), Ops{"permute"});
  EXPECT_EQ(p.steps[0].reads, Ids{param_named(g, "x")});
  EXPECT_EQ(p.steps[1].kind, StepKind::kGemm);
  EXPECT_EQ(ops(g, p.steps[2].pointwise), Ops{"permute"});
  EXPECT_EQ(p.steps[2].reads, Ids{p.steps[1].output});
  EXPECT_EQ(ops(g, p.steps[3].pointwise), Ops{"slice"});
}

// A returned parameter is already in memory: no step writes it.
TEST(Outputs, ParameterOutputNeedsNoStep) {
  const Program prog = parse(
      "def f(x: f32[16, 8], w: f32[8, 4]):\n"
      "    return x, x @ w, x\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 1u) << dump(g, p);
  EXPECT_EQ(p.steps[0].kind, StepKind::kGemm);
}

// R8: a cheap output that a GEMM also uses stays fused into that GEMM; the
// copy and the GEMM are independent kernels reading the same parameters.
TEST(Outputs, TwoOutputsSharingAPrologueChain) {
  const Program prog = parse(
      "def f(x: f16[64, 32], idx: i64[16], w: f16[32, 8]):\n"
      "    h = torch.relu(x[idx] * 2.0)\n"
      "    return h @ w, h\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 2u) << dump(g, p);
  const auto gemms = steps_of(p, StepKind::kGemm);
  const auto pws = steps_of(p, StepKind::kPointwise);
  ASSERT_EQ(gemms.size(), 1u);
  ASSERT_EQ(pws.size(), 1u);
  EXPECT_EQ(ops(g, gemms[0]->a.nodes), (Ops{"index", "mul", "relu"}));
  EXPECT_EQ(ops(g, pws[0]->pointwise), (Ops{"index", "mul", "relu"}));
  EXPECT_EQ(gemms[0]->a.reads, pws[0]->reads);
  EXPECT_TRUE(has_decision(p, "recomputed by each of its 2 uses (3 ops)")) << dump(g, p);
  // Unfused: the output is materialized once and the GEMM loads it.
  const Plan u = checked_plan(g, PlanKind::kUnfused);
  ASSERT_EQ(u.steps.size(), 2u) << dump(g, u);
  EXPECT_EQ(u.steps[1].a.reads, Ids{u.steps[0].output});
}

TEST(Outputs, TwoOutputsSharingAnEpilogueValue) {
  const Program prog = parse(
      "def f(x: f32[16, 8], w: f32[8, 4], b: f32[4]):\n"
      "    u = x @ w + b\n"
      "    return torch.relu(u), torch.sigmoid(u)\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 3u) << dump(g, p);
  EXPECT_EQ(ops(g, p.steps[0].epilogue), Ops{"add"});
  EXPECT_EQ(ops(g, p.steps[1].pointwise), Ops{"relu"});
  EXPECT_EQ(ops(g, p.steps[2].pointwise), Ops{"sigmoid"});
}

TEST(Liveness, DeadNodesAreComputedByNoStep) {
  const Program prog = parse(
      "def f(x: f32[16, 8], w: f32[8, 4], i: i64[16]):\n"
      "    unused = torch.exp(x) @ w\n"
      "    return x[i] @ w\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kFused);
  ASSERT_EQ(p.steps.size(), 1u) << dump(g, p);
  EXPECT_EQ(ops(g, p.steps[0].a.nodes), Ops{"index"});
}

// The unfused plan keeps pure views of materialized values as GEMM operands.
TEST(Unfused, ViewsOfParametersNeedNoCopy) {
  const Program prog = parse(
      "def f(x: f32[8, 16], w: f32[4, 8]):\n"
      "    return x.T @ w.t()\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kUnfused);
  ASSERT_EQ(p.steps.size(), 1u) << dump(g, p);
  EXPECT_EQ(ops(g, p.steps[0].a.nodes), Ops{"permute"});
  EXPECT_EQ(ops(g, p.steps[0].b.nodes), Ops{"permute"});
  EXPECT_TRUE(p.steps[0].epilogue.empty());
}

TEST(Unfused, ViewOfAnElementwiseOperandMaterializesTheElementwise) {
  const Program prog = parse(
      "def f(x: f32[8, 16], w: f32[8, 4]):\n"
      "    return (x * 2.0).T @ w\n");
  const Graph& g = prog.graph;
  const Plan p = checked_plan(g, PlanKind::kUnfused);
  ASSERT_EQ(p.steps.size(), 2u) << dump(g, p);
  EXPECT_EQ(ops(g, p.steps[0].pointwise), Ops{"mul"});
  EXPECT_EQ(ops(g, p.steps[1].a.nodes), Ops{"permute"});
  EXPECT_EQ(p.steps[1].a.reads, Ids{p.steps[0].output});
}

}  // namespace
}  // namespace tilefuse
