#include "reference/elementwise.h"

#include <cmath>
#include <type_traits>

#include "reference/element_access.h"
#include "reference/strided.h"

namespace tilefuse::reference {
namespace {

// ---------------------------------------------------------------------------
// Loops: read every operand as its compute type, apply `op`, write R.

template <typename R, typename C0, typename Op>
void map1(const Tensor& x, const Tensor& out, ThreadPool& pool, Op op) {
  const StridedOperand ox = broadcast_operand(x, out.shape());
  const StridedOperand oo = broadcast_operand(out, out.shape());
  const ReadFn<C0> read = reader<C0>(x.dtype());
  const WriteFn<R> write = writer<R>(out.dtype());
  pool.parallel_for(out.numel(), kElementGrain, [&](int64_t lo, int64_t hi) {
    for_each_element<2>(out.shape(), {&ox, &oo}, lo, hi,
                        [&](int64_t, const auto& p) { write(p[1], op(read(p[0]))); });
  });
}

template <typename R, typename C0, typename C1, typename Op>
void map2(const Tensor& a, const Tensor& b, const Tensor& out, ThreadPool& pool, Op op) {
  const StridedOperand oa = broadcast_operand(a, out.shape());
  const StridedOperand ob = broadcast_operand(b, out.shape());
  const StridedOperand oo = broadcast_operand(out, out.shape());
  const ReadFn<C0> read_a = reader<C0>(a.dtype());
  const ReadFn<C1> read_b = reader<C1>(b.dtype());
  const WriteFn<R> write = writer<R>(out.dtype());
  pool.parallel_for(out.numel(), kElementGrain, [&](int64_t lo, int64_t hi) {
    for_each_element<3>(out.shape(), {&oa, &ob, &oo}, lo, hi, [&](int64_t, const auto& p) {
      write(p[2], op(read_a(p[0]), read_b(p[1])));
    });
  });
}

template <typename R, typename C0, typename C1, typename C2, typename Op>
void map3(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& out, ThreadPool& pool,
          Op op) {
  const StridedOperand oa = broadcast_operand(a, out.shape());
  const StridedOperand ob = broadcast_operand(b, out.shape());
  const StridedOperand oc = broadcast_operand(c, out.shape());
  const StridedOperand oo = broadcast_operand(out, out.shape());
  const ReadFn<C0> read_a = reader<C0>(a.dtype());
  const ReadFn<C1> read_b = reader<C1>(b.dtype());
  const ReadFn<C2> read_c = reader<C2>(c.dtype());
  const WriteFn<R> write = writer<R>(out.dtype());
  pool.parallel_for(out.numel(), kElementGrain, [&](int64_t lo, int64_t hi) {
    for_each_element<4>(out.shape(), {&oa, &ob, &oc, &oo}, lo, hi, [&](int64_t, const auto& p) {
      write(p[3], op(read_a(p[0]), read_b(p[1]), read_c(p[2])));
    });
  });
}

// ---------------------------------------------------------------------------
// Scalar op definitions.

constexpr double kSqrtHalf = 0.70710678118654752440;  // M_SQRT1_2, PyTorch's kAlpha

template <typename F>
F gelu(F x) {
  return x * F(0.5) * (F(1) + std::erf(x * F(kSqrtHalf)));
}
template <typename F>
F silu(F x) {
  return x / (F(1) + std::exp(-x));
}
template <typename F>
F sigmoid(F x) {
  return F(1) / (F(1) + std::exp(-x));
}

// Integer arithmetic wraps (two's complement) instead of overflowing.
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// A floating-only function applied to C. For int64 (reachable only through a
// graph that did not promote, which the builders never produce) it runs in
// double and truncates, so every (op, compute type) pair is defined.
template <typename C, typename Fn>
C floating_fn(C x, Fn fn) {
  if constexpr (std::is_integral_v<C>) {
    return truncate_to_int64(fn(static_cast<double>(x)));
  } else {
    return fn(x);
  }
}
template <typename C, typename Fn>
C floating_fn2(C a, C b, Fn fn) {
  if constexpr (std::is_integral_v<C>) {
    return truncate_to_int64(fn(static_cast<double>(a), static_cast<double>(b)));
  } else {
    return fn(a, b);
  }
}

// torch.maximum / minimum: core/dtype.h's float_maximum / float_minimum on
// floats (a NaN gives the quiet NaN; -0 < +0), std::max / std::min on
// integers.
template <typename C>
C maximum(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return float_maximum(a, b);
  } else {
    return (a < b) ? b : a;
  }
}
template <typename C>
C minimum(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return float_minimum(a, b);
  } else {
    return (b < a) ? b : a;
  }
}

template <typename C>
void unary_typed(UnaryOp op, const Tensor& x, const Tensor& out, ThreadPool& pool) {
  constexpr bool kInt = std::is_integral_v<C>;
  switch (op) {
    case UnaryOp::Neg:
      return map1<C, C>(x, out, pool, [](C v) -> C {
        if constexpr (kInt) {
          return wrap_sub(0, v);
        } else {
          return -v;
        }
      });
    case UnaryOp::Relu:
      return map1<C, C>(x, out, pool, [](C v) -> C { return v < C(0) ? C(0) : v; });
    case UnaryOp::Gelu:
      return map1<C, C>(x, out, pool,
                        [](C v) { return floating_fn(v, [](auto y) { return gelu(y); }); });
    case UnaryOp::Silu:
      return map1<C, C>(x, out, pool,
                        [](C v) { return floating_fn(v, [](auto y) { return silu(y); }); });
    case UnaryOp::Sigmoid:
      return map1<C, C>(x, out, pool,
                        [](C v) { return floating_fn(v, [](auto y) { return sigmoid(y); }); });
    case UnaryOp::Tanh:
      return map1<C, C>(x, out, pool,
                        [](C v) { return floating_fn(v, [](auto y) { return std::tanh(y); }); });
    case UnaryOp::Exp:
      return map1<C, C>(x, out, pool,
                        [](C v) { return floating_fn(v, [](auto y) { return std::exp(y); }); });
    case UnaryOp::Log:
      return map1<C, C>(x, out, pool,
                        [](C v) { return floating_fn(v, [](auto y) { return std::log(y); }); });
    case UnaryOp::Sqrt:
      return map1<C, C>(x, out, pool,
                        [](C v) { return floating_fn(v, [](auto y) { return std::sqrt(y); }); });
    case UnaryOp::Abs:
      return map1<C, C>(x, out, pool, [](C v) -> C {
        if constexpr (kInt) {
          return v < 0 ? wrap_sub(0, v) : v;
        } else {
          return std::abs(v);
        }
      });
    case UnaryOp::LogicalNot:
      return map1<bool, C>(x, out, pool, [](C v) { return v == C(0); });
  }
  throw InternalError("unary_kernel: unknown op");
}

template <typename C>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out,
                  ThreadPool& pool) {
  constexpr bool kInt = std::is_integral_v<C>;
  switch (op) {
    case BinaryOp::Add:
      return map2<C, C, C>(a, b, out, pool, [](C x, C y) -> C {
        if constexpr (kInt) {
          return wrap_add(x, y);
        } else {
          return x + y;
        }
      });
    case BinaryOp::Sub:
      return map2<C, C, C>(a, b, out, pool, [](C x, C y) -> C {
        if constexpr (kInt) {
          return wrap_sub(x, y);
        } else {
          return x - y;
        }
      });
    case BinaryOp::Mul:
      return map2<C, C, C>(a, b, out, pool, [](C x, C y) -> C {
        if constexpr (kInt) {
          return wrap_mul(x, y);
        } else {
          return x * y;
        }
      });
    case BinaryOp::Div:
      return map2<C, C, C>(a, b, out, pool, [](C x, C y) {
        return floating_fn2(x, y, [](auto p, auto q) { return p / q; });
      });
    case BinaryOp::Maximum:
      return map2<C, C, C>(a, b, out, pool, [](C x, C y) { return maximum(x, y); });
    case BinaryOp::Minimum:
      return map2<C, C, C>(a, b, out, pool, [](C x, C y) { return minimum(x, y); });
    case BinaryOp::Hypot:
      return map2<C, C, C>(a, b, out, pool, [](C x, C y) {
        return floating_fn2(x, y, [](auto p, auto q) { return std::hypot(p, q); });
      });
    case BinaryOp::Eq:
      return map2<bool, C, C>(a, b, out, pool, [](C x, C y) { return x == y; });
    case BinaryOp::Ne:
      return map2<bool, C, C>(a, b, out, pool, [](C x, C y) { return x != y; });
    case BinaryOp::Lt:
      return map2<bool, C, C>(a, b, out, pool, [](C x, C y) { return x < y; });
    case BinaryOp::Le:
      return map2<bool, C, C>(a, b, out, pool, [](C x, C y) { return x <= y; });
    case BinaryOp::Gt:
      return map2<bool, C, C>(a, b, out, pool, [](C x, C y) { return x > y; });
    case BinaryOp::Ge:
      return map2<bool, C, C>(a, b, out, pool, [](C x, C y) { return x >= y; });
  }
  throw InternalError("binary_kernel: unknown op");
}

template <typename C>
C bound_as(double v) {
  if constexpr (std::is_integral_v<C>) {
    return truncate_to_int64(v);
  } else {
    return static_cast<C>(v);
  }
}

template <typename C>
void clamp_typed(const Tensor& x, std::optional<double> lo, std::optional<double> hi,
                 const Tensor& out, ThreadPool& pool) {
  const bool has_lo = lo.has_value(), has_hi = hi.has_value();
  const C l = bound_as<C>(lo.value_or(0)), h = bound_as<C>(hi.value_or(0));
  map1<C, C>(x, out, pool, [=](C v) {
    if (has_lo) v = (v < l) ? l : v;  // std::max(v, l)
    if (has_hi) v = (h < v) ? h : v;  // std::min(v, h)
    return v;
  });
}

template <typename C>
void where_typed(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out,
                 ThreadPool& pool) {
  map3<C, bool, C, C>(cond, a, b, out, pool, [](bool c, C x, C y) { return c ? x : y; });
}

}  // namespace

void unary_kernel(UnaryOp op, Compute compute, const Tensor& x, const Tensor& out,
                  ThreadPool& pool) {
  switch (compute) {
    case Compute::kFloat:
      return unary_typed<float>(op, x, out, pool);
    case Compute::kDouble:
      return unary_typed<double>(op, x, out, pool);
    case Compute::kInt64:
      return unary_typed<int64_t>(op, x, out, pool);
  }
}

void binary_kernel(BinaryOp op, Compute compute, const Tensor& a, const Tensor& b,
                   const Tensor& out, ThreadPool& pool) {
  switch (compute) {
    case Compute::kFloat:
      return binary_typed<float>(op, a, b, out, pool);
    case Compute::kDouble:
      return binary_typed<double>(op, a, b, out, pool);
    case Compute::kInt64:
      return binary_typed<int64_t>(op, a, b, out, pool);
  }
}

void where_kernel(Compute compute, const Tensor& cond, const Tensor& a, const Tensor& b,
                  const Tensor& out, ThreadPool& pool) {
  switch (compute) {
    case Compute::kFloat:
      return where_typed<float>(cond, a, b, out, pool);
    case Compute::kDouble:
      return where_typed<double>(cond, a, b, out, pool);
    case Compute::kInt64:
      return where_typed<int64_t>(cond, a, b, out, pool);
  }
}

void clamp_kernel(Compute compute, const Tensor& x, std::optional<double> lo,
                  std::optional<double> hi, const Tensor& out, ThreadPool& pool) {
  switch (compute) {
    case Compute::kFloat:
      return clamp_typed<float>(x, lo, hi, out, pool);
    case Compute::kDouble:
      return clamp_typed<double>(x, lo, hi, out, pool);
    case Compute::kInt64:
      return clamp_typed<int64_t>(x, lo, hi, out, pool);
  }
}

void convert_kernel(const Tensor& in, const Tensor& out, ThreadPool& pool) {
  if (is_floating(in.dtype())) {
    map1<double, double>(in, out, pool, [](double v) { return v; });
  } else {
    map1<int64_t, int64_t>(in, out, pool, [](int64_t v) { return v; });
  }
}

}  // namespace tilefuse::reference
