// View builders: slice, permute/transpose, expand, select.
//
// A view aliases its input's storage: its strides and offset are derived from
// the input's (which are relative to the input's storage_root), and it shares
// that root. The geometry is ATen's (TensorShape.cpp, ExpandUtils.cpp).
#include <limits>
#include <string>

#include "graph/graph.h"
#include "graph/graph_internal.h"

namespace tilefuse {

using graph_internal::type_string;
using graph_internal::symbol_name;
using graph_internal::wrap_dim;

namespace {

std::string list_string(const std::vector<int64_t>& v) {
  return shape_to_string(v);
}

// A view node over `x`, with x's layout as the starting point.
Node view_of(const Node& x, ValueId xv, OpKind kind, SourceLoc loc) {
  Node n;
  n.kind = kind;
  n.inputs = {xv};
  n.loc = loc;
  n.dtype = x.dtype;
  n.shape = x.shape;
  n.dim_symbols = x.dim_symbols;
  n.strides = x.strides;
  n.offset = x.offset;
  n.storage_root = x.storage_root;
  return n;
}

// a + b * c, saturating at INT64_MAX. Only a generic graph's placeholder
// sizes (graph.h) make a stride or an offset that large; the lowering does
// not read a view's numeric strides or offset (it builds its own from the
// symbols), and a bound graph's tensors stay below 2^40 elements.
int64_t saturating_madd(int64_t a, int64_t b, int64_t c) {
  int64_t r = 0;
  if (__builtin_mul_overflow(b, c, &r) || __builtin_add_overflow(a, r, &r))
    return std::numeric_limits<int64_t>::max();
  return r;
}

}  // namespace

ValueId Graph::slice(ValueId xv, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step, SourceLoc loc) {
  TF_CHECK(xv >= 0 && xv < size(), "slice: invalid value");
  const Node& x = nodes_[xv];
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(x.shape.size()), "slice", loc);
  // Python rejects a zero step; ATen rejects negative ones ("slice step must be positive").
  if (step == 0) throw UserError("slice step cannot be zero", loc);
  if (step < 0) {
    throw UserError("slice step must be positive, got " + std::to_string(step), loc);
  }
  // Python slice bounds: a negative bound counts from the end (once), then
  // both are clamped to [0, size]; an end before the start gives size 0.
  const int64_t size = x.shape[d];
  // Along a symbolic dim only the whole dim keeps a symbolic size; any other
  // bound would make the size an expression of the symbol (graph.h).
  if (x.symbol(d) != kFixedDim &&
      ((start && *start != 0) || end || step != 1))
    throw UserError("slicing along the symbolic dim `" + symbol_name(*this, x.symbol(d)) + "` of " +
                        type_string(*this, x) +
                        " is not supported (its size would depend on `" +
                        symbol_name(*this, x.symbol(d)) +
                        "`); slice a fixed dim, or give the dim a fixed size",
                    loc);
  auto resolve = [size](int64_t v) {
    if (v < 0) v = v < -size ? 0 : v + size;
    return v > size ? size : v;
  };
  const int64_t s = start ? resolve(*start) : 0;
  int64_t e = end ? resolve(*end) : size;
  if (e < s) e = s;
  Node n = view_of(x, xv, OpKind::Slice, loc);
  const int64_t len = (e - s) / step + ((e - s) % step != 0 ? 1 : 0);  // ceil, no overflow
  n.shape[d] = len;
  // A dim of size <= 1 never uses its stride; a huge step there must not overflow.
  if (__builtin_mul_overflow(x.strides[d], step, &n.strides[d])) n.strides[d] = x.strides[d];
  n.offset = saturating_madd(x.offset, s, x.strides[d]);
  n.dim = d;
  n.start = s;
  n.end = e;
  n.step = step;
  return add(std::move(n));
}

ValueId Graph::permute(ValueId xv, const std::vector<int64_t>& perm, SourceLoc loc) {
  TF_CHECK(xv >= 0 && xv < size(), "permute: invalid value");
  const Node& x = nodes_[xv];
  const auto ndim = static_cast<int64_t>(x.shape.size());
  if (static_cast<int64_t>(perm.size()) != ndim) {
 throw UserError("permute of " + type_string(*this, x) + " needs " + std::to_string(ndim) +
                        " dims, got " + list_string(perm),
                    loc);
  }
  std::vector<int64_t> wrapped(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    wrapped[i] = wrap_dim(perm[i], ndim, "permute", loc);
    if (seen[wrapped[i]]) {
      throw UserError("permute dims " + list_string(perm) + " are not a permutation (dim " +
                          std::to_string(wrapped[i]) + " repeats)",
                      loc);
    }
    seen[wrapped[i]] = true;
  }
  Node n = view_of(x, xv, OpKind::Permute, loc);
  for (size_t i = 0; i < perm.size(); ++i) {
    n.shape[i] = x.shape[wrapped[i]];
    n.strides[i] = x.strides[wrapped[i]];
    if (!x.dim_symbols.empty()) n.dim_symbols[i] = x.dim_symbols[wrapped[i]];
  }
  n.perm = std::move(wrapped);
  return add(std::move(n));
}

ValueId Graph::transpose(ValueId xv, int64_t dim0, int64_t dim1, SourceLoc loc) {
  TF_CHECK(xv >= 0 && xv < size(), "transpose: invalid value");
  const auto ndim = static_cast<int64_t>(nodes_[xv].shape.size());
  // transpose wraps dims like a 1-D tensor's on a 0-dim one (and is then a no-op).
  const int64_t d0 = wrap_dim(dim0, ndim, "transpose", loc, /*scalar_ok=*/true);
  const int64_t d1 = wrap_dim(dim1, ndim, "transpose", loc, /*scalar_ok=*/true);
  std::vector<int64_t> perm(static_cast<size_t>(ndim));
  for (int64_t i = 0; i < ndim; ++i) perm[i] = i;
  if (ndim > 0) std::swap(perm[d0], perm[d1]);
  return permute(xv, perm, loc);
}

ValueId Graph::expand(ValueId xv, const std::vector<int64_t>& sizes, SourceLoc loc) {
  TF_CHECK(xv >= 0 && xv < size(), "expand: invalid value");
  const Node& x = nodes_[xv];
  const auto ndim = static_cast<int64_t>(x.shape.size());
  const auto k = static_cast<int64_t>(sizes.size());
  const std::string what = "cannot expand " + type_string(*this, x) + " to " + list_string(sizes);
  if (k < ndim) {
    throw UserError(what + ": the number of sizes must be at least the tensor's " +
                        std::to_string(ndim) + " dims",
                    loc);
  }
  // inferExpandGeometry: right-aligned; -1 keeps an existing size; only a
  // size-1 dim may change, and it gets stride 0. A new leading dim of size 1
  // gets the stride a contiguous layout would give it; other new ones stride 0.
  Node n = view_of(x, xv, OpKind::Expand, loc);
  n.shape.assign(k, 0);
  if (!x.dim_symbols.empty()) n.dim_symbols.assign(k, kFixedDim);
  for (int64_t i = k - 1; i >= 0; --i) {
    const int64_t d = i - (k - ndim);
    int64_t target = sizes[i];
    if (d < 0 && target < 0) {
      throw UserError(what + ": size " + std::to_string(target) +
                          " is not allowed in a new leading dimension " + std::to_string(i),
                      loc);
    }
    // A symbolic dim is kept with -1: a number there would hold for one
    // value of the symbol only.
    if (d >= 0 && x.symbol(d) != kFixedDim) {
      if (target != -1)
        throw UserError(what + ": dimension " + std::to_string(i) + " is the symbolic dim `" +
                            symbol_name(*this, x.symbol(d)) + "`; keep it with -1",
                        loc);
      n.dim_symbols[i] = x.symbol(d);
    }
    if (d >= 0 && target == -1) target = x.shape[d];
    if (target < 0) {
      throw UserError(what + ": size " + std::to_string(target) + " is negative", loc);
    }
    if (d >= 0 && target != x.shape[d] && x.shape[d] != 1) {
      throw UserError(what + ": the expanded size " + std::to_string(target) +
                          " must match the existing size " + std::to_string(x.shape[d]) +
                          " at non-singleton dimension " + std::to_string(i),
                      loc);
    }
    n.shape[i] = target;
  }
  // Strides multiply sizes: reject a too-large shape before computing them.
  n.strides.assign(k, 0);
  graph_internal::check_size(*this, n);
  for (int64_t i = k - 1; i >= 0; --i) {
    const int64_t d = i - (k - ndim);
    if (d >= 0) {
      n.strides[i] = n.shape[i] == x.shape[d] ? x.strides[d] : 0;
    } else {
      n.strides[i] = n.shape[i] != 1
                         ? 0
                         : (i + 1 < k ? saturating_madd(0, n.shape[i + 1], n.strides[i + 1]) : 1);
    }
  }
  return add(std::move(n));
}

ValueId Graph::select(ValueId xv, int64_t dim, int64_t index, SourceLoc loc) {
  TF_CHECK(xv >= 0 && xv < size(), "select: invalid value");
  const Node& x = nodes_[xv];
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(x.shape.size()), "select", loc);
  const int64_t size = x.shape[d];
  if (x.symbol(d) != kFixedDim)
    throw UserError("selecting along the symbolic dim `" + symbol_name(*this, x.symbol(d)) +
                        "` of " + type_string(*this, x) +
                        " is not supported (whether the index is in range would depend on it)",
                    loc);
  // The index is a literal, so an out-of-range one is caught here, not at run time.
  if (index < -size || index >= size) {
    throw UserError("index " + std::to_string(index) + " is out of bounds for dimension " +
                        std::to_string(d) + " with size " + std::to_string(size),
                    loc);
  }
  const int64_t i = index < 0 ? index + size : index;
  Node n = view_of(x, xv, OpKind::Select, loc);
  n.offset = saturating_madd(x.offset, i, x.strides[d]);
  n.shape.erase(n.shape.begin() + d);
  if (!n.dim_symbols.empty()) n.dim_symbols.erase(n.dim_symbols.begin() + d);
  n.strides.erase(n.strides.begin() + d);
  n.dim = d;
  n.start = i;
  return add(std::move(n));
}

}  // namespace tilefuse
