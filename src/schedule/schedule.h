// The schedule module's entry point: partition a Graph into kernels.
//
// build_plan decides fusion (fusion.h: the rules and their reasons) and
// builds the steps (plan.h: the contract every plan keeps):
// - one GEMM step per live Matmul/Addmm, carrying its operands' prologues
//   and its epilogue, storing the epilogue's last node (or the anchor);
// - one pointwise step per other written value (a graph output, or a value
//   a rule materialized), computing it from loaded values;
// - steps ordered by the ValueId of their output, which is a topological
//   order: every value a step reads is an input of a node the step computes,
//   all of which are at or before its output, so the read (another step's
//   output, or a parameter) comes earlier.
// Both plan kinds round at the same points (plan.h, "Rounding").
#pragma once

#include "graph/graph.h"
#include "schedule/fusion.h"
#include "schedule/plan.h"

namespace tilefuse {

// The plan of `kind` with that kind's default options (fusion_options).
// Never throws for a well-formed Graph; the result passes validate_plan.
Plan build_plan(const Graph& graph, PlanKind kind);
// The same with explicit options (a tuner may vary the limits).
Plan build_plan(const Graph& graph, PlanKind kind, const FusionOptions& options);

inline Plan build_fused_plan(const Graph& graph) {
  return build_plan(graph, PlanKind::kFused);
}
inline Plan build_unfused_plan(const Graph& graph) {
  return build_plan(graph, PlanKind::kUnfused);
}

}  // namespace tilefuse
