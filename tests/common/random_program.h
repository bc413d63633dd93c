// Random programs built with the Graph API, shared by the schedule, lowering
// and property tests: random prologue chains on either operand (gathers of
// rows/columns, slices, transposes, broadcasts, casts, int8 dequant,
// elementwise ops, shared producers), random epilogues, batched GEMMs, GEMMs
// feeding GEMMs and extra outputs, so every plan shape the schedule builds
// reaches the templates and the executor.
//
// The default options give the original generator's programs draw for draw
// (the schedule and lowering tests' fixed seeds keep their programs); the
// property test turns on the rest (RandomProgramOptions).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tilefuse::testing {

inline Shape with_leading_dim(int64_t d, Shape s) {
  s.insert(s.begin(), d);
  return s;
}

struct RandomProgramOptions {
  // Dims are drawn from [1, 6], or from [0, max_dim] when max_dim > 0 (tile
  // tails and empty GEMMs).
  int64_t max_dim = 0;
  // The chance that a dim is 0 or 1 instead (half each), so empty and
  // degenerate GEMMs come up often even with a large max_dim.
  double edge_dim_chance = 0;
  // The chance that an index parameter ranges over [-size, size) (PyTorch's
  // negative indices, wrapped by the kernels) instead of [0, size).
  double negative_index_chance = 0;
  // Epilogues also draw scalings (x * c, x / c) and activations (relu, gelu,
  // silu, tanh, sigmoid).
  bool more_epilogues = false;
  // The chance of a batched GEMM (the default's 0.15 when negative).
  double batched_chance = -1;
  // The chance of a GEMM feeding a GEMM (the default's 0.3 when negative).
  double chained_gemm_chance = -1;
};

class RandomProgram {
 public:
  explicit RandomProgram(uint64_t seed, int64_t max_dim = 0) : rng_(seed) {
    opts_.max_dim = max_dim;
  }
  RandomProgram(uint64_t seed, const RandomProgramOptions& options)
      : rng_(seed), opts_(options) {}

  Graph build() {
    const int64_t m = dim(), n = dim(), k = dim();
    const DType dt = pick({DType::F32, DType::F16, DType::BF16});
    ValueId out;
    if (chance(opts_.batched_chance < 0 ? 0.15 : opts_.batched_chance)) {
      // Batched: a per-batch gather of A's rows, B a parameter or a view.
      const int64_t batch = 1 + pick(3);
      const ValueId x = param(dt, {batch, m + 2, k});
      const ValueId a = g_.index(x, 1, index_param(m, m + 2), {});
      const ValueId b =
          chance(0.5) ? param(dt, {batch, k, n}) : g_.transpose(param(dt, {batch, n, k}), 1, 2, {});
      out = epilogue(g_.matmul(cast_to(elementwise_chain(a, dt), dt), b, {}), dt);
    } else {
      const ValueId a = operand(m, k, dt);
      const ValueId b = chance(0.2) && m == k && n == k ? a : operand(k, n, dt);
      ValueId mm;
      if (chance(0.2)) {
        const ValueId bias = chance(0.5) ? param(dt, {n}) : param(dt, {m, n});
        mm = g_.addmm(bias, a, b, 1.0, chance(0.5) ? 1.0 : 0.5, {});
      } else {
        mm = g_.matmul(a, b, {});
      }
      out = epilogue(mm, dt);
      if (chance(opts_.chained_gemm_chance < 0 ? 0.3 : opts_.chained_gemm_chance)) {
        // A GEMM feeding a GEMM, on either side.
        const int64_t p = dim();
        const ValueId r = cast_to(out, dt);
        if (chance(0.5)) {
          out = g_.matmul(r, operand(n, p, dt), {});
        } else {
          out = g_.matmul(operand(p, m, dt), r, {});
        }
        out = epilogue(out, dt);
      }
    }
    g_.add_output(out);
    for (ValueId v : extra_outputs_) g_.add_output(v);
    if (chance(0.1)) g_.add_output(g_.parameters()[0]);
    if (chance(0.1)) g_.add_output(g_.transpose(out, 0, -1, {}));
    return std::move(g_);
  }

 private:
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int64_t pick(int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng_); }
  template <typename T>
  T pick(std::initializer_list<T> options) {
    return options.begin()[pick(static_cast<int64_t>(options.size()))];
  }
  int64_t dim() {
    if (opts_.edge_dim_chance > 0 && chance(opts_.edge_dim_chance)) return pick(2);
    return opts_.max_dim > 0 ? pick(opts_.max_dim + 1) : 1 + pick(6);
  }

  // "p<N>", N the parameter's position.
  std::string next_name() const {
    std::string s = "p";
    s += std::to_string(g_.parameters().size());
    return s;
  }

  ValueId param(DType dt, const Shape& shape) {
    return g_.parameter(next_name(), dt, shape, std::nullopt, {});
  }

  // An index tensor of `len` values in [0, size): a parameter, sometimes an
  // elementwise expression of one (still a legal fused index), sometimes a
  // gather of a gather (R4 materializes it).
  ValueId index_param(int64_t len, int64_t size) {
    const DType it = pick({DType::I32, DType::I64});
    const int64_t lo =
        opts_.negative_index_chance > 0 && chance(opts_.negative_index_chance) ? -size : 0;
    const ValueId i = g_.parameter(next_name(), it, {len}, IntRange{lo, size}, {});
    if (chance(0.15)) {
      return g_.binary(BinaryOp::Maximum, i, g_.scalar(0, DType::I64, {}), {});
    }
    if (chance(0.1)) {
      const ValueId outer = g_.parameter(next_name(), it, {size}, IntRange{0, size}, {});
      return g_.index(outer, 0, i, {});
    }
    return i;
  }

  ValueId cast_to(ValueId v, DType dt) { return g_.node(v).dtype == dt ? v : g_.cast(v, dt, {}); }

  void maybe_output(ValueId v, double p) {
    if (chance(p)) extra_outputs_.push_back(v);
  }

  // A value of shape [rows, cols] and dtype `dt`, through a random prologue.
  ValueId operand(int64_t rows, int64_t cols, DType dt) {
    ValueId v;
    const DType src = pick({DType::F32, DType::F16, DType::BF16, dt, dt});
    switch (pick(8)) {
      case 0:  // a gather of rows
        v = g_.index(param(src, {rows + 2, cols}), 0, index_param(rows, rows + 2), {});
        break;
      case 1:  // a gather of columns
        v = g_.index(param(src, {rows, cols + 3}), 1, index_param(cols, cols + 3), {});
        break;
      case 2:  // a transpose
        v = g_.transpose(param(src, {cols, rows}), 0, 1, {});
        break;
      case 3:  // a strided slice of rows and a slice of columns
        v = g_.slice(param(src, {2 * rows + 1, cols + 1}), 0, 1, std::nullopt, 2, {});
        v = g_.slice(v, 1, 0, cols, 1, {});
        break;
      case 4:  // a broadcast row
        v = g_.expand(param(src, {1, cols}), {rows, cols}, {});
        break;
      case 5: {  // int8 dequant: cast, then a per-column scale
        v = g_.cast(param(DType::I8, {rows, cols}), dt, {});
        v = g_.binary(BinaryOp::Mul, v, param(dt, {cols}), {});
        break;
      }
      case 6: {  // a shared producer: reuse an earlier value of this shape
        for (ValueId p : pool_) {
          if (g_.node(p).shape == Shape{rows, cols}) return cast_to(elementwise_chain(p, dt), dt);
        }
        v = param(src, {rows, cols});
        break;
      }
      default:
        v = param(src, {rows, cols});
        break;
    }
    v = elementwise_chain(v, dt);
    pool_.push_back(v);
    maybe_output(v, 0.1);
    return cast_to(v, dt);
  }

  // 0-4 random elementwise ops on v (shape kept).
  ValueId elementwise_chain(ValueId v, DType dt) {
    const int n = static_cast<int>(pick(5));
    std::vector<ValueId> seen = {v};
    for (int i = 0; i < n; ++i) {
      v = elementwise(v, seen, dt);
      seen.push_back(v);
      maybe_output(v, 0.05);
    }
    return v;
  }

  ValueId elementwise(ValueId v, const std::vector<ValueId>& earlier, DType dt) {
    const Shape& shape = g_.node(v).shape;
    switch (pick(8)) {
      case 0:
        return g_.unary(pick({UnaryOp::Relu, UnaryOp::Neg, UnaryOp::Exp, UnaryOp::Sigmoid,
                              UnaryOp::Tanh, UnaryOp::Gelu, UnaryOp::Abs}),
                        v, {});
      case 1:
        return g_.binary(pick({BinaryOp::Add, BinaryOp::Mul, BinaryOp::Sub, BinaryOp::Div}), v,
                         g_.scalar(1.5, DType::F64, {}), {});
      case 2:  // a broadcast tensor operand (a per-column vector)
        return g_.binary(pick({BinaryOp::Add, BinaryOp::Mul, BinaryOp::Maximum}), v,
                         param(pick({g_.node(v).dtype, dt}), {shape.back()}), {});
      case 3:  // a DAG: combine with an earlier value of the chain
        return g_.binary(BinaryOp::Add, v, earlier[pick(static_cast<int64_t>(earlier.size()))], {});
      case 4:
        return g_.clamp(v, -1.0, 1.0, {});
      case 5: {
        const ValueId cond = g_.binary(BinaryOp::Gt, v, g_.scalar(0, DType::I64, {}), {});
        return g_.where(cond, v, g_.scalar(0.25, DType::F64, {}), {});
      }
      case 6:
        return g_.cast(v, pick({DType::F32, DType::F16, DType::BF16}), {});
      default:
        return g_.unary(UnaryOp::Silu, v, {});
    }
  }

  // 0-4 random epilogue ops: bias vectors, full tensors, scalars, casts,
  // activations; extra outputs and second users stop the chain.
  ValueId epilogue(ValueId acc, DType dt) {
    ValueId v = acc;
    const Shape shape = g_.node(acc).shape;
    const int n = static_cast<int>(pick(5));
    for (int i = 0; i < n; ++i) {
      switch (pick(opts_.more_epilogues ? 8 : 6)) {
        case 0:
          v = g_.binary(BinaryOp::Add, v, param(pick({dt, DType::F32}), {shape.back()}), {});
          break;
        case 1:
          v = g_.binary(BinaryOp::Mul, v, param(dt, shape), {});
          break;
        case 2:  // a side input that is itself an expression (a cast of a vector)
          v = g_.binary(BinaryOp::Add, v, g_.cast(param(DType::F16, {shape.back()}), dt, {}), {});
          break;
        case 3:
          v = g_.cast(v, pick({DType::F32, DType::F16, DType::BF16}), {});
          break;
        case 4:  // a second user of the current value
          if (chance(0.5)) extra_outputs_.push_back(g_.unary(UnaryOp::Relu, v, {}));
          v = g_.unary(UnaryOp::Sigmoid, v, {});
          break;
        case 6:  // a scaling
          v = g_.binary(pick({BinaryOp::Mul, BinaryOp::Div}), v,
                        g_.scalar(pick({0.5, 2.0, 0.125}), DType::F64, {}), {});
          break;
        case 7:  // an activation
          v = g_.unary(pick({UnaryOp::Relu, UnaryOp::Gelu, UnaryOp::Silu, UnaryOp::Tanh,
                             UnaryOp::Sigmoid}),
                       v, {});
          break;
        default:
          v = elementwise(v, {v}, dt);
          break;
      }
      maybe_output(v, 0.1);
    }
    if (chance(0.1)) v = g_.binary(BinaryOp::Add, v, param(dt, with_leading_dim(2, shape)), {});
    return v;
  }

  std::mt19937_64 rng_;
  RandomProgramOptions opts_;
  Graph g_;
  std::vector<ValueId> pool_;
  std::vector<ValueId> extra_outputs_;
};

}  // namespace tilefuse::testing
