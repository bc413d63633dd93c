// Batched evaluation of Tile IR expressions (see eval.h for the value
// representation). One closure class per node kind; the kind switch is
// generated from TILEFUSE_FOR_EACH_TIR_EXPR, so a new kind without a
// `compile` overload does not build.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/stack_guard.h"
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
  f.affine.assign(vars.size(), 0);
  f.buffers.resize(buffers.size());
  f.alloc_memory.resize(buffers.size());
  f.packed.resize(buffers.size());
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

void wrap_lanes(DType dt, int n, Lane* out) {
  switch (dt) {
    case DType::U8:
      for (int l = 0; l < n; ++l) out[l].i = static_cast<uint8_t>(out[l].i);
      break;
    case DType::I8:
      for (int l = 0; l < n; ++l) out[l].i = static_cast<int8_t>(out[l].i);
      break;
    case DType::I32:
      for (int l = 0; l < n; ++l) out[l].i = static_cast<int32_t>(out[l].i);
      break;
    case DType::Bool:
      for (int l = 0; l < n; ++l) out[l].i = out[l].i != 0;
      break;
    default:
      break;
  }
}

bool ExprCode::prefix_mask(Frame& f, int n, int* count) const {
  // Any uniform bool is a prefix of all or nothing.
  Lane v[kMaxLanes];
  if (!eval_u(f, n, nullptr, v)) return false;
  *count = v[0].i ? n : 0;
  return true;
}

namespace {

// What check_stack names when an evaluation nests too deeply.
constexpr const char* kEvalWhat = "an expression evaluated by the CPU executor";

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

template <ExprKind K>
constexpr bool kAlwaysFalse = false;

// ---- leaves -------------------------------------------------------------

struct ConstCode final : ExprCode {
  Lane value;
  ConstCode(DType dt, Lane v) : ExprCode(dt), value(v) {}
  bool eval_u(Frame&, int, const Lane*, Lane* out) const override {
    out[0] = value;
    return true;
  }
};

struct VarCode final : ExprCode {
  int slot;
  VarCode(DType dt, int s) : ExprCode(dt), slot(s) {}
  bool affine(Frame& f, int, int64_t* base) const override {
    if (!f.affine[slot]) return false;
    *base = f.lanes(slot)[0].i;
    return true;
  }
  bool eval_u(Frame& f, int n, const Lane*, Lane* out) const override {
    const Lane* src = f.lanes(slot);
    if (f.uniform[slot]) {
      out[0] = src[0];
      return true;
    }
    std::memcpy(out, src, sizeof(Lane) * n);
    return false;
  }
};

// ---- arithmetic -----------------------------------------------------------

// out[l] = op(out[l], y[l]) over the lanes that are not uniform; a uniform
// operand is read from its lane 0.
template <class Op>
[[gnu::always_inline]] inline bool zip(int n, bool ua, bool ub, Lane* out, const Lane* y, Op op) {
  if (ua && ub) {
    out[0] = op(out[0], y[0]);
    return true;
  }
  if (ua) {
    const Lane x = out[0];
    for (int l = 0; l < n; ++l) out[l] = op(x, y[l]);
  } else if (ub) {
    const Lane c = y[0];
    for (int l = 0; l < n; ++l) out[l] = op(out[l], c);
  } else {
    for (int l = 0; l < n; ++l) out[l] = op(out[l], y[l]);
  }
  return false;
}

template <ExprKind K>
struct BinaryCode final : ExprCode {
  ExprPtr a, b;
  DType operand;  // the operands' dtype
  bool float_operand;
  BinaryCode(DType dt, DType op, ExprPtr a_, ExprPtr b_)
      : ExprCode(dt),
        a(std::move(a_)),
        b(std::move(b_)),
        operand(op),
        float_operand(is_floating(op)) {}

  // The op on one lane of integers / bools (exact in int64 before wrapping:
  // unsigned arithmetic wraps without UB).
  static int64_t int_op(int64_t x, int64_t y) {
    using U = uint64_t;
    if constexpr (K == ExprKind::Add)
      return static_cast<int64_t>(U(x) + U(y));
    else if constexpr (K == ExprKind::Sub)
      return static_cast<int64_t>(U(x) - U(y));
    else if constexpr (K == ExprKind::Mul)
      return static_cast<int64_t>(U(x) * U(y));
    else if constexpr (K == ExprKind::Div)
      return floor_div(x, y);
    else if constexpr (K == ExprKind::Mod)
      return floor_mod(x, y);
    else if constexpr (K == ExprKind::Min)
      return x < y ? x : y;
    else if constexpr (K == ExprKind::Max)
      return x > y ? x : y;
    else if constexpr (K == ExprKind::EQ)
      return x == y;
    else if constexpr (K == ExprKind::NE)
      return x != y;
    else if constexpr (K == ExprKind::LT)
      return x < y;
    else if constexpr (K == ExprKind::LE)
      return x <= y;
    else if constexpr (K == ExprKind::GT)
      return x > y;
    else if constexpr (K == ExprKind::GE)
      return x >= y;
    else if constexpr (K == ExprKind::And)
      return (x != 0) & (y != 0);
    else if constexpr (K == ExprKind::Or)
      return (x != 0) | (y != 0);
    else
      static_assert(kAlwaysFalse<K>, "binary op without integer semantics");
  }
  // Arithmetic in T (float for f32, double otherwise); comparisons give 0/1.
  template <class T>
  static T float_op(T x, T y) {
    if constexpr (K == ExprKind::Add)
      return x + y;
    else if constexpr (K == ExprKind::Sub)
      return x - y;
    else if constexpr (K == ExprKind::Mul)
      return x * y;
    else if constexpr (K == ExprKind::Div)
      return x / y;
    else if constexpr (K == ExprKind::Mod)
      return float_mod(x, y);
    else if constexpr (K == ExprKind::Min)
      return float_minimum(x, y);
    else if constexpr (K == ExprKind::Max)
      return float_maximum(x, y);
    else if constexpr (K == ExprKind::EQ)
      return x == y;
    else if constexpr (K == ExprKind::NE)
      return x != y;
    else if constexpr (K == ExprKind::LT)
      return x < y;
    else if constexpr (K == ExprKind::LE)
      return x <= y;
    else if constexpr (K == ExprKind::GT)
      return x > y;
    else if constexpr (K == ExprKind::GE)
      return x >= y;
    else if constexpr (K == ExprKind::And)
      return (x != 0) && (y != 0);
    else if constexpr (K == ExprKind::Or)
      return (x != 0) || (y != 0);
    else
      static_assert(kAlwaysFalse<K>, "binary op without float semantics");
  }
  static constexpr bool kBoolResult = K == ExprKind::EQ || K == ExprKind::NE || K == ExprKind::LT ||
                                      K == ExprKind::LE || K == ExprKind::GT || K == ExprKind::GE ||
                                      K == ExprKind::And || K == ExprKind::Or;

  // An integer value fits the result dtype at both ends of the batch.
  bool fits(int64_t lo, int64_t hi) const {
    return dtype == DType::I64 || (wrap_int(dtype, lo) == lo && wrap_int(dtype, hi) == hi);
  }
  // `a` affine and `b` uniform (or, for +, the other way round).
  bool affine_operands(Frame& f, int n, int64_t* base, int64_t* c, bool* a_affine) const {
    Lane v[kMaxLanes];
    if (a->affine(f, n, base)) {
      *a_affine = true;
      if (!b->eval_u(f, n, nullptr, v)) return false;
    } else if (b->affine(f, n, base)) {
      *a_affine = false;
      if (!a->eval_u(f, n, nullptr, v)) return false;
    } else {
      return false;
    }
    *c = v[0].i;
    return true;
  }
  bool affine(Frame& f, int n, int64_t* base) const override {
    if constexpr (K == ExprKind::Add || K == ExprKind::Sub) {
      if (float_operand || dtype == DType::Bool) return false;
      int64_t ab, c;
      bool a_affine;
      if (!affine_operands(f, n, &ab, &c, &a_affine)) return false;
      if (K == ExprKind::Sub && !a_affine) return false;  // c - (base + l) runs backwards
      if (c > (int64_t{1} << 60) || c < -(int64_t{1} << 60) || ab > (int64_t{1} << 60) ||
          ab < -(int64_t{1} << 60))
        return false;
      const int64_t lo = K == ExprKind::Add ? ab + c : ab - c;
      if (!fits(lo, lo + n - 1)) return false;
      *base = lo;
      return true;
    }
    return false;
  }
  bool prefix_mask(Frame& f, int n, int* count) const override {
    if constexpr (K == ExprKind::LT) {
      // base + l < c holds for l < c - base.
      int64_t ab, c;
      bool a_affine;
      if (!float_operand && affine_operands(f, n, &ab, &c, &a_affine) && a_affine) {
        *count = static_cast<int>(std::clamp<int64_t>(c - ab, 0, n));
        return true;
      }
    } else if constexpr (K == ExprKind::And) {
      int ca, cb;
      if (a->prefix_mask(f, n, &ca) && b->prefix_mask(f, n, &cb)) {
        *count = std::min(ca, cb);
        return true;
      }
      return false;
    }
    return ExprCode::prefix_mask(f, n, count);
  }

  bool eval_u(Frame& f, int n, const Lane* active, Lane* out) const override {
    check_stack(kEvalWhat);
    Lane y[kMaxLanes];
    const bool ua = a->eval_u(f, n, active, out);
    const bool ub = b->eval_u(f, n, active, y);
    bool u;
    if (!float_operand) {
      // The wrap to the dtype is fused into the loop (i32 and i64 are the
      // index types: the common cases).
      if (kBoolResult || dtype == DType::I64) {
        u = zip(n, ua, ub, out, y, [](Lane x, Lane z) {
          Lane r;
          r.i = int_op(x.i, z.i);
          return r;
        });
      } else if (dtype == DType::I32) {
        u = zip(n, ua, ub, out, y, [](Lane x, Lane z) {
          Lane r;
          r.i = static_cast<int32_t>(int_op(x.i, z.i));
          return r;
        });
      } else {
        u = zip(n, ua, ub, out, y, [](Lane x, Lane z) {
          Lane r;
          r.i = int_op(x.i, z.i);
          return r;
        });
        wrap_lanes(dtype, u ? 1 : n, out);
      }
    } else if (operand == DType::F32) {
      u = zip(n, ua, ub, out, y, [](Lane x, Lane z) {
        const float r = float_op<float>(static_cast<float>(x.f), static_cast<float>(z.f));
        Lane o;
        if constexpr (kBoolResult)
          o.i = r != 0;
        else
          o.f = r;
        return o;
      });
    } else {
      u = zip(n, ua, ub, out, y, [](Lane x, Lane z) {
        const double r = float_op<double>(x.f, z.f);
        Lane o;
        if constexpr (kBoolResult)
          o.i = r != 0;
        else
          o.f = r;
        return o;
      });
      if (!kBoolResult && operand != DType::F64)
        for (int l = 0; l < (u ? 1 : n); ++l) out[l].f = round_to(operand, out[l].f);
    }
    return u;
  }
};

struct NotCode final : ExprCode {
  ExprPtr a;
  explicit NotCode(ExprPtr a_) : ExprCode(DType::Bool), a(std::move(a_)) {}
  bool eval_u(Frame& f, int n, const Lane* active, Lane* out) const override {
    check_stack(kEvalWhat);
    const bool u = a->eval_u(f, n, active, out);
    for (int l = 0; l < (u ? 1 : n); ++l) out[l].i = out[l].i == 0;
    return u;
  }
};

struct SelectCode final : ExprCode {
  ExprPtr c, t, e;
  SelectCode(DType dt, ExprPtr c_, ExprPtr t_, ExprPtr e_)
      : ExprCode(dt), c(std::move(c_)), t(std::move(t_)), e(std::move(e_)) {}
  bool eval_u(Frame& f, int n, const Lane* active, Lane* out) const override {
    check_stack(kEvalWhat);
    Lane cond[kMaxLanes], other[kMaxLanes];
    const bool uc = c->eval_u(f, n, active, cond);
    // Both values are evaluated (nothing is short-circuit in the IR).
    const bool ut = t->eval_u(f, n, active, out);
    const bool ue = e->eval_u(f, n, active, other);
    if (uc) {
      if (cond[0].i) return ut;
      std::memcpy(out, other, sizeof(Lane) * (ue ? 1 : n));
      return ue;
    }
    if (ut)
      for (int l = 1; l < n; ++l) out[l] = out[0];
    if (ue)
      for (int l = 1; l < n; ++l) other[l] = other[0];
    for (int l = 0; l < n; ++l)
      if (!cond[l].i) out[l] = other[l];
    return false;
  }
};

struct LoadCode final : ExprCode {
  int slot;
  std::vector<ExprPtr> indices;
  ExprPtr mask, other;
  LoadCode(DType dt, int s) : ExprCode(dt), slot(s) {}

  const BufferView* contiguous_load(Frame& f, int n, int64_t* base, int* count) const override {
    if (other) return nullptr;
    *count = n;
    if (mask && !mask->prefix_mask(f, n, count)) return nullptr;
    const BufferView& view = f.buffers[slot];
    if (*count == 0) return &view;  // nothing is read
    // The address is only evaluated where the prefix is on, like a masked load.
    if (!contiguous_offset(f, view, indices, *count, base)) return nullptr;
    return &view;
  }

  const BufferView* plain_load(Frame& f, int n, Lane* m, const Lane** on,
                               int64_t* offsets) const override {
    if (other) return nullptr;
    *on = nullptr;
    if (mask) {
      if (mask->eval_u(f, n, nullptr, m)) {
        if (!m[0].i) {  // the whole batch is masked off
          for (int l = 0; l < n; ++l) m[l].i = 0;
        } else {
          m = nullptr;
        }
      }
      *on = m;
    }
    Lane idx[kMaxRank][kMaxLanes];
    const Lane* idx_ptrs[kMaxRank];
    bool idx_uniform[kMaxRank];
    for (size_t d = 0; d < indices.size(); ++d) {
      idx_uniform[d] = indices[d]->eval_u(f, n, *on, idx[d]);
      idx_ptrs[d] = idx[d];
    }
    const BufferView& view = f.buffers[slot];
    element_offsets(view, idx_ptrs, idx_uniform, n, *on, offsets);
    return &view;
  }
  bool eval_u(Frame& f, int n_all, const Lane* active, Lane* out) const override {
    check_stack(kEvalWhat);
    // The lanes that access memory: active ones where the mask holds. Index
    // expressions (gathers) only need to be valid there.
    Lane m[kMaxLanes];
    const Lane* on = active;
    bool uniform = active == nullptr;
    if (mask) {
      if (mask->eval_u(f, n_all, active, m)) {
        for (int l = 1; l < n_all; ++l) m[l] = m[0];
      } else {
        uniform = false;
      }
      if (active)
        for (int l = 0; l < n_all; ++l) m[l].i &= active[l].i;
      on = m;
    }
    Lane idx[kMaxRank][kMaxLanes];
    const Lane* idx_ptrs[kMaxRank];
    bool idx_uniform[kMaxRank];
    for (size_t d = 0; d < indices.size(); ++d) {
      idx_uniform[d] = indices[d]->eval_u(f, n_all, on, idx[d]);
      uniform = uniform && idx_uniform[d];
      idx_ptrs[d] = idx[d];
    }
    Lane o[kMaxLanes];
    bool uo = true;
    if (mask && other) uo = other->eval_u(f, n_all, active, o);
    uniform = uniform && uo;
    // A uniform address and mask: one access for the whole batch.
    const int n = uniform ? 1 : n_all;
    int64_t offsets[kMaxLanes];
    const BufferView& view = f.buffers[slot];
    element_offsets(view, idx_ptrs, idx_uniform, n, on, offsets);
    if (mask) {
      if (other) {
        for (int l = 0; l < n; ++l) out[l] = o[uo ? 0 : l];
      } else {
        for (int l = 0; l < n; ++l) out[l].i = 0;  // 0 and 0.0 share the bits
      }
    }
    read_elements(view, offsets, n, on, out);
    return uniform;
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
    return make_cast_code(op->dtype, compile_expr(op->value, slots));
  }
  ExprPtr compile(const tir::CallNode* op) {
    TF_CHECK(op->args.size() == static_cast<size_t>(tir::intrinsic_arity(op->op)),
             "cpu executor: intrinsic arity");
    std::vector<ExprPtr> args;
    for (const tir::Expr& a : op->args) args.push_back(compile_expr(a, slots));
    return make_call_code(op->dtype, op->op, std::move(args));
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
  check_stack("a Tile IR expression (CPU executor)");
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
