// Fusion legality: which nodes a GEMM kernel computes in its prologues and
// epilogue, which are recomputed where they are used, and which must live in
// memory. The rules, with their reasons, are written at the top of
// fusion.cpp; decide_fusion applies them, and the plan builder (schedule.h)
// turns the result into steps.
//
// Vocabulary. A value is *loaded* when its consumers read it from memory
// instead of recomputing it: parameters, GEMM results, and values a rule
// materializes. A value is *written* when a step stores it: every loaded
// value but the parameters, plus every graph output. Everything else is
// recomputed inside each step that needs it.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "schedule/plan.h"

namespace tilefuse {

// The tunable side of fusion ("with which parameters"): the limits below
// bound the work a kernel repeats, not correctness.
struct FusionOptions {
  bool fuse_prologues = true;  // false: a GEMM operand is a materialized value or a view of one
  bool fuse_epilogues = true;  // false: a GEMM writes its raw result
  // A value with several uses is recomputed in each while its expression
  // (down to loaded values) has at most this many non-view ops.
  int max_recompute_ops = 8;
  // A GEMM operand, or an epilogue side input, is computed in the kernel
  // while its expression has at most this many non-view ops (it runs once
  // per loaded element, per N-tile for A, per M-tile for B).
  int max_prologue_ops = 16;
};
FusionOptions fusion_options(PlanKind kind);  // the defaults each plan kind uses

struct FusionDecisions {
  // Per node (indexed by ValueId).
  std::vector<bool> live;     // reaches a graph output
  std::vector<bool> loaded;   // consumers read it from memory (see above)
  std::vector<bool> written;  // some step stores it
  // The GEMM anchor whose kernel computes the node as part of its accumulator
  // chain (the anchor maps to itself), or -1. The chain's last node is the
  // GEMM step's output.
  std::vector<ValueId> gemm_of;
  // One line per decision with its reason, in the order made.
  std::vector<std::string> reasons;
};

// Applies the rules of fusion.cpp to `graph` with `options`. Never throws
// for a well-formed Graph.
FusionDecisions decide_fusion(const Graph& graph, const FusionOptions& options);

// The expression that computes `root` from loaded values: `nodes` are
// `root` (unless it is a Parameter) and every non-loaded, non-Scalar node it
// depends on through non-loaded nodes, increasing; `reads` are the loaded
// values reached, increasing. Used by the rules and the plan builder alike.
struct InlineExpr {
  std::vector<ValueId> nodes;
  std::vector<ValueId> reads;
};
InlineExpr inline_expr(const Graph& graph, const std::vector<bool>& loaded, ValueId root);

}  // namespace tilefuse
