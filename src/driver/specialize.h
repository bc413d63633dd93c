// From a call's arguments to the kernels that serve it: the values of the
// program's symbolic dims (graph.h, "Symbolic dims"), checked for
// consistency, and the Specialization the kernels are compiled for
// (lower/specialization.h).
//
// A program is compiled from its generic graph (parse_program without
// values) once per Specialization; a call binds the symbols from its
// inputs' shapes and passes them to the kernels as arguments, so a new size
// only compiles when it changes a fact the kernels depend on (a symbol's
// divisibility by 16, the index width, a layout, an alignment) or a size
// bucket's configs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "lower/specialization.h"

namespace tilefuse::driver {

// One tensor of a call as the runtime sees it.
struct ArgDesc {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<int64_t> strides;  // elements, one per dim
  // The address of its first element (for the alignment), or 0 for a host
  // tensor tilefuse allocated (16-byte aligned as far as kernels care).
  uint64_t address = 0;

  static ArgDesc of(const Tensor& t);
};

// The values of a graph's symbols, by SymbolId.
using Binding = std::vector<int64_t>;

// Binds `graph`'s symbols from the inputs (one per parameter, in order) and
// checks each input's dtype, rank and fixed dims. Throws UserError naming
// the parameter:
//   "input `x` must be f16, got f32"
//   "input `x` must have 2 dims (f16[T, 4096]), got 3"
//   "input `x`: dim 1 must be 4096, got 4095"
//   "symbolic dim `T` is 16 in `x` (dim 0) but 32 in `idx` (dim 0)"
// and "the program takes 3 inputs, got 2".
Binding bind_symbols(const Graph& graph, const std::vector<ArgDesc>& inputs);
// The count alone: UserError "the program takes 3 inputs, got 2" unless
// `count` is the number of `graph`'s parameters.
void check_input_count(const Graph& graph, size_t count);
Binding bind_symbols(const Graph& graph, const std::vector<Tensor>& inputs);

// The binding as names -> values (for parse_program), and back (a
// UserError for a missing symbol: "the program's symbolic dims T, N need
// sizes: --shape T=... N=...", `how` completing the sentence).
SymbolValues symbol_values(const Graph& graph, const Binding& binding);
Binding binding_of(const Graph& graph, const SymbolValues& values, const std::string& how);

// Node n's shape at `binding`.
Shape bound_shape(const Node& n, const Binding& binding);
// "T=2048, N=64" (empty for a graph without symbols).
std::string binding_string(const Graph& graph, const Binding& binding);

// The size bucket of a symbol's value: the next power of two (0 and 1 are
// their own). Tuning is kept per bucket; the heuristic configs see the
// bucket, not the value.
int64_t size_bucket(int64_t value);

// How far every offset into a tensor of `shape` and `strides` (elements)
// reaches, counting a tile's overhang of up to 256 elements past each dim:
// sum((size + 256) * |stride|). Below 2^31 for every tensor a program
// touches, its kernels index in i32 (Specialization::index64 false).
int64_t offset_reach(const Shape& shape, const std::vector<int64_t>& strides);

// The Specialization for a call with `inputs` at `binding`:
//  - divisible_by_16 per symbol, size_hints its bucket;
//  - index64 unless every value of the graph (at its bound shape,
//    contiguous) and every input (its own strides) has offset_reach < 2^31;
//  - params: empty when every input is contiguous and 16-byte aligned (what
//    the CLI passes, so those kernels are shared); else per input either
//    contiguous or its strides, each a constant where the program has no
//    symbol and `runtime_strides` does not name the dim (the layout is then
//    part of the specialization), else 0 and 1 as constants and any other
//    stride passed at run time (with whether it is a multiple of 16).
//    Size-1 dims count as contiguous whatever their stride. The alignment
//    is the largest power of two, up to 16, that divides the address;
//  - index64 as above wherever a symbol or a run-time stride is passed.
// `runtime_strides`: per parameter, per dim, whether a fixed program takes
// that dim's stride at run time (StridePolicy); null or short: none.
// Throws UserError for a negative stride or an address not aligned to its
// element size (naming the parameter).
Specialization specialize(const Graph& graph, const Binding& binding,
                          const std::vector<ArgDesc>& inputs,
                          const std::vector<std::vector<bool>>* runtime_strides = nullptr);

// Which strides of a fixed program's parameters are passed at run time
// rather than compiled in: torch.compile's "automatic dynamic" rule applied
// to layouts. A parameter's first non-contiguous layout is compiled as
// constants (the best code for a program called one way); a dim whose
// stride later differs from that first one is passed at run time from then
// on. So a caller that slices views of varying pitch compiles a bounded
// number of programs, not one per pitch (3,000 pitches were 3,000
// compiles): per dim that changes, the run-time stride with and without
// the promise that it is a multiple of 16 (`?`, `?16`), times what else the
// key holds (the base address's alignment, which dims have stride 0 or 1).
// Strides of 0 and 1 stay constants either way (specialize()). Programs
// with symbols already pass their strides at run time; for them observe()
// changes nothing.
class StridePolicy {
 public:
  // Records the call's inputs (one per parameter of `graph`, bound: ranks
  // checked, and accepted by specialize(): a call refused there must not
  // count as a layout seen) and marks the dims whose stride differs from the
  // first non-contiguous layout seen for that parameter. Returns whether
  // anything changed (then the call's Specialization must be made again).
  bool observe(const Graph& graph, const std::vector<ArgDesc>& inputs);
  // Per parameter, per dim: passed at run time (specialize's argument).
  const std::vector<std::vector<bool>>& runtime_strides() const { return runtime_; }
  // The call's Specialization under this policy after observing its
  // inputs: specialize() first (its UserError leaves the policy as it was),
  // then observe(), then specialize() again when that changed anything.
  Specialization specialize_observed(const Graph& graph, const Binding& binding,
                                     const std::vector<ArgDesc>& inputs);

 private:
  std::vector<std::vector<int64_t>> first_;  // per parameter; empty: none seen
  std::vector<std::vector<bool>> runtime_;
};

}  // namespace tilefuse::driver
