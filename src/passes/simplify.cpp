// The simplifier: one bottom-up IRMutator. Children are simplified first, then
// the rules of the node's kind run on the simplified children; a rule that
// builds new structure re-simplifies it (each such rule moves constants
// outward or folds them, so this terminates). Integer facts come from two
// analyses: ranges (Bounds, below) and the modulus-remainder lattice.
#include "passes/simplify.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "analysis/modulus_remainder.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::passes {

using analysis::modulus_remainder;
using analysis::ModulusRemainder;
using analysis::ModulusRemainderScope;

namespace {

using namespace tir;  // NOLINT: the pass speaks IR throughout
using i128 = __int128;

// ---- integer helpers ---------------------------------------------------------

bool is_int(DType dt) {
  return is_integral(dt);
}  // not bool, not float

i128 dtype_min(DType dt) {
  switch (dt) {
    case DType::I8:
      return INT8_MIN;
    case DType::I32:
      return INT32_MIN;
    case DType::I64:
      return INT64_MIN;
    default:
      return 0;  // bool, u8
  }
}
i128 dtype_max(DType dt) {
  switch (dt) {
    case DType::Bool:
      return 1;
    case DType::U8:
      return UINT8_MAX;
    case DType::I8:
      return INT8_MAX;
    case DType::I32:
      return INT32_MAX;
    default:
      return INT64_MAX;
  }
}

// v as the dtype holds it: two's-complement wrap (bool: v != 0).
int64_t wrap(DType dt, i128 v) {
  if (dt == DType::Bool) return v != 0;
  i128 span = dtype_max(dt) - dtype_min(dt) + 1;
  i128 r = (v - dtype_min(dt)) % span;
  if (r < 0) r += span;
  return static_cast<int64_t>(r + dtype_min(dt));
}

i128 floor_div(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
i128 floor_mod(i128 a, i128 b) {
  return a - floor_div(a, b) * b;
}

Expr int_const(DType dt, i128 v) {
  return make_int(dt, wrap(dt, v));
}
Expr float_const(DType dt, double v) {
  return FloatImmNode::make(dt, round_to(dt, v));
}

const double* as_const_float(const Expr& e) {
  const auto* f = e.as<FloatImmNode>();
  return f ? &f->value : nullptr;
}
bool is_const(const Expr& e) {
  return e.as<IntImmNode>() || e.as<FloatImmNode>();
}
bool is_int_const(const Expr& e, int64_t v) {
  const int64_t* c = as_const_int(e);
  return c && *c == v;
}
bool is_pow2(int64_t c) {
  return c > 0 && (c & (c - 1)) == 0;
}

// Whether every value of `from` survives a cast to `to` unchanged, so that
// cast(T, cast(to, x)) == cast(T, x): casts act on values only.
bool lossless(DType from, DType to) {
  if (from == to || from == DType::Bool) return true;
  if (is_int(from) && is_int(to)) {
    return dtype_min(to) <= dtype_min(from) && dtype_max(from) <= dtype_max(to);
  }
  if (is_int(from) && is_floating(to)) {
    // Integers up to 2^(mantissa + 1) are exact in a float.
    i128 limit = static_cast<i128>(1) << (dtype_bits_of_mantissa(to) + 1);
    return dtype_max(from) <= limit && -dtype_min(from) <= limit && to != DType::F8E4M3 &&
           to != DType::F8E5M2;
  }
  if (is_floating(from) && is_floating(to)) {
    // Each format's values (range, subnormals, inf/NaN) are a subset of the
    // formats listed after it.
    switch (from) {
      case DType::F8E4M3:
      case DType::F8E5M2:
        return to == DType::F16 || to == DType::BF16 || to == DType::F32 || to == DType::F64;
      case DType::F16:
      case DType::BF16:
        return to == DType::F32 || to == DType::F64;
      case DType::F32:
        return to == DType::F64;
      default:
        return false;
    }
  }
  return false;
}

// ---- ranges --------------------------------------------------------------------

// Sound bounds [lo, hi] on an integer or bool value. `exact` says no + - *
// inside wrapped, so the value is the mathematical result of its leaves:
// rules that reason about sums (dividing a sum term by term) need it.
struct Bounds {
  i128 lo, hi;
  bool exact;
  bool is(i128 v) const { return lo == v && hi == v; }
};

Bounds full(DType dt, bool exact = false) {
  return {dtype_min(dt), dtype_max(dt), exact};
}

// The range of an exact result, or the full range when it may wrap.
Bounds checked(DType dt, i128 lo, i128 hi, bool exact) {
  if (lo < dtype_min(dt) || hi > dtype_max(dt)) return full(dt);
  return {lo, hi, exact};
}

Bounds truth(bool can_be_false, bool can_be_true) {
  return {can_be_false ? 0 : 1, can_be_true ? 1 : 0, true};
}

using BoundsScope = std::unordered_map<const VarNode*, Bounds>;

Bounds bounds_of(const Expr& e, const BoundsScope& scope);

Bounds compare(ExprKind kind, const Expr& x, const Expr& y, const BoundsScope& scope) {
  if (!is_int(x.dtype()) && x.dtype() != DType::Bool) return truth(true, true);
  Bounds a = bounds_of(x, scope), b = bounds_of(y, scope);
  bool lt_always = a.hi < b.lo, lt_never = a.lo >= b.hi;
  bool le_always = a.hi <= b.lo, le_never = a.lo > b.hi;
  bool disjoint = a.hi < b.lo || b.hi < a.lo, same = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
  switch (kind) {
    case ExprKind::LT:
      return truth(!lt_always, !lt_never);
    case ExprKind::LE:
      return truth(!le_always, !le_never);
    case ExprKind::GT:
      return truth(!(b.hi < a.lo), !(b.lo >= a.hi));
    case ExprKind::GE:
      return truth(!(b.hi <= a.lo), !(b.lo > a.hi));
    case ExprKind::EQ:
      return truth(!same, !disjoint);
    case ExprKind::NE:
      return truth(!disjoint, !same);
    default:
      return truth(true, true);
  }
}

Bounds bounds_of(const Expr& e, const BoundsScope& scope) {
  DType dt = e.dtype();
  if (is_floating(dt)) return {0, 0, false};  // never asked for floats
  if (const int64_t* c = as_const_int(e)) return {*c, *c, true};
  if (const auto* v = e.as<VarNode>()) {
    auto it = scope.find(v);
    return it == scope.end() ? full(dt, true) : it->second;
  }
  switch (e.kind()) {
    case ExprKind::Add: {
      const auto* op = e.as<AddNode>();
      Bounds a = bounds_of(op->a, scope), b = bounds_of(op->b, scope);
      return checked(dt, a.lo + b.lo, a.hi + b.hi, a.exact && b.exact);
    }
    case ExprKind::Sub: {
      const auto* op = e.as<SubNode>();
      Bounds a = bounds_of(op->a, scope), b = bounds_of(op->b, scope);
      return checked(dt, a.lo - b.hi, a.hi - b.lo, a.exact && b.exact);
    }
    case ExprKind::Mul: {
      const auto* op = e.as<MulNode>();
      Bounds a = bounds_of(op->a, scope), b = bounds_of(op->b, scope);
      i128 p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
      return checked(dt, std::min({p[0], p[1], p[2], p[3]}), std::max({p[0], p[1], p[2], p[3]}),
                     a.exact && b.exact);
    }
    case ExprKind::Div: {
      // Floor division by c is monotone: increasing for c > 0, decreasing
      // for c < 0 (where INT_MIN / -1 may wrap, which checked() catches).
      const auto* op = e.as<DivNode>();
      const int64_t* c = as_const_int(op->b);
      if (!c || *c == 0) return full(dt);
      Bounds a = bounds_of(op->a, scope);
      i128 x = floor_div(a.lo, *c), y = floor_div(a.hi, *c);
      return checked(dt, std::min(x, y), std::max(x, y), a.exact);
    }
    case ExprKind::Mod: {
      // Floor modulo by c > 0 lies in [0, c); it is the identity on [0, c).
      const auto* op = e.as<ModNode>();
      const int64_t* c = as_const_int(op->b);
      if (!c || *c <= 0) return full(dt);
      Bounds a = bounds_of(op->a, scope);
      if (a.lo >= 0 && a.hi < *c) return a;
      return {0, *c - 1, a.exact};
    }
    case ExprKind::Min:
    case ExprKind::Max: {
      bool is_min = e.kind() == ExprKind::Min;
      Expr x = is_min ? e.as<MinNode>()->a : e.as<MaxNode>()->a;
      Expr y = is_min ? e.as<MinNode>()->b : e.as<MaxNode>()->b;
      Bounds a = bounds_of(x, scope), b = bounds_of(y, scope);
      if (is_min) return {std::min(a.lo, b.lo), std::min(a.hi, b.hi), a.exact && b.exact};
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi), a.exact && b.exact};
    }
    case ExprKind::Select: {
      const auto* op = e.as<SelectNode>();
      Bounds c = bounds_of(op->cond, scope);
      Bounds a = bounds_of(op->true_value, scope), b = bounds_of(op->false_value, scope);
      if (c.is(1)) return a;
      if (c.is(0)) return b;
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi), a.exact && b.exact};
    }
    case ExprKind::Cast: {
      const auto* op = e.as<CastNode>();
      DType from = op->value.dtype();
      if (dt == DType::Bool) return truth(true, true);
      if (is_int(from) || from == DType::Bool) {
        Bounds a = bounds_of(op->value, scope);
        if (a.lo >= dtype_min(dt) && a.hi <= dtype_max(dt)) return a;
        return full(dt);
      }
      return full(dt, true);
    }
    case ExprKind::EQ:
    case ExprKind::NE:
    case ExprKind::LT:
    case ExprKind::LE:
    case ExprKind::GT:
    case ExprKind::GE: {
#define TF_CMP(name) \
  if (const auto* op = e.as<name##Node>()) return compare(e.kind(), op->a, op->b, scope);
      TF_CMP(EQ)
      TF_CMP(NE)
      TF_CMP(LT)
      TF_CMP(LE)
      TF_CMP(GT) TF_CMP(GE)
#undef TF_CMP
          return truth(true, true);
    }
    case ExprKind::And: {
      const auto* op = e.as<AndNode>();
      Bounds a = bounds_of(op->a, scope), b = bounds_of(op->b, scope);
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi), true};
    }
    case ExprKind::Or: {
      const auto* op = e.as<OrNode>();
      Bounds a = bounds_of(op->a, scope), b = bounds_of(op->b, scope);
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi), true};
    }
    case ExprKind::Not: {
      Bounds a = bounds_of(e.as<NotNode>()->a, scope);
      return {1 - a.hi, 1 - a.lo, true};
    }
    case ExprKind::Load:
    case ExprKind::HookLoad:
      return full(dt, true);  // a value read is a value, whatever it is
    default:
      return full(dt);
  }
}

// ---- sums ----------------------------------------------------------------------

void flatten_sum(const Expr& e, std::vector<Expr>* terms) {
  if (const auto* add = e.as<AddNode>()) {
    flatten_sum(add->a, terms);
    flatten_sum(add->b, terms);
  } else {
    terms->push_back(e);
  }
}

Expr build_sum(DType dt, const std::vector<Expr>& terms) {
  if (terms.empty()) return make_int(dt, 0);
  Expr s = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) s = AddNode::make(s, terms[i]);
  return s;
}

// t / c when t is syntactically a multiple of c (a constant, or x*k with c | k).
Expr exact_quotient(const Expr& t, int64_t c) {
  if (const int64_t* v = as_const_int(t)) {
    return *v % c == 0 ? make_int(t.dtype(), *v / c) : Expr();
  }
  if (const auto* mul = t.as<MulNode>()) {
    const int64_t* k = as_const_int(mul->b);
    if (k && *k % c == 0)
      return *k == c ? mul->a : MulNode::make(mul->a, make_int(t.dtype(), *k / c));
  }
  return {};
}

// ---- the mutator ---------------------------------------------------------------

class Simplifier : public IRMutator {
 public:
  using IRMutator::mutate;
  using IRMutator::visit;

  Kernel run(const Kernel& k) {
    Kernel out = k;
    for (GridDim& g : out.grid) {
      g.extent = mutate(g.extent);
      // The program id runs over [0, extent).
      if (is_int(g.var.dtype())) {
        Bounds ext = bounds_of(g.extent, bounds_);
        bind(g.var, {0, std::max<i128>(0, std::min(ext.hi - 1, dtype_max(g.var.dtype()))), true});
      }
    }
    out.body = mutate(k.body);
    return out;
  }

 private:
  Bounds bounds(const Expr& e) const { return bounds_of(e, bounds_); }
  // True / false when a bool expression is decided by ranges.
  bool proven(const Expr& e) const { return bounds(e).is(1); }
  bool disproven(const Expr& e) const { return bounds(e).is(0); }
  ModulusRemainder mr(const Expr& e) const { return modulus_remainder(e, mr_); }

  void bind(const Var& v, Bounds b) { bounds_[v.get()] = b; }
  void unbind(const Var& v) {
    bounds_.erase(v.get());
    mr_.erase(v.get());
  }
  // Binds a loop-like var to [min, min + extent - 1] (its values when the
  // body runs at all).
  void bind_range(const Var& v, const Expr& min, const Expr& extent) {
    DType dt = v.dtype();
    if (!is_int(dt)) return;
    Bounds lo = bounds(min), ext = bounds(extent);
    i128 hi = std::min(lo.hi + ext.hi - 1, dtype_max(dt));
    if (hi < lo.lo) hi = lo.lo;
    bind(v, {lo.lo, hi, true});
  }

  template <class Node>
  static Expr rebuild(const Node* op, const Expr& a, const Expr& b) {
    if (a.same_as(op->a) && b.same_as(op->b)) return op;
    return Node::make(a, b);
  }

  // ---- arithmetic ----

  Expr visit(const AddNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    DType dt = op->dtype;
    if (is_floating(dt)) {
      const double *x = as_const_float(a), *y = as_const_float(b);
      // One double addition then one rounding: double rounding is innocuous
      // for + - * / when the wide format has >= 2p + 2 bits (53 >= 2*24 + 2).
      if (x && y) return float_const(dt, *x + *y);
      if (x && !y) return mutate(AddNode::make(b, a));
      // x + -0.0 == x for every x (+0 + -0 is +0); x + 0.0 is not (-0 + 0 = +0).
      if (y && *y == 0 && std::signbit(*y)) return a;
      return rebuild(op, a, b);
    }
    const int64_t *x = as_const_int(a), *y = as_const_int(b);
    if (x && y) return int_const(dt, i128(*x) + *y);
    if (x) return mutate(AddNode::make(b, a));  // constants to the right
    if (y && *y == 0) return a;
    // (x + c2) + c1 -> x + (c1 + c2): wrapping addition is associative.
    if (const auto* inner = a.as<AddNode>(); inner && y) {
      if (const int64_t* c2 = as_const_int(inner->b)) {
        return mutate(AddNode::make(inner->a, int_const(dt, i128(*c2) + *y)));
      }
    }
    // (x + c) + y -> (x + y) + c and x + (y + c) -> (x + y) + c: constants
    // bubble to the top of a sum, where they fold.
    if (const auto* inner = a.as<AddNode>(); inner && as_const_int(inner->b)) {
      return mutate(AddNode::make(AddNode::make(inner->a, b), inner->b));
    }
    if (const auto* inner = b.as<AddNode>(); inner && as_const_int(inner->b)) {
      return mutate(AddNode::make(AddNode::make(a, inner->a), inner->b));
    }
    return rebuild(op, a, b);
  }

  Expr visit(const SubNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    DType dt = op->dtype;
    if (is_floating(dt)) {
      const double *x = as_const_float(a), *y = as_const_float(b);
      if (x && y) return float_const(dt, *x - *y);
      // x - +0.0 == x for every x (-0 - +0 is -0; NaN stays NaN).
      if (y && *y == 0 && !std::signbit(*y)) return a;
      return rebuild(op, a, b);
    }
    const int64_t *x = as_const_int(a), *y = as_const_int(b);
    if (x && y) return int_const(dt, i128(*x) - *y);
    // x - x == 0 for integers (floats: inf - inf and NaN are not 0).
    if (structural_equal(a, b)) return make_int(dt, 0);
    // x - c -> x + (-c) (modulo 2^bits, so exact even for INT_MIN).
    if (y) return mutate(AddNode::make(a, int_const(dt, -i128(*y))));
    if (const auto* sum = a.as<AddNode>()) {
      // (x + y) - y -> x and (x + y) - x -> y.
      if (structural_equal(sum->b, b)) return sum->a;
      if (structural_equal(sum->a, b)) return sum->b;
      // (x + c1) - (y + c2) -> (x - y) + (c1 - c2); (x + c1) - y -> (x - y) + c1.
      if (const int64_t* c1 = as_const_int(sum->b)) {
        if (const auto* rhs = b.as<AddNode>()) {
          if (const int64_t* c2 = as_const_int(rhs->b)) {
            return mutate(
                AddNode::make(SubNode::make(sum->a, rhs->a), int_const(dt, i128(*c1) - *c2)));
          }
        }
        return mutate(AddNode::make(SubNode::make(sum->a, b), sum->b));
      }
    }
    // c1 - (x + c2) -> (c1 - c2) - x.
    if (const auto* rhs = b.as<AddNode>(); rhs && x) {
      if (const int64_t* c2 = as_const_int(rhs->b)) {
        return mutate(SubNode::make(int_const(dt, i128(*x) - *c2), rhs->a));
      }
    }
    // x - (y + c) -> (x - y) + (-c).
    if (const auto* rhs = b.as<AddNode>()) {
      if (const int64_t* c = as_const_int(rhs->b)) {
        return mutate(AddNode::make(SubNode::make(a, rhs->a), int_const(dt, -i128(*c))));
      }
    }
    return rebuild(op, a, b);
  }

  Expr visit(const MulNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    DType dt = op->dtype;
    if (is_floating(dt)) {
      const double *x = as_const_float(a), *y = as_const_float(b);
      if (x && y) return float_const(dt, *x * *y);
      if (x && !y) return mutate(MulNode::make(b, a));
      // x * 1.0 == x exactly (NaN, inf and -0.0 included); x * 0.0 is not 0.
      if (y && *y == 1.0) return a;
      return rebuild(op, a, b);
    }
    const int64_t *x = as_const_int(a), *y = as_const_int(b);
    if (x && y) return int_const(dt, i128(*x) * *y);
    if (x) return mutate(MulNode::make(b, a));
    if (y && *y == 0) return make_int(dt, 0);
    if (y && *y == 1) return a;
    if (y) {
      // (x * c1) * c2 -> x * (c1 c2); (x + c1) * c2 -> x*c2 + c1 c2: both
      // hold modulo 2^bits, so they are exact under wrapping.
      if (const auto* inner = a.as<MulNode>()) {
        if (const int64_t* c1 = as_const_int(inner->b)) {
          return mutate(MulNode::make(inner->a, int_const(dt, i128(*c1) * *y)));
        }
      }
      if (const auto* inner = a.as<AddNode>()) {
        if (const int64_t* c1 = as_const_int(inner->b)) {
          return mutate(AddNode::make(MulNode::make(inner->a, b), int_const(dt, i128(*c1) * *y)));
        }
      }
    }
    return rebuild(op, a, b);
  }

  Expr visit(const DivNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    DType dt = op->dtype;
    if (is_floating(dt)) {
      const double *x = as_const_float(a), *y = as_const_float(b);
      if (x && y) return float_const(dt, *x / *y);
      if (y && *y == 1.0) return a;
      return rebuild(op, a, b);
    }
    const int64_t *x = as_const_int(a), *y = as_const_int(b);
    // Division by zero is left for the program to hit.
    if (x && y && *y != 0) return int_const(dt, floor_div(*x, *y));
    if (y && *y == 1) return a;
    if (!y || *y <= 0) return rebuild(op, a, b);
    int64_t c = *y;
    // floor(a/c) is one constant when a's range does not straddle a multiple of c.
    Bounds ba = bounds(a);
    if (floor_div(ba.lo, c) == floor_div(ba.hi, c)) return int_const(dt, floor_div(ba.lo, c));
    // (x / c1) / c2 -> x / (c1 c2) for positive c1, c2: floor(floor(x/c1)/c2)
    // == floor(x/(c1 c2)).
    if (const auto* inner = a.as<DivNode>()) {
      const int64_t* c1 = as_const_int(inner->b);
      if (c1 && *c1 > 0 && i128(*c1) * c <= dtype_max(dt)) {
        return DivNode::make(inner->a, int_const(dt, i128(*c1) * c));
      }
    }
    // a = sum of terms. Split it into q*c (terms that are multiples of c)
    // plus r. When nothing wraps (a exact), floor((q*c + r)/c) = q + floor(r/c),
    // and floor(r/c) is a constant d when r's range allows only one:
    // (i*32 + j)/32 -> i for j in [0, 32); (x*8 - 3)/8 -> x - 1.
    if (ba.exact) {
      std::vector<Expr> terms, q, r;
      flatten_sum(a, &terms);
      for (const Expr& t : terms) {
        Expr qt = exact_quotient(t, c);
        (qt.defined() ? q : r).push_back(qt.defined() ? qt : t);
      }
      if (!q.empty()) {
        Bounds br = bounds(build_sum(dt, r));
        if (br.exact && floor_div(br.lo, c) == floor_div(br.hi, c)) {
          q.push_back(int_const(dt, floor_div(br.lo, c)));
          return mutate(build_sum(dt, q));
        }
      }
    }
    return rebuild(op, a, b);
  }

  Expr visit(const ModNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    DType dt = op->dtype;
    if (is_floating(dt)) return rebuild(op, a, b);
    const int64_t *x = as_const_int(a), *y = as_const_int(b);
    if (x && y && *y != 0) return int_const(dt, floor_mod(*x, *y));
    if (y && (*y == 1 || *y == -1)) return make_int(dt, 0);
    if (!y || *y <= 0) return rebuild(op, a, b);
    int64_t c = *y;
    // The lattice: a = m*k + r with c | m makes a % c the constant r mod c
    // ((x*8 + 3) % 8 -> 3, wrapping or not).
    ModulusRemainder f = mr(a);
    if (f.modulus > 0 && f.modulus % c == 0) return int_const(dt, floor_mod(f.remainder, c));
    // a % c == a on [0, c).
    Bounds ba = bounds(a);
    if (ba.lo >= 0 && ba.hi < c) return a;
    // (x % c1) % c -> x % c when c | c1 (both positive).
    if (const auto* inner = a.as<ModNode>()) {
      const int64_t* c1 = as_const_int(inner->b);
      if (c1 && *c1 > 0 && *c1 % c == 0) return mutate(ModNode::make(inner->a, b));
    }
    // Drop the terms of a sum that are multiples of c (by the lattice):
    // (t + r) % c == r % c. Exact when the sums do not wrap, or when c is a
    // power of two: wrapping then changes a sum by a multiple of 2^bits,
    // which c divides. (i*32 + j) % 32 -> j for j in [0, 32).
    std::vector<Expr> terms, rest;
    flatten_sum(a, &terms);
    for (const Expr& t : terms) {
      ModulusRemainder ft = mr(t);
      bool multiple =
          ft.modulus == 0 ? ft.remainder % c == 0 : ft.modulus % c == 0 && ft.remainder % c == 0;
      if (!multiple) rest.push_back(t);
    }
    if (rest.size() < terms.size()) {
      Expr r = build_sum(dt, rest);
      Bounds br = bounds(r);
      if (is_pow2(c) || (ba.exact && br.exact)) {
        if (br.lo >= 0 && br.hi < c) return mutate(r);
        return mutate(ModNode::make(r, b));
      }
    }
    return rebuild(op, a, b);
  }

  template <class Node>
  Expr min_max(const Node* op, bool is_min) {
    Expr a = mutate(op->a), b = mutate(op->b);
    DType dt = op->dtype;
    if (is_floating(dt)) {
      // Folded by the engines' rule (core/dtype.h float_minimum /
      // float_maximum: a NaN gives the quiet NaN, -0 < +0). min(x, x) is not
      // x when x is a NaN of another sign or payload, so it stays.
      const double *x = as_const_float(a), *y = as_const_float(b);
      if (x && y) return make_const(dt, is_min ? float_minimum(*x, *y) : float_maximum(*x, *y));
      return rebuild(op, a, b);
    }
    // min(x, x) == x for integers.
    if (structural_equal(a, b)) return a;
    if (as_const_int(a) && !as_const_int(b)) return mutate(Node::make(b, a));
    Bounds ba = bounds(a), bb = bounds(b);
    if (ba.hi <= bb.lo) return is_min ? a : b;
    if (bb.hi <= ba.lo) return is_min ? b : a;
    return rebuild(op, a, b);
  }
  Expr visit(const MinNode* op) override { return min_max(op, true); }
  Expr visit(const MaxNode* op) override { return min_max(op, false); }

  // ---- comparisons and logic ----

  template <class Node>
  Expr comparison(const Node* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    ExprKind kind = Node::kKind;
    const double *fx = as_const_float(a), *fy = as_const_float(b);
    if (fx && fy) {
      // C++ double comparisons are IEEE's: false with NaN except !=.
      bool v = kind == ExprKind::EQ   ? *fx == *fy
               : kind == ExprKind::NE ? *fx != *fy
               : kind == ExprKind::LT ? *fx < *fy
               : kind == ExprKind::LE ? *fx <= *fy
               : kind == ExprKind::GT ? *fx > *fy
                                      : *fx >= *fy;
      return make_bool(v);
    }
    // c < x -> x > c: swapping the operands of a comparison is exact.
    if (is_const(a) && !is_const(b)) {
      static constexpr ExprKind kSwapped[] = {ExprKind::EQ, ExprKind::NE, ExprKind::GT,
                                              ExprKind::GE, ExprKind::LT, ExprKind::LE};
      int i = static_cast<int>(kind) - static_cast<int>(ExprKind::EQ);
      return mutate(make_binary(kSwapped[i], b, a));
    }
    if (!is_floating(a.dtype())) {
      // x < x is false, x <= x true, ... (not for floats: NaN).
      if (structural_equal(a, b)) {
        return make_bool(kind == ExprKind::EQ || kind == ExprKind::LE || kind == ExprKind::GE);
      }
      Bounds t = compare(kind, a, b, bounds_);
      if (t.is(1)) return make_bool(true);
      if (t.is(0)) return make_bool(false);
    }
    return rebuild(op, a, b);
  }
  Expr visit(const EQNode* op) override { return comparison(op); }
  Expr visit(const NENode* op) override { return comparison(op); }
  Expr visit(const LTNode* op) override { return comparison(op); }
  Expr visit(const LENode* op) override { return comparison(op); }
  Expr visit(const GTNode* op) override { return comparison(op); }
  Expr visit(const GENode* op) override { return comparison(op); }

  // && and || evaluate both sides and have no effects, so a known operand
  // decides or disappears.
  Expr visit(const AndNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (is_int_const(a, 0) || is_int_const(b, 0)) return make_bool(false);
    if (is_int_const(a, 1)) return b;
    if (is_int_const(b, 1)) return a;
    if (structural_equal(a, b)) return a;
    return rebuild(op, a, b);
  }
  Expr visit(const OrNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (is_int_const(a, 1) || is_int_const(b, 1)) return make_bool(true);
    if (is_int_const(a, 0)) return b;
    if (is_int_const(b, 0)) return a;
    if (structural_equal(a, b)) return a;
    return rebuild(op, a, b);
  }

  Expr visit(const NotNode* op) override {
    Expr a = mutate(op->a);
    if (const int64_t* c = as_const_int(a)) return make_bool(*c == 0);
    if (const auto* inner = a.as<NotNode>()) return inner->a;
    // !(a == b) is a != b for every dtype (NaN != NaN is true). The order
    // comparisons only negate for integers: !(NaN < 1) is true, NaN >= 1 false.
    if (const auto* c = a.as<EQNode>()) return NENode::make(c->a, c->b);
    if (const auto* c = a.as<NENode>()) return EQNode::make(c->a, c->b);
#define TF_NEG(from, to)                                                     \
  if (const auto* c = a.as<from##Node>(); c && !is_floating(c->a.dtype())) { \
    return to##Node::make(c->a, c->b);                                       \
  }
    TF_NEG(LT, GE)
    TF_NEG(LE, GT)
    TF_NEG(GT, LE)
    TF_NEG(GE, LT)
#undef TF_NEG
    if (a.same_as(op->a)) return op;
    return NotNode::make(a);
  }

  Expr visit(const SelectNode* op) override {
    Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
    if (proven(c)) return t;
    if (disproven(c)) return f;
    if (structural_equal(t, f)) return t;
    if (op->dtype == DType::Bool && is_int_const(t, 1) && is_int_const(f, 0)) return c;
    if (op->dtype == DType::Bool && is_int_const(t, 0) && is_int_const(f, 1)) {
      return mutate(NotNode::make(c));
    }
    if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return op;
    return SelectNode::make(c, t, f);
  }

  // ---- casts and calls ----

  Expr visit(const CastNode* op) override {
    Expr v = mutate(op->value);
    DType to = op->dtype, from = v.dtype();
    if (to == from) return v;
    if (const int64_t* c = as_const_int(v)) {
      if (!is_floating(to)) return int_const(to, *c);
      // One rounding from the exact integer (doubles hold it below 2^53).
      if (*c <= (int64_t{1} << 53) && *c >= -(int64_t{1} << 53)) return float_const(to, double(*c));
    }
    if (const double* c = as_const_float(v)) {
      if (is_floating(to)) return float_const(to, *c);   // one rounding from the exact value
      if (to == DType::Bool) return make_bool(*c != 0);  // NaN is true
      // Truncate toward zero, then wrap; NaN and inf become 0 (dtype.h).
      if (!std::isfinite(*c)) return make_int(to, 0);
      if (std::fabs(*c) < 9.2e18) return int_const(to, static_cast<i128>(std::trunc(*c)));
    }
    // cast(T, cast(U, x)) -> cast(T, x) when x's dtype converts to U without
    // changing any value. (Never f16(f32(x64)): two roundings are not one.)
    if (const auto* inner = v.as<CastNode>()) {
      if (lossless(inner->value.dtype(), from)) {
        if (inner->value.dtype() == to) return inner->value;
        return CastNode::make(to, inner->value);
      }
    }
    if (v.same_as(op->value)) return op;
    return CastNode::make(to, v);
  }

  Expr visit(const CallNode* op) override {
    std::vector<Expr> args;
    bool changed = mutate_all(op->args, &args);
    DType dt = op->dtype;
    if (args.size() == 1) {
      const int64_t* ci = as_const_int(args[0]);
      const double* cf = as_const_float(args[0]);
      switch (op->op) {
        case Intrinsic::Neg:
          if (ci) return int_const(dt, -i128(*ci));
          if (cf) return float_const(dt, -*cf);
          if (const auto* inner = args[0].as<CallNode>(); inner && inner->op == Intrinsic::Neg) {
            return inner->args[0];
          }
          break;
        case Intrinsic::Abs:
          if (ci) return int_const(dt, *ci < 0 ? -i128(*ci) : i128(*ci));
          if (cf) return float_const(dt, std::fabs(*cf));
          break;
        // Exact (floor, ceil) or correctly rounded in double and rounded once
        // more innocuously (sqrt). Other intrinsics are left to the libm.
        case Intrinsic::Floor:
          if (cf) return float_const(dt, std::floor(*cf));
          break;
        case Intrinsic::Ceil:
          if (cf) return float_const(dt, std::ceil(*cf));
          break;
        case Intrinsic::Sqrt:
          if (cf) return float_const(dt, std::sqrt(*cf));
          break;
        default:
          break;
      }
    }
    if (!changed) return op;
    return CallNode::make(op->op, std::move(args));
  }

  // ---- memory ----

  Expr visit(const LoadNode* op) override {
    std::vector<Expr> idx;
    bool changed = mutate_all(op->indices, &idx);
    Expr mask = mutate_opt(op->mask), other = mutate_opt(op->other);
    if (mask.defined() && proven(mask)) {
      return LoadNode::make(op->buffer, std::move(idx));  // never masked off: `other` unused
    }
    if (mask.defined() && disproven(mask)) {
      return other.defined() ? other : make_const(op->dtype, 0);  // no access happens
    }
    if (!changed && mask.same_as(op->mask) && other.same_as(op->other)) return op;
    return LoadNode::make(op->buffer, std::move(idx), std::move(mask), std::move(other));
  }

  Expr visit(const HookLoadNode* op) override {
    std::vector<Expr> idx;
    bool changed = mutate_all(op->indices, &idx);
    Expr mask = mutate_opt(op->mask);
    if (mask.defined() && proven(mask)) return HookLoadNode::make(op->dtype, op->name, idx);
    if (mask.defined() && disproven(mask)) return make_const(op->dtype, 0);
    if (!changed && mask.same_as(op->mask)) return op;
    return HookLoadNode::make(op->dtype, op->name, std::move(idx), std::move(mask));
  }

  // ---- statements ----

  static Stmt nothing() {
    return make_seq({});
  }

  Stmt visit(const ForNode* op) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    const int64_t* n = as_const_int(extent);
    if (n && *n <= 0) return nothing();
    // One iteration: the body at var = min (a pipelined loop of one trip
    // has nothing to overlap either). Not for parallel loops: fragment
    // elements may only be accessed inside one (ir.h, "Scopes").
    if (n && *n == 1 && op->for_kind != ForKind::Parallel) {
      return mutate(substitute(op->body, op->var, min));
    }
    bind_range(op->var, min, extent);
    Stmt body = mutate(op->body);
    unbind(op->var);
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return op;
    return ForNode::make(op->var, min, extent, op->for_kind, op->num_stages, body);
  }

  Stmt visit(const IfThenElseNode* op) override {
    Expr cond = mutate(op->cond);
    if (proven(cond)) return mutate(op->then_case);
    if (disproven(cond)) return op->else_case.defined() ? mutate(op->else_case) : nothing();
    // Inside the then-branch every conjunct of cond holds; inside the else
    // branch cond does not. (Only ifs give facts: a check does not, since a
    // failed check need not stop the other program instances, ir.h.)
    Stmt t, e;
    {
      std::vector<Expr> conjuncts;
      split_and(cond, &conjuncts);
      Facts scope(this);
      for (const Expr& c : conjuncts) scope.assume(c, true);
      t = mutate(op->then_case);
    }
    if (op->else_case.defined()) {
      Facts scope(this);
      scope.assume(cond, false);
      e = mutate(op->else_case);
    }
    if (cond.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return op;
    return IfThenElseNode::make(cond, t, e);
  }

  static void split_and(const Expr& e, std::vector<Expr>* out) {
    if (const auto* a = e.as<AndNode>()) {
      split_and(a->a, out);
      split_and(a->b, out);
    } else {
      out->push_back(e);
    }
  }

  // Known truths of the enclosing branches, undone when the branch ends. A
  // known `v < c` (v an integer var, c a constant) also narrows v's range.
  class Facts {
   public:
    explicit Facts(Simplifier* s) : s_(s), n_(s->facts_.size()) {}
    ~Facts() {
      s_->facts_.resize(n_);
      for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
        if (it->second.has_value()) {
          s_->bounds_[it->first] = *it->second;
        } else {
          s_->bounds_.erase(it->first);
        }
      }
    }
    void assume(const Expr& cond, bool value) {
      // A condition that reads memory may change inside the branch (a store
      // to that buffer); vars never do.
      if (has_load(cond)) return;
      s_->facts_.emplace_back(cond, value);
      const VarNode* v = nullptr;
      const int64_t* c = nullptr;
      ExprKind kind = cond.kind();
      if (!is_comparison(kind) || kind == ExprKind::EQ || kind == ExprKind::NE) return;
#define TF_OPERANDS(name)                       \
  if (const auto* op = cond.as<name##Node>()) { \
    v = op->a.as<VarNode>();                    \
    c = as_const_int(op->b);                    \
  }
      TF_OPERANDS(LT)
      TF_OPERANDS(LE)
      TF_OPERANDS(GT) TF_OPERANDS(GE)
#undef TF_OPERANDS
          if (!v || !c || !is_int(v->dtype)) return;
      // A false comparison is its negation: !(v < c) is v >= c for integers.
      if (!value) {
        kind = kind == ExprKind::LT   ? ExprKind::GE
               : kind == ExprKind::LE ? ExprKind::GT
               : kind == ExprKind::GT ? ExprKind::LE
                                      : ExprKind::LT;
      }
      auto it = s_->bounds_.find(v);
      saved_.emplace_back(v, it == s_->bounds_.end() ? std::nullopt : std::optional(it->second));
      Bounds b = it == s_->bounds_.end() ? full(v->dtype, true) : it->second;
      switch (kind) {
        case ExprKind::LT:
          b.hi = std::min(b.hi, i128(*c) - 1);
          break;
        case ExprKind::LE:
          b.hi = std::min(b.hi, i128(*c));
          break;
        case ExprKind::GT:
          b.lo = std::max(b.lo, i128(*c) + 1);
          break;
        default:
          b.lo = std::max(b.lo, i128(*c));
          break;
      }
      if (b.lo > b.hi) b.hi = b.lo;  // unreachable code: any range is sound
      s_->bounds_[v] = b;
    }

   private:
    Simplifier* s_;
    size_t n_;
    std::vector<std::pair<const VarNode*, std::optional<Bounds>>> saved_;
  };

  // A bool expression equal to a known fact is that fact's value.
  Expr mutate(const Expr& e) override {
    Expr r = IRMutator::mutate(e);
    if (!facts_.empty() && r.dtype() == DType::Bool && !as_const_int(r)) {
      for (const auto& [fact, value] : facts_) {
        if (structural_equal(r, fact)) return make_bool(value);
      }
    }
    return r;
  }

  Stmt visit(const LetStmtNode* op) override {
    Expr value = mutate(op->value);
    // A constant or a var costs nothing to repeat; inlining it lets the
    // body fold with it.
    if (is_const(value) || value.as<VarNode>()) {
      return mutate(substitute(op->body, op->var, value));
    }
    if (is_int(value.dtype()) || value.dtype() == DType::Bool) {
      Bounds b = bounds(value);
      bind(op->var, {b.lo, b.hi, true});
      mr_[op->var.get()] = mr(value);
    }
    Stmt body = mutate(op->body);
    unbind(op->var);
    if (value.same_as(op->value) && body.same_as(op->body)) return op;
    return LetStmtNode::make(op->var, value, body);
  }

  Stmt visit(const StoreNode* op) override {
    std::vector<Expr> idx;
    bool changed = mutate_all(op->indices, &idx);
    Expr value = mutate(op->value), mask = mutate_opt(op->mask);
    if (mask.defined() && disproven(mask)) return nothing();  // writes nothing
    if (mask.defined() && proven(mask)) mask = Expr();
    if (!changed && value.same_as(op->value) && mask.same_as(op->mask)) return op;
    return StoreNode::make(op->buffer, std::move(idx), value, mask);
  }

  Stmt visit(const HookStoreNode* op) override {
    std::vector<Expr> idx;
    bool changed = mutate_all(op->indices, &idx);
    Expr value = mutate(op->value), mask = mutate_opt(op->mask);
    if (mask.defined() && disproven(mask)) return nothing();
    if (mask.defined() && proven(mask)) mask = Expr();
    if (!changed && value.same_as(op->value) && mask.same_as(op->mask)) return op;
    return HookStoreNode::make(op->name, std::move(idx), value, mask);
  }

  Stmt visit(const CopyNode* op) override {
    std::vector<Expr> extents;
    bool changed = mutate_all(op->extents, &extents);
    for (const Expr& e : extents) {
      if (const int64_t* n = as_const_int(e); n && *n <= 0) return nothing();
    }
    for (size_t i = 0; i < op->vars.size(); ++i) {
      bind_range(op->vars[i], make_int(op->vars[i].dtype(), 0), extents[i]);
    }
    std::vector<Expr> dst_idx;
    changed |= mutate_all(op->dst_indices, &dst_idx);
    Expr value = mutate(op->value);
    for (const Var& v : op->vars) unbind(v);
    if (!changed && value.same_as(op->value)) return op;
    return CopyNode::make(op->vars, std::move(extents), op->dst, std::move(dst_idx), value,
                          rebased_plan(op, value));
  }

  Stmt visit(const CheckNode* op) override {
    Expr cond = mutate(op->cond);
    if (proven(cond)) return nothing();  // can never fail
    std::vector<Expr> args;
    bool changed = mutate_all(op->args, &args);
    if (!changed && cond.same_as(op->cond)) return op;
    return CheckNode::make(cond, op->code, op->message, std::move(args), op->loc);
  }

  BoundsScope bounds_;
  ModulusRemainderScope mr_;
  std::vector<std::pair<Expr, bool>> facts_;
};

}  // namespace

Kernel simplify(const Kernel& kernel) {
  return Simplifier().run(kernel);
}
Stmt simplify(const Stmt& stmt) {
  return Simplifier().mutate(stmt);
}
Expr simplify(const Expr& expr) {
  Simplifier s;
  return static_cast<IRMutator&>(s).mutate(expr);
}

}  // namespace tilefuse::passes
