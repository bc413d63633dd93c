// View layouts: slice, permute/transpose, expand, select. Strides and offsets
// are in elements, relative to the storage root, as torch's .stride() and
// .storage_offset() report them.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph_test_util.h"

namespace tilefuse {
namespace {

using testing::expect_user_error;
using testing::kLoc;
using testing::param;
using Strides = std::vector<int64_t>;

void expect_layout(const Graph& g, ValueId v, const Shape& shape, const Strides& strides,
                   int64_t offset, ValueId root) {
  const Node& n = g.node(v);
  EXPECT_TRUE(n.is_view()) << op_kind_name(n.kind);
  EXPECT_EQ(n.shape, shape);
  EXPECT_EQ(n.strides, strides);
  EXPECT_EQ(n.offset, offset);
  EXPECT_EQ(n.storage_root, root);
}

TEST(Slice, StepsAndPythonBounds) {
  Graph g;
  const ValueId x = param(g, DType::F32, {10, 8});  // strides [8, 1]
  // x[1:9:3] -> rows 1, 4, 7
  const ValueId a = g.slice(x, 0, 1, 9, 3, kLoc);
  expect_layout(g, a, {3, 8}, {24, 1}, 8, x);
  EXPECT_EQ(g.node(a).kind, OpKind::Slice);
  EXPECT_EQ(g.node(a).dim, 0);
  EXPECT_EQ(g.node(a).start, 1);
  EXPECT_EQ(g.node(a).end, 9);
  EXPECT_EQ(g.node(a).step, 3);
  // x[:, -3:] -> columns 5..7
  const ValueId b = g.slice(x, 1, -3, std::nullopt, 1, kLoc);
  expect_layout(g, b, {10, 3}, {8, 1}, 5, x);
  EXPECT_EQ(g.node(b).start, 5);
  EXPECT_EQ(g.node(b).end, 8);
  // x[:, -100:100:2] clamps to [0, 8)
  expect_layout(g, g.slice(x, 1, -100, 100, 2, kLoc), {10, 4}, {8, 2}, 0, x);
  // x[:, 2:-1] on dim -1
  expect_layout(g, g.slice(x, -1, 2, -1, 1, kLoc), {10, 5}, {8, 1}, 2, x);
  // x[7:3] is empty; x[10:20] is empty at the end
  const ValueId e = g.slice(x, 0, 7, 3, 1, kLoc);
  expect_layout(g, e, {0, 8}, {8, 1}, 56, x);
  EXPECT_EQ(g.node(e).end, 7);
  expect_layout(g, g.slice(x, 0, 10, 20, 1, kLoc), {0, 8}, {8, 1}, 80, x);
  // x[::4] -> ceil(10 / 4) = 3 rows; x[::20] -> 1 row
  expect_layout(g, g.slice(x, 0, std::nullopt, std::nullopt, 4, kLoc), {3, 8}, {32, 1}, 0, x);
  expect_layout(g, g.slice(x, 0, std::nullopt, std::nullopt, 20, kLoc), {1, 8}, {160, 1}, 0, x);
  // A huge step on a size-1 result must not overflow the stride.
  const ValueId h = g.slice(x, 0, 2, std::nullopt, INT64_MAX, kLoc);
  EXPECT_EQ(g.node(h).shape, (Shape{1, 8}));
  EXPECT_EQ(g.node(h).offset, 16);
}

TEST(Slice, Errors) {
  Graph g;
  const ValueId x = param(g, DType::F32, {10, 8});
  const ValueId s = param(g, DType::F32, {});
  expect_user_error([&] { g.slice(x, 0, 0, 4, 0, kLoc); }, "slice step cannot be zero");
  expect_user_error([&] { g.slice(x, 0, 0, 4, -1, kLoc); }, "slice step must be positive, got -1");
  EXPECT_EQ(expect_user_error([&] { g.slice(x, 2, 0, 4, 1, kLoc); }, "out of range"),
            "dimension 2 is out of range for slice of a 2-dim tensor (expected -2 to 1)");
  expect_user_error([&] { g.slice(x, -3, 0, 4, 1, kLoc); }, "out of range");
  expect_user_error([&] { g.slice(s, 0, 0, 1, 1, kLoc); }, "0-dim");
}

TEST(Permute, ReordersShapeAndStrides) {
  Graph g;
  const ValueId x = param(g, DType::BF16, {4, 5, 6});  // strides [30, 6, 1]
  const ValueId p = g.permute(x, {2, 0, 1}, kLoc);
  expect_layout(g, p, {6, 4, 5}, {1, 30, 6}, 0, x);
  EXPECT_EQ(g.node(p).perm, (std::vector<int64_t>{2, 0, 1}));
  const ValueId q = g.permute(x, {-1, 0, -2}, kLoc);
  EXPECT_EQ(g.node(q).perm, (std::vector<int64_t>{2, 0, 1}));
  expect_user_error([&] { g.permute(x, {0, 0, 1}, kLoc); }, "not a permutation");
  expect_user_error([&] { g.permute(x, {0, 1}, kLoc); }, "needs 3 dims");
  expect_user_error([&] { g.permute(x, {0, 1, 3}, kLoc); }, "out of range");
}

TEST(Transpose, OfASlice) {
  Graph g;
  const ValueId x = param(g, DType::F16, {10, 8});
  const ValueId s = g.slice(x, 1, 2, 8, 2, kLoc);  // x[:, 2:8:2]
  expect_layout(g, s, {10, 3}, {8, 2}, 2, x);
  const ValueId t = g.transpose(s, 0, 1, kLoc);  // .T
  expect_layout(g, t, {3, 10}, {2, 8}, 2, x);
  EXPECT_EQ(g.node(t).kind, OpKind::Permute);
  EXPECT_EQ(g.node(t).perm, (std::vector<int64_t>{1, 0}));
  // x[:, 2:8:2].T[:, 1::3] -> columns 1, 4, 7 of the transpose
  expect_layout(g, g.slice(t, 1, 1, std::nullopt, 3, kLoc), {3, 3}, {2, 24}, 10, x);
  // transpose(-1, -2) is the same; a 0-dim or 1-D transpose is the identity.
  expect_layout(g, g.transpose(s, -1, -2, kLoc), {3, 10}, {2, 8}, 2, x);
  const ValueId z = param(g, DType::F16, {});
  EXPECT_TRUE(g.node(g.transpose(z, 0, -1, kLoc)).shape.empty());
  const ValueId v = param(g, DType::F16, {7});
  expect_layout(g, g.transpose(v, 0, 0, kLoc), {7}, {1}, 0, v);
  expect_user_error([&] { g.transpose(x, 0, 2, kLoc); }, "out of range");
}

TEST(Views, OfAComputedValueUseItAsTheRoot) {
  Graph g;
  const ValueId x = param(g, DType::F32, {4, 6});
  const ValueId y = g.unary(UnaryOp::Exp, x, {});
  const ValueId s = g.select(g.slice(y, 1, 1, 5, 2, {}), 0, 3, {});
  expect_layout(g, s, {2}, {2}, 19, y);
}

TEST(Expand, SizeOneDimsGetStrideZero) {
  Graph g;
  const ValueId p = param(g, DType::F32, {3, 1});  // strides [1, 1]
  const ValueId e = g.expand(p, {2, 3, 4}, kLoc);
  expect_layout(g, e, {2, 3, 4}, {0, 1, 0}, 0, p);
  EXPECT_EQ(g.node(e).kind, OpKind::Expand);
  expect_layout(g, g.expand(p, {-1, 5}, kLoc), {3, 5}, {1, 0}, 0, p);
  expect_layout(g, g.expand(p, {3, 1}, kLoc), {3, 1}, {1, 1}, 0, p);
  expect_layout(g, g.expand(p, {3, 0}, kLoc), {3, 0}, {1, 0}, 0, p);
  // A new leading dim of size 1 gets the stride a contiguous tensor would have.
  expect_layout(g, g.expand(p, {1, 3, 1}, kLoc), {1, 3, 1}, {3, 1, 1}, 0, p);
  // A 0-dim tensor expands to anything.
  const ValueId z = param(g, DType::F32, {});
  expect_layout(g, g.expand(z, {2, 5}, kLoc), {2, 5}, {0, 0}, 0, z);
  // Expanding a view keeps its offset and root.
  const ValueId x = param(g, DType::F16, {4, 6});
  const ValueId row = g.select(x, 0, 2, kLoc);
  expect_layout(g, g.expand(row, {4, 6}, kLoc), {4, 6}, {0, 1}, 12, x);
}

TEST(Expand, Errors) {
  Graph g;
  const ValueId p = param(g, DType::F32, {3, 1});
  EXPECT_EQ(expect_user_error(
                [&] {
                  g.expand(p, {5, 4}, kLoc);
                },
                "non-singleton"),
            "cannot expand f32[3, 1] to [5, 4]: the expanded size 5 must match the existing size "
            "3 at non-singleton dimension 0");
  expect_user_error([&] { g.expand(p, {-1, 3, 4}, kLoc); }, "new leading dimension 0");
  expect_user_error([&] { g.expand(p, {4}, kLoc); }, "number of sizes");
  expect_user_error([&] { g.expand(p, {3, -2}, kLoc); }, "negative");
  expect_user_error([&] { g.expand(p, {1 << 30, 3, 1 << 20}, kLoc); }, "too large");
}

TEST(Select, RemovesTheDimAndMovesTheOffset) {
  Graph g;
  const ValueId x = param(g, DType::F32, {4, 5, 6});  // strides [30, 6, 1]
  const ValueId s = g.select(x, 1, -2, kLoc);         // index 3
  expect_layout(g, s, {4, 6}, {30, 1}, 18, x);
  EXPECT_EQ(g.node(s).kind, OpKind::Select);
  EXPECT_EQ(g.node(s).dim, 1);
  EXPECT_EQ(g.node(s).start, 3);
  expect_layout(g, g.select(x, -1, 5, kLoc), {4, 5}, {30, 6}, 5, x);
  const ValueId v = param(g, DType::I64, {7});
  expect_layout(g, g.select(v, 0, -7, kLoc), {}, {}, 0, v);
}

TEST(Select, OutOfRangeLiteralIndexIsABuildError) {
  Graph g;
  const ValueId x = param(g, DType::F32, {4, 5});
  EXPECT_EQ(expect_user_error([&] { g.select(x, 1, 5, kLoc); }, "out of bounds"),
            "index 5 is out of bounds for dimension 1 with size 5");
  expect_user_error([&] { g.select(x, 0, -5, kLoc); }, "index -5 is out of bounds");
  const ValueId z = param(g, DType::F32, {});
  expect_user_error([&] { g.select(z, 0, 0, kLoc); }, "0-dim");
  const ValueId e = param(g, DType::F32, {0});
  expect_user_error([&] { g.select(e, 0, 0, kLoc); }, "out of bounds");
}

}  // namespace
}  // namespace tilefuse
