// Let-binding of lowered values: a DAG becomes a few short expressions.
//
// ExprLowering returns each value as a DAG: a value read twice (`y * y`, a
// gather's index in its address and its mask) is one node with two uses, and
// a long chain of statements is one deep expression. Every later walk of the
// Tile IR (printer, passes, CPU executor, CUDA emitter) treats an
// expression as a tree, so a shared node costs once per use (exponential in
// the nesting of shared values) and depth costs stack. bind_values turns the
// DAG into `let` bindings where the statement allows them (an epilogue's
// store, a pointwise kernel's store): a bound value is computed once, and
// every expression left, let values included, is small and shallow.
//
// The rule, in one linear pass over the distinct nodes, operands first:
// - a node whose expression (with its bound operands counted as one node)
//   would exceed max_nodes nodes or max_depth levels gets its largest
//   unbound operands bound until it fits;
// - then a node used twice or more (in the value, the checks, or both)
//   whose expression has at least min_shared_nodes nodes
//   (min_shared_bool_nodes for a condition) is bound, so it is computed
//   once. Smaller repeats stay inline: the cse pass and the CUDA compiler
//   merge those. Conditions have the higher bar because a gather's bounds
//   (in its check and its load's mask) are shared in every program with a
//   gather, and a let there splits the statement's block, after which cse
//   loads the index twice, once on each side; the masks of a chain of
//   gathers, which grow with the chain, pass it.
// Constants and vars are never bound. For an expression already within the
// limits with no large repeat, the result is the input unchanged.
#pragma once

#include "lower/expr_lowering.h"

namespace tilefuse {

// The defaults leave every expression of an ordinary program as it is (the
// seed's gather, bias and activation epilogues are far below them) and only
// act on long chains and values reused at several levels.
struct LetBindOptions {
  int max_nodes = 256;
  int max_depth = 32;
  int min_shared_nodes = 24;
  int min_shared_bool_nodes = 64;
};

// `in` with its large or shared subexpressions bound (see above): its lets
// are followed by the new bindings (fresh vars named "t"), its checks and
// value rewritten to use them. Linear in the distinct nodes of the value
// and the checks; iterative (any depth).
LoweredExpr bind_values(const LoweredExpr& in, const LetBindOptions& options = {});

// The statement `stmt` preceded by `e`'s checks, inside `e`'s lets.
tir::Stmt wrap_in_lets(const LoweredExpr& e, tir::Stmt stmt);

}  // namespace tilefuse
