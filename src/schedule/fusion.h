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
  // ... and while its work per loaded element, counted as the tree the
  // kernel evaluates, is at most this (R5): a prologue is a copy's value,
  // one expression that cannot bind a value for reuse, so an op whose
  // input is read twice (relu, gelu, silu, clamp, `y * y`, a gather's index
  // in the address and the mask of each load) doubles the work below it.
  // prologue_work() gives the count.
  int max_prologue_work = 64;
  // A kernel computes at most this many non-view ops: an epilogue (its
  // chain and side inputs, R3) or a pointwise step (R9); a longer chain is
  // cut and the value at the cut materialized. Bounds a kernel's source,
  // its compile time and the nesting of its IR (like Inductor's
  // max_fusion_size).
  int max_fused_ops = 256;
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

// How many times the kernel evaluates input `slot` of `n` per element of n
// when n is computed inline (lower/expr_lowering.cpp's formulas): 2 for the
// input of relu, gelu, silu and a one-sided clamp, 4 for a two-sided clamp,
// 1 otherwise. A gather (Index) reads its index (slot 1) once for the
// address and once for the mask of each load of the gathered value, and in
// its bounds check: prologue_work() counts that separately.
int input_evaluations(const Node& n, size_t slot);

// The work of computing `root` inline per element, as the tree the kernel
// evaluates: every non-view op counted once per evaluation
// (input_evaluations) and every load of a loaded value counted as one op.
// Saturates at `cap`. Linear in the nodes of inline_expr(root).
int64_t prologue_work(const Graph& graph, const std::vector<bool>& loaded, ValueId root,
                      int64_t cap);

}  // namespace tilefuse
