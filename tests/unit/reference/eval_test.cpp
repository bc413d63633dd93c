// The reference evaluator's element-wise semantics, promotion, views, casts,
// oracle mode and relative_error, each against a naive implementation here.
#include "reference/eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"
#include "test_util.h"

namespace tilefuse {
namespace {

using testing_util::Lcg;
using testing_util::param;
using testing_util::random_tensor;
using testing_util::same_value;
using testing_util::tensor_of;
using testing_util::values;

constexpr DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

// The op in float, as PyTorch's opmath kernels write it.
float naive_unary(UnaryOp op, float x) {
  switch (op) {
    case UnaryOp::Neg:
      return -x;
    case UnaryOp::Relu:
      return x < 0 ? 0.0f : x;
    case UnaryOp::Gelu:
      return x * 0.5f * (1.0f + std::erf(x * 0.70710678118654752440f));
    case UnaryOp::Silu:
      return x / (1.0f + std::exp(-x));
    case UnaryOp::Sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case UnaryOp::Tanh:
      return std::tanh(x);
    case UnaryOp::Exp:
      return std::exp(x);
    case UnaryOp::Log:
      return std::log(x);
    case UnaryOp::Sqrt:
      return std::sqrt(x);
    case UnaryOp::Abs:
      return std::fabs(x);
    case UnaryOp::LogicalNot:
      return x == 0 ? 1.0f : 0.0f;
  }
  return 0;
}

float naive_binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::Add:
      return a + b;
    case BinaryOp::Sub:
      return a - b;
    case BinaryOp::Mul:
      return a * b;
    case BinaryOp::Div:
      return a / b;
    case BinaryOp::Maximum:
      return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? b : a);
    case BinaryOp::Minimum:
      return std::isnan(a) || std::isnan(b) ? NAN : (b < a ? b : a);
    case BinaryOp::Hypot:
      return std::hypot(a, b);
    case BinaryOp::Eq:
      return a == b;
    case BinaryOp::Ne:
      return a != b;
    case BinaryOp::Lt:
      return a < b;
    case BinaryOp::Le:
      return a <= b;
    case BinaryOp::Gt:
      return a > b;
    case BinaryOp::Ge:
      return a >= b;
  }
  return 0;
}

std::vector<UnaryOp> all_unary_ops() {
  return {
#define TF_X(e, name) UnaryOp::e,
      TILEFUSE_FOR_EACH_UNARY_OP(TF_X)
#undef TF_X
  };
}
std::vector<BinaryOp> all_binary_ops() {
  return {
#define TF_X(e, name) BinaryOp::e,
      TILEFUSE_FOR_EACH_BINARY_OP(TF_X)
#undef TF_X
  };
}

TEST(EvalElementwise, EveryUnaryOpRoundsTheFloatResultOnce) {
  for (DType dt : kFloatTypes) {
    for (UnaryOp op : all_unary_ops()) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::string(unary_op_name(op)));
      Graph g;
      const ValueId x = param(g, "x", dt, {37, 5});
      g.add_output(g.unary(op, x, {}));
      Lcg rng(17 + static_cast<int>(op));
      const bool positive = op == UnaryOp::Log || op == UnaryOp::Sqrt;
      const Tensor tx = random_tensor(dt, {37, 5}, rng, 3.0, positive);
      const Tensor out = evaluate(g, {tx}).at(0);
      const DType out_dt = op == UnaryOp::LogicalNot ? DType::Bool : dt;
      ASSERT_EQ(out.dtype(), out_dt);
      ASSERT_EQ(out.shape(), (Shape{37, 5}));
      for (int64_t i = 0; i < out.numel(); ++i) {
        const float xf = static_cast<float>(tx.get_linear(i));
        const double want = round_to(out_dt, naive_unary(op, xf));
        ASSERT_TRUE(same_value(out.get_linear(i), want))
            << "x=" << xf << " got " << out.get_linear(i) << " want " << want;
      }
    }
  }
}

TEST(EvalElementwise, EveryBinaryOpBroadcastsAndRoundsOnce) {
  for (DType dt : kFloatTypes) {
    for (BinaryOp op : all_binary_ops()) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::string(binary_op_name(op)));
      Graph g;
      const ValueId a = param(g, "a", dt, {7, 1, 5});
      const ValueId b = param(g, "b", dt, {4, 5});
      g.add_output(g.binary(op, a, b, {}));
      Lcg rng(100 + static_cast<int>(op));
      const Tensor ta = random_tensor(dt, {7, 1, 5}, rng, 2.0);
      Tensor tb = random_tensor(dt, {4, 5}, rng, 2.0);
      tb.set_linear(3, ta.get_linear(3));  // some equal pairs for the comparisons
      const Tensor out = evaluate(g, {ta, tb}).at(0);
      const DType out_dt = is_comparison(op) ? DType::Bool : dt;
      ASSERT_EQ(out.dtype(), out_dt);
      ASSERT_EQ(out.shape(), (Shape{7, 4, 5}));
      for (int64_t i = 0; i < 7; ++i)
        for (int64_t j = 0; j < 4; ++j)
          for (int64_t k = 0; k < 5; ++k) {
            const std::vector<int64_t> ia{i, 0, k}, ib{j, k}, io{i, j, k};
            const float x = static_cast<float>(ta.get(ia)), y = static_cast<float>(tb.get(ib));
            const double want = round_to(out_dt, naive_binary(op, x, y));
            ASSERT_TRUE(same_value(out.get(io), want))
                << x << " op " << y << " got " << out.get(io) << " want " << want;
          }
    }
  }
}

TEST(EvalElementwise, NanPropagation) {
  Graph g;
  const ValueId a = param(g, "a", DType::F32, {4});
  const ValueId b = param(g, "b", DType::F32, {4});
  g.add_output(g.binary(BinaryOp::Maximum, a, b, {}));
  g.add_output(g.binary(BinaryOp::Minimum, a, b, {}));
  g.add_output(g.unary(UnaryOp::Relu, a, {}));
  g.add_output(g.clamp(a, 0.0, 1.0, {}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor ta = tensor_of(DType::F32, {4}, {nan, 1, -2, 3});
  const Tensor tb = tensor_of(DType::F32, {4}, {0, nan, -1, 2});
  const std::vector<Tensor> out = evaluate(g, {ta, tb});
  EXPECT_TRUE(std::isnan(out[0].get_linear(0)));
  EXPECT_TRUE(std::isnan(out[0].get_linear(1)));
  EXPECT_EQ(out[0].get_linear(2), -1);
  EXPECT_TRUE(std::isnan(out[1].get_linear(0)));
  EXPECT_TRUE(std::isnan(out[1].get_linear(1)));
  EXPECT_EQ(out[1].get_linear(3), 2);
  EXPECT_TRUE(std::isnan(out[2].get_linear(0)));
  EXPECT_EQ(out[2].get_linear(2), 0);
  EXPECT_TRUE(std::isnan(out[3].get_linear(0)));
  EXPECT_EQ(out[3].get_linear(2), 0);
  EXPECT_EQ(out[3].get_linear(3), 1);
}

TEST(EvalElementwise, ClampBoundsAndMinAboveMax) {
  Graph g;
  const ValueId x = param(g, "x", DType::F16, {5});
  g.add_output(g.clamp(x, -0.5, 0.25, {}));
  g.add_output(g.clamp(x, std::nullopt, 0.1, {}));
  g.add_output(g.clamp(x, 2.0, 1.0, {}));  // min > max: everything becomes max
  const Tensor tx = tensor_of(DType::F16, {5}, {-1, -0.25, 0.125, 0.5, 3});
  const std::vector<Tensor> out = evaluate(g, {tx});
  EXPECT_EQ(values(out[0]), (std::vector<double>{-0.5, -0.25, 0.125, 0.25, 0.25}));
  const double f16_01 = round_to(DType::F16, 0.1);
  EXPECT_EQ(values(out[1]), (std::vector<double>{-1, -0.25, f16_01, f16_01, f16_01}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{1, 1, 1, 1, 1}));
}

TEST(EvalPromotion, F16TimesPythonFloatStaysF16AndUsesTheFloatScalar) {
  Graph g;
  const ValueId x = param(g, "x", DType::F16, {64});
  g.add_output(g.binary(BinaryOp::Mul, x, g.scalar(2.5, DType::F64, {}), {}));
  g.add_output(g.binary(BinaryOp::Add, x, g.scalar(0.1, DType::F64, {}), {}));
  g.add_output(g.binary(BinaryOp::Lt, x, g.scalar(0.1, DType::F64, {}), {}));
  Lcg rng(3);
  Tensor tx = random_tensor(DType::F16, {64}, rng);
  tx.set_linear(0, 0.1);  // f16(0.1) < 0.1f: the scalar is not rounded to f16
  const std::vector<Tensor> out = evaluate(g, {tx});
  ASSERT_EQ(out[0].dtype(), DType::F16);
  ASSERT_EQ(out[1].dtype(), DType::F16);
  ASSERT_EQ(out[2].dtype(), DType::Bool);
  for (int64_t i = 0; i < 64; ++i) {
    const float xf = static_cast<float>(tx.get_linear(i));
    EXPECT_EQ(out[0].get_linear(i), round_to(DType::F16, xf * 2.5f));
    EXPECT_EQ(out[1].get_linear(i), round_to(DType::F16, xf + 0.1f));
    EXPECT_EQ(out[2].get_linear(i), xf < 0.1f ? 1.0 : 0.0);
  }
  EXPECT_EQ(out[2].get_linear(0), 1.0);
}

TEST(EvalPromotion, IntegerOperandIsRoundedToTheCommonDtypeFirst) {
  // i32 [2049] + f16 0-dim 0.5 -> f16. PyTorch casts 2049 to f16 (2048)
  // before adding: 2048.5 -> 2048. Adding in float first would give 2050.
  Graph g;
  const ValueId x = param(g, "x", DType::I32, {2});
  const ValueId y = param(g, "y", DType::F16, {});
  g.add_output(g.binary(BinaryOp::Add, x, y, {}));
  const std::vector<Tensor> out =
      evaluate(g, {tensor_of(DType::I32, {2}, {2049, 3}), tensor_of(DType::F16, {}, {0.5})});
  ASSERT_EQ(out[0].dtype(), DType::F16);
  EXPECT_EQ(values(out[0]), (std::vector<double>{2048, 3.5}));
}

TEST(EvalPromotion, IntegerArithmeticWrapsAndDivisionIsTrueDivision) {
  Graph g;
  const ValueId a = param(g, "a", DType::I8, {3});
  const ValueId b = param(g, "b", DType::I8, {3});
  g.add_output(g.binary(BinaryOp::Add, a, b, {}));
  g.add_output(g.binary(BinaryOp::Mul, a, b, {}));
  g.add_output(g.binary(BinaryOp::Div, a, b, {}));
  g.add_output(g.binary(BinaryOp::Mul, a, g.scalar(2.5, DType::F64, {}), {}));
  g.add_output(g.unary(UnaryOp::Abs, a, {}));
  g.add_output(g.unary(UnaryOp::Neg, a, {}));
  g.add_output(g.unary(UnaryOp::Exp, a, {}));
  const std::vector<Tensor> out = evaluate(
      g, {tensor_of(DType::I8, {3}, {100, -128, 7}), tensor_of(DType::I8, {3}, {100, 2, -2})});
  EXPECT_EQ(out[0].dtype(), DType::I8);
  EXPECT_EQ(values(out[0]), (std::vector<double>{-56, -126, 5}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{16, 0, -14}));
  EXPECT_EQ(out[2].dtype(), DType::F32);
  EXPECT_EQ(values(out[2]), (std::vector<double>{1, -64, -3.5}));
  EXPECT_EQ(out[3].dtype(), DType::F32);
  EXPECT_EQ(values(out[3]), (std::vector<double>{250, -320, 17.5}));
  EXPECT_EQ(values(out[4]), (std::vector<double>{100, -128, 7}));  // abs(-128) wraps
  EXPECT_EQ(values(out[5]), (std::vector<double>{-100, -128, -7}));
  EXPECT_EQ(out[6].dtype(), DType::F32);
  EXPECT_EQ(out[6].get_linear(2), static_cast<double>(std::exp(7.0f)));
}

TEST(EvalElementwise, WhereWithScalarsAndLogicalNot) {
  Graph g;
  const ValueId x = param(g, "x", DType::F16, {4});
  const ValueId c = g.binary(BinaryOp::Gt, x, g.scalar(0, DType::I64, {}), {});
  g.add_output(g.where(c, x, g.scalar(0.1, DType::F64, {}), {}));
  g.add_output(g.unary(UnaryOp::LogicalNot, c, {}));
  const std::vector<Tensor> out = evaluate(g, {tensor_of(DType::F16, {4}, {-1, 2, -3, 0.5})});
  ASSERT_EQ(out[0].dtype(), DType::F16);
  const double f16_01 = round_to(DType::F16, 0.1);
  EXPECT_EQ(values(out[0]), (std::vector<double>{f16_01, 2, f16_01, 0.5}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{1, 0, 1, 0}));
}

TEST(EvalCast, RoundsTruncatesAndWraps) {
  Graph g;
  const ValueId x = param(g, "x", DType::F32, {5});
  g.add_output(g.cast(x, DType::I32, {}));
  g.add_output(g.cast(x, DType::F16, {}));
  g.add_output(g.cast(x, DType::U8, {}));
  g.add_output(g.cast(x, DType::Bool, {}));
  const Tensor tx = tensor_of(DType::F32, {5}, {-2.7, 2.7, 0.1, 300.5, 0});
  const std::vector<Tensor> out = evaluate(g, {tx});
  EXPECT_EQ(values(out[0]), (std::vector<double>{-2, 2, 0, 300, 0}));
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(out[1].get_linear(i), round_to(DType::F16, tx.get_linear(i)));
  EXPECT_EQ(values(out[2]), (std::vector<double>{254, 2, 0, 44, 0}));
  EXPECT_EQ(values(out[3]), (std::vector<double>{1, 1, 1, 1, 0}));
}

TEST(EvalCast, F64ToF16RoundsThroughF32LikePyTorch) {
  // 1 + 2^-11 + 2^-40 is just above the f16 tie between 1 and 1 + 2^-10; f32
  // drops the 2^-40, leaving an exact tie that rounds to even (1).
  const double v = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  Graph g;
  const ValueId x = param(g, "x", DType::F64, {1});
  g.add_output(g.cast(x, DType::F16, {}));
  const Tensor out = evaluate(g, {tensor_of(DType::F64, {1}, {v})}).at(0);
  EXPECT_EQ(out.get_linear(0), 1.0);
  EXPECT_EQ(out.get_linear(0), round_to(DType::F16, round_to(DType::F32, v)));
}

TEST(EvalViews, SliceTransposeExpandSelectFeedOps) {
  Graph g;
  const ValueId x = param(g, "x", DType::F32, {6, 8});
  const ValueId s = g.slice(x, 1, 1, 8, 3, {});                // columns 1, 4, 7 -> [6, 3]
  const ValueId t = g.transpose(s, 0, 1, {});                  // [3, 6]
  const ValueId row = g.select(x, 0, -1, {});                  // last row, [8]
  const ValueId r6 = g.slice(row, 0, std::nullopt, 6, 1, {});  // [6]
  const ValueId e = g.expand(r6, {3, 6}, {});
  g.add_output(g.binary(BinaryOp::Add, t, e, {}));
  g.add_output(t);  // a view output comes back contiguous
  Lcg rng(5);
  const Tensor tx = random_tensor(DType::F32, {6, 8}, rng);
  const std::vector<Tensor> out = evaluate(g, {tx});
  ASSERT_EQ(out[0].shape(), (Shape{3, 6}));
  ASSERT_TRUE(out[1].is_contiguous());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      const std::vector<int64_t> xi{j, 1 + 3 * i}, xr{5, j}, o{i, j};
      const float want = static_cast<float>(tx.get(xi)) + static_cast<float>(tx.get(xr));
      EXPECT_EQ(out[0].get(o), want);
      EXPECT_EQ(out[1].get(o), tx.get(xi));
    }
}

// `x[2::2**63 - 1]` and `x[:, 1::2**63 - 1]`: a huge step leaves one element
// along the dim, whose stride nothing reads. The view's stride times the step
// must not overflow int64 (signed overflow, undefined behaviour: UBSan stopped
// `tilefuse run --engine reference` at eval.cpp's view_of; the graph's own
// slice already kept the stride there).
TEST(EvalViews, AHugeSliceStepOnASizeOneResultDoesNotOverflowTheStride) {
  Graph g;
  const ValueId x = param(g, "x", DType::F32, {6, 8});
  const ValueId rows = g.slice(x, 0, 2, std::nullopt, INT64_MAX, {});  // [1, 8]: row 2
  const ValueId cols = g.slice(x, 1, 1, std::nullopt, INT64_MAX, {});  // [6, 1]: column 1
  g.add_output(g.binary(BinaryOp::Add, rows, g.scalar(0, DType::I64, {}), {}));
  g.add_output(g.binary(BinaryOp::Add, cols, g.scalar(0, DType::I64, {}), {}));
  Lcg rng(11);
  const Tensor tx = random_tensor(DType::F32, {6, 8}, rng);
  const std::vector<Tensor> out = evaluate(g, {tx});
  ASSERT_EQ(out[0].shape(), (Shape{1, 8}));
  ASSERT_EQ(out[1].shape(), (Shape{6, 1}));
  for (int64_t j = 0; j < 8; ++j) {
    const std::vector<int64_t> o{0, j}, xi{2, j};
    EXPECT_EQ(out[0].get(o), tx.get(xi));
  }
  for (int64_t i = 0; i < 6; ++i) {
    const std::vector<int64_t> o{i, 0}, xi{i, 1};
    EXPECT_EQ(out[1].get(o), tx.get(xi));
  }
}

TEST(EvalParams, StridedParametersAreReadInPlace) {
  Graph g;
  const ValueId x = param(g, "x", DType::F32, {3, 4});
  g.add_output(g.binary(BinaryOp::Mul, x, g.scalar(2, DType::I64, {}), {}));
  Lcg rng(8);
  const Tensor base = random_tensor(DType::F32, {4, 3}, rng);
  const Tensor xt = base.permute({1, 0});  // [3, 4], non-contiguous
  const Tensor out = evaluate(g, {xt}).at(0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      const std::vector<int64_t> o{i, j}, b{j, i};
      EXPECT_EQ(out.get(o), 2 * base.get(b));
    }
}

TEST(EvalParams, MismatchesNameTheParameter) {
  Graph g;
  const ValueId x = param(g, "x", DType::F16, {2, 3});
  g.add_output(g.unary(UnaryOp::Neg, x, {}));
  Lcg rng(1);
  try {
    evaluate(g, {random_tensor(DType::F32, {2, 3}, rng)});
    FAIL() << "no error for a wrong dtype";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("`x`"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f16[2, 3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(evaluate(g, {random_tensor(DType::F16, {3, 2}, rng)}), UserError);
  EXPECT_THROW(evaluate(g, {}), UserError);
}

TEST(EvalEmpty, EmptyTensorsWorkEverywhere) {
  Graph g;
  const ValueId x = param(g, "x", DType::F16, {0, 5});
  const ValueId y = param(g, "y", DType::F16, {5});
  g.add_output(g.binary(BinaryOp::Add, x, y, {}));
  g.add_output(g.unary(UnaryOp::Gelu, x, {}));
  g.add_output(g.cast(x, DType::F32, {}));
  Lcg rng(2);
  const std::vector<Tensor> out =
      evaluate(g, {Tensor::empty(DType::F16, {0, 5}), random_tensor(DType::F16, {5}, rng)});
  EXPECT_EQ(out[0].shape(), (Shape{0, 5}));
  EXPECT_EQ(out[1].numel(), 0);
  EXPECT_EQ(out[2].dtype(), DType::F32);
}

// An empty matmul result computes nothing, however large its batch (the
// evaluator made a GEMM item per batch: 2^40 of them here, "out of host
// memory" for a program the executor runs at once).
TEST(EvalEmpty, EmptyMatmulWithAHugeBatchAllocatesNothing) {
  const int64_t big = int64_t{1} << 40;
  Graph g;
  const ValueId x = param(g, "x", DType::F32, {big, 0, 1});
  const ValueId y = param(g, "y", DType::F32, {big, 1, 0});
  const ValueId b = param(g, "b", DType::F32, {0});
  const ValueId w = param(g, "w", DType::F32, {1, 0});
  g.add_output(g.matmul(x, y, {}));
  g.add_output(g.addmm(b, g.select(x, 0, 0, {}), w, 1.0, 1.0, {}));
  for (EvalMode mode : {EvalMode::kEager, EvalMode::kOracle}) {
    EvalOptions o;
    o.mode = mode;
    const std::vector<Tensor> out =
        evaluate(g,
                 {Tensor::empty(DType::F32, {big, 0, 1}), Tensor::empty(DType::F32, {big, 1, 0}),
                  Tensor::empty(DType::F32, {0}), Tensor::empty(DType::F32, {1, 0})},
                 o);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].shape(), (Shape{big, 0, 0}));
    EXPECT_EQ(out[1].shape(), (Shape{0, 0}));
  }
}

TEST(EvalOracle, F16ChainHasSmallNonzeroErrorAgainstOracle) {
  Graph g;
  const ValueId x = param(g, "x", DType::F16, {33, 70});
  const ValueId w = param(g, "w", DType::F16, {70, 20});
  const ValueId h = g.binary(BinaryOp::Mul, x, g.scalar(1.1, DType::F64, {}), {});
  const ValueId m = g.matmul(g.unary(UnaryOp::Silu, h, {}), w, {});
  g.add_output(g.unary(UnaryOp::Gelu, m, {}));
  g.add_output(g.cast(g.binary(BinaryOp::Gt, m, g.scalar(0, DType::I64, {}), {}), DType::I32, {}));
  Lcg rng(11);
  const std::vector<Tensor> params = {random_tensor(DType::F16, {33, 70}, rng),
                                      random_tensor(DType::F16, {70, 20}, rng)};
  const std::vector<Tensor> eager = evaluate(g, params);
  const std::vector<Tensor> oracle = evaluate(g, params, {EvalMode::kOracle});
  EXPECT_EQ(eager[0].dtype(), DType::F16);
  EXPECT_EQ(oracle[0].dtype(), DType::F64);
  EXPECT_EQ(oracle[1].dtype(), DType::I32);  // integer outputs keep their dtype
  const double err = relative_error(eager[0], oracle[0]);
  EXPECT_GT(err, 0);
  EXPECT_LT(err, 3e-3);
  // The same graph in f64 agrees with the oracle up to f64 rounding.
  EXPECT_EQ(relative_error(oracle[0], oracle[0]), 0);
}

TEST(EvalOracle, FloatCastsDoNotRoundAndParametersKeepTheirValues) {
  Graph g;
  const ValueId x = param(g, "x", DType::F32, {2});
  const ValueId h = g.cast(x, DType::F16, {});
  g.add_output(g.cast(h, DType::F32, {}));
  g.add_output(g.cast(x, DType::I32, {}));
  g.add_output(x);
  const Tensor tx = tensor_of(DType::F32, {2}, {0.1, -2.7});
  const std::vector<Tensor> out = evaluate(g, {tx}, {EvalMode::kOracle});
  EXPECT_EQ(out[0].dtype(), DType::F64);
  EXPECT_EQ(out[0].get_linear(0), static_cast<double>(0.1f));  // no f16 rounding
  EXPECT_EQ(out[1].dtype(), DType::I32);
  EXPECT_EQ(values(out[1]), (std::vector<double>{0, -2}));
  EXPECT_EQ(out[2].dtype(), DType::F64);
  EXPECT_EQ(out[2].get_linear(1), static_cast<double>(-2.7f));
}

TEST(EvalOracle, ScalarsAreExact) {
  Graph g;
  const ValueId x = param(g, "x", DType::F64, {1});
  g.add_output(g.binary(BinaryOp::Add, x, g.scalar(0.1, DType::F64, {}), {}));
  const std::vector<Tensor> eager = evaluate(g, {tensor_of(DType::F64, {1}, {1})});
  EXPECT_EQ(eager[0].get_linear(0), 1.0 + 0.1);  // f64 eager: the double scalar, not 0.1f
}

TEST(RelativeError, Definition) {
  const Tensor ref = tensor_of(DType::F64, {3}, {3, 0, 4});
  EXPECT_EQ(relative_error(ref, ref), 0);
  EXPECT_DOUBLE_EQ(relative_error(tensor_of(DType::F32, {3}, {3, 0, 4.5}), ref), 0.1);
  const Tensor zero = tensor_of(DType::F64, {3}, {0, 0, 0});
  EXPECT_EQ(relative_error(zero, zero), 0);
  EXPECT_EQ(relative_error(ref, zero), std::numeric_limits<double>::infinity());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(relative_error(tensor_of(DType::F64, {3}, {3, nan, 4}), ref),
            std::numeric_limits<double>::infinity());
  const Tensor ref_nan = tensor_of(DType::F64, {3}, {3, nan, 4});
  EXPECT_EQ(relative_error(ref_nan, ref_nan), 0);
  EXPECT_THROW(relative_error(ref, tensor_of(DType::F64, {1}, {1})), InternalError);
}

// `--check` and every test comparison go through relative_error: a NaN
// matches a NaN whatever its sign and payload (as torch.testing's
// equal_nan), so engines that disagree only there (the CPU executor's dot
// product and the f64 oracle on [[+NaN, -NaN], [-NaN, +NaN]] @ ones) do not
// fail a check; a NaN against a number still does.
TEST(RelativeError, NaNsMatchWhateverTheirSignAndPayload) {
  struct Case {
    DType dt;
    uint64_t a, b;  // two NaNs' bits: a quiet positive one, a negative one with a payload
  };
  const Case cases[] = {{DType::F64, 0x7FF8000000000000ull, 0xFFF8000000000123ull},
                        {DType::F32, 0x7FC00000u, 0xFFC00123u},
                        {DType::F16, 0x7E00u, 0xFE01u},
                        {DType::BF16, 0x7FC0u, 0xFF81u}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dt)));
    const Tensor out = tensor_of(c.dt, {3}, {1, 0, 2}), ref = tensor_of(c.dt, {3}, {1, 0, 2});
    const size_t size = static_cast<size_t>(dtype_size(c.dt));
    std::memcpy(out.data_ptr() + size, &c.a, size);  // little-endian
    std::memcpy(ref.data_ptr() + size, &c.b, size);
    ASSERT_TRUE(std::isnan(out.get_linear(1)) && std::isnan(ref.get_linear(1)));
    ASSERT_NE(std::signbit(out.get_linear(1)), std::signbit(ref.get_linear(1)));
    EXPECT_EQ(relative_error(out, ref), 0);
    EXPECT_EQ(relative_error(ref, out), 0);
    EXPECT_EQ(relative_error(out, tensor_of(c.dt, {3}, {1, 5, 2})),
              std::numeric_limits<double>::infinity());
  }
}

TEST(EvalThreads, ResultsDoNotDependOnTheThreadCount) {
  Graph g;
  const ValueId x = param(g, "x", DType::BF16, {300, 517});
  const ValueId y = param(g, "y", DType::BF16, {517, 211});
  const ValueId m = g.matmul(g.unary(UnaryOp::Tanh, x, {}), y, {});
  g.add_output(g.binary(BinaryOp::Hypot, m, g.scalar(0.5, DType::F64, {}), {}));
  Lcg rng(21);
  const std::vector<Tensor> params = {random_tensor(DType::BF16, {300, 517}, rng),
                                      random_tensor(DType::BF16, {517, 211}, rng)};
  const Tensor one = evaluate(g, params, {EvalMode::kEager, 1}).at(0);
  const Tensor four = evaluate(g, params, {EvalMode::kEager, 4}).at(0);
  EXPECT_EQ(values(one), values(four));
}

}  // namespace
}  // namespace tilefuse
