// What compiled kernels are specialized on, and how lowering turns a graph's
// symbolic dims (graph.h, "Symbolic dims") and its parameters' layouts into
// Tile IR.
//
// A kernel is specialized on what changes the code worth changing it for,
// and takes everything else as arguments (Triton's and Inductor's rule):
//  - per symbol: whether its value is a multiple of 16 (a promise to
//    axis_info, the attribute `<symbol>_divisibility = 16`, so copies keep
//    their vector width);
//  - the index width: with `index64` false the runtime has checked that
//    every offset into every tensor the kernels touch is below 2^31, so
//    index math over symbolic dims and run-time strides is i32; with it,
//    such math is i64 (ir.h, "Offsets"). A fixed dim keeps the exact rule
//    of its constant sizes either way;
//  - per parameter: its layout (strides known at compile time, or passed
//    at run time) and the alignment of its base address.
// The symbols' values themselves are kernel arguments: scalar params named
// after the symbols (`T`, `N`), i32 or i64 with the index width, in graph
// order, after the global buffers; then the run-time strides of the
// parameters that have them, `<param>_stride<d>` (LoweredKernel::scalars
// says which is which).
//
// The Graph lowered is built at *some* binding of the symbols (any: the
// kernels do not depend on it); only `size_hints` choose the heuristic tile
// configs, so two bindings in one size bucket give identical kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tir/ir.h"

namespace tilefuse {

// A parameter's layout as the kernels read it.
struct ParamLayout {
  // A stride passed at run time (the scalar param `<param>_stride<d>`).
  static constexpr int64_t kRuntime = INT64_MIN;
  // Per dim, in elements: a stride known at compile time, or kRuntime. Empty:
  // contiguous (row-major over the parameter's shape, symbolic dims
  // included: the strides are products of its sizes).
  std::vector<int64_t> strides;
  // Per dim, for kRuntime entries: the stride is a multiple of 16 elements.
  std::vector<bool> stride_divisible_by_16;
  // Bytes the base address is a multiple of: a power of two from the
  // element size up to 16.
  int alignment = 16;

  bool operator==(const ParamLayout&) const = default;
};

struct Specialization {
  // Per symbol (graph order): its value is a multiple of 16.
  std::vector<bool> divisible_by_16;
  // Index math over symbolic dims and run-time strides is i64 (see above).
  bool index64 = false;
  // Per parameter (declaration order); empty: every parameter contiguous and
  // 16-byte aligned (the tensors the CLI makes).
  std::vector<ParamLayout> params;
  // Per symbol: the size the heuristic configs are chosen for (a size
  // bucket's); empty: the values in the graph.
  std::vector<int64_t> size_hints;

  bool operator==(const Specialization&) const = default;
  // A canonical one-line text (cache keys, explain): e.g.
  // "T%16 N i32 x:c/16 w:[1,?16]/8" — `S%16` a symbol divisible by 16,
  // i32/i64 the index width, per parameter `c` (contiguous) or its strides
  // (`?` run time, `?16` run time and a multiple of 16) and its alignment.
  // Hints are not part of it.
  std::string key(const Graph& graph) const;
};

// Lowering's view of a graph under a Specialization: the kernel vars of the
// symbols, sizes and strides as index expressions, and the index-width
// decisions of ir.h's "Offsets" rule made on expressions (a fixed size is
// its value; a symbol or run-time stride is below 2^31 with i32 indexing —
// the runtime checked it — and may reach it with i64).
class DimEnv {
 public:
  DimEnv(const Graph& graph, const Specialization& spec);

  const Graph& graph() const { return graph_; }
  const Specialization& spec() const { return spec_; }
  bool has_symbols() const { return !symbol_vars_.empty(); }
  // The dtype of symbol vars and run-time strides: i64 with index64, else i32.
  DType symbol_dtype() const;
  // Symbol s's kernel var.
  const tir::Var& symbol_var(SymbolId s) const { return symbol_vars_.at(static_cast<size_t>(s)); }
  const std::vector<tir::Var>& symbol_vars() const { return symbol_vars_; }

  // The size of dim d of n: a constant of the narrowest index dtype that
  // holds it, or the symbol's var.
  tir::Expr size(const Node& n, size_t d) const;
  tir::Expr size(int64_t value, SymbolId s) const;
  // Sizes of dims [begin, end) multiplied (1 for none), in the dtype that
  // holds the product (index_dtype_of).
  tir::Expr product(const Node& n, size_t begin, size_t end) const;
  // Row-major strides over n's shape (products of the sizes after each dim).
  std::vector<tir::Expr> contiguous_strides(const Node& n) const;

  // An upper bound of an index expression's magnitude: a constant is its
  // value, a symbol var or run-time stride is 1 with i32 indexing (the runtime
  // keeps whole tensors below 2^31) and 2^31 with i64, sums and products
  // combine (saturating); anything else 2^31.
  int64_t bound(const tir::Expr& e) const;
  // i32 when every value of `e` (and e itself) fits, else i64.
  DType index_dtype_of(const tir::Expr& e) const;
  // Whether coordinate * stride may reach 2^31 along a dim of `size`.
  bool needs_i64(const tir::Expr& size, const tir::Expr& stride) const;
  // e converted to dt (unchanged when it already is).
  static tir::Expr as(DType dt, const tir::Expr& e);

  // The run-time stride var of dim d of parameter `param` (creating it on
  // first use), `<name>_stride<d>`.
  tir::Var stride_var(ValueId param, size_t d) const;
  // The parameter's strides as the kernels see them (ParamLayout).
  std::vector<tir::Expr> param_strides(ValueId param) const;
  int param_alignment(ValueId param) const;
  // The size a heuristic takes for a dim: its hint when symbolic.
  int64_t hint(int64_t value, SymbolId s) const;
  // Whether a dim's size is known to be a multiple of 16.
  bool divisible_by_16(int64_t value, SymbolId s) const;

 private:
  const Graph& graph_;
  Specialization spec_;
  std::vector<tir::Var> symbol_vars_;
  mutable std::vector<std::vector<tir::Var>> stride_vars_;  // per parameter position, per dim
  size_t param_position(ValueId param) const;
};

}  // namespace tilefuse
