// Casts and math intrinsics of the CPU executor (see eval.h for the value
// representation). f32 math runs in float, f64 in double, narrower floats in
// double rounded once to their dtype.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/stack_guard.h"
#include "runtime/cpu/eval.h"

namespace tilefuse::runtime::cpu {

using tir::Intrinsic;

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

struct CastCode final : ExprCode {
  ExprPtr v;
  CastCode(DType dt, ExprPtr v_) : ExprCode(dt), v(std::move(v_)) {}
  bool eval_u(Frame& f, int n_all, const Lane* active, Lane* out) const override {
    check_stack("an expression evaluated by the CPU executor");
    const bool u = v->eval_u(f, n_all, active, out);
    const int n = u ? 1 : n_all;
    const DType from = v->dtype, to = dtype;
    const bool ff = is_floating(from), tf = is_floating(to);
    if (to == DType::Bool) {
      for (int l = 0; l < n; ++l) out[l].i = ff ? out[l].f != 0 : out[l].i != 0;
    } else if (ff && tf) {
      if (to != from)
        for (int l = 0; l < n; ++l) out[l].f = round_float(to, out[l].f);
    } else if (ff) {
      for (int l = 0; l < n; ++l) out[l].i = float_to_int(out[l].f);
      wrap_lanes(to, n, out);
    } else if (tf) {
      // int64 -> f64 in one rounding; to f32 and narrower through f32
      // (round_to's rule): int64 -> float directly, since going through
      // double first could round twice.
      for (int l = 0; l < n; ++l)
        out[l].f = to == DType::F64
                       ? static_cast<double>(out[l].i)
                       : round_float(to, static_cast<double>(static_cast<float>(out[l].i)));
    } else {
      wrap_lanes(to, n, out);
    }
    return u;
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
    case Intrinsic::Neg:
      return -x;
    case Intrinsic::Abs:
      return std::fabs(x);
    case Intrinsic::Exp:
      return std::exp(x);
    case Intrinsic::Exp2:
      return std::exp2(x);
    case Intrinsic::Log:
      return std::log(x);
    case Intrinsic::Log2:
      return std::log2(x);
    case Intrinsic::Sqrt:
      return std::sqrt(x);
    case Intrinsic::Rsqrt:
      return T(1) / std::sqrt(x);
    case Intrinsic::Tanh:
      return std::tanh(x);
    case Intrinsic::Erf:
      return std::erf(x);
    case Intrinsic::Sigmoid:
      return sigmoid(x);
    case Intrinsic::Sin:
      return std::sin(x);
    case Intrinsic::Cos:
      return std::cos(x);
    case Intrinsic::Floor:
      return std::floor(x);
    case Intrinsic::Ceil:
      return std::ceil(x);
    case Intrinsic::Hypot:
      return std::hypot(x, y);
    case Intrinsic::Pow:
      return std::pow(x, y);
    case Intrinsic::Fma:
      return std::fma(x, y, z);
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
  bool eval_u(Frame& f, int n_all, const Lane* active, Lane* out) const override {
    check_stack("an expression evaluated by the CPU executor");
    Lane y[kMaxLanes], z[kMaxLanes];
    Lane* dst[3] = {out, y, z};
    bool uniform[3] = {true, true, true};
    for (size_t i = 0; i < args.size(); ++i) uniform[i] = args[i]->eval_u(f, n_all, active, dst[i]);
    const bool u = uniform[0] && uniform[1] && uniform[2];
    const int n = u ? 1 : n_all;
    for (size_t i = 0; i < args.size() && !u; ++i)
      if (uniform[i])
        for (int l = 1; l < n; ++l) dst[i][l] = dst[i][0];
    const int arity = static_cast<int>(args.size());
    if (!is_floating(dtype)) {  // neg / abs on integers: wrap
      for (int l = 0; l < n; ++l) {
        const uint64_t x = static_cast<uint64_t>(out[l].i);
        const bool negate = op == Intrinsic::Neg || out[l].i < 0;
        out[l].i = static_cast<int64_t>(negate ? 0 - x : x);
      }
      wrap_lanes(dtype, n, out);
    } else if (dtype == DType::F32) {
      for (int l = 0; l < n; ++l) {
        const float x = static_cast<float>(out[l].f);
        const float yy = arity > 1 ? static_cast<float>(y[l].f) : 0.f;
        const float zz = arity > 2 ? static_cast<float>(z[l].f) : 0.f;
        out[l].f = intrinsic<float>(op, x, yy, zz);
      }
    } else {
      for (int l = 0; l < n; ++l) {
        const double r =
            intrinsic<double>(op, out[l].f, arity > 1 ? y[l].f : 0.0, arity > 2 ? z[l].f : 0.0);
        out[l].f = dtype == DType::F64 ? r : round_to(dtype, r);
      }
    }
    return u;
  }
};

}  // namespace

ExprPtr make_cast_code(DType dtype, ExprPtr value) {
  return std::make_unique<CastCode>(dtype, std::move(value));
}

ExprPtr make_call_code(DType dtype, Intrinsic op, std::vector<ExprPtr> args) {
  TF_CHECK(intrinsic_listed(op), "cpu executor: unknown intrinsic");
  return std::make_unique<CallCode>(dtype, op, std::move(args));
}

}  // namespace tilefuse::runtime::cpu
