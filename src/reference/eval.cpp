// The reference evaluator: walks the graph in order, one Tensor per value.
//
// Rounding (EvalMode::kEager, PyTorch eager on CUDA/CPU):
// - every non-view node allocates a fresh contiguous tensor of its dtype and
//   rounds each element into it once;
// - an element-wise op first converts each tensor operand whose dtype
//   differs from the op's dtype to that dtype (as TensorIterator does: an i32
//   operand of an f16 op is rounded to f16), then computes in the opmath type
//   (float for f8/f16/bf16/f32, double for f64, int64 for integers/bools);
//   the op's dtype is Node::compute_dtype (the node's dtype, except for
//   comparisons and logical_not, which compute in the operands' type);
// - a Python scalar (Scalar node) is converted straight to the opmath type,
//   never rounded to the op's dtype first: PyTorch's add/sub/mul/div and its
//   CUDA comparison kernels take the original scalar value in opmath
//   (`iter.original_scalar_value<opmath_t>`), so x_f16 * 0.1 multiplies by
//   0.1f, not by f16(0.1). The same goes for clamp bounds;
// - views (slice, permute, expand, select) alias their input's storage.
// EvalMode::kOracle computes every floating value in double with no rounding
// (floating tensors are f64), which is what the error of a result is
// measured against.
#include "reference/eval.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/memory.h"
#include "reference/element_access.h"
#include "reference/elementwise.h"
#include "reference/gather.h"
#include "reference/matmul.h"
#include "reference/strided.h"
#include "reference/thread_pool.h"

namespace tilefuse {
namespace {

// Writes literal `n` into the 0-d tensor `t`: an integer literal into an i64
// tensor from its exact value (Node::iscalar), anything else from its double.
void write_literal(const Node& n, Tensor& t) {
  if (!is_floating(n.dtype) && t.dtype() == DType::I64)
    reference::writer<int64_t>(t.dtype())(t.data_ptr(), n.iscalar);
  else
    reference::writer<double>(t.dtype())(t.data_ptr(), n.scalar);
}

using reference::Compute;
using reference::ThreadPool;

std::string type_string(DType dt, const Shape& shape) {
  return std::string(dtype_name(dt)) + shape_to_string(shape);
}

// A view of `in` with explicit geometry (offsets are absolute, in elements).
Tensor view_of(const Node& n, const Tensor& in) {
  Shape shape = in.shape();
  std::vector<int64_t> strides = in.strides();
  int64_t offset = in.offset();
  switch (n.kind) {
    case OpKind::Slice: {
      const int64_t d = n.dim;
      shape[d] = n.shape[d];
      if (shape_numel(shape) > 0) offset += n.start * strides[d];
      // A dim of size <= 1 never uses its stride; a huge step there must not
      // overflow (as Graph::slice keeps it).
      if (__builtin_mul_overflow(strides[d], n.step, &strides[d])) strides[d] = in.strides()[d];
      break;
    }
    case OpKind::Permute:
      for (size_t i = 0; i < n.perm.size(); ++i) {
        shape[i] = in.size(n.perm[i]);
        strides[i] = in.strides()[n.perm[i]];
      }
      break;
    case OpKind::Expand: {
      const int64_t lead = static_cast<int64_t>(n.shape.size()) - in.dim();
      TF_CHECK(lead >= 0, "expand to fewer dims");
      shape = n.shape;
      strides.assign(n.shape.size(), 0);
      for (int64_t d = 0; d < in.dim(); ++d)
        if (in.size(d) == n.shape[lead + d]) strides[lead + d] = in.strides()[d];
      break;
    }
    case OpKind::Select: {
      const int64_t d = n.dim;
      const int64_t index = n.start < 0 ? n.start + in.size(d) : n.start;
      offset += index * strides[d];
      shape.erase(shape.begin() + d);
      strides.erase(strides.begin() + d);
      break;
    }
    default:
      throw InternalError("view_of: not a view op");
  }
  TF_CHECK(shape == n.shape, "view shape " + shape_to_string(shape) + " differs from the node's " +
                                 shape_to_string(n.shape));
  return in.as_strided(shape, strides, offset);
}

// A [batch..., rows, cols] view of a matmul operand; a 1-D lhs is one row,
// a 1-D rhs one column (torch.matmul's rules).
struct BatchedMatrix {
  Shape batch;
  std::vector<int64_t> batch_strides;
  reference::MatrixRef m;
};

BatchedMatrix batched(const Tensor& t, bool is_lhs) {
  BatchedMatrix b;
  b.m.data = t.data_ptr();
  b.m.dtype = t.dtype();
  const int64_t r = t.dim();
  TF_CHECK(r >= 1, "matmul operand is 0-dim");
  if (r == 1) {
    if (is_lhs) {
      b.m.rows = 1;
      b.m.cols = t.size(0);
      b.m.col_stride = t.strides()[0];
    } else {
      b.m.rows = t.size(0);
      b.m.cols = 1;
      b.m.row_stride = t.strides()[0];
    }
    return b;
  }
  b.m.rows = t.size(r - 2);
  b.m.cols = t.size(r - 1);
  b.m.row_stride = t.strides()[r - 2];
  b.m.col_stride = t.strides()[r - 1];
  b.batch.assign(t.shape().begin(), t.shape().end() - 2);
  b.batch_strides.assign(t.strides().begin(), t.strides().end() - 2);
  return b;
}

// Byte offset of batch position `pos` (of the broadcast batch shape) in `b`.
int64_t batch_offset(const BatchedMatrix& b, const std::vector<int64_t>& pos) {
  const size_t lead = pos.size() - b.batch.size();
  int64_t off = 0;
  for (size_t d = 0; d < b.batch.size(); ++d)
    if (b.batch[d] != 1) off += pos[lead + d] * b.batch_strides[d];
  return off * dtype_size(b.m.dtype);
}

// Runs `body` (a gather or its check) with the names an index error of
// Index node `n` gives, and rethrows its error at the gather's place in the
// program: "index 7 is out of bounds for dim 0 of `x` (size 5): `i`[0] = 7".
template <class Body>
void at_gather(const Graph& g, const Node& n, Body body) {
  const Node& idx_node = g.node(n.inputs[1]);
  std::string idx_name = describe_value(idx_node);
  if (idx_node.name.empty()) idx_name = "(" + idx_name + ")";
  // A symbolic dim indexed by an index of 2 dims or more is named by its
  // symbol, as the compiled kernels name it (lower/expr_lowering.cpp).
  const Node& x_node = g.node(n.inputs[0]);
  const SymbolId sym = x_node.symbol(n.dim);
  const std::string size_name =
      sym != kFixedDim && idx_node.shape.size() > 1 ? g.symbols()[sym].name : std::string();
  try {
    body(reference::GatherNames{describe_value(x_node), idx_name, size_name});
  } catch (const UserError& e) {
    if (e.loc().valid()) throw;
    throw UserError(ErrorKind::kIndex,
                    std::string(e.what()) + (n.index_wraps_negative ? "" : Graph::kNoWrapNote),
                    n.loc);
  }
}

class Evaluator {
 public:
  Evaluator(const Graph& g, EvalMode mode, ThreadPool& pool) : g_(g), mode_(mode), pool_(pool) {}

  std::vector<Tensor> run(const std::vector<Tensor>& params);
  // Evaluates only what `values` need (their ancestors) and returns them.
  std::vector<Tensor> run_values(const std::vector<Tensor>& params,
                                 const std::vector<ValueId>& values);

 private:
  Tensor eval_node(const Node& n);
  Tensor eval_matmul(const Node& n);

  // The dtype a node's tensor has: its own, except f64 for floating values
  // in oracle mode.
  DType value_dtype(DType dt) const {
    return mode_ == EvalMode::kOracle && is_floating(dt) ? DType::F64 : dt;
  }
  Compute compute_for(DType op_dtype) const {
    if (!is_floating(op_dtype)) return Compute::kInt64;
    if (mode_ == EvalMode::kOracle || op_dtype == DType::F64) return Compute::kDouble;
    return Compute::kFloat;
  }
  Tensor fresh(const Node& n) const { return Tensor::empty(value_dtype(n.dtype), n.shape); }
  // Value `v` as an operand of an op of dtype `op_dtype` computing in
  // `compute` (see the rounding notes at the top of the file).
  Tensor operand(ValueId v, DType op_dtype, Compute compute);
  // Value `v` as a tensor holding its exact value (a scalar's literal).
  Tensor exact_tensor(ValueId v) const;

  const Graph& g_;
  EvalMode mode_;
  ThreadPool& pool_;
  std::vector<Tensor> values_;
};

Tensor Evaluator::operand(ValueId v, DType op_dtype, Compute compute) {
  const Node& n = g_.node(v);
  if (n.kind == OpKind::Scalar) {
    DType native = DType::I64;
    switch (compute) {
      case Compute::kFloat:
        native = DType::F32;
        break;
      case Compute::kDouble:
        native = DType::F64;
        break;
      case Compute::kInt64:
        native = DType::I64;
        break;
    }
    Tensor t = Tensor::empty(native, {});
    write_literal(n, t);
    return t;
  }
  const Tensor& t = values_[v];
  if (mode_ == EvalMode::kEager && t.dtype() != op_dtype) {
    Tensor converted = Tensor::empty(op_dtype, t.shape());
    reference::convert_kernel(t, converted, pool_);
    return converted;
  }
  return t;
}

Tensor Evaluator::exact_tensor(ValueId v) const {
  const Node& n = g_.node(v);
  if (n.kind != OpKind::Scalar) return values_[v];
  const DType dt = is_floating(n.dtype) ? DType::F64 : n.dtype;
  Tensor t = Tensor::empty(dt, {});
  write_literal(n, t);
  return t;
}

std::vector<Tensor> Evaluator::run(const std::vector<Tensor>& params) {
  return run_values(params, {});
}

std::vector<Tensor> Evaluator::run_values(const std::vector<Tensor>& params,
                                          const std::vector<ValueId>& wanted) {
  const std::vector<ValueId>& param_ids = g_.parameters();
  if (params.size() != param_ids.size())
    throw UserError("the program takes " + std::to_string(param_ids.size()) + " parameters, but " +
                    std::to_string(params.size()) + " were given");
  values_.assign(static_cast<size_t>(g_.size()), Tensor());
  for (size_t i = 0; i < param_ids.size(); ++i) {
    const Node& n = g_.node(param_ids[i]);
    const Tensor& t = params[i];
    if (!t.defined()) throw UserError("parameter `" + n.name + "` was not given a tensor");
    if (t.dtype() != n.dtype || t.shape() != n.shape)
      throw UserError("parameter `" + n.name + "` expects " + type_string(n.dtype, n.shape) +
                      ", but the given tensor is " + type_string(t.dtype(), t.shape()));
    values_[param_ids[i]] = t;
  }

  // A value is dropped after its last use so big intermediates do not pile
  // up (views keep their storage alive through shared ownership).
  // With `wanted`, only their ancestors are evaluated (inputs precede their
  // users: one backward sweep marks them).
  std::vector<bool> needed(static_cast<size_t>(g_.size()), wanted.empty());
  for (ValueId v : wanted) needed[v] = true;
  if (!wanted.empty())
    for (ValueId v = g_.size(); v-- > 0;)
      if (needed[v])
        for (ValueId in : g_.node(v).inputs) needed[in] = true;
  const std::vector<ValueId>& keep = wanted.empty() ? g_.outputs() : wanted;
  std::vector<int32_t> last_use(static_cast<size_t>(g_.size()), -1);
  for (ValueId v = 0; v < g_.size(); ++v)
    if (needed[v])
      for (ValueId in : g_.node(v).inputs) last_use[in] = std::max(last_use[in], v);
  for (ValueId out : keep) last_use[out] = std::numeric_limits<int32_t>::max();

  for (ValueId v = 0; v < g_.size(); ++v) {
    if (!needed[v]) continue;
    const Node& n = g_.node(v);
    const AllocationPurpose purpose("%" + std::to_string(v) + " (" +
                                    std::string(op_kind_name(n.kind)) +
                                    ") in the reference evaluator");
    if (n.kind != OpKind::Parameter) values_[v] = eval_node(n);
    for (ValueId in : n.inputs)
      if (last_use[in] == v) values_[in] = Tensor();
  }

  if (!wanted.empty()) {
    std::vector<Tensor> out;
    for (ValueId v : wanted) out.push_back(exact_tensor(v));
    return out;
  }
  std::vector<Tensor> outputs;
  for (ValueId v : g_.outputs()) {
    const Node& n = g_.node(v);
    const Tensor& t = values_[v];
    // Fresh results are returned as they are; parameters and views are
    // copied so the caller never gets an alias of an input or a strided view.
    const bool fresh_value = n.kind != OpKind::Parameter && !n.is_view();
    if (fresh_value && t.dtype() == value_dtype(n.dtype)) {
      outputs.push_back(t);
    } else if (t.dtype() == value_dtype(n.dtype)) {
      outputs.push_back(t.contiguous(/*force=*/true));  // the bytes, NaN payloads included
    } else {
      Tensor copy = Tensor::empty(value_dtype(n.dtype), n.shape);
      reference::convert_kernel(t, copy, pool_);
      outputs.push_back(copy);
    }
  }
  return outputs;
}

Tensor Evaluator::eval_node(const Node& n) {
  switch (n.kind) {
    case OpKind::Parameter:
      throw InternalError("eval_node: parameters are bound in run()");
    case OpKind::Scalar: {
      // Only read by consumers that need a tensor (an output, a view);
      // element-wise consumers use the literal itself (operand()).
      Tensor t = Tensor::empty(value_dtype(n.dtype), {});
      write_literal(n, t);
      return t;
    }
    case OpKind::Unary: {
      const DType op_dtype = n.compute_dtype;
      const Compute c = compute_for(op_dtype);
      Tensor out = fresh(n);
      reference::unary_kernel(n.unary, c, operand(n.inputs[0], op_dtype, c), out, pool_);
      return out;
    }
    case OpKind::Binary: {
      const DType op_dtype = n.compute_dtype;
      const Compute c = compute_for(op_dtype);
      Tensor out = fresh(n);
      reference::binary_kernel(n.binary, c, operand(n.inputs[0], op_dtype, c),
                               operand(n.inputs[1], op_dtype, c), out, pool_);
      return out;
    }
    case OpKind::Where: {
      const Compute c = compute_for(n.compute_dtype);
      Tensor out = fresh(n);
      reference::where_kernel(c, exact_tensor(n.inputs[0]),
                              operand(n.inputs[1], n.compute_dtype, c),
                              operand(n.inputs[2], n.compute_dtype, c), out, pool_);
      return out;
    }
    case OpKind::Clamp: {
      const Compute c = compute_for(n.compute_dtype);
      Tensor out = fresh(n);
      reference::clamp_kernel(c, operand(n.inputs[0], n.compute_dtype, c), n.clamp_min, n.clamp_max,
                              out, pool_);
      return out;
    }
    case OpKind::Cast: {
      Tensor out = fresh(n);
      reference::convert_kernel(exact_tensor(n.inputs[0]), out, pool_);
      return out;
    }
    case OpKind::Slice:
    case OpKind::Permute:
    case OpKind::Expand:
    case OpKind::Select:
      return view_of(n, values_[n.inputs[0]]);
    case OpKind::Index: {
      Tensor out = fresh(n);
      const Tensor& x = values_[n.inputs[0]];
      const Tensor idx = exact_tensor(n.inputs[1]);
      at_gather(g_, n, [&](const reference::GatherNames& names) {
        reference::gather(x, n.dim, idx, out, names, pool_, n.index_wraps_negative);
      });
      return out;
    }
    case OpKind::Matmul:
    case OpKind::Addmm:
      return eval_matmul(n);
  }
  throw InternalError("eval_node: unknown op kind");
}

Tensor Evaluator::eval_matmul(const Node& n) {
  const bool is_addmm = n.kind == OpKind::Addmm;
  const Tensor& a = values_[n.inputs[is_addmm ? 1 : 0]];
  const Tensor& b = values_[n.inputs[is_addmm ? 2 : 1]];
  Tensor out = fresh(n);

  reference::GemmOptions options;
  const bool f64_acc = mode_ == EvalMode::kOracle || n.dtype == DType::F64;
  options.accumulator =
      f64_acc ? reference::GemmAccumulator::kF64 : reference::GemmAccumulator::kF32;
  options.c_dtype = out.dtype();
  options.alpha = n.alpha;
  options.beta = n.beta;

  const BatchedMatrix lhs = batched(a, true);
  const BatchedMatrix rhs = batched(b, false);
  // The broadcast batch shape (right-aligned; sizes equal or 1).
  Shape batch(std::max(lhs.batch.size(), rhs.batch.size()), 1);
  for (const BatchedMatrix* op : {&lhs, &rhs}) {
    const size_t lead = batch.size() - op->batch.size();
    for (size_t d = 0; d < op->batch.size(); ++d)
      if (op->batch[d] != 1) batch[lead + d] = op->batch[d];
  }
  const int64_t m = lhs.m.rows, nn = rhs.m.cols;
  const int64_t batch_count = shape_numel(batch);
  TF_CHECK(lhs.m.cols == rhs.m.rows, "matmul: inner dims differ");
  TF_CHECK(batch_count * m * nn == out.numel(), "matmul: result size differs from the node's");
  // An empty result computes nothing, whatever its batch: a GEMM item per
  // batch would be 2^40 of them for an f32[2^40, 0, 0] (bmm of [2^40, 0, 1]
  // and [2^40, 1, 0], which the executor runs), an allocation no machine has.
  if (out.numel() == 0) return out;

  std::optional<reference::MatrixRef> bias;
  Tensor bias_tensor;
  if (is_addmm) {
    bias_tensor = operand(n.inputs[0], n.dtype,
                          f64_acc ? reference::Compute::kDouble : reference::Compute::kFloat);
    const int64_t r = bias_tensor.dim();
    TF_CHECK(r <= 2, "addmm: bias has more than 2 dims");
    reference::MatrixRef ref{bias_tensor.data_ptr(), bias_tensor.dtype(), m, nn, 0, 0};
    if (r >= 2 && bias_tensor.size(r - 2) != 1) ref.row_stride = bias_tensor.strides()[r - 2];
    if (r >= 1 && bias_tensor.size(r - 1) != 1) ref.col_stride = bias_tensor.strides()[r - 1];
    bias = ref;
  }

  std::vector<reference::GemmItem> items(static_cast<size_t>(batch_count));
  std::vector<int64_t> pos(batch.size());
  const int64_t c_bytes = m * nn * dtype_size(out.dtype());
  for (int64_t i = 0; i < batch_count; ++i) {
    int64_t rest = i;
    for (size_t d = batch.size(); d-- > 0;) {
      pos[d] = rest % batch[d];
      rest /= batch[d];
    }
    reference::GemmItem& item = items[i];
    item.a = lhs.m;
    item.a.data += batch_offset(lhs, pos);
    item.b = rhs.m;
    item.b.data += batch_offset(rhs, pos);
    item.c = out.data_ptr() + i * c_bytes;
    item.bias = bias;
  }
  reference::gemm(items, options, pool_);
  return out;
}

// Elements of `t` as doubles, row-major.
std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  const reference::StridedOperand op = reference::broadcast_operand(t, t.shape());
  const reference::ReadFn<double> read = reference::reader<double>(t.dtype());
  reference::for_each_element<1>(t.shape(), {&op}, 0, t.numel(),
                                 [&](int64_t i, const auto& p) { v[i] = read(p[0]); });
  return v;
}

}  // namespace

std::vector<Tensor> evaluate(const Graph& g, const std::vector<Tensor>& params,
                             const EvalOptions& options) {
  ThreadPool pool(options.num_threads);
  Evaluator evaluator(g, options.mode, pool);
  return evaluator.run(params);
}

double check_tolerance(DType dt) {
  switch (dt) {
    case DType::F16:
    case DType::BF16:
      return 1e-2;
    case DType::F8E4M3:  // unit roundoff 2^-4
    case DType::F8E5M2:  // 2^-3: one rounding alone is 3-5% in norm
      return 0.15;
    case DType::F32:
      return 1e-5;
    case DType::F64:
      return 1e-12;
    default:
      return 0.0;
  }
}

double check_tolerance(const Graph& graph, ValueId output, bool allow_tf32) {
  double tol = check_tolerance(graph.node(output).dtype);
  std::vector<ValueId> stack{output};
  std::vector<bool> seen(graph.nodes().size(), false);
  while (!stack.empty()) {
    const ValueId v = stack.back();
    stack.pop_back();
    if (seen[v]) continue;
    seen[v] = true;
    const Node& n = graph.node(v);
    if (n.kind != OpKind::Parameter && n.kind != OpKind::Scalar && !n.is_view())
      tol = std::max(tol, check_tolerance(n.dtype));
    // A matmul's dtype is its operands' (graph.h).
    if (allow_tf32 && (n.kind == OpKind::Matmul || n.kind == OpKind::Addmm) &&
        n.dtype == DType::F32)
      tol = std::max(tol, kTf32Tolerance);
    // The reduction depth of an f32 / f64 matmul (eval.h).
    if ((n.kind == OpKind::Matmul || n.kind == OpKind::Addmm) &&
        (n.dtype == DType::F32 || n.dtype == DType::F64)) {
      const Shape& a = graph.node(n.inputs[n.kind == OpKind::Addmm ? 1 : 0]).shape;
      const int64_t k = a.empty() ? 1 : a.back();
      const double u = n.dtype == DType::F32 ? 0x1p-24 : 0x1p-53;
      if (k > 1) tol = std::max(tol, u * std::sqrt(static_cast<double>(k)));
    }
    for (ValueId in : n.inputs) stack.push_back(in);
  }
  return tol;
}

double oracle_error(const Tensor& out, const Tensor& oracle) {
  if (is_floating(out.dtype()) && oracle.dtype() != out.dtype())
    return relative_error(out, oracle.to(out.dtype()));
  return relative_error(out, oracle);
}

double relative_error(const Tensor& out, const Tensor& ref) {
  TF_CHECK(out.shape() == ref.shape(),
           "relative_error: shapes differ: " + shape_to_string(out.shape()) + " vs " +
               shape_to_string(ref.shape()));
  const std::vector<double> o = values_of(out);
  const std::vector<double> r = values_of(ref);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // Scale by the largest finite magnitude so the sums of squares cannot
  // overflow or underflow.
  double scale = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    const bool o_nan = std::isnan(o[i]), r_nan = std::isnan(r[i]);
    if (o_nan && r_nan) continue;  // both NaN: they agree
    if (o_nan || r_nan) return kInf;
    if (o[i] == r[i]) {
      if (std::isfinite(r[i])) scale = std::max(scale, std::abs(r[i]));
      continue;  // equal, infinities included
    }
    if (!std::isfinite(o[i]) || !std::isfinite(r[i])) return kInf;
    scale = std::max({scale, std::abs(o[i]), std::abs(r[i])});
  }
  if (scale == 0) return 0;
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    if (std::isnan(r[i]) || !std::isfinite(r[i])) continue;  // NaN/inf pairs matched above
    const double d = (o[i] - r[i]) / scale, q = r[i] / scale;
    diff2 += d * d;
    ref2 += q * q;
  }
  if (diff2 == 0) return 0;
  if (ref2 == 0) return kInf;
  return std::sqrt(diff2) / std::sqrt(ref2);
}

std::vector<Tensor> evaluate_values(const Graph& g, const std::vector<Tensor>& params,
                                    const std::vector<ValueId>& values,
                                    const EvalOptions& options) {
  TF_CHECK(!values.empty(), "evaluate_values of no values");
  reference::ThreadPool pool(options.num_threads);
  return Evaluator(g, options.mode, pool).run_values(params, values);
}

void check_gather_indices(const Graph& g, ValueId index, int64_t size, const Tensor& idx,
                          int num_threads) {
  const Node& n = g.node(index);
  TF_CHECK(n.kind == OpKind::Index, "check_gather_indices of a node that is no gather");
  reference::ThreadPool pool(num_threads);
  at_gather(g, n, [&](const reference::GatherNames& names) {
    reference::check_indices(size, n.dim, idx, names, pool, n.index_wraps_negative);
  });
}

void throw_gather_index_error(const Graph& g, ValueId index, int64_t size, const Shape& idx_shape,
                              int64_t position, int64_t value) {
  const Node& n = g.node(index);
  TF_CHECK(n.kind == OpKind::Index, "throw_gather_index_error of a node that is no gather");
  at_gather(g, n, [&](const reference::GatherNames& names) {
    throw UserError(reference::index_error_message(size, n.dim, idx_shape, position, value, names));
  });
  throw InternalError("throw_gather_index_error: no error was thrown");
}

}  // namespace tilefuse
