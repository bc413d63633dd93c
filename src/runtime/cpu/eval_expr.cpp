// Batched evaluation of Tile IR expressions (see eval.h for the value
// representation). One closure class per node kind; the kind switch is
// generated from TILEFUSE_FOR_EACH_TIR_EXPR, so a new kind without a
// `compile` overload does not build.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "runtime/cpu/eval.h"

namespace tilefuse::runtime::cpu {

using tir::ExprKind;
using tir::Intrinsic;

int SlotMap::var_slot(const tir::Var& v) {
  auto [it, inserted] = vars.emplace(v.get(), static_cast<int>(vars.size()));
  return it->second;
}

int SlotMap::buffer_slot(const tir::Buffer& b) {
  auto [it, inserted] = buffers.emplace(b.get(), static_cast<int>(buffers.size()));
  return it->second;
}

Frame SlotMap::make_frame() const {
  Frame f;
  f.var_lanes.resize(vars.size() * kMaxLanes);
  f.uniform.assign(vars.size(), 1);
  f.buffers.resize(buffers.size());
  f.alloc_memory.resize(buffers.size());
  return f;
}

double round_float(DType dt, double v) {
  if (dt == DType::F32) return static_cast<double>(static_cast<float>(v));
  if (dt == DType::F64) return v;
  return round_to(dt, v);
}

int64_t wrap_int(DType dt, int64_t v) {
  switch (dt) {
    case DType::Bool:
      return v != 0;
    case DType::U8:
      return static_cast<uint8_t>(v);
    case DType::I8:
      return static_cast<int8_t>(v);
    case DType::I32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}

namespace {

// A float -> integer conversion: truncate toward zero, then wrap modulo
// 2^64 (and then to the dtype); NaN and +-inf give 0 (core/dtype.h).
int64_t float_to_int(double v) {
  if (!std::isfinite(v)) return 0;
  double t = std::trunc(v);
  if (t >= -9.2e18 && t <= 9.2e18) return static_cast<int64_t>(t);
  double m = std::fmod(t, 18446744073709551616.0);  // exact
  if (m < 0) m += 18446744073709551616.0;
  if (m >= 9223372036854775808.0) m -= 18446744073709551616.0;
  return static_cast<int64_t>(m);
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) return 0;  // no trap: see executor.h
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

template <class T>
T float_mod(T a, T b) {
  T r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

template <class T>
T nan_min(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return a < b ? a : b;
}
template <class T>
T nan_max(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return a > b ? a : b;
}

template <ExprKind K>
constexpr bool kAlwaysFalse = false;

// ---- leaves -------------------------------------------------------------

struct ConstCode final : ExprCode {
  Lane value;
  ConstCode(DType dt, Lane v) : ExprCode(dt), value(v) {}
  void eval(Frame&, int n, const Lane*, Lane* out) const override {
    for (int l = 0; l < n; ++l) out[l] = value;
  }
};

struct VarCode final : ExprCode {
  int slot;
  VarCode(DType dt, int s) : ExprCode(dt), slot(s) {}
  void eval(Frame& f, int n, const Lane*, Lane* out) const override {
    const Lane* src = f.lanes(slot);
    if (f.uniform[slot]) {
      for (int l = 0; l < n; ++l) out[l] = src[0];
    } else {
      std::memcpy(out, src, sizeof(Lane) * n);
    }
  }
};

// ---- arithmetic -----------------------------------------------------------

template <ExprKind K>
struct BinaryCode final : ExprCode {
  ExprPtr a, b;
  DType operand;  // the operands' dtype
  BinaryCode(DType dt, DType op, ExprPtr a_, ExprPtr b_)
      : ExprCode(dt), a(std::move(a_)), b(std::move(b_)), operand(op) {}

  // The op on one lane of integers / bools (exact in int64 before wrapping:
  // unsigned arithmetic wraps without UB).
  static int64_t int_op(int64_t x, int64_t y) {
    using U = uint64_t;
    if constexpr (K == ExprKind::Add) return static_cast<int64_t>(U(x) + U(y));
    else if constexpr (K == ExprKind::Sub) return static_cast<int64_t>(U(x) - U(y));
    else if constexpr (K == ExprKind::Mul) return static_cast<int64_t>(U(x) * U(y));
    else if constexpr (K == ExprKind::Div) return floor_div(x, y);
    else if constexpr (K == ExprKind::Mod) return floor_mod(x, y);
    else if constexpr (K == ExprKind::Min) return x < y ? x : y;
    else if constexpr (K == ExprKind::Max) return x > y ? x : y;
    else if constexpr (K == ExprKind::EQ) return x == y;
    else if constexpr (K == ExprKind::NE) return x != y;
    else if constexpr (K == ExprKind::LT) return x < y;
    else if constexpr (K == ExprKind::LE) return x <= y;
    else if constexpr (K == ExprKind::GT) return x > y;
    else if constexpr (K == ExprKind::GE) return x >= y;
    else if constexpr (K == ExprKind::And) return (x != 0) & (y != 0);
    else if constexpr (K == ExprKind::Or) return (x != 0) | (y != 0);
    else static_assert(kAlwaysFalse<K>, "binary op without integer semantics");
  }
  // Arithmetic in T (float for f32, double otherwise); comparisons give 0/1.
  template <class T>
  static T float_op(T x, T y) {
    if constexpr (K == ExprKind::Add) return x + y;
    else if constexpr (K == ExprKind::Sub) return x - y;
    else if constexpr (K == ExprKind::Mul) return x * y;
    else if constexpr (K == ExprKind::Div) return x / y;
    else if constexpr (K == ExprKind::Mod) return float_mod(x, y);
    else if constexpr (K == ExprKind::Min) return nan_min(x, y);
    else if constexpr (K == ExprKind::Max) return nan_max(x, y);
    else if constexpr (K == ExprKind::EQ) return x == y;
    else if constexpr (K == ExprKind::NE) return x != y;
    else if constexpr (K == ExprKind::LT) return x < y;
    else if constexpr (K == ExprKind::LE) return x <= y;
    else if constexpr (K == ExprKind::GT) return x > y;
    else if constexpr (K == ExprKind::GE) return x >= y;
    else if constexpr (K == ExprKind::And) return (x != 0) && (y != 0);
    else if constexpr (K == ExprKind::Or) return (x != 0) || (y != 0);
    else static_assert(kAlwaysFalse<K>, "binary op without float semantics");
  }
  static constexpr bool kBoolResult = K == ExprKind::EQ || K == ExprKind::NE ||
                                      K == ExprKind::LT || K == ExprKind::LE ||
                                      K == ExprKind::GT || K == ExprKind::GE ||
                                      K == ExprKind::And || K == ExprKind::Or;

  void eval(Frame& f, int n, const Lane* active, Lane* out) const override {
    Lane y[kMaxLanes];
    a->eval(f, n, active, out);
    b->eval(f, n, active, y);
    if (!is_floating(operand)) {
      const DType dt = dtype;
      for (int l = 0; l < n; ++l) out[l].i = int_op(out[l].i, y[l].i);
      if (!kBoolResult && dt != DType::I64)
        for (int l = 0; l < n; ++l) out[l].i = wrap_int(dt, out[l].i);
    } else if (operand == DType::F32) {
      for (int l = 0; l < n; ++l) {
        const float r = float_op<float>(static_cast<float>(out[l].f), static_cast<float>(y[l].f));
        if constexpr (kBoolResult) out[l].i = r != 0;
        else out[l].f = r;
      }
    } else {
      for (int l = 0; l < n; ++l) {
        const double r = float_op<double>(out[l].f, y[l].f);
        if constexpr (kBoolResult) out[l].i = r != 0;
        else out[l].f = r;
      }
      if (!kBoolResult && operand != DType::F64)
        for (int l = 0; l < n; ++l) out[l].f = round_to(operand, out[l].f);
    }
  }
};

struct NotCode final : ExprCode {
  ExprPtr a;
  explicit NotCode(ExprPtr a_) : ExprCode(DType::Bool), a(std::move(a_)) {}
  void eval(Frame& f, int n, const Lane* active, Lane* out) const override {
    a->eval(f, n, active, out);
    for (int l = 0; l < n; ++l) out[l].i = out[l].i == 0;
  }
};

struct SelectCode final : ExprCode {
  ExprPtr c, t, e;
  SelectCode(DType dt, ExprPtr c_, ExprPtr t_, ExprPtr e_)
      : ExprCode(dt), c(std::move(c_)), t(std::move(t_)), e(std::move(e_)) {}
  void eval(Frame& f, int n, const Lane* active, Lane* out) const override {
    Lane cond[kMaxLanes], other[kMaxLanes];
    c->eval(f, n, active, cond);
    t->eval(f, n, active, out);
    e->eval(f, n, active, other);
    for (int l = 0; l < n; ++l)
      if (!cond[l].i) out[l] = other[l];
  }
};

struct CastCode final : ExprCode {
  ExprPtr v;
  CastCode(DType dt, ExprPtr v_) : ExprCode(dt), v(std::move(v_)) {}
  void eval(Frame& f, int n, const Lane* active, Lane* out) const override {
    v->eval(f, n, active, out);
    const DType from = v->dtype, to = dtype;
    const bool ff = is_floating(from), tf = is_floating(to);
    if (to == DType::Bool) {
      for (int l = 0; l < n; ++l) out[l].i = ff ? out[l].f != 0 : out[l].i != 0;
    } else if (ff && tf) {
      if (to != from)
        for (int l = 0; l < n; ++l) out[l].f = round_float(to, out[l].f);
    } else if (ff) {
      for (int l = 0; l < n; ++l) out[l].i = wrap_int(to, float_to_int(out[l].f));
    } else if (tf) {
      // int64 -> float directly: going through double first could round twice.
      for (int l = 0; l < n; ++l)
        out[l].f = to == DType::F32 ? static_cast<double>(static_cast<float>(out[l].i))
                                    : round_float(to, static_cast<double>(out[l].i));
    } else {
      for (int l = 0; l < n; ++l) out[l].i = wrap_int(to, out[l].i);
    }
  }
};

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// One intrinsic on one lane in T (float for f32 operands, double otherwise).
template <class T>
T intrinsic(Intrinsic op, T x, T y, T z) {
  switch (op) {
    case Intrinsic::Neg: return -x;
    case Intrinsic::Abs: return std::fabs(x);
    case Intrinsic::Exp: return std::exp(x);
    case Intrinsic::Exp2: return std::exp2(x);
    case Intrinsic::Log: return std::log(x);
    case Intrinsic::Log2: return std::log2(x);
    case Intrinsic::Sqrt: return std::sqrt(x);
    case Intrinsic::Rsqrt: return T(1) / std::sqrt(x);
    case Intrinsic::Tanh: return std::tanh(x);
    case Intrinsic::Erf: return std::erf(x);
    case Intrinsic::Sigmoid: return sigmoid(x);
    case Intrinsic::Sin: return std::sin(x);
    case Intrinsic::Cos: return std::cos(x);
    case Intrinsic::Floor: return std::floor(x);
    case Intrinsic::Ceil: return std::ceil(x);
    case Intrinsic::Hypot: return std::hypot(x, y);
    case Intrinsic::Pow: return std::pow(x, y);
    case Intrinsic::Fma: return std::fma(x, y, z);
  }
  return x;
}

// Every intrinsic must be handled above: this switch fails -Wswitch (an
// error in our build) when the list grows.
[[maybe_unused]] constexpr bool intrinsic_listed(Intrinsic op) {
  switch (op) {
#define TF_CASE(name, ...) case Intrinsic::name:
    TILEFUSE_FOR_EACH_TIR_INTRINSIC(TF_CASE)
#undef TF_CASE
    return true;
  }
  return false;
}

struct CallCode final : ExprCode {
  Intrinsic op;
  std::vector<ExprPtr> args;
  CallCode(DType dt, Intrinsic o, std::vector<ExprPtr> a)
      : ExprCode(dt), op(o), args(std::move(a)) {}
  void eval(Frame& f, int n, const Lane* active, Lane* out) const override {
    Lane y[kMaxLanes], z[kMaxLanes];
    args[0]->eval(f, n, active, out);
    if (args.size() > 1) args[1]->eval(f, n, active, y);
    if (args.size() > 2) args[2]->eval(f, n, active, z);
    const int arity = static_cast<int>(args.size());
    if (!is_floating(dtype)) {  // neg / abs on integers: wrap
      for (int l = 0; l < n; ++l) {
        const uint64_t x = static_cast<uint64_t>(out[l].i);
        const bool negate = op == Intrinsic::Neg || out[l].i < 0;
        out[l].i = wrap_int(dtype, static_cast<int64_t>(negate ? 0 - x : x));
      }
    } else if (dtype == DType::F32) {
      for (int l = 0; l < n; ++l) {
        const float x = static_cast<float>(out[l].f);
        const float yy = arity > 1 ? static_cast<float>(y[l].f) : 0.f;
        const float zz = arity > 2 ? static_cast<float>(z[l].f) : 0.f;
        out[l].f = intrinsic<float>(op, x, yy, zz);
      }
    } else {
      for (int l = 0; l < n; ++l) {
        const double r = intrinsic<double>(op, out[l].f, arity > 1 ? y[l].f : 0.0,
                                           arity > 2 ? z[l].f : 0.0);
        out[l].f = dtype == DType::F64 ? r : round_to(dtype, r);
      }
    }
  }
};

struct LoadCode final : ExprCode {
  int slot;
  std::vector<ExprPtr> indices;
  ExprPtr mask, other;
  LoadCode(DType dt, int s) : ExprCode(dt), slot(s) {}
  void eval(Frame& f, int n, const Lane* active, Lane* out) const override {
    // The lanes that access memory: active ones where the mask holds. Index
    // expressions (gathers) only need to be valid there.
    Lane m[kMaxLanes];
    const Lane* on = active;
    if (mask) {
      mask->eval(f, n, active, m);
      if (active)
        for (int l = 0; l < n; ++l) m[l].i &= active[l].i;
      on = m;
    }
    Lane idx[kMaxRank][kMaxLanes];
    const Lane* idx_ptrs[kMaxRank];
    for (size_t d = 0; d < indices.size(); ++d) {
      indices[d]->eval(f, n, on, idx[d]);
      idx_ptrs[d] = idx[d];
    }
    int64_t offsets[kMaxLanes];
    const BufferView& view = f.buffers[slot];
    element_offsets(view, idx_ptrs, n, on, offsets);
    if (mask) {
      if (other) {
        other->eval(f, n, active, out);
      } else {
        for (int l = 0; l < n; ++l) out[l].i = 0;  // 0 and 0.0 share the bits
      }
    }
    read_elements(view, offsets, n, on, out);
  }
};

// ---- compilation ------------------------------------------------------------

struct Compiler {
  SlotMap& slots;

  ExprPtr compile(const tir::IntImmNode* op) {
    Lane v;
    v.i = op->value;
    return std::make_unique<ConstCode>(op->dtype, v);
  }
  ExprPtr compile(const tir::FloatImmNode* op) {
    Lane v;
    v.f = round_float(op->dtype, op->value);
    return std::make_unique<ConstCode>(op->dtype, v);
  }
  ExprPtr compile(const tir::VarNode* op) {
    auto it = slots.vars.find(op);
    TF_CHECK(it != slots.vars.end(), "cpu executor: var `" + op->name + "` used unbound");
    return std::make_unique<VarCode>(op->dtype, it->second);
  }
  template <ExprKind K>
  ExprPtr compile(const tir::BinaryOpNode<K>* op) {
    return std::make_unique<BinaryCode<K>>(op->dtype, op->a.dtype(), compile_expr(op->a, slots),
                                           compile_expr(op->b, slots));
  }
  ExprPtr compile(const tir::NotNode* op) {
    return std::make_unique<NotCode>(compile_expr(op->a, slots));
  }
  ExprPtr compile(const tir::SelectNode* op) {
    return std::make_unique<SelectCode>(op->dtype, compile_expr(op->cond, slots),
                                        compile_expr(op->true_value, slots),
                                        compile_expr(op->false_value, slots));
  }
  ExprPtr compile(const tir::CastNode* op) {
    return std::make_unique<CastCode>(op->dtype, compile_expr(op->value, slots));
  }
  ExprPtr compile(const tir::CallNode* op) {
    TF_CHECK(intrinsic_listed(op->op), "cpu executor: unknown intrinsic");
    TF_CHECK(op->args.size() == static_cast<size_t>(tir::intrinsic_arity(op->op)),
             "cpu executor: intrinsic arity");
    std::vector<ExprPtr> args;
    for (const tir::Expr& a : op->args) args.push_back(compile_expr(a, slots));
    return std::make_unique<CallCode>(op->dtype, op->op, std::move(args));
  }
  ExprPtr compile(const tir::LoadNode* op) {
    auto it = slots.buffers.find(op->buffer.get());
    TF_CHECK(it != slots.buffers.end(),
             "cpu executor: buffer `" + op->buffer.name() + "` used undeclared");
    TF_CHECK(op->indices.size() <= static_cast<size_t>(kMaxRank), "cpu executor: rank > 8");
    auto code = std::make_unique<LoadCode>(op->dtype, it->second);
    for (const tir::Expr& i : op->indices) code->indices.push_back(compile_expr(i, slots));
    if (op->mask.defined()) code->mask = compile_expr(op->mask, slots);
    if (op->other.defined()) code->other = compile_expr(op->other, slots);
    return code;
  }
  ExprPtr compile(const tir::HookLoadNode* op) {
    throw InternalError("cpu executor: load_input(\"" + op->name +
                        "\") left in the kernel; run inline_hooks first");
  }
};

}  // namespace

ExprPtr compile_expr(const tir::Expr& e, SlotMap& slots) {
  TF_CHECK(e.defined(), "cpu executor: undefined expression");
  Compiler c{slots};
  switch (e.kind()) {
#define TF_CASE(name, ...) \
  case ExprKind::name:     \
    return c.compile(static_cast<const tir::name##Node*>(e.get()));
    TILEFUSE_FOR_EACH_TIR_EXPR(TF_CASE)
#undef TF_CASE
  }
  throw InternalError("cpu executor: unknown expression kind");
}

}  // namespace tilefuse::runtime::cpu
