// Parameters, Python numbers, broadcasting and the elementwise builders.
#include <gtest/gtest.h>

#include <cmath>

#include <limits>
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

TEST(Names, ComeFromTheOpLists) {
  EXPECT_EQ(op_kind_name(OpKind::Parameter), "parameter");
  EXPECT_EQ(op_kind_name(OpKind::Index), "index");
  EXPECT_EQ(op_kind_name(OpKind::Addmm), "addmm");
  EXPECT_EQ(unary_op_name(UnaryOp::Gelu), "gelu");
  EXPECT_EQ(unary_op_name(UnaryOp::LogicalNot), "logical_not");
  EXPECT_EQ(binary_op_name(BinaryOp::Div), "div");
  EXPECT_EQ(binary_op_name(BinaryOp::Ge), "ge");
  for (BinaryOp op :
       {BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge}) {
    EXPECT_TRUE(is_comparison(op)) << binary_op_name(op);
  }
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Maximum,
                      BinaryOp::Minimum, BinaryOp::Hypot}) {
    EXPECT_FALSE(is_comparison(op)) << binary_op_name(op);
  }
}

TEST(Parameter, IsContiguousAndItsOwnRoot) {
  Graph g;
  const ValueId x = g.parameter("x", DType::F16, {4, 0, 3}, std::nullopt, kLoc);
  const ValueId i = g.parameter("i", DType::I64, {50}, IntRange{-64, 64}, kLoc);
  EXPECT_EQ(g.parameters(), (std::vector<ValueId>{x, i}));
  const Node& n = g.node(x);
  EXPECT_EQ(n.kind, OpKind::Parameter);
  EXPECT_EQ(n.name, "x");
  EXPECT_EQ(n.shape, (Shape{4, 0, 3}));
  EXPECT_EQ(n.strides, (std::vector<int64_t>{3, 3, 1}));  // size-0 dims count as 1
  EXPECT_EQ(n.offset, 0);
  EXPECT_EQ(n.storage_root, x);
  EXPECT_FALSE(n.is_view());
  EXPECT_EQ(n.loc.line, kLoc.line);
  ASSERT_TRUE(g.node(i).range.has_value());
  EXPECT_EQ(g.node(i).range->lo, -64);
  EXPECT_EQ(g.node(i).range->hi, 64);
}

TEST(Parameter, RejectsBadDeclarations) {
  Graph g;
  g.parameter("x", DType::F16, {2}, std::nullopt, {});
  expect_user_error([&] { g.parameter("", DType::F16, {2}, std::nullopt, kLoc); }, "name");
  expect_user_error([&] { g.parameter("x", DType::F16, {2}, std::nullopt, kLoc); },
                    "duplicate parameter name `x`");
  expect_user_error(
      [&] {
        g.parameter("y", DType::F16, {2, -3}, std::nullopt, kLoc);
      },
      "negative size -3");
  expect_user_error(
      [&] {
        g.parameter("y", DType::F16, {2}, IntRange{0, 4}, kLoc);
      },
      "only allowed on integer parameters");
  expect_user_error(
      [&] {
        g.parameter("y", DType::Bool, {2}, IntRange{0, 2}, kLoc);
      },
      "only allowed on integer parameters");
  expect_user_error(
      [&] {
        g.parameter("y", DType::I64, {2}, IntRange{5, 5}, kLoc);
      },
      "the range [5, 5) of parameter `y` is empty");
  expect_user_error(
      [&] {
        g.parameter("y", DType::I8, {2}, IntRange{0, 200}, kLoc);
      },
      "does not fit in i8");
  expect_user_error(
      [&] {
        g.parameter("y", DType::U8, {2}, IntRange{-1, 10}, kLoc);
      },
      "does not fit in u8");
  EXPECT_NO_THROW(g.parameter("u", DType::U8, {2}, IntRange{0, 256}, {}));
  EXPECT_NO_THROW(g.parameter("v", DType::I8, {2}, IntRange{-128, 128}, {}));
}

TEST(Parameter, SizeIsLimitedTo2To40Elements) {
  Graph g;
  const int64_t big = int64_t{1} << 40;
  EXPECT_NO_THROW(g.parameter("a", DType::U8, {big}, std::nullopt, {}));
  EXPECT_NO_THROW(g.parameter("b", DType::U8, {1 << 20, 1 << 20}, std::nullopt, {}));
  expect_user_error(
      [&] {
        g.parameter("c", DType::U8, {big, 2}, std::nullopt, kLoc);
      },
      "parameter `c` is too large");
  expect_user_error(
      [&] {
        g.parameter("d", DType::U8, {1 << 21, 1 << 20}, std::nullopt, kLoc);
      },
      "more than 2^40 elements");
  // The product must not overflow int64 on its way to the check.
  const int64_t huge = int64_t{1} << 62;
  expect_user_error(
      [&] {
        g.parameter("e", DType::U8, {huge, huge, 4}, std::nullopt, kLoc);
      },
      "too large");
  expect_user_error(
      [&] {
        g.parameter("f", DType::U8, {huge, 0}, std::nullopt, kLoc);
      },
      "too large");
}

// A tensor with a size-0 dim has no elements; its other dims still count
// toward the limit (strides, offsets and loop bounds span them), and the
// message says so instead of claiming more than 2^40 elements.
TEST(Parameter, AnEmptyTensorIsNotSaidToHaveTooManyElements) {
  Graph g;
  EXPECT_NO_THROW(g.parameter("a", DType::F32, {int64_t{1} << 40, 0}, std::nullopt, {}));
  EXPECT_NO_THROW(g.parameter("b", DType::F32, {0, 1 << 20, 1 << 20}, std::nullopt, {}));
  const int64_t max = std::numeric_limits<int64_t>::max();
  for (const Shape& shape : {Shape{max, 0}, Shape{0, max}, Shape{0, 1 << 21, 1 << 20}}) {
    try {
      g.parameter("x", DType::F32, shape, std::nullopt, kLoc);
      ADD_FAILURE() << "no error for " << shape_to_string(shape);
    } catch (const UserError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find("more than 2^40 elements"), std::string::npos) << msg;
      EXPECT_NE(msg.find("has no elements"), std::string::npos) << msg;
      EXPECT_NE(msg.find("other dims multiply to more than 2^40"), std::string::npos) << msg;
      EXPECT_NE(msg.find(shape_to_string(shape).substr(1, 6)), std::string::npos) << msg;
    }
  }
}

TEST(Scalar, NodeDtypeIsPyTorchsDefaultForItsKind) {
  Graph g;
  const Node& b = g.node(g.scalar(7, DType::Bool, {}));
  EXPECT_EQ(b.dtype, DType::Bool);
  EXPECT_EQ(b.scalar, 1);
  const Node& i = g.node(g.scalar(-3, DType::I64, {}));
  EXPECT_EQ(i.dtype, DType::I64);
  EXPECT_EQ(i.scalar, -3);
  const Node& f = g.node(g.scalar(0.1, DType::F64, {}));
  EXPECT_EQ(f.dtype, DType::F32);
  EXPECT_EQ(f.scalar, 0.1);  // the double value, not rounded to f32
  EXPECT_TRUE(f.is_wrapped_number());
  EXPECT_TRUE(f.shape.empty());
  EXPECT_EQ(g.node(g.scalar(2, DType::I32, {})).dtype, DType::I64);  // by category
  expect_user_error([&] { g.scalar(1e19, DType::I64, kLoc); }, "does not fit in i64");
}

TEST(Broadcast, Shapes) {
  struct Case {
    Shape a, b;
    std::optional<Shape> out;
  };
  const std::vector<Case> cases = {
      {{2, 3}, {3}, Shape{2, 3}},
      {{2, 1}, {1, 4}, Shape{2, 4}},
      {{}, {3, 4}, Shape{3, 4}},
      {{}, {}, Shape{}},
      {{5, 1, 4}, {3, 1}, Shape{5, 3, 4}},
      {{0}, {1}, Shape{0}},
      {{1}, {0}, Shape{0}},
      {{2, 0}, {2, 1}, Shape{2, 0}},
      {{3}, {4}, std::nullopt},
      {{2, 3}, {3, 2}, std::nullopt},
      {{0}, {3}, std::nullopt},
      {{4, 2, 3}, {5, 1, 3}, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_to_string(c.a) + " with " + shape_to_string(c.b));
    EXPECT_EQ(broadcast_shapes(c.a, c.b), c.out);
    EXPECT_EQ(broadcast_shapes(c.b, c.a), c.out);
  }
}

TEST(Broadcast, BinaryResultIsContiguousAndFresh) {
  Graph g;
  const ValueId a = param(g, DType::F32, {5, 1, 4});
  const ValueId b = param(g, DType::F32, {3, 1});
  const ValueId c = g.binary(BinaryOp::Mul, a, b, kLoc);
  const Node& n = g.node(c);
  EXPECT_EQ(n.kind, OpKind::Binary);
  EXPECT_EQ(n.binary, BinaryOp::Mul);
  EXPECT_EQ(n.inputs, (std::vector<ValueId>{a, b}));
  EXPECT_EQ(n.shape, (Shape{5, 3, 4}));
  EXPECT_EQ(n.strides, (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(n.storage_root, c);
  EXPECT_EQ(n.loc.col, kLoc.col);
  // A number broadcasts against anything.
  EXPECT_EQ(g.node(g.binary(BinaryOp::Add, g.scalar(1, DType::I64, {}), a, {})).shape,
            (Shape{5, 1, 4}));
}

TEST(Broadcast, FailureNamesBothShapesAndTheDim) {
  Graph g;
  const ValueId a = param(g, DType::F16, {3, 4});
  const ValueId b = param(g, DType::F16, {5});
  const std::string msg =
      expect_user_error([&] { g.binary(BinaryOp::Add, a, b, kLoc); }, "do not broadcast");
  EXPECT_EQ(msg,
            "add operands do not broadcast: f16[3, 4] and f16[5] differ at dimension 1 (4 vs 5)");
  const ValueId c = param(g, DType::F32, {2, 3, 4});
  const ValueId d = param(g, DType::F32, {7, 1, 4});
  EXPECT_EQ(expect_user_error([&] { g.binary(BinaryOp::Lt, c, d, kLoc); }, "lt"),
            "lt operands do not broadcast: f32[2, 3, 4] and f32[7, 1, 4] differ at dimension 0 "
            "(2 vs 7)");
}

TEST(Where, BroadcastsThreeWays) {
  Graph g;
  const ValueId c = param(g, DType::Bool, {3, 1});
  const ValueId a = param(g, DType::F16, {1, 4});
  const ValueId b = param(g, DType::F16, {2, 1, 1});
  const Node& n = g.node(g.where(c, a, b, kLoc));
  EXPECT_EQ(n.kind, OpKind::Where);
  EXPECT_EQ(n.shape, (Shape{2, 3, 4}));
  EXPECT_EQ(n.dtype, DType::F16);
  EXPECT_EQ(n.inputs, (std::vector<ValueId>{c, a, b}));
  const ValueId half = g.scalar(0.5, DType::F64, {});
  EXPECT_EQ(g.node(g.where(c, half, a, {})).shape, (Shape{3, 4}));
}

TEST(Where, RejectsBadConditionsAndShapes) {
  Graph g;
  const ValueId c = param(g, DType::Bool, {3});
  const ValueId u8 = param(g, DType::U8, {3});
  const ValueId a = param(g, DType::F32, {3});
  const ValueId b = param(g, DType::F32, {4});
  expect_user_error([&] { g.where(u8, a, a, kLoc); }, "where expects a bool condition, got u8");
  EXPECT_EQ(expect_user_error([&] { g.where(c, a, b, kLoc); }, "broadcast"),
            "where operands do not broadcast: bool[3] and f32[4] differ at dimension 0 (3 vs 4)");
}

TEST(Clamp, RequiresABoundAndKeepsThem) {
  Graph g;
  const ValueId x = param(g, DType::F16, {8});
  expect_user_error([&] { g.clamp(x, std::nullopt, std::nullopt, kLoc); }, "at least one");
  const Node& n = g.node(g.clamp(x, std::nullopt, 6.0, kLoc));
  EXPECT_EQ(n.kind, OpKind::Clamp);
  EXPECT_FALSE(n.clamp_min.has_value());
  EXPECT_EQ(n.clamp_max, 6.0);
  EXPECT_EQ(n.shape, (Shape{8}));
}

// Scalar::to<int8_t>() and friends: an int bound outside an integer result
// dtype is an error (not a clamp to 200 that stores as -56); u8 wraps
// negative bounds down to -255, as c10::checked_convert does.
TEST(Clamp, IntBoundsMustFitAnIntegerResult) {
  Graph g;
  const ValueId i8 = param(g, DType::I8, {8});
  const ValueId u8 = param(g, DType::U8, {8});
  const ValueId i32 = param(g, DType::I32, {8});
  EXPECT_EQ(expect_user_error([&] { g.clamp(i8, 200.0, std::nullopt, DType::I64, kLoc); },
                              "without overflow"),
            "clamp min=200 cannot be converted to i8 without overflow (an integer clamp's bounds "
            "must fit its dtype)");
  expect_user_error([&] { g.clamp(u8, 0.0, 300.0, DType::I64, kLoc); }, "max=300");
  expect_user_error([&] { g.clamp(u8, -256.0, std::nullopt, DType::I64, kLoc); }, "min=-256");
  expect_user_error([&] { g.clamp(i32, 2147483648.0, std::nullopt, DType::I64, kLoc); },
                    "min=2147483648 cannot be converted to i32");
  EXPECT_EQ(g.node(g.clamp(u8, -1.0, std::nullopt, DType::I64, kLoc)).clamp_min, 255.0);
  EXPECT_EQ(g.node(g.clamp(i8, 200.5, std::nullopt, DType::F64, kLoc)).dtype, DType::F32);
}

// A floating result's bounds convert as PyTorch's Scalar::to does: a finite
// bound past the largest finite value is an error (torch.clamp(f16, max=1e5)
// raises), an infinite one clamps nothing where the dtype has infinities.
TEST(Clamp, FloatBoundsMustFitAFloatingResult) {
  Graph g;
  const ValueId f16 = param(g, DType::F16, {8});
  const ValueId bf16 = param(g, DType::BF16, {8});
  const ValueId f32 = param(g, DType::F32, {8});
  const ValueId f64 = param(g, DType::F64, {8});
  const ValueId e4m3 = param(g, DType::F8E4M3, {8});
  EXPECT_EQ(expect_user_error([&] { g.clamp(f16, std::nullopt, 1e5, DType::F64, kLoc); },
                              "without overflow"),
            "clamp max=100000 cannot be converted to f16 without overflow (its largest finite "
            "value is 65504)");
  expect_user_error([&] { g.clamp(f16, -65505.0, std::nullopt, DType::F64, kLoc); },
                    "min=-65505 cannot be converted to f16");
  expect_user_error([&] { g.clamp(bf16, 0.0, 1e39, DType::F64, kLoc); }, "max=1e+39");
  expect_user_error([&] { g.clamp(f32, -1e39, std::nullopt, DType::F64, kLoc); }, "to f32");
  expect_user_error([&] { g.clamp(e4m3, std::nullopt, 449.0, DType::F64, kLoc); }, "to f8e4m3");
  expect_user_error([&] { g.clamp(e4m3, std::nullopt, HUGE_VAL, DType::F64, kLoc); }, "max=inf");
  // In range, infinite (where the dtype has infinities) or any f64 bound: taken.
  EXPECT_EQ(g.node(g.clamp(f16, -65504.0, 65504.0, DType::F64, kLoc)).clamp_max, 65504.0);
  EXPECT_EQ(g.node(g.clamp(f16, std::nullopt, HUGE_VAL, DType::F64, kLoc)).clamp_max, HUGE_VAL);
  EXPECT_EQ(g.node(g.clamp(f64, 1e300, std::nullopt, DType::F64, kLoc)).clamp_min, 1e300);
  // An int bound on an f16 tensor converts to f16 too.
  expect_user_error([&] { g.clamp(f16, 70000.0, std::nullopt, DType::I64, kLoc); }, "min=70000");
}

TEST(Clamp, OverloadWithoutKindGuessesFromTheValues) {
  Graph g;
  const ValueId x = param(g, DType::I32, {8});
  EXPECT_EQ(g.node(g.clamp(x, 0.0, 6.0, {})).dtype, DType::I32);
  EXPECT_EQ(g.node(g.clamp(x, 0.5, std::nullopt, {})).dtype, DType::F32);
}

TEST(Cast, AnyToAny) {
  Graph g;
  const ValueId x = param(g, DType::F16, {2, 3});
  const ValueId t = g.transpose(x, 0, 1, {});
  for (DType to : {DType::Bool, DType::U8, DType::I8, DType::I32, DType::I64, DType::F8E4M3,
                   DType::F8E5M2, DType::F16, DType::BF16, DType::F32, DType::F64}) {
    const ValueId c = g.cast(t, to, kLoc);
    const Node& n = g.node(c);
    EXPECT_EQ(n.kind, OpKind::Cast);
    EXPECT_EQ(n.dtype, to);
    EXPECT_EQ(n.shape, (Shape{3, 2}));
    EXPECT_EQ(n.strides, (std::vector<int64_t>{2, 1}));  // a fresh contiguous value
    EXPECT_EQ(n.storage_root, c);
  }
}

TEST(Unary, KeepsShapeAndRecordsTheOp) {
  Graph g;
  const ValueId x = param(g, DType::I32, {4, 5});
  const Node& n = g.node(g.unary(UnaryOp::Sqrt, x, kLoc));
  EXPECT_EQ(n.kind, OpKind::Unary);
  EXPECT_EQ(n.unary, UnaryOp::Sqrt);
  EXPECT_EQ(n.shape, (Shape{4, 5}));
  EXPECT_EQ(n.dtype, DType::F32);
  EXPECT_EQ(expect_user_error([&] { g.unary(UnaryOp::Gelu, x, kLoc); }, "gelu"),
            "gelu requires a floating-point tensor, got i32");
}

TEST(SetName, FirstBindingWinsAndParametersKeepTheirNames) {
  Graph g;
  const ValueId x = g.parameter("x", DType::F32, {2}, std::nullopt, {});
  const ValueId y = g.unary(UnaryOp::Exp, x, {});
  g.set_name(x, "alias");
  g.set_name(y, "h");
  g.set_name(y, "g");
  EXPECT_EQ(g.node(x).name, "x");
  EXPECT_EQ(g.node(y).name, "h");
}

TEST(Graph, InvalidValueIdsAreInternalErrors) {
  Graph g;
  const ValueId x = param(g, DType::F32, {2});
  EXPECT_THROW(g.unary(UnaryOp::Exp, 5, {}), InternalError);
  EXPECT_THROW(g.binary(BinaryOp::Add, x, -1, {}), InternalError);
  EXPECT_THROW(g.matmul(x, 9, {}), InternalError);
  EXPECT_THROW(g.slice(7, 0, 0, 1, 1, {}), InternalError);
  EXPECT_THROW(g.set_name(3, "v"), InternalError);
}

}  // namespace
}  // namespace tilefuse
