// Gather (index) and the matrix products (matmul, addmm).
#include <string>

#include "graph/graph.h"
#include "graph/graph_internal.h"

namespace tilefuse {

using graph_internal::type_string;

namespace {

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

[[noreturn]] void throw_k_mismatch(std::string_view op, const Node& a, const Node& b, int64_t ka,
                                   int64_t kb, SourceLoc loc) {
  throw UserError(std::string(op) + " shapes do not match: " + type_string(a) + " @ " +
                      type_string(b) + " (" + std::to_string(ka) + " != " + std::to_string(kb) +
                      ")",
                  loc);
}

}  // namespace

ValueId Graph::index(ValueId xv, int64_t dim, ValueId iv, SourceLoc loc) {
  TF_CHECK(xv >= 0 && xv < size() && iv >= 0 && iv < size(), "index: invalid value");
  const Node& x = nodes_[xv];
  const Node& idx = nodes_[iv];
  if (x.shape.empty()) {
    throw UserError("cannot index a 0-dim tensor (" + type_string(x) + ")", loc);
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
  // out.shape = x.shape[:dim] + idx.shape + x.shape[dim+1:]
  n.shape.assign(x.shape.begin(), x.shape.begin() + d);
  n.shape.insert(n.shape.end(), idx.shape.begin(), idx.shape.end());
  n.shape.insert(n.shape.end(), x.shape.begin() + d + 1, x.shape.end());
  return add(std::move(n));
}

ValueId Graph::matmul(ValueId av, ValueId bv, SourceLoc loc) {
  TF_CHECK(av >= 0 && av < size() && bv >= 0 && bv < size(), "matmul: invalid value");
  const Node& a = nodes_[av];
  const Node& b = nodes_[bv];
  if (a.shape.empty() || b.shape.empty()) {
    throw UserError("matmul operands must have at least 1 dimension, got " + type_string(a) +
                        " @ " + type_string(b),
                    loc);
  }
  check_matmul_dtypes("matmul", a, b, loc);
  // torch.matmul: a 1-D `a` is a row [1, k] and a 1-D `b` a column [k, 1],
  // their unit dim removed from the result; dims before the last two are
  // batch dims and broadcast.
  const size_t na = a.shape.size(), nb = b.shape.size();
  const int64_t ka = a.shape[na - 1];
  const int64_t kb = nb == 1 ? b.shape[0] : b.shape[nb - 2];
  if (ka != kb) throw_k_mismatch("matmul", a, b, ka, kb, loc);
  const Shape batch_a(a.shape.begin(), a.shape.end() - std::min<size_t>(na, 2));
  const Shape batch_b(b.shape.begin(), b.shape.end() - std::min<size_t>(nb, 2));
  auto batch = broadcast_shapes(batch_a, batch_b);
  if (!batch) {
    throw UserError("matmul batch dimensions do not broadcast: " + type_string(a) + " @ " +
                        type_string(b) + " (batch shapes " + shape_to_string(batch_a) + " and " +
                        shape_to_string(batch_b) + ")",
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
                        " matrix must be 2-D, got " + type_string(bad),
                    loc);
  }
  check_matmul_dtypes("addmm", a, b, loc);
  if (bias.dtype != a.dtype) {
    throw UserError(
        "addmm bias must have the matrices' dtype " + dt(a.dtype) + ", got " + dt(bias.dtype), loc);
  }
  if (a.shape[1] != b.shape[0]) throw_k_mismatch("addmm", a, b, a.shape[1], b.shape[0], loc);
  const Shape out = {a.shape[0], b.shape[1]};
  // The bias is expanded to [M, N] (expand_size), so broadcasting must not grow it.
  const auto bc = broadcast_shapes(bias.shape, out);
  if (!bc || *bc != out) {
    throw UserError("addmm bias " + type_string(bias) +
                        " cannot be broadcast to the result shape " + shape_to_string(out),
                    loc);
  }
  Node n;
  n.kind = OpKind::Addmm;
  n.inputs = {biasv, av, bv};
  n.loc = loc;
  n.dtype = a.dtype;
  n.shape = out;
  n.alpha = alpha;
  n.beta = beta;
  return add(std::move(n));
}

}  // namespace tilefuse
