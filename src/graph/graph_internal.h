// Helpers shared by the graph's source files (not part of the public API).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace tilefuse::graph_internal {

// "f16[2048, 2048]" ("f16[T, 4096]" with a symbolic dim): how messages and
// the printer name a value's type.
std::string type_string(const Graph& g, const Node& n);

// PyTorch's maybe_wrap_dim: `dim` in [-ndim, ndim) wraps once to [0, ndim);
// anything else is a UserError naming `op`. A 0-dim tensor accepts dims 0 and
// -1 only where `scalar_ok` (as transpose does; slice/select/index do not).
int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op, SourceLoc loc,
                 bool scalar_ok = false);

// Throws UserError (at n.loc) when n's shape exceeds kMaxNumel elements,
// counting size-0 dims as 1 (so strides and offsets stay below it as well).
void check_size(const Graph& g, const Node& n);

// Symbolic dims (graph.h): the symbols of a broadcast of a and b
// (right-aligned, PyTorch rules), or a UserError naming both operands, the
// dim and the symbols when the broadcast holds only for some values of
// them: a symbolic dim against a fixed size other than 1, or two different
// symbols. Empty when neither has a symbolic dim. `op` names the operation.
std::vector<SymbolId> broadcast_symbols(const Graph& g, std::string_view op, const Node& a,
                                        const Node& b, SourceLoc loc);
// The name of symbol s ("T"); "" for kFixedDim.
std::string symbol_name(const Graph& g, SymbolId s);

// Shortest text that reads back as the same double ("0.5", "3", "1e+20",
// "inf", "nan").
std::string format_number(double v);

// PyTorch's default dtype for a Python number of `literal_kind`'s category:
// bool, i64 (int) or f32 (float: torch.get_default_dtype()).
DType wrapped_number_dtype(DType literal_kind);

// One operand of torch.result_type: its dtype and its priority group. A
// dimensioned tensor outranks a zero-dim tensor, which outranks a wrapped
// number (a Python scalar), unless the lower group has a higher category.
enum class PromotionGroup { Dimensioned, ZeroDim, Wrapped };
struct PromotionOperand {
  DType dtype;
  PromotionGroup group;
};
PromotionOperand promotion_operand(const Node& n);
DType result_type_of(const std::vector<PromotionOperand>& operands, SourceLoc loc);

}  // namespace tilefuse::graph_internal
