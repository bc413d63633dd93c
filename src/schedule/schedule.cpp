// Builds a Plan's steps from the fusion decisions (see schedule.h).
#include "schedule/schedule.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"

namespace tilefuse {

namespace {

// Sorted union of two increasing lists.
std::vector<ValueId> merge(const std::vector<ValueId>& a, const std::vector<ValueId>& b) {
  std::vector<ValueId> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

GemmGeometry gemm_geometry(const Graph& g, const Node& anchor) {
  GemmGeometry geo;
  if (anchor.kind == OpKind::Addmm) {
    const Shape& a = g.node(anchor.inputs[1]).shape;
    const Shape& b = g.node(anchor.inputs[2]).shape;
    geo.m = a[0];
    geo.k = a[1];
    geo.n = b[1];
    geo.m_symbol = g.node(anchor.inputs[1]).symbol(0);
    geo.k_symbol = g.node(anchor.inputs[1]).symbol(1);
    geo.n_symbol = g.node(anchor.inputs[2]).symbol(1);
    return geo;
  }
  // torch.matmul: a 1-D A is a row, a 1-D B a column, each unit dim dropped
  // from the result; the dims before the last two broadcast as batch dims.
  const Shape& a = g.node(anchor.inputs[0]).shape;
  const Shape& b = g.node(anchor.inputs[1]).shape;
  geo.a_is_vector = a.size() == 1;
  geo.b_is_vector = b.size() == 1;
  geo.k = a.back();
  geo.m = geo.a_is_vector ? 1 : a[a.size() - 2];
  geo.n = geo.b_is_vector ? 1 : b.back();
  const size_t matrix_dims = (geo.a_is_vector ? 0 : 1) + (geo.b_is_vector ? 0 : 1);
  geo.batch.assign(anchor.shape.begin(), anchor.shape.end() - matrix_dims);
  const Node &an = g.node(anchor.inputs[0]), &bn = g.node(anchor.inputs[1]);
  geo.k_symbol = an.symbol(a.size() - 1);
  if (!geo.a_is_vector) geo.m_symbol = an.symbol(a.size() - 2);
  if (!geo.b_is_vector) geo.n_symbol = bn.symbol(b.size() - 1);
  for (size_t d = 0; d < geo.batch.size(); ++d)
    if (anchor.symbol(d) != kFixedDim) {
      geo.batch_symbols.assign(anchor.dim_symbols.begin(),
                               anchor.dim_symbols.begin() + geo.batch.size());
      break;
    }
  return geo;
}

OperandPrologue operand_prologue(const Graph& g, const FusionDecisions& d, ValueId o) {
  OperandPrologue p;
  p.operand = o;
  const Node& n = g.node(o);
  if (n.kind == OpKind::Scalar) return p;  // a constant (addmm's bias may be a number)
  if (d.loaded[o]) {
    p.reads = {o};
    return p;
  }
  InlineExpr e = inline_expr(g, d.loaded, o);
  p.nodes = std::move(e.nodes);
  p.reads = std::move(e.reads);
  return p;
}

KernelStep gemm_step(const Graph& g, const FusionDecisions& d, ValueId anchor, ValueId output) {
  const Node& an = g.node(anchor);
  KernelStep s;
  s.kind = StepKind::kGemm;
  s.anchor = anchor;
  s.output = output;
  s.gemm = gemm_geometry(g, an);
  const size_t first = an.kind == OpKind::Addmm ? 1 : 0;
  if (an.kind == OpKind::Addmm) s.bias = operand_prologue(g, d, an.inputs[0]);
  s.a = operand_prologue(g, d, an.inputs[first]);
  s.b = operand_prologue(g, d, an.inputs[first + 1]);

  // The accumulator chain, then the side inputs each chain node needs.
  for (ValueId v = anchor + 1; v <= output; ++v) {
    if (d.gemm_of[v] == anchor) s.epilogue.push_back(v);
  }
  const std::vector<ValueId> chain = s.epilogue;
  for (ValueId u : chain) {
    for (ValueId j : g.node(u).inputs) {
      if (d.gemm_of[j] == anchor || g.node(j).kind == OpKind::Scalar) continue;
      if (d.loaded[j]) {
        s.epilogue_reads = merge(s.epilogue_reads, {j});
        continue;
      }
      const InlineExpr e = inline_expr(g, d.loaded, j);
      s.epilogue = merge(s.epilogue, e.nodes);
      s.epilogue_reads = merge(s.epilogue_reads, e.reads);
    }
  }
  TF_CHECK(s.epilogue.empty() ? output == anchor : s.epilogue.back() == output,
           "gemm_step: the epilogue must end at the stored value");

  s.reads = merge(merge(s.a.reads, s.b.reads), s.epilogue_reads);
  if (s.bias) s.reads = merge(s.reads, s.bias->reads);
  return s;
}

KernelStep pointwise_step(const Graph& g, const FusionDecisions& d, ValueId output) {
  KernelStep s;
  s.kind = StepKind::kPointwise;
  s.output = output;
  InlineExpr e = inline_expr(g, d.loaded, output);
  s.pointwise = std::move(e.nodes);
  s.reads = std::move(e.reads);
  return s;
}

}  // namespace

Plan build_plan(const Graph& graph, PlanKind kind) {
  return build_plan(graph, kind, fusion_options(kind));
}

Plan build_plan(const Graph& graph, PlanKind kind, const FusionOptions& options) {
  FusionDecisions d = decide_fusion(graph, options);
  Plan plan;
  plan.kind = kind;
  // Steps in the order of their outputs' ids: a topological order (schedule.h).
  for (ValueId v = 0; v < graph.size(); ++v) {
    if (!d.written[v]) continue;
    KernelStep s =
        d.gemm_of[v] != -1 ? gemm_step(graph, d, d.gemm_of[v], v) : pointwise_step(graph, d, v);
    s.name = std::string(step_kind_name(s.kind)) + std::to_string(plan.steps.size());
    plan.steps.push_back(std::move(s));
  }
  plan.materialized = graph.parameters();
  for (const KernelStep& s : plan.steps) plan.materialized.push_back(s.output);
  plan.decisions = std::move(d.reasons);
  return plan;
}

}  // namespace tilefuse
