// Index (gather) in the reference evaluator: wrapping, dims, index shapes,
// and the out-of-range error.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "reference/eval.h"
#include "test_util.h"

namespace tilefuse {
namespace {

using testing_util::Lcg;
using testing_util::param;
using testing_util::random_tensor;
using testing_util::tensor_of;

std::string error_of(const Graph& g, const std::vector<Tensor>& params) {
  try {
    evaluate(g, params);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(EvalGather, NegativeIndicesWrapOnce) {
  Graph g;
  const ValueId x = param(g, "x", DType::F16, {64, 9});
  const ValueId idx = param(g, "idx", DType::I64, {6});
  g.add_output(g.index(x, 0, idx, {}));
  Lcg rng(1);
  const Tensor tx = random_tensor(DType::F16, {64, 9}, rng);
  const std::vector<double> iv = {0, -1, 63, -64, 5, -5};
  const Tensor out = evaluate(g, {tx, tensor_of(DType::I64, {6}, iv)}).at(0);
  ASSERT_EQ(out.shape(), (Shape{6, 9}));
  ASSERT_EQ(out.dtype(), DType::F16);
  for (int64_t q = 0; q < 6; ++q) {
    const int64_t row = iv[q] < 0 ? static_cast<int64_t>(iv[q]) + 64 : static_cast<int64_t>(iv[q]);
    for (int64_t j = 0; j < 9; ++j) {
      const std::vector<int64_t> o{q, j}, s{row, j};
      EXPECT_EQ(out.get(o), tx.get(s));
    }
  }
}

TEST(EvalGather, Dim1AndMultiDimIndex) {
  Graph g;
  const ValueId x = param(g, "x", DType::F32, {3, 10, 4});
  const ValueId idx = param(g, "idx", DType::I32, {2, 5});
  g.add_output(g.index(x, 1, idx, {}));  // [3, 2, 5, 4]
  g.add_output(g.index(x, 0, idx, {}));  // [2, 5, 10, 4]; values in [-3, 3) fit both dims
  Lcg rng(2);
  const Tensor tx = random_tensor(DType::F32, {3, 10, 4}, rng);
  std::vector<double> iv(10);
  for (int i = 0; i < 10; ++i) iv[i] = static_cast<double>(rng.integer(-3, 3));
  const Tensor tidx = tensor_of(DType::I32, {2, 5}, iv);
  const std::vector<Tensor> out = evaluate(g, {tx, tidx});
  ASSERT_EQ(out[0].shape(), (Shape{3, 2, 5, 4}));
  ASSERT_EQ(out[1].shape(), (Shape{2, 5, 10, 4}));
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    const std::vector<int64_t> p = testing_util::unravel(i, out[0].shape());
    int64_t v = static_cast<int64_t>(iv[p[1] * 5 + p[2]]);
    if (v < 0) v += 10;
    const std::vector<int64_t> s{p[0], v, p[3]};
    EXPECT_EQ(out[0].get_linear(i), tx.get(s));
  }
  for (int64_t i = 0; i < out[1].numel(); ++i) {
    const std::vector<int64_t> p = testing_util::unravel(i, out[1].shape());
    int64_t v = static_cast<int64_t>(iv[p[0] * 5 + p[1]]);
    if (v < 0) v += 3;
    const std::vector<int64_t> s{v, p[2], p[3]};
    EXPECT_EQ(out[1].get_linear(i), tx.get(s));
  }
}

TEST(EvalGather, FromATransposedViewAndInOracleMode) {
  Graph g;
  const ValueId x = param(g, "x", DType::BF16, {8, 5});
  const ValueId idx = param(g, "idx", DType::I64, {3});
  const ValueId xt = g.transpose(x, 0, 1, {});  // [5, 8], rows strided
  g.add_output(g.index(xt, 0, idx, {}));
  Lcg rng(3);
  const Tensor tx = random_tensor(DType::BF16, {8, 5}, rng);
  const Tensor tidx = tensor_of(DType::I64, {3}, {4, 0, -2});
  for (EvalMode mode : {EvalMode::kEager, EvalMode::kOracle}) {
    const Tensor out = evaluate(g, {tx, tidx}, {mode}).at(0);
    EXPECT_EQ(out.dtype(), mode == EvalMode::kOracle ? DType::F64 : DType::BF16);
    const int64_t rows[] = {4, 0, 3};
    for (int64_t q = 0; q < 3; ++q)
      for (int64_t j = 0; j < 8; ++j) {
        const std::vector<int64_t> o{q, j}, s{j, rows[q]};
        EXPECT_EQ(out.get(o), tx.get(s));
      }
  }
}

TEST(EvalGather, EmptyIndex) {
  Graph g;
  const ValueId x = param(g, "x", DType::F16, {4, 3});
  const ValueId idx = param(g, "idx", DType::I64, {0});
  g.add_output(g.index(x, 0, idx, {}));
  Lcg rng(4);
  const Tensor out =
      evaluate(g, {random_tensor(DType::F16, {4, 3}, rng), Tensor::empty(DType::I64, {0})}).at(0);
  EXPECT_EQ(out.shape(), (Shape{0, 3}));
}

TEST(EvalGather, OutOfRangeNamesTensorsPositionAndValue) {
  Graph g;
  const ValueId x = param(g, "x", DType::F32, {64, 96});
  const ValueId y = param(g, "y", DType::F32, {96, 80});
  const ValueId idx = param(g, "idx", DType::I64, {50});
  g.add_output(g.matmul(g.index(x, 0, idx, {}), y, {}));
  Lcg rng(5);
  const Tensor tx = random_tensor(DType::F32, {64, 96}, rng);
  const Tensor ty = random_tensor(DType::F32, {96, 80}, rng);
  Tensor tidx = Tensor::empty(DType::I64, {50});
  for (int64_t i = 0; i < 50; ++i) tidx.set_linear(i, static_cast<double>(rng.integer(0, 64)));
  tidx.set_linear(17, 64);
  tidx.set_linear(30, 65);  // a later bad index: the first one is reported
  EXPECT_EQ(error_of(g, {tx, ty, tidx}),
            "index 64 is out of bounds for dim 0 of `x` (size 64): `idx`[17] = 64");
  tidx.set_linear(17, 1);
  tidx.set_linear(30, 1);
  tidx.set_linear(3, -65);
  EXPECT_EQ(error_of(g, {tx, ty, tidx}),
            "index -65 is out of bounds for dim 0 of `x` (size 64): `idx`[3] = -65");
  tidx.set_linear(3, -64);  // the lowest valid value
  EXPECT_NO_THROW(evaluate(g, {tx, ty, tidx}));
}

TEST(EvalGather, OutOfRangeMultiDimPositionAndUnnamedValues) {
  Graph g;
  const ValueId a = param(g, "a", DType::F32, {4, 4});
  const ValueId idx = param(g, "idx", DType::I32, {2, 3});
  const ValueId m = g.matmul(a, a, {});  // unnamed intermediate
  const ValueId i2 = g.binary(BinaryOp::Add, idx, idx, {});
  g.add_output(g.index(m, 1, i2, {}));
  Lcg rng(6);
  const Tensor tidx = tensor_of(DType::I32, {2, 3}, {0, 1, -2, 1, 2, 0});  // doubled: 2*2 = 4
  EXPECT_EQ(error_of(g, {random_tensor(DType::F32, {4, 4}, rng), tidx}),
            "index 4 is out of bounds for dim 1 of the result of matmul (size 4): "
            "(the result of add)[1, 1] = 4");
}

TEST(EvalGather, IndexSelectDoesNotWrapNegatives) {
  // index_select's indices lie in [0, size) (PyTorch raises "index out of
  // range in self" for -1); x[idx] wraps -1 to size - 1.
  Graph g;
  const ValueId x = param(g, "x", DType::F32, {5, 3});
  const ValueId idx = param(g, "idx", DType::I64, {4});
  g.add_output(g.index(x, 0, idx, {}, /*wrap_negative=*/false));
  Lcg rng(8);
  const Tensor tx = random_tensor(DType::F32, {5, 3}, rng);
  EXPECT_EQ(error_of(g, {tx, tensor_of(DType::I64, {4}, {0, 4, -1, 2})}),
            "index -1 is out of bounds for dim 0 of `x` (size 5): `idx`[2] = -1 (index_select "
            "takes indices in [0, size): a negative one does not wrap)");
  EXPECT_EQ(error_of(g, {tx, tensor_of(DType::I64, {4}, {0, 4, 5, 2})}),
            "index 5 is out of bounds for dim 0 of `x` (size 5): `idx`[2] = 5 (index_select "
            "takes indices in [0, size): a negative one does not wrap)");
  const std::vector<Tensor> out = evaluate(g, {tx, tensor_of(DType::I64, {4}, {4, 0, 4, 1})});
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_EQ(out[0].get_linear(r * 3 + c), tx.get_linear((r % 2 == 0 ? 4 : r == 1 ? 0 : 1) * 3 + c));
}

TEST(EvalGather, NamedIntermediate) {
  Graph g;
  const ValueId x = param(g, "x", DType::F32, {4, 2});
  const ValueId idx = param(g, "idx", DType::I64, {});
  const ValueId h = g.unary(UnaryOp::Neg, x, {});
  g.set_name(h, "h");
  g.add_output(g.index(h, 0, idx, {}));
  Lcg rng(7);
  EXPECT_EQ(error_of(g, {random_tensor(DType::F32, {4, 2}, rng), tensor_of(DType::I64, {}, {-5})}),
            "index -5 is out of bounds for dim 0 of `h` (size 4): `idx` = -5");
}

}  // namespace
}  // namespace tilefuse
