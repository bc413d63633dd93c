// Gather (index) and the matrix products (matmul, addmm).
#include <string>

#include "graph/graph.h"
#include "graph/graph_internal.h"

namespace tilefuse {

using graph_internal::type_string;

namespace {

// Dims [begin, end) of `n` (their sizes and symbols) as a node of their own.
Node dims_node(const Node& n, size_t begin, size_t end) {
  Node part;
  part.dtype = n.dtype;
  part.shape.assign(n.shape.begin() + static_cast<std::ptrdiff_t>(begin),
                    n.shape.begin() + static_cast<std::ptrdiff_t>(end));
  for (size_t d = begin; d < end; ++d) part.dim_symbols.push_back(n.symbol(d));
  return part;
}

// Dims [begin, end) of `n` as text, a symbolic dim by its name ("[B]"),
// never by the generic graph's placeholder size.
std::string dims_string(const Graph& g, const Node& n, size_t begin, size_t end) {
  return symbolic_shape_string(g, dims_node(n, begin, end));
}

std::string dt(DType d) {
  return std::string(dtype_name(d));
}

// Matrix products multiply floating types only: integer GEMMs have no
// tensor-core path here, and PyTorch's CUDA matmul rejects them too.
void check_matmul_dtypes(std::string_view op, const Node& a, const Node& b, SourceLoc loc) {
  if (a.dtype != b.dtype) {
    throw UserError(std::string(op) + " operands must have the same dtype, got " + dt(a.dtype) +
                        " and " + dt(b.dtype),
                    loc);
  }
  if (!is_floating(a.dtype)) {
    throw UserError(std::string(op) + " of " + dt(a.dtype) +
                        " tensors is not supported; only floating-point matrices can be "
                        "multiplied (cast with .float())",
                    loc);
  }
}

[[noreturn]] void throw_k_mismatch(const Graph& g, std::string_view op, const Node& a,
                                   const Node& b, int64_t ka, int64_t kb, SourceLoc loc) {
  throw UserError(std::string(op) + " shapes do not match: " + type_string(g, a) + " @ " +
                      type_string(g, b) + " (" + std::to_string(ka) + " != " + std::to_string(kb) +
                      ")",
                  loc);
}

// The reduction dim K of a product: dim `da` of a and `db` of b must be one
// size for every binding: equal fixed sizes, or one symbol.
void check_k(const Graph& g, std::string_view op, const Node& a, size_t da, const Node& b,
             size_t db, SourceLoc loc) {
  const SymbolId sa = a.symbol(da), sb = b.symbol(db);
  if (sa == sb && (sa != kFixedDim || a.shape[da] == b.shape[db])) return;
  if (sa == kFixedDim && sb == kFixedDim) throw_k_mismatch(g, op, a, b, a.shape[da], b.shape[db], loc);
  auto dim = [&](const Node& n, size_t d) {
    return n.symbol(d) == kFixedDim ? std::to_string(n.shape[d])
                                    : "`" + graph_internal::symbol_name(g, n.symbol(d)) + "`";
  };
  throw UserError(std::string(op) + " shapes do not match for every size: " + type_string(g, a) +
                      " @ " + type_string(g, b) + " (" + dim(a, da) + " vs " + dim(b, db) +
                      "; the reduction dims must be the same fixed size or the same symbol)",
                  loc);
}

}  // namespace

ValueId Graph::index(ValueId xv, int64_t dim, ValueId iv, SourceLoc loc, bool wrap_negative) {
  TF_CHECK(xv >= 0 && xv < size() && iv >= 0 && iv < size(), "index: invalid value");
  const Node& x = nodes_[xv];
  const Node& idx = nodes_[iv];
  if (x.shape.empty()) {
    throw UserError("cannot index a 0-dim tensor (" + type_string(*this, x) + ")", loc);
  }
  if (idx.dtype == DType::Bool) {
    throw UserError("boolean mask indexing is not supported", loc);
  }
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64) {
    throw UserError("index tensors must be i32 or i64, got " + dt(idx.dtype), loc);
  }
  const int64_t d =
      graph_internal::wrap_dim(dim, static_cast<int64_t>(x.shape.size()), "index", loc);
  Node n;
  n.kind = OpKind::Index;
  n.inputs = {xv, iv};
  n.loc = loc;
  n.dtype = x.dtype;
  n.dim = d;
  n.index_wraps_negative = wrap_negative;
  // out.shape = x.shape[:dim] + idx.shape + x.shape[dim+1:]
  n.shape.assign(x.shape.begin(), x.shape.begin() + d);
  n.shape.insert(n.shape.end(), idx.shape.begin(), idx.shape.end());
  n.shape.insert(n.shape.end(), x.shape.begin() + d + 1, x.shape.end());
  if (x.has_symbolic_dim() || idx.has_symbolic_dim()) {
    for (int64_t i = 0; i < d; ++i) n.dim_symbols.push_back(x.symbol(i));
    for (size_t i = 0; i < idx.shape.size(); ++i) n.dim_symbols.push_back(idx.symbol(i));
    for (size_t i = d + 1; i < x.shape.size(); ++i) n.dim_symbols.push_back(x.symbol(i));
  }
  return add(std::move(n));
}

ValueId Graph::matmul(ValueId av, ValueId bv, SourceLoc loc) {
  TF_CHECK(av >= 0 && av < size() && bv >= 0 && bv < size(), "matmul: invalid value");
  const Node& a = nodes_[av];
  const Node& b = nodes_[bv];
  if (a.shape.empty() || b.shape.empty()) {
    throw UserError("matmul operands must have at least 1 dimension, got " + type_string(*this, a) +
                        " @ " + type_string(*this, b),
                    loc);
  }
  check_matmul_dtypes("matmul", a, b, loc);
  // torch.matmul: a 1-D `a` is a row [1, k] and a 1-D `b` a column [k, 1],
  // their unit dim removed from the result; dims before the last two are
  // batch dims and broadcast.
  const size_t na = a.shape.size(), nb = b.shape.size();
  check_k(*this, "matmul", a, na - 1, b, nb == 1 ? 0 : nb - 2, loc);
  const Shape batch_a(a.shape.begin(), a.shape.end() - std::min<size_t>(na, 2));
  const Shape batch_b(b.shape.begin(), b.shape.end() - std::min<size_t>(nb, 2));
  // The batch dims broadcast like elementwise operands (a symbolic one only
  // against 1: broadcast_symbols says which, by name, before the sizes are
  // compared at the generic graph's placeholder sizes).
  std::vector<SymbolId> batch_symbols = graph_internal::broadcast_symbols(
      *this, "matmul batch", dims_node(a, 0, batch_a.size()), dims_node(b, 0, batch_b.size()),
      loc);
  auto batch = broadcast_shapes(batch_a, batch_b);
  if (!batch) {
    throw UserError("matmul batch dimensions do not broadcast: " + type_string(*this, a) +
                        " @ " + type_string(*this, b) + " (batch shapes " +
                        dims_string(*this, a, 0, batch_a.size()) + " and " +
                        dims_string(*this, b, 0, batch_b.size()) + ")",
                    loc);
  }
  Node n;
  n.kind = OpKind::Matmul;
  n.inputs = {av, bv};
  n.loc = loc;
  n.dtype = a.dtype;
  n.shape = std::move(*batch);
  if (na >= 2) n.shape.push_back(a.shape[na - 2]);
  if (nb >= 2) n.shape.push_back(b.shape[nb - 1]);
  if (a.has_symbolic_dim() || b.has_symbolic_dim()) {
    // The batch dims' symbols, then M from a, N from b.
    std::vector<SymbolId> syms = std::move(batch_symbols);
    syms.resize(n.shape.size() - (na >= 2) - (nb >= 2), kFixedDim);
    if (na >= 2) syms.push_back(a.symbol(na - 2));
    if (nb >= 2) syms.push_back(b.symbol(nb - 1));
    n.dim_symbols = std::move(syms);
  }
  return add(std::move(n));
}

ValueId Graph::addmm(ValueId biasv, ValueId av, ValueId bv, double beta, double alpha,
                     SourceLoc loc) {
  TF_CHECK(biasv >= 0 && biasv < size() && av >= 0 && av < size() && bv >= 0 && bv < size(),
           "addmm: invalid value");
  const Node& bias = nodes_[biasv];
  const Node& a = nodes_[av];
  const Node& b = nodes_[bv];
  if (a.shape.size() != 2 || b.shape.size() != 2) {
    const Node& bad = a.shape.size() != 2 ? a : b;
    throw UserError(std::string("addmm's ") + (&bad == &a ? "first" : "second") +
                        " matrix must be 2-D, got " + type_string(*this, bad),
                    loc);
  }
  check_matmul_dtypes("addmm", a, b, loc);
  if (bias.dtype != a.dtype) {
    throw UserError(
        "addmm bias must have the matrices' dtype " + dt(a.dtype) + ", got " + dt(bias.dtype), loc);
  }
  check_k(*this, "addmm", a, 1, b, 0, loc);
  const Shape out = {a.shape[0], b.shape[1]};
  std::vector<SymbolId> out_symbols;
  if (a.has_symbolic_dim() || b.has_symbolic_dim() || bias.has_symbolic_dim()) {
    // The bias is expanded to [M, N]: each of its dims is 1 or the result's.
    out_symbols = {a.symbol(0), b.symbol(1)};
    Node result;
    result.shape = out;
    result.dim_symbols = out_symbols;
    const std::vector<SymbolId> merged =
        graph_internal::broadcast_symbols(*this, "addmm bias", bias, result, loc);
    if (merged.size() != 2 || merged != out_symbols)
      throw UserError("addmm bias " + type_string(*this, bias) +
                          " cannot be broadcast to the result shape " +
                          symbolic_shape_string(*this, result),
                      loc);
  }
  // The bias is expanded to [M, N] (expand_size), so broadcasting must not grow it.
  const auto bc = broadcast_shapes(bias.shape, out);
  if (!bc || *bc != out) {
    Node result;
    result.shape = out;
    result.dim_symbols = {a.symbol(0), b.symbol(1)};
    throw UserError("addmm bias " + type_string(*this, bias) +
                        " cannot be broadcast to the result shape " +
                        symbolic_shape_string(*this, result),
                    loc);
  }
  Node n;
  n.kind = OpKind::Addmm;
  n.inputs = {biasv, av, bv};
  n.loc = loc;
  n.dtype = a.dtype;
  n.shape = out;
  n.dim_symbols = std::move(out_symbols);
  n.alpha = alpha;
  n.beta = beta;
  return add(std::move(n));
}

}  // namespace tilefuse
