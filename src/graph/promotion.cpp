// Type promotion and broadcasting, following PyTorch.
//
// promote_types is c10::promoteTypes restricted to tilefuse's dtypes;
// result_type is ATen's ResultTypeState (aten/src/ATen/native/TypeProperties.cpp):
// operands are promoted within three priority groups (dimensioned tensors,
// zero-dim tensors, wrapped numbers) and the groups are then merged with
// combine_categories, so a lower group only matters when its category
// (bool < integral < floating) is higher.
#include <algorithm>
#include <string>

#include "graph/graph.h"
#include "graph/graph_internal.h"

namespace tilefuse {

using graph_internal::PromotionGroup;
using graph_internal::PromotionOperand;

namespace {

bool is_float8(DType dt) {
  return dt == DType::F8E4M3 || dt == DType::F8E5M2;
}

std::string pair_text(DType a, DType b) {
  return std::string(dtype_name(a)) + " and " + std::string(dtype_name(b));
}

// combine_categories(higher, lower) from TypeProperties.cpp (complex cases
// dropped): a floating higher group wins outright; a bool higher group, or a
// floating lower group, promotes normally; otherwise the higher group wins.
std::optional<DType> combine_categories(std::optional<DType> higher, std::optional<DType> lower,
                                        SourceLoc loc) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating(*higher)) return higher;
  if (*higher == DType::Bool || is_floating(*lower)) return promote_types(*higher, *lower, loc);
  return higher;
}

}  // namespace

DType promote_types(DType a, DType b, SourceLoc loc) {
  if (a == b) return a;
  // c10::promoteTypes rejects every float8 pairing before its lookup table.
  if (is_float8(a) || is_float8(b)) {
    throw UserError("promotion for float8 types is not supported: cannot combine " +
                        pair_text(a, b) + "; cast one operand with .to()",
                    loc);
  }
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const DTypeCategory ca = dtype_category(a), cb = dtype_category(b);
  if (ca != cb) return ca > cb ? a : b;  // integral with floating: the floating type
  if (ca == DTypeCategory::Floating) {
    // f16 and bf16 have no common 16-bit type; otherwise the wider type holds both.
    if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) {
      return DType::F32;
    }
    return dtype_size(a) >= dtype_size(b) ? a : b;
  }
  // Integral: u8 is the only unsigned type, so a signed type at least twice as
  // wide holds both. i8 with u8 needs int16, which tilefuse lacks.
  if ((a == DType::U8 && b == DType::I8) || (a == DType::I8 && b == DType::U8)) {
    throw UserError("type promotion of " + pair_text(a, b) +
                        " needs int16, which tilefuse does not support; cast one operand with "
                        ".to()",
                    loc);
  }
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

namespace graph_internal {

PromotionOperand promotion_operand(const Node& n) {
  if (n.is_wrapped_number()) return {n.dtype, PromotionGroup::Wrapped};
  if (n.shape.empty()) return {n.dtype, PromotionGroup::ZeroDim};
  return {n.dtype, PromotionGroup::Dimensioned};
}

DType result_type_of(const std::vector<PromotionOperand>& operands, SourceLoc loc) {
  TF_CHECK(!operands.empty(), "result_type of no operands");
  std::optional<DType> group[3];
  for (const PromotionOperand& op : operands) {
    std::optional<DType>& g = group[static_cast<int>(op.group)];
    // A wrapped float counts as the default dtype (f32); Scalar nodes already
    // carry it as their dtype, and callers pass bounds the same way.
    g = g ? promote_types(*g, op.dtype, loc) : op.dtype;
  }
  const auto zero_and_wrapped = combine_categories(group[1], group[2], loc);
  return *combine_categories(group[0], zero_and_wrapped, loc);
}

}  // namespace graph_internal

DType result_type(const Graph& g, const std::vector<ValueId>& values, SourceLoc loc) {
  std::vector<PromotionOperand> operands;
  operands.reserve(values.size());
  for (ValueId v : values) {
    TF_CHECK(v >= 0 && v < g.size(), "result_type: invalid value %" + std::to_string(v));
    operands.push_back(graph_internal::promotion_operand(g.node(v)));
  }
  return graph_internal::result_type_of(operands, loc);
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  // Align trailing dims; a missing or size-1 dim takes the other's size
  // (which may be 0: [1] with [0] gives [0]).
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace tilefuse
