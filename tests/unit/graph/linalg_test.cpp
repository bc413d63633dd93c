// Gather (index), matmul and addmm: shapes, dtypes and error messages.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph_test_util.h"

namespace tilefuse {
namespace {

using testing::expect_user_error;
using testing::kLoc;
using testing::param;

TEST(Index, OutShapeIsPrefixIdxShapeSuffix) {
  struct Case {
    Shape x;
    int64_t dim;
    Shape idx;
    Shape out;
  };
  const std::vector<Case> cases = {
      {{64, 32}, 0, {50}, {50, 32}},
      {{64, 32}, 0, {5, 7}, {5, 7, 32}},
      {{64, 32}, 1, {3}, {64, 3}},
      {{64, 32}, -1, {2, 2}, {64, 2, 2}},
      {{4, 5, 6}, 1, {7, 8}, {4, 7, 8, 6}},
      {{4, 5, 6}, -3, {0}, {0, 5, 6}},
      {{64, 32}, 0, {}, {32}},  // a 0-dim index removes the dim, like select
      {{64}, 0, {2, 3, 4}, {2, 3, 4}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_to_string(c.x) + " dim " + std::to_string(c.dim) + " idx " +
                 shape_to_string(c.idx));
    Graph g;
    const ValueId x = param(g, DType::F16, c.x);
    const ValueId i = param(g, DType::I64, c.idx);
    const ValueId out = g.index(x, c.dim, i, kLoc);
    const Node& n = g.node(out);
    EXPECT_EQ(n.kind, OpKind::Index);
    EXPECT_EQ(n.inputs, (std::vector<ValueId>{x, i}));
    EXPECT_EQ(n.shape, c.out);
    EXPECT_EQ(n.dim, c.dim < 0 ? c.dim + static_cast<int64_t>(c.x.size()) : c.dim);
    EXPECT_EQ(n.dtype, DType::F16);
    EXPECT_EQ(n.strides, contiguous_strides(c.out));  // a gather copies
    EXPECT_EQ(n.storage_root, out);
  }
}

TEST(Index, AnyValueDtypeWithAnI32OrI64Index) {
  Graph g;
  for (DType dt : {DType::Bool, DType::I8, DType::BF16, DType::F8E5M2, DType::F64}) {
    const ValueId x = param(g, dt, {6, 3});
    const ValueId i = param(g, DType::I32, {4});
    EXPECT_EQ(g.node(g.index(x, 0, i, {})).dtype, dt);
  }
  // Indexing a view gathers from the view.
  const ValueId x = param(g, DType::F32, {6, 8});
  const ValueId t = g.transpose(x, 0, 1, {});
  const ValueId i = param(g, DType::I64, {3});
  EXPECT_EQ(g.node(g.index(t, 1, i, {})).shape, (Shape{8, 3}));
}

TEST(Index, Errors) {
  Graph g;
  const ValueId x = param(g, DType::F16, {6, 3});
  const ValueId mask = param(g, DType::Bool, {6});
  const ValueId f = param(g, DType::F32, {2});
  const ValueId u8 = param(g, DType::U8, {2});
  const ValueId i = param(g, DType::I64, {2});
  const ValueId z = param(g, DType::F16, {});
  EXPECT_EQ(expect_user_error([&] { g.index(x, 0, mask, kLoc); }, "boolean"),
            "boolean mask indexing is not supported");
  EXPECT_EQ(expect_user_error([&] { g.index(x, 0, f, kLoc); }, "f32"),
            "index tensors must be i32 or i64, got f32");
  expect_user_error([&] { g.index(x, 0, u8, kLoc); }, "got u8");
  expect_user_error([&] { g.index(z, 0, i, kLoc); }, "cannot index a 0-dim tensor (f16[])");
  expect_user_error([&] { g.index(x, 2, i, kLoc); }, "out of range");
}

TEST(Matmul, ShapeTable) {
  struct Case {
    Shape a, b, out;
  };
  const std::vector<Case> cases = {
      {{3}, {3}, {}},                           // dot
      {{2, 3}, {3, 4}, {2, 4}},                 // mm
      {{3}, {3, 4}, {4}},                       // vector-matrix
      {{2, 3}, {3}, {2}},                       // matrix-vector
      {{5, 2, 3}, {3, 4}, {5, 2, 4}},           // batched @ matrix
      {{3}, {5, 3, 4}, {5, 4}},                 // vector @ batched
      {{5, 2, 3}, {3}, {5, 2}},                 // batched @ vector
      {{5, 2, 3}, {5, 3, 4}, {5, 2, 4}},        // bmm
      {{7, 1, 2, 3}, {5, 3, 4}, {7, 5, 2, 4}},  // broadcast batch dims
      {{1, 2, 3}, {6, 3, 4}, {6, 2, 4}},
      {{2, 3}, {6, 3, 4}, {6, 2, 4}},
      {{0, 3}, {3, 4}, {0, 4}},  // M = 0
      {{2, 0}, {0, 4}, {2, 4}},  // K = 0
      {{0}, {0}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_to_string(c.a) + " @ " + shape_to_string(c.b));
    Graph g;
    const ValueId a = param(g, DType::BF16, c.a);
    const ValueId b = param(g, DType::BF16, c.b);
    const ValueId m = g.matmul(a, b, kLoc);
    const Node& n = g.node(m);
    EXPECT_EQ(n.kind, OpKind::Matmul);
    EXPECT_EQ(n.shape, c.out);
    EXPECT_EQ(n.dtype, DType::BF16);
    EXPECT_EQ(n.storage_root, m);
  }
}

TEST(Matmul, KMismatchNamesBothShapesAndDtypes) {
  Graph g;
  const ValueId a = param(g, DType::F16, {300, 1001});
  const ValueId b = param(g, DType::F16, {1000, 129});
  EXPECT_EQ(expect_user_error([&] { g.matmul(a, b, kLoc); }, "matmul"),
            "matmul shapes do not match: f16[300, 1001] @ f16[1000, 129] (1001 != 1000)");
  const ValueId u = param(g, DType::F32, {3});
  const ValueId v = param(g, DType::F32, {4});
  EXPECT_EQ(expect_user_error([&] { g.matmul(u, v, kLoc); }, "matmul"),
            "matmul shapes do not match: f32[3] @ f32[4] (3 != 4)");
  const ValueId w = param(g, DType::F32, {2, 4, 5});
  expect_user_error([&] { g.matmul(w, u, kLoc); }, "f32[2, 4, 5] @ f32[3] (5 != 3)");
}

TEST(Matmul, Errors) {
  Graph g;
  const ValueId a16 = param(g, DType::F16, {2, 3});
  const ValueId b32 = param(g, DType::F32, {3, 4});
  EXPECT_EQ(expect_user_error([&] { g.matmul(a16, b32, kLoc); }, "dtype"),
            "matmul operands must have the same dtype, got f16 and f32");
  const ValueId i1 = param(g, DType::I32, {2, 3});
  const ValueId i2 = param(g, DType::I32, {3, 4});
  expect_user_error([&] { g.matmul(i1, i2, kLoc); }, "matmul of i32 tensors is not supported");
  const ValueId b1 = param(g, DType::Bool, {2, 3});
  const ValueId b2 = param(g, DType::Bool, {3, 4});
  expect_user_error([&] { g.matmul(b1, b2, kLoc); }, "not supported");
  const ValueId z = param(g, DType::F16, {});
  const ValueId v = param(g, DType::F16, {3});
  expect_user_error([&] { g.matmul(z, v, kLoc); }, "at least 1 dimension");
  expect_user_error([&] { g.matmul(v, z, kLoc); }, "at least 1 dimension");
  const ValueId x = param(g, DType::F16, {2, 2, 3});
  const ValueId y = param(g, DType::F16, {5, 3, 4});
  EXPECT_EQ(expect_user_error([&] { g.matmul(x, y, kLoc); }, "batch"),
            "matmul batch dimensions do not broadcast: f16[2, 2, 3] @ f16[5, 3, 4] (batch shapes "
            "[2] and [5])");
}

// A symbolic dim is named in the message, never shown as the generic
// graph's placeholder size; and its broadcast against a fixed size says why.
TEST(Matmul, SymbolicDimsAreNamedInErrors) {
  Graph g;
  const SymbolId batch = g.add_symbol("B", 1041, kLoc);
  const SymbolId t = g.add_symbol("T", 1233, kLoc);
  const ValueId x = g.parameter("x", DType::F32, {1041, 4, 8}, std::nullopt, kLoc,
                                {batch, kFixedDim, kFixedDim});
  const ValueId w = g.parameter("w", DType::F32, {3, 8, 3}, std::nullopt, kLoc);
  EXPECT_EQ(expect_user_error([&] { g.matmul(x, w, kLoc); }, "batch"),
            "matmul batch operands do not broadcast for every size: f32[B] and f32[3] at "
            "dimension 0: the symbolic dim `B` against the fixed size 3 (a symbolic dim "
            "broadcasts only against 1; make it fixed)");
  // A fixed operand against a symbolic one the other way round.
  const ValueId v = g.parameter("v", DType::F32, {3, 2, 4}, std::nullopt, kLoc);
  EXPECT_EQ(expect_user_error([&] { g.matmul(v, x, kLoc); }, "batch"),
            "matmul batch operands do not broadcast for every size: f32[3] and f32[B] at "
            "dimension 0: the symbolic dim `B` against the fixed size 3 (a symbolic dim "
            "broadcasts only against 1; make it fixed)");
  // addmm's bias against an [T, 3] result: the result is shown as [T, 3].
  const ValueId a = g.parameter("a", DType::F32, {1233, 8}, std::nullopt, kLoc, {t, kFixedDim});
  const ValueId b = g.parameter("b", DType::F32, {8, 3}, std::nullopt, kLoc);
  const ValueId bias = g.parameter("bias", DType::F32, {2, 3}, std::nullopt, kLoc);
  const std::string msg = expect_user_error([&] { g.addmm(bias, a, b, 1, 1, kLoc); }, "bias");
  EXPECT_EQ(msg.find("1233"), std::string::npos) << msg;
  EXPECT_NE(msg.find("`T`"), std::string::npos) << msg;
}

TEST(Addmm, ShapesAndAttributes) {
  Graph g;
  const ValueId a = param(g, DType::F16, {3, 5});
  const ValueId b = param(g, DType::F16, {5, 4});
  for (const Shape& bias_shape : {Shape{4}, Shape{3, 1}, Shape{}, Shape{3, 4}, Shape{1, 4}}) {
    SCOPED_TRACE(shape_to_string(bias_shape));
    const ValueId bias = param(g, DType::F16, bias_shape);
    const ValueId out = g.addmm(bias, a, b, 0.5, 2.0, kLoc);
    const Node& n = g.node(out);
    EXPECT_EQ(n.kind, OpKind::Addmm);
    EXPECT_EQ(n.inputs, (std::vector<ValueId>{bias, a, b}));
    EXPECT_EQ(n.shape, (Shape{3, 4}));
    EXPECT_EQ(n.dtype, DType::F16);
    EXPECT_EQ(n.beta, 0.5);
    EXPECT_EQ(n.alpha, 2.0);
  }
}

TEST(Addmm, Errors) {
  Graph g;
  const ValueId a = param(g, DType::F16, {3, 5});
  const ValueId b = param(g, DType::F16, {5, 4});
  const ValueId b6 = param(g, DType::F16, {6, 4});
  const ValueId bias = param(g, DType::F16, {4});
  const ValueId v = param(g, DType::F16, {5});
  EXPECT_EQ(expect_user_error([&] { g.addmm(bias, a, b6, 1, 1, kLoc); }, "addmm"),
            "addmm shapes do not match: f16[3, 5] @ f16[6, 4] (5 != 6)");
  expect_user_error([&] { g.addmm(bias, v, b, 1, 1, kLoc); },
                    "addmm's first matrix must be 2-D, got f16[5]");
  expect_user_error([&] { g.addmm(bias, a, v, 1, 1, kLoc); },
                    "addmm's second matrix must be 2-D, got f16[5]");
  const ValueId bad_bias = param(g, DType::F16, {2, 4});
  EXPECT_EQ(expect_user_error([&] { g.addmm(bad_bias, a, b, 1, 1, kLoc); }, "bias"),
            "addmm bias f16[2, 4] cannot be broadcast to the result shape [3, 4]");
  const ValueId big_bias = param(g, DType::F16, {2, 3, 4});
  expect_user_error([&] { g.addmm(big_bias, a, b, 1, 1, kLoc); }, "cannot be broadcast");
  const ValueId bias32 = param(g, DType::F32, {4});
  EXPECT_EQ(expect_user_error([&] { g.addmm(bias32, a, b, 1, 1, kLoc); }, "bias"),
            "addmm bias must have the matrices' dtype f16, got f32");
  const ValueId b32 = param(g, DType::F32, {5, 4});
  expect_user_error([&] { g.addmm(bias, a, b32, 1, 1, kLoc); },
                    "addmm operands must have the same dtype, got f16 and f32");
  const ValueId ia = param(g, DType::I64, {3, 5});
  const ValueId ib = param(g, DType::I64, {5, 4});
  const ValueId ibias = param(g, DType::I64, {4});
  expect_user_error([&] { g.addmm(ibias, ia, ib, 1, 1, kLoc); }, "not supported");
}

}  // namespace
}  // namespace tilefuse
