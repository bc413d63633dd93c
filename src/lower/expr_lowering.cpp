// Lowering of graph values to Tile IR expressions (see expr_lowering.h).
#include "lower/expr_lowering.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/stack_guard.h"
#include "tir/builder.h"
#include "tir/dag.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse {
namespace {

using tir::Expr;
using tir::Stmt;

constexpr int64_t kI32Limit = int64_t{1} << 31;

Expr one() {
  return tir::make_int(DType::I32, 1);
}

Expr to_dtype(const Expr& e, DType dt) {
  return e.dtype() == dt ? e : tir::cast(dt, e);
}

Expr and_mask(const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a && b;
}

// A coordinate widened to i64 when size * |stride| of the dim it indexes
// may reach 2^31, so that index * stride needs 64 bits.
Expr widen_for(const DimEnv& env, const Expr& c, const Expr& size, const Expr& stride) {
  return c.dtype() == DType::I32 && env.needs_i64(size, stride) ? tir::cast(DType::I64, c) : c;
}

// `start + i * step` (the coordinate of a slice's input), as the slice
// lowering writes it: `i*step` without a start, `start + i` with step 1. When
// `i` is itself such a coordinate (a slice of a slice), the two fold into
// one (`2 + (1 + i)` is `3 + i`), so a chain of slices leaves one
// coordinate of three nodes, not one as deep as the chain. Where the folded
// constants would not fit the index dtype, a slice to a single element
// reads `start` (the only coordinate there is), and so does an empty one: it
// reads nothing, and its step may fit no index dtype of its size
// (`x[:, 4::2**62]` of an f32[1, 4] scaled an i32 coordinate by 2^62).
Expr slice_coord(const Expr& i, int64_t start, int64_t step, int64_t size) {
  Expr base = i;
  __int128 offset = 0, scale = 1;
  if (const auto* add = base.as<tir::AddNode>(); add && tir::as_const_int(add->a)) {
    offset = *tir::as_const_int(add->a);
    base = add->b;
  }
  if (const auto* mul = base.as<tir::MulNode>(); mul && tir::as_const_int(mul->b)) {
    scale = *tir::as_const_int(mul->b);
    base = mul->a;
  }
  offset = offset * step + start;
  scale *= step;
  const __int128 lo = i.dtype() == DType::I32 ? INT32_MIN : INT64_MIN;
  const __int128 hi = i.dtype() == DType::I32 ? INT32_MAX : INT64_MAX;
  if (offset < lo || offset > hi || scale < lo || scale > hi) {  // no fold
    if (size == 0 || size == 1) return tir::make_int(i.dtype(), start);
    base = i, offset = start, scale = step;
  }
  Expr c = base;
  if (scale != 1) c = c * tir::make_int(c.dtype(), static_cast<int64_t>(scale));
  if (offset != 0) c = tir::make_int(c.dtype(), static_cast<int64_t>(offset)) + c;
  return c;
}

// The vars an expression mentions, increasing, memoized per node of an
// interned DAG (a gathered coordinate holds the whole index chain below it,
// so an unmemoized walk per gather would be quadratic in the chain).
class VarSets {
 public:
  using Set = std::vector<const tir::VarNode*>;
  const Set& of(const Expr& e) {
    const auto known = [this](const tir::ExprNode* n) { return sets_.count(n) > 0; };
    for (const Expr& n : tir::post_order({e}, known)) {
      Set s;
      if (const auto* v = n.as<tir::VarNode>()) s.push_back(v);
      for (const Expr& c : tir::expr_children(n)) {
        const Set& cs = sets_.at(c.get());
        Set merged;
        std::set_union(s.begin(), s.end(), cs.begin(), cs.end(), std::back_inserter(merged));
        s = std::move(merged);
      }
      sets_.emplace(n.get(), std::move(s));
    }
    return sets_.at(e.get());
  }

 private:
  std::unordered_map<const tir::ExprNode*, Set> sets_;
};

// The guard of a bounds check on an index element read at `pos`: the
// conjuncts of `mask` that mention only vars of `pos`. The others (a GEMM's
// K-tail `k*BK + j < K` on a row gather at `m`) only guard other
// coordinates of the same element: some lane with the same position passes
// them whenever the kernel computes anything at all (K > 0 and N > 0, else
// the loop or the grid is empty), so the check fires exactly when the
// reference's would, and it stays invariant in the loops of the dropped
// vars (licm can hoist it). Loads keep their full mask; licm drops such
// conjuncts from them by its own rule.
//
// `mask` and `pos` are interned. The guard keeps the mask's own `&&` tree
// where it keeps every conjunct of a subtree (memoized per subtree), so the
// guards of a chain of gathers share their nodes with the masks instead of
// each rebuilding a chain as long as the gathers below it.
class CheckGuards {
 public:
  Expr of(const Expr& mask, const std::vector<Expr>& pos) {
    if (!mask.defined()) return mask;
    allowed_.clear();
    for (const Expr& p : pos) {
      const VarSets::Set& s = vars_.of(p);
      VarSets::Set merged;
      std::set_union(allowed_.begin(), allowed_.end(), s.begin(), s.end(),
                     std::back_inserter(merged));
      allowed_ = std::move(merged);
    }
    auto [it, inserted] = sets_.try_emplace(allowed_, static_cast<int>(sets_.size()));
    set_id_ = it->second;
    return guard(mask);
  }

 private:
  Expr guard(const Expr& m) {
    check_stack("the bounds check of a gather");
    const auto key = std::make_pair(m.get(), set_id_);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Expr g;
    if (const auto* a = m.as<tir::AndNode>()) {
      const Expr l = guard(a->a), r = guard(a->b);
      if (l.same_as(a->a) && r.same_as(a->b)) {
        g = m;
      } else {
        g = !l.defined() ? r : !r.defined() ? l : (l && r);
      }
    } else {
      const VarSets::Set& s = vars_.of(m);
      if (std::includes(allowed_.begin(), allowed_.end(), s.begin(), s.end())) g = m;
    }
    memo_.emplace(key, g);
    return g;
  }

  VarSets vars_;
  VarSets::Set allowed_;
  int set_id_ = 0;
  std::map<VarSets::Set, int> sets_;
  std::map<std::pair<const tir::ExprNode*, int>, Expr> memo_;
};

}  // namespace

DType opmath_dtype(DType dt) {
  switch (dt) {
    case DType::F16:
    case DType::BF16:
    case DType::F8E4M3:
    case DType::F8E5M2:
      return DType::F32;
    default:
      // Integers and bools compute in i64 like the reference evaluator (the
      // result wraps to the node's dtype at its cast); f32/f64 in themselves.
      return is_floating(dt) ? dt : DType::I64;
  }
}

DType index_dtype(int64_t size) {
  return size < kI32Limit ? DType::I32 : DType::I64;
}

// One lowering call: walks the graph below a value, collecting checks.
//
// The walk is a DAG walk: every expression it builds is interned (tir/dag.h),
// and value() is memoized on (value, coordinates, mask), which are then
// canonical nodes. So a value read twice at the same element (`y * y`, a
// gather's index in its address and its mask, x[i][i]) is lowered once and
// is one shared node, and the time and memory of a lowering are linear in
// the graph nodes times the distinct coordinates they are read at.
class ExprLowering::Impl {
 public:
  Impl(const ExprLowering& owner, std::vector<Stmt>* checks)
      : env_(owner.env_), g_(owner.graph_), owner_(owner), checks_(checks) {}

  Expr value(ValueId v, const std::vector<Expr>& coords, const Expr& mask);
  // `v` as an operand of an op of dtype `op` computing in `opmath`.
  Expr operand(ValueId v, const std::vector<Expr>& coords, DType op, DType opmath,
               const Expr& mask);
  Expr intern(const Expr& e) { return interner_.intern(e); }

 private:
  // An elementwise node, a constant or a read, at canonical coordinates.
  Expr compute(ValueId v, const std::vector<Expr>& coords, const Expr& mask);
  // The coordinates of the view's input that hold the element at `coords`.
  std::vector<Expr> view_coords(const Node& n, const std::vector<Expr>& coords);
  // The coordinates of the gathered input that hold the element at
  // `coords`; emits the bounds check and adds the bounds to *mask.
  std::vector<Expr> gather_coords(ValueId v, const std::vector<Expr>& coords, Expr* mask);
  Expr unary(const Node& n, const std::vector<Expr>& coords, const Expr& mask);
  Expr binary(const Node& n, const std::vector<Expr>& coords, const Expr& mask);
  void add_check(Stmt check);

  const DimEnv& env_;
  // value()'s memo key: the value and the canonical nodes of its
  // coordinates and mask.
  struct Key {
    ValueId v;
    std::vector<const tir::ExprNode*> nodes;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      size_t h = std::hash<ValueId>()(k.v);
      for (const tir::ExprNode* n : k.nodes) h = h * 1000003u ^ std::hash<const void*>()(n);
      return h;
    }
  };

  const Graph& g_;
  const ExprLowering& owner_;
  std::vector<Stmt>* checks_;
  tir::ExprInterner interner_;
  std::unordered_map<Key, Expr, KeyHash> memo_;
  // The checks already collected, by (condition, message) (conditions are
  // canonical nodes).
  std::set<std::pair<const tir::ExprNode*, std::string>> checked_;
  CheckGuards guards_;
};

void ExprLowering::Impl::add_check(Stmt check) {
  // The same gather reached twice (x[i] + x[i]) checks once. Its condition
  // and arguments are interned, so the condition's node names it.
  const auto* c = check.as<tir::CheckNode>();
  if (!checked_.insert({c->cond.get(), c->message}).second) return;
  checks_->push_back(std::move(check));
}

// The coordinates of operand `in` broadcast (right-aligned, PyTorch rules)
// to a result indexed by `coords`: a fixed size-1 dim reads index 0 (a
// symbolic dim never broadcasts, graph.h).
static std::vector<Expr> broadcast_coords(const std::vector<Expr>& coords, const Node& in) {
  std::vector<Expr> c;
  const size_t lead = coords.size() - in.shape.size();
  for (size_t d = 0; d < in.shape.size(); ++d)
    c.push_back(in.symbol(d) == kFixedDim && in.shape[d] == 1
                    ? tir::make_int(coords[lead + d].dtype(), 0)
                    : coords[lead + d]);
  return c;
}

// A literal as a constant of `dt`: an integer literal converts to i64 from
// its exact value (Node::iscalar; through the double above 2^53 it would
// round), anything else from its double (make_const wraps it to a narrower
// integer dtype).
static Expr literal_const(const Node& n, DType dt) {
  if (!is_floating(n.dtype) && dt == DType::I64) return tir::make_int(dt, n.iscalar);
  return tir::make_const(dt, n.scalar);
}

Expr ExprLowering::Impl::operand(ValueId v, const std::vector<Expr>& coords, DType op, DType opmath,
                                 const Expr& mask) {
  const Node& n = g_.node(v);
  if (n.kind == OpKind::Scalar) return literal_const(n, opmath);
  // TensorIterator converts the operand to the op's dtype (an i32 operand of
  // an f16 op is rounded to f16), then the kernel reads it in opmath.
  return to_dtype(to_dtype(value(v, broadcast_coords(coords, n), mask), op), opmath);
}

Expr ExprLowering::Impl::value(ValueId v, const std::vector<Expr>& in_coords, const Expr& in_mask) {
  // Views and gathers pass the element on to their input at other
  // coordinates (under another mask): a loop, not a recursion, so a chain
  // of them costs no stack. Every key passed on the way is memoized with
  // the final result.
  std::vector<Expr> coords = in_coords;
  Expr mask = in_mask;
  std::vector<Key> passed;
  Expr result;
  for (;;) {
    const Node& n = g_.node(v);
    TF_CHECK(coords.size() == n.shape.size(),
             "%" + std::to_string(v) + " indexed with " + std::to_string(coords.size()) +
                 " coordinates, rank " + std::to_string(n.shape.size()));
    // Elementwise ops recurse once per graph node on the way to a loaded
    // value; the planner bounds that (FusionOptions::max_fused_ops), this is
    // the net.
    check_stack("the lowering of a value", n.loc);
    Key key{v, {}};
    for (Expr& c : coords) {
      c = intern(c);
      key.nodes.push_back(c.get());
    }
    mask = intern(mask);
    key.nodes.push_back(mask.get());
    if (auto it = memo_.find(key); it != memo_.end()) {
      result = it->second;
      break;
    }
    const bool computed = !owner_.bound_.count(v) && !owner_.buffers_.count(v);
    if (computed && n.is_view()) {
      passed.push_back(std::move(key));
      coords = view_coords(n, coords);
      v = n.inputs[0];
      continue;
    }
    if (computed && n.kind == OpKind::Index) {
      passed.push_back(std::move(key));
      coords = gather_coords(v, coords, &mask);
      v = n.inputs[0];
      continue;
    }
    result = intern(compute(v, coords, mask));
    memo_.emplace(std::move(key), result);
    break;
  }
  for (Key& k : passed) memo_.emplace(std::move(k), result);
  return result;
}

Expr ExprLowering::Impl::compute(ValueId v, const std::vector<Expr>& coords, const Expr& mask) {
  const Node& n = g_.node(v);
  if (auto it = owner_.bound_.find(v); it != owner_.bound_.end()) return it->second(coords);
  if (auto it = owner_.buffers_.find(v); it != owner_.buffers_.end()) {
    const tir::Buffer& buf = it->second;
    std::vector<Expr> idx;
    for (size_t d = 0; d < coords.size(); ++d)
      idx.push_back(widen_for(env_, coords[d], buf->shape[d],
                              buf->strides.empty() ? one() : buf->strides[d]));
    return tir::load(buf, std::move(idx), mask);
  }
  switch (n.kind) {
    case OpKind::Scalar:
      return literal_const(n, n.dtype);
    case OpKind::Slice:
    case OpKind::Permute:
    case OpKind::Expand:
    case OpKind::Select:
    case OpKind::Index:
      break;  // value() passes these on
    case OpKind::Cast: {
      const Node& in = g_.node(n.inputs[0]);
      // A literal converts from its exact value (one rounding).
      if (in.kind == OpKind::Scalar) return literal_const(in, n.dtype);
      return to_dtype(value(n.inputs[0], coords, mask), n.dtype);
    }
    case OpKind::Unary:
      return unary(n, coords, mask);
    case OpKind::Binary:
      return binary(n, coords, mask);
    case OpKind::Where: {
      const DType om = opmath_dtype(n.compute_dtype);
      const ValueId c = n.inputs[0];
      const Expr cond =
          g_.node(c).kind == OpKind::Scalar
              ? tir::make_bool(g_.node(c).scalar != 0)
              : to_dtype(value(c, broadcast_coords(coords, g_.node(c)), mask), DType::Bool);
      const Expr a = operand(n.inputs[1], coords, n.compute_dtype, om, mask);
      const Expr b = operand(n.inputs[2], coords, n.compute_dtype, om, mask);
      return to_dtype(tir::select(cond, a, b), n.dtype);
    }
    case OpKind::Clamp: {
      const DType om = opmath_dtype(n.compute_dtype);
      Expr x = operand(n.inputs[0], coords, n.compute_dtype, om, mask);
      // select keeps NaN (a comparison with NaN is false), like the
      // reference's `v < lo ? lo : v`; lo > hi gives hi.
      if (n.clamp_min) {
        const Expr lo = tir::make_const(om, *n.clamp_min);
        x = tir::select(x < lo, lo, x);
      }
      if (n.clamp_max) {
        const Expr hi = tir::make_const(om, *n.clamp_max);
        x = tir::select(hi < x, hi, x);
      }
      return to_dtype(x, n.dtype);
    }
    case OpKind::Parameter:
    case OpKind::Matmul:
    case OpKind::Addmm:
      break;
  }
  throw InternalError("expr_lowering: %" + std::to_string(v) + " (" +
                      std::string(op_kind_name(n.kind)) +
                      ") is neither a kernel input nor computable in a kernel");
}

std::vector<Expr> ExprLowering::Impl::view_coords(const Node& n, const std::vector<Expr>& coords) {
  const ValueId src = n.inputs[0];
  const Node& in = g_.node(src);
  std::vector<Expr> c(in.shape.size());
  switch (n.kind) {
    case OpKind::Slice: {
      c = coords;
      const int64_t d = n.dim;
      c[d] = slice_coord(widen_for(env_, coords[d], env_.size(in, d), one()), n.start, n.step,
                         n.symbol(d) == kFixedDim ? n.shape[d] : -1);
      break;
    }
    case OpKind::Permute:
      for (size_t i = 0; i < n.perm.size(); ++i) c[n.perm[i]] = coords[i];
      break;
    case OpKind::Expand: {
      const size_t lead = n.shape.size() - in.shape.size();
      for (size_t d = 0; d < in.shape.size(); ++d)
        c[d] = in.symbol(d) == kFixedDim && in.shape[d] == 1
                   ? tir::make_int(coords[lead + d].dtype(), 0)
                   : coords[lead + d];
      break;
    }
    case OpKind::Select: {
      const int64_t d = n.dim;
      const int64_t index = n.start < 0 ? n.start + in.shape[d] : n.start;
      c.assign(coords.begin(), coords.end());
      c.insert(c.begin() + d, tir::make_int(index_dtype(in.shape[d]), index));
      break;
    }
    default:
      throw InternalError("expr_lowering: not a view");
  }
  return c;
}

std::vector<Expr> ExprLowering::Impl::gather_coords(ValueId v, const std::vector<Expr>& coords,
                                                    Expr* mask_io) {
  const Expr mask = *mask_io;
  const Node& n = g_.node(v);
  const ValueId x = n.inputs[0], idx = n.inputs[1];
  const Node& xn = g_.node(x);
  const Node& in = g_.node(idx);
  const int64_t d = n.dim, r = static_cast<int64_t>(in.shape.size());
  const bool symbolic = xn.symbol(d) != kFixedDim;
  // The size in i64 (a constant, or the symbol's var widened).
  const Expr size = DimEnv::as(DType::I64, env_.size(xn, d));
  const std::vector<Expr> pos(coords.begin() + d, coords.begin() + d + r);

  // The index element in i64: it comes from memory, so any value is
  // possible and index * stride is a 64-bit product (ir.h). x[idx] wraps a
  // negative value once; index_select's must already lie in [0, size).
  const Expr raw = to_dtype(value(idx, pos, mask), DType::I64);
  const bool wraps = n.index_wraps_negative;
  const Expr wrapped = wraps ? tir::select(raw < 0, raw + size, raw) : raw;
  // 0 <= wrapped < size, stated on raw so the index load is not repeated
  // under the select once more.
  const int64_t* fixed = tir::as_const_int(size);
  const Expr lowest =
      !wraps ? tir::make_int(DType::I64, 0) : fixed ? tir::make_int(DType::I64, -*fixed) : -size;
  const Expr in_bounds = raw >= lowest && raw < size;

  std::string idx_name = describe_value(g_.node(idx));
  if (in.name.empty()) idx_name = "(" + idx_name + ")";
  // A symbolic size is reported with the value it had in the failing call
  // (by name past a 1-D index, as reference::GatherNames words it: the
  // check's args are the value and its coordinates).
  const bool size_arg = symbolic && r <= 1;
  std::string msg = "index {} is out of bounds for dim " + std::to_string(d) + " of " +
                    describe_value(g_.node(x)) + " (size " +
                    (size_arg   ? std::string("{}")
                     : symbolic ? g_.symbols()[xn.symbol(d)].name
                                : std::to_string(xn.shape[d])) +
                    "): " + idx_name;
  std::vector<Expr> args = {raw};
  if (size_arg) args.push_back(size);
  if (r > 0) {
    msg += "[";
    for (int64_t i = 0; i < r; ++i) {
      msg += i ? ", {}" : "{}";
      args.push_back(pos[i]);
    }
    msg += "]";
  }
  msg += " = {}";
  if (!wraps) msg += Graph::kNoWrapNote;
  args.push_back(raw);
  const Expr guard = guards_.of(mask, pos);
  for (Expr& a : args) a = intern(a);
  add_check(tir::CheckNode::make(intern(guard.defined() ? (!guard || in_bounds) : in_bounds),
                                 tir::kIndexBoundsCheckCode, msg, args, n.loc));

  std::vector<Expr> xc(coords.begin(), coords.begin() + d);
  xc.push_back(wrapped);
  xc.insert(xc.end(), coords.begin() + d + r, coords.end());
  *mask_io = and_mask(mask, in_bounds);
  return xc;
}

namespace {

// A float-only function of an integer opmath value: computed in f64 and
// truncated back, like the reference's floating_fn (unreachable from the
// builders, which promote such ops to f32).
template <class Fn>
Expr float_math(const Expr& x, Fn fn) {
  if (is_floating(x.dtype())) return fn(x);
  return tir::cast(x.dtype(), fn(tir::cast(DType::F64, x)));
}
template <class Fn>
Expr float_math2(const Expr& a, const Expr& b, Fn fn) {
  if (is_floating(a.dtype())) return fn(a, b);
  return tir::cast(a.dtype(), fn(tir::cast(DType::F64, a), tir::cast(DType::F64, b)));
}

constexpr double kSqrtHalf = 0.70710678118654752440;  // M_SQRT1_2, PyTorch's kAlpha

}  // namespace

Expr ExprLowering::Impl::unary(const Node& n, const std::vector<Expr>& coords, const Expr& mask) {
  using tir::call;
  using tir::Intrinsic;
  const DType om = opmath_dtype(n.compute_dtype);
  const Expr x = operand(n.inputs[0], coords, n.compute_dtype, om, mask);
  Expr r;
  switch (n.unary) {
    case UnaryOp::Neg:
      r = -x;
      break;
    case UnaryOp::Relu:
      r = tir::select(x < 0, tir::make_const(om, 0), x);
      break;
    case UnaryOp::Gelu:  // x * 0.5 * (1 + erf(x * M_SQRT1_2))
      r = float_math(
          x, [](const Expr& y) { return y * 0.5 * (1.0 + call(Intrinsic::Erf, {y * kSqrtHalf})); });
      break;
    case UnaryOp::Silu:  // x / (1 + exp(-x))
      r = float_math(x, [](const Expr& y) { return y / (1.0 + call(Intrinsic::Exp, {-y})); });
      break;
    case UnaryOp::Sigmoid:  // 1 / (1 + exp(-x))
      r = float_math(x, [](const Expr& y) { return 1.0 / (1.0 + call(Intrinsic::Exp, {-y})); });
      break;
    case UnaryOp::Tanh:
      r = float_math(x, [](const Expr& y) { return call(Intrinsic::Tanh, {y}); });
      break;
    case UnaryOp::Exp:
      r = float_math(x, [](const Expr& y) { return call(Intrinsic::Exp, {y}); });
      break;
    case UnaryOp::Log:
      r = float_math(x, [](const Expr& y) { return call(Intrinsic::Log, {y}); });
      break;
    case UnaryOp::Sqrt:
      r = float_math(x, [](const Expr& y) { return call(Intrinsic::Sqrt, {y}); });
      break;
    case UnaryOp::Abs:
      r = call(Intrinsic::Abs, {x});
      break;
    case UnaryOp::LogicalNot:
      r = x == tir::make_const(om, 0);
      break;
  }
  return to_dtype(r, n.dtype);
}

Expr ExprLowering::Impl::binary(const Node& n, const std::vector<Expr>& coords, const Expr& mask) {
  using tir::call;
  using tir::Intrinsic;
  const DType om = opmath_dtype(n.compute_dtype);
  const Expr a = operand(n.inputs[0], coords, n.compute_dtype, om, mask);
  const Expr b = operand(n.inputs[1], coords, n.compute_dtype, om, mask);
  Expr r;
  switch (n.binary) {
    case BinaryOp::Add:
      r = a + b;
      break;
    case BinaryOp::Sub:
      r = a - b;
      break;
    case BinaryOp::Mul:
      r = a * b;
      break;
    case BinaryOp::Div:  // true division; TIR's integer `/` would floor
      r = float_math2(a, b, [](const Expr& p, const Expr& q) { return p / q; });
      break;
    case BinaryOp::Maximum:  // TIR max/min propagate NaN like torch.maximum
      r = tir::max(a, b);
      break;
    case BinaryOp::Minimum:
      r = tir::min(a, b);
      break;
    case BinaryOp::Hypot:
      r = float_math2(a, b, [](const Expr& p, const Expr& q) {
        return call(Intrinsic::Hypot, {p, q});
      });
      break;
    case BinaryOp::Eq:
      r = a == b;
      break;
    case BinaryOp::Ne:
      r = a != b;
      break;
    case BinaryOp::Lt:
      r = a < b;
      break;
    case BinaryOp::Le:
      r = a <= b;
      break;
    case BinaryOp::Gt:
      r = a > b;
      break;
    case BinaryOp::Ge:
      r = a >= b;
      break;
  }
  return to_dtype(r, n.dtype);
}

ExprLowering::ExprLowering(const DimEnv& env, std::map<ValueId, tir::Buffer> buffers)
    : env_(env), graph_(env.graph()), buffers_(std::move(buffers)) {}

void ExprLowering::bind(ValueId v, ValueFn fn) {
  bound_[v] = std::move(fn);
}

LoweredExpr ExprLowering::lower(ValueId v, const std::vector<Expr>& coords,
                                const Expr& mask) const {
  LoweredExpr out;
  Impl impl(*this, &out.checks);
  out.value = impl.value(v, coords, mask);
  return out;
}

LoweredExpr ExprLowering::lower_as(ValueId v, const std::vector<Expr>& coords, DType dtype,
                                   const Expr& mask) const {
  LoweredExpr out;
  Impl impl(*this, &out.checks);
  const Node& n = graph_.node(v);
  out.value = n.kind == OpKind::Scalar ? literal_const(n, dtype)
                                       : impl.intern(to_dtype(impl.value(v, coords, mask), dtype));
  return out;
}

}  // namespace tilefuse
