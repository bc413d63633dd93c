// Graph values as Tile IR expressions: the math of every prologue, epilogue
// and pointwise kernel.
//
// ExprLowering turns "the element of graph value v at logical coordinates
// (i0, i1, ...)" into a TIR expression of v's dtype, recursively:
// - a materialized value (a kernel input buffer) is a load at the
//   coordinates, masked by the caller's mask;
// - a view remaps the coordinates (slice: start + i*step; permute; expand:
//   broadcast dims read index 0; select: the fixed index inserted), so views
//   over computed values compose;
// - an Index (gather) loads the index element, wraps a negative value once
//   (select(i < 0, i + size, i), in i64) and emits a bounds Check naming the
//   tensor, the index tensor, the position and the value; the gathered load
//   is masked by the same condition, since a failed check need not stop
//   other program instances (ir.h, "Checks");
// - Cast is a Cast; elementwise ops convert their operands to the node's
//   compute dtype (Node::compute_dtype), compute in its opmath type (f32 for
//   f16/bf16/f8, i64 for integers and bools, else the type itself) and cast
//   to the node's dtype: one rounding per node, exactly like the reference
//   evaluator (src/reference/eval.cpp) and with its formulas (gelu, silu,
//   sigmoid as written in src/reference/elementwise.cpp);
// - a Scalar is a constant of the consuming op's opmath type (PyTorch keeps
//   Python numbers in opmath, never rounded to the op's dtype first).
// - every expression is interned and every (value, coordinates, mask) is
//   lowered once, so the result is a DAG whose size is linear in the graph
//   nodes it covers (a value read twice is one shared node); a statement
//   context turns it into lets with bind_values (lower/let_binding.h), a
//   copy's value (a prologue) stays an expression the planner keeps small.
// Checks cannot live inside an expression, so they are returned beside it:
// the caller places them before the statement that uses the value (see
// passes/inline_hooks.h). A check's condition is `!guard || in_bounds`,
// the guard being the mask's conjuncts over the index position's vars
// (expr_lowering.cpp, check_guard, says why that is exact).
//
// Index dtypes: coordinates are i32 or i64 as given; a coordinate is widened
// to i64 before arithmetic whenever the dim it indexes times its stride may
// reach 2^31 (ir.h, "Offsets"; DimEnv::needs_i64 for symbolic sizes and
// run-time strides), and gathered indices are always i64. The size of a
// symbolic dim is its symbol's kernel var (bounds checks, their messages).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "lower/specialization.h"
#include "tir/ir.h"

namespace tilefuse {

// A lowered value: the expression, the checks that must run before it and,
// after bind_values (lower/let_binding.h), the values it let-binds. ExprLowering
// itself returns a DAG (shared subexpressions are shared nodes) with no lets.
struct LoweredExpr {
  tir::Expr value;
  std::vector<tir::Stmt> checks;
  // (var, value) pairs bound before the checks and the statement that uses
  // `value`, in order: a value may read the vars bound before it, the checks
  // and `value` any of them.
  std::vector<std::pair<tir::Var, tir::Expr>> lets;
};

class ExprLowering {
 public:
  // `buffers` maps each materialized value the kernel reads to its global
  // input buffer (shape and strides of the node's layout); `env` gives the
  // sizes of symbolic dims (it must outlive this object).
  ExprLowering(const DimEnv& env, std::map<ValueId, tir::Buffer> buffers);

  // Makes `v` (e.g. a GEMM anchor, the accumulator) evaluate as `fn(coords)`
  // instead of being loaded or computed.
  using ValueFn = std::function<tir::Expr(const std::vector<tir::Expr>& coords)>;
  void bind(ValueId v, ValueFn fn);

  // The element of `v` at `coords` (one per dim of v's shape), of v's
  // dtype. Every load is masked by `mask` (undefined: unmasked). Throws
  // InternalError for a value that is neither bound, read nor computable
  // (a Parameter without a buffer, a Matmul).
  LoweredExpr lower(ValueId v, const std::vector<tir::Expr>& coords,
                    const tir::Expr& mask = {}) const;

  // `v` converted to `dtype` as an operand would be: cast when needed (a
  // Scalar becomes the constant directly).
  LoweredExpr lower_as(ValueId v, const std::vector<tir::Expr>& coords, DType dtype,
                       const tir::Expr& mask = {}) const;

 private:
  class Impl;
  const DimEnv& env_;
  const Graph& graph_;
  std::map<ValueId, tir::Buffer> buffers_;
  std::map<ValueId, ValueFn> bound_;
};

// The opmath type elementwise math of compute dtype `dt` runs in (see above).
DType opmath_dtype(DType dt);

// The index dtype for coordinates of a dim of `size` elements: i32 when
// every coordinate and size fits, else i64.
DType index_dtype(int64_t size);

// "`x`" for a named value, else "the result of <op>" (run-time messages).
std::string describe_value(const Graph& graph, ValueId v);

}  // namespace tilefuse
