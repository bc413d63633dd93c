// Type promotion, as a table written from PyTorch's documented rules
// (torch.result_type and the "Type Promotion" section of
// https://pytorch.org/docs/stable/tensor_attributes.html), plus the op-specific
// rules: true division, comparisons, int->float unary ops, where and clamp.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph_test_util.h"

namespace tilefuse {
namespace {

using testing::kLoc;
using DT = DType;

// An operand: a dimensioned tensor (shape [2, 3]), a zero-dim tensor, or a
// Python number of the given literal kind (Bool, I64 or F64).
struct Operand {
  char kind;  // 'T', 'Z' or 'S'
  DType dtype;
};
Operand T(DType d) {
  return {'T', d};
}
Operand Z(DType d) {
  return {'Z', d};
}
Operand S(DType d) {
  return {'S', d};
}

struct Row {
  std::string op;  // "result_type", a unary/binary op name, "where" or "clamp"
  std::vector<Operand> operands;
  std::optional<DType> expected;                // nullopt: the op must throw a UserError
  std::string error = "";                       // ... whose message contains this
  std::optional<DType> compute = std::nullopt;  // Node::compute_dtype, when checked
};

std::string describe(const Row& r) {
  std::ostringstream os;
  os << r.op << "(";
  for (size_t i = 0; i < r.operands.size(); ++i) {
    os << (i ? ", " : "") << r.operands[i].kind << ":" << dtype_name(r.operands[i].dtype);
  }
  os << ")";
  return os.str();
}

ValueId make(Graph& g, const Operand& o) {
  switch (o.kind) {
    case 'T':
      return testing::param(g, o.dtype, {2, 3});
    case 'Z':
      return testing::param(g, o.dtype, {});
    default:
      return g.scalar(o.dtype == DT::Bool ? 1 : o.dtype == DT::I64 ? 2 : 0.5, o.dtype, {});
  }
}

std::optional<UnaryOp> unary_named(const std::string& s) {
#define TF_MATCH(e, name) \
  if (s == name) return UnaryOp::e;
  TILEFUSE_FOR_EACH_UNARY_OP(TF_MATCH)
#undef TF_MATCH
  return std::nullopt;
}
std::optional<BinaryOp> binary_named(const std::string& s) {
#define TF_MATCH(e, name) \
  if (s == name) return BinaryOp::e;
  TILEFUSE_FOR_EACH_BINARY_OP(TF_MATCH)
#undef TF_MATCH
  return std::nullopt;
}

// Builds the row's op; returns the result dtype (and its node, if any).
DType apply(Graph& g, const Row& r, const Node** node) {
  std::vector<ValueId> v;
  if (r.op == "clamp") {
    // The second operand gives the bounds' literal kind only.
    const ValueId x = make(g, r.operands[0]);
    const DType kind = r.operands[1].dtype;
    const ValueId out = kind == DT::F64   ? g.clamp(x, 0.5, 6.5, kind, kLoc)
                        : kind == DT::I64 ? g.clamp(x, 0.0, 6.0, kind, kLoc)
                                          : g.clamp(x, 1.0, std::nullopt, kind, kLoc);
    *node = &g.node(out);
    return g.node(out).dtype;
  }
  for (const Operand& o : r.operands) v.push_back(make(g, o));
  if (r.op == "result_type") return result_type(g, v, kLoc);
  ValueId out;
  if (r.op == "where") {
    out = g.where(testing::param(g, DT::Bool, {2, 3}), v[0], v[1], kLoc);
  } else if (auto u = unary_named(r.op)) {
    out = g.unary(*u, v[0], kLoc);
  } else if (auto b = binary_named(r.op)) {
    out = g.binary(*b, v[0], v[1], kLoc);
  } else {
    throw std::logic_error("unknown op in table: " + r.op);
  }
  *node = &g.node(out);
  return g.node(out).dtype;
}

const std::vector<Row>& table() {
  static const std::vector<Row> rows = {
      // --- promote_types lattice between dimensioned tensors ---
      {"result_type", {T(DT::F16), T(DT::BF16)}, DT::F32},
      {"result_type", {T(DT::F16), T(DT::F32)}, DT::F32},
      {"result_type", {T(DT::BF16), T(DT::F64)}, DT::F64},
      {"result_type", {T(DT::F32), T(DT::F64)}, DT::F64},  // float_tensor + double_tensor
      {"result_type", {T(DT::I32), T(DT::I64)}, DT::I64},  // long_tensor + int_tensor
      {"result_type", {T(DT::U8), T(DT::I32)}, DT::I32},
      {"result_type", {T(DT::U8), T(DT::I64)}, DT::I64},
      {"result_type", {T(DT::I8), T(DT::I32)}, DT::I32},
      {"result_type", {T(DT::Bool), T(DT::I64)}, DT::I64},  // bool_tensor + long_tensor
      {"result_type", {T(DT::Bool), T(DT::U8)}, DT::U8},    // bool_tensor + uint_tensor
      {"result_type", {T(DT::Bool), T(DT::I32)}, DT::I32},  // bool_tensor + int_tensor
      {"result_type", {T(DT::Bool), T(DT::F16)}, DT::F16},
      {"result_type", {T(DT::I64), T(DT::F32)}, DT::F32},  // long_tensor + float_tensor
      {"result_type", {T(DT::I32), T(DT::F16)}, DT::F16},
      {"result_type", {T(DT::U8), T(DT::BF16)}, DT::BF16},
      {"result_type", {T(DT::Bool), T(DT::Bool)}, DT::Bool},
      {"result_type", {T(DT::F8E4M3), T(DT::F8E4M3)}, DT::F8E4M3},
      // i8 with u8 is int16 in PyTorch; float8 never promotes with another type.
      {"result_type", {T(DT::I8), T(DT::U8)}, {}, "int16"},
      {"result_type", {T(DT::U8), T(DT::I8)}, {}, "int16"},
      {"result_type", {T(DT::F8E4M3), T(DT::F16)}, {}, "float8"},
      {"result_type", {T(DT::F8E4M3), T(DT::F8E5M2)}, {}, "float8"},
      {"result_type", {T(DT::F8E5M2), T(DT::F32)}, {}, "float8"},
      {"result_type", {T(DT::F8E4M3), T(DT::I32)}, {}, "float8"},
      {"result_type", {T(DT::Bool), T(DT::F8E5M2)}, {}, "float8"},
      // --- priority groups: dimensioned > zero-dim > wrapped number ---
      {"result_type", {T(DT::I32), S(DT::I64)}, DT::I32},  // int_tensor + 5
      {"result_type", {T(DT::I32), Z(DT::I64)}, DT::I32},  // int_tensor + long_zerodim
      {"result_type", {T(DT::U8), Z(DT::I64)}, DT::U8},    // result_type docs example
      {"result_type", {T(DT::I32), S(DT::F64)}, DT::F32},  // result_type docs: int tensor, 1.0
      {"result_type", {T(DT::I64), S(DT::F64)}, DT::F32},
      {"result_type", {T(DT::U8), S(DT::F64)}, DT::F32},
      {"result_type", {T(DT::Bool), S(DT::I64)}, DT::I64},
      {"result_type", {T(DT::Bool), S(DT::F64)}, DT::F32},
      {"result_type", {T(DT::Bool), S(DT::Bool)}, DT::Bool},
      {"result_type", {T(DT::U8), S(DT::Bool)}, DT::U8},
      {"result_type", {T(DT::F16), S(DT::F64)}, DT::F16},
      {"result_type", {T(DT::BF16), S(DT::I64)}, DT::BF16},
      {"result_type", {T(DT::F8E4M3), S(DT::F64)}, DT::F8E4M3},
      {"result_type", {T(DT::F8E5M2), S(DT::I64)}, DT::F8E5M2},
      {"result_type", {T(DT::F8E4M3), Z(DT::F16)}, DT::F8E4M3},
      {"result_type", {T(DT::F16), Z(DT::F32)}, DT::F16},
      {"result_type", {T(DT::F16), Z(DT::F64)}, DT::F16},
      {"result_type", {T(DT::I32), Z(DT::F64)}, DT::F64},  // higher category: the zero-dim's type
      {"result_type", {T(DT::I8), Z(DT::F16)}, DT::F16},
      {"result_type", {T(DT::Bool), Z(DT::I32)}, DT::I32},
      {"result_type", {T(DT::Bool), Z(DT::U8)}, DT::U8},
      {"result_type", {T(DT::I8), Z(DT::U8)}, DT::I8},  // same category: no int16 needed
      {"result_type", {T(DT::I32), Z(DT::F8E4M3)}, {}, "float8"},
      {"result_type", {Z(DT::I32), S(DT::F64)}, DT::F32},
      {"result_type", {Z(DT::F16), S(DT::F64)}, DT::F16},
      {"result_type", {Z(DT::I32), Z(DT::I64)}, DT::I64},
      {"result_type", {Z(DT::F16), Z(DT::BF16)}, DT::F32},
      {"result_type", {Z(DT::U8), S(DT::I64)}, DT::U8},
      {"result_type", {Z(DT::Bool), S(DT::I64)}, DT::I64},
      {"result_type", {Z(DT::I8), Z(DT::U8)}, {}, "int16"},
      {"result_type", {S(DT::I64), S(DT::F64)}, DT::F32},
      {"result_type", {S(DT::Bool), S(DT::I64)}, DT::I64},
      {"result_type", {T(DT::F16), T(DT::BF16), S(DT::F64)}, DT::F32},
      {"result_type", {T(DT::I32), Z(DT::F16), S(DT::F64)}, DT::F16},
      // --- binary arithmetic ---
      {"add", {T(DT::I32), T(DT::I32)}, DT::I32},
      {"add", {T(DT::Bool), T(DT::Bool)}, DT::Bool},
      {"add", {T(DT::F16), T(DT::BF16)}, DT::F32},
      {"add", {T(DT::I8), T(DT::U8)}, {}, "int16"},
      {"mul", {T(DT::Bool), S(DT::F64)}, DT::F32},
      {"mul", {T(DT::U8), S(DT::I64)}, DT::U8},
      {"sub", {T(DT::I32), S(DT::I64)}, DT::I32},
      {"sub", {T(DT::Bool), T(DT::Bool)}, {}, "bool"},
      {"sub", {T(DT::Bool), T(DT::I32)}, {}, "bool"},
      {"sub", {T(DT::F16), S(DT::Bool)}, {}, "bool"},           // x - True
      {"div", {T(DT::I32), T(DT::I32)}, DT::F32, "", DT::F32},  // true division
      {"div", {T(DT::I64), S(DT::I64)}, DT::F32, "", DT::F32},
      {"div", {T(DT::Bool), T(DT::Bool)}, DT::F32},
      {"div", {T(DT::F16), S(DT::I64)}, DT::F16},
      {"div", {T(DT::U8), T(DT::F64)}, DT::F64},
      {"div", {T(DT::F16), T(DT::BF16)}, DT::F32},
      {"maximum", {T(DT::I32), T(DT::I64)}, DT::I64},
      {"maximum", {T(DT::Bool), T(DT::Bool)}, DT::Bool},
      {"minimum", {T(DT::F16), Z(DT::F32)}, DT::F16},
      {"hypot", {T(DT::F16), T(DT::F16)}, DT::F16},
      {"hypot", {T(DT::I32), T(DT::I32)}, {}, "floating"},
      {"hypot", {T(DT::I32), S(DT::F64)}, DT::F32},
      // --- comparisons: bool results computed in the promoted type ---
      {"lt", {T(DT::I32), S(DT::F64)}, DT::Bool, "", DT::F32},
      {"eq", {T(DT::F16), T(DT::BF16)}, DT::Bool, "", DT::F32},
      {"gt", {T(DT::F16), S(DT::F64)}, DT::Bool, "", DT::F16},
      {"le", {T(DT::I64), Z(DT::F64)}, DT::Bool, "", DT::F64},
      {"ne", {T(DT::Bool), T(DT::Bool)}, DT::Bool, "", DT::Bool},
      {"ge", {T(DT::U8), T(DT::I32)}, DT::Bool, "", DT::I32},
      {"ge", {T(DT::U8), T(DT::I8)}, {}, "int16"},
      {"eq", {T(DT::F8E4M3), T(DT::F16)}, {}, "float8"},
      // --- Python numbers combine as Python does (torch.add(5, 5) is int64) ---
      {"add", {S(DT::I64), S(DT::I64)}, DT::I64},
      {"div", {S(DT::I64), S(DT::I64)}, DT::F32},
      {"add", {S(DT::Bool), S(DT::Bool)}, DT::I64},  // True + True == 2
      {"lt", {S(DT::I64), S(DT::F64)}, DT::Bool},
      {"mul", {S(DT::I64), S(DT::F64)}, DT::F32},
      // --- unary: int->float for the float ops, bool guards ---
      {"exp", {T(DT::I32)}, DT::F32, "", DT::F32},
      {"exp", {T(DT::Bool)}, DT::F32},
      {"exp", {T(DT::F16)}, DT::F16},
      {"exp", {Z(DT::I32)}, DT::F32},
      {"log", {T(DT::U8)}, DT::F32},
      {"sqrt", {T(DT::I64)}, DT::F32},
      {"sqrt", {T(DT::F64)}, DT::F64},
      {"sigmoid", {T(DT::I8)}, DT::F32},
      {"tanh", {T(DT::BF16)}, DT::BF16},
      {"neg", {T(DT::I8)}, DT::I8},
      {"neg", {T(DT::Bool)}, {}, "bool"},
      {"neg", {S(DT::I64)}, DT::I64},
      {"abs", {T(DT::I32)}, DT::I32},
      {"abs", {T(DT::Bool)}, {}, "bool"},
      {"relu", {T(DT::U8)}, DT::U8},
      {"relu", {T(DT::Bool)}, {}, "bool"},
      {"gelu", {T(DT::I32)}, {}, "floating"},
      {"silu", {T(DT::Bool)}, {}, "floating"},
      {"gelu", {T(DT::BF16)}, DT::BF16},
      {"silu", {T(DT::F8E4M3)}, DT::F8E4M3},
      {"logical_not", {T(DT::F32)}, DT::Bool, "", DT::F32},
      {"logical_not", {T(DT::I64)}, DT::Bool},
      // --- where(cond, a, b): a and b promote ---
      {"where", {T(DT::I32), S(DT::F64)}, DT::F32},
      {"where", {T(DT::F16), Z(DT::F32)}, DT::F16},
      {"where", {T(DT::I32), T(DT::I64)}, DT::I64},
      {"where", {T(DT::F16), T(DT::BF16)}, DT::F32},
      {"where", {T(DT::Bool), S(DT::I64)}, DT::I64},
      {"where", {T(DT::F16), S(DT::F64)}, DT::F16},
      {"where", {T(DT::I8), T(DT::U8)}, {}, "int16"},
      // --- clamp(x, bounds of the given literal kind) ---
      {"clamp", {T(DT::I32), S(DT::I64)}, DT::I32},
      {"clamp", {T(DT::I32), S(DT::F64)}, DT::F32},
      {"clamp", {T(DT::U8), S(DT::I64)}, DT::U8},
      {"clamp", {T(DT::F16), S(DT::F64)}, DT::F16},
      {"clamp", {T(DT::BF16), S(DT::I64)}, DT::BF16},
      {"clamp", {T(DT::Bool), S(DT::I64)}, DT::I64},  // result_type(bool tensor, int)
      {"clamp", {Z(DT::I64), S(DT::F64)}, DT::F32},
      {"clamp", {T(DT::Bool), S(DT::Bool)}, {}, "bool"},
  };
  return rows;
}

TEST(PromotionTable, HasAtLeastSixtyRows) {
  EXPECT_GE(table().size(), 60u);
}

TEST(PromotionTable, MatchesPyTorch) {
  for (const Row& r : table()) {
    SCOPED_TRACE(describe(r));
    Graph g;
    const Node* node = nullptr;
    if (!r.expected) {
      testing::expect_user_error([&] { apply(g, r, &node); }, r.error);
      continue;
    }
    DType got = DT::F32;
    ASSERT_NO_THROW(got = apply(g, r, &node));
    EXPECT_EQ(dtype_name(got), dtype_name(*r.expected));
    if (r.compute) {
      ASSERT_NE(node, nullptr);
      EXPECT_EQ(dtype_name(node->compute_dtype), dtype_name(*r.compute));
    }
  }
}

TEST(PromoteTypes, IsSymmetricWhereDefined) {
  const DType all[] = {DT::Bool,   DT::U8,  DT::I8,   DT::I32, DT::I64, DT::F8E4M3,
                       DT::F8E5M2, DT::F16, DT::BF16, DT::F32, DT::F64};
  for (DType a : all) {
    for (DType b : all) {
      SCOPED_TRACE(std::string(dtype_name(a)) + " with " + std::string(dtype_name(b)));
      std::optional<DType> ab, ba;
      try {
        ab = promote_types(a, b);
      } catch (const UserError&) {
      }
      try {
        ba = promote_types(b, a);
      } catch (const UserError&) {
      }
      ASSERT_EQ(ab.has_value(), ba.has_value());
      if (ab) {
        EXPECT_EQ(*ab, *ba);
      }
      if (a == b) {
        EXPECT_EQ(ab, a);
      }
    }
  }
}

TEST(PromoteTypes, MessagesNameBothDtypes) {
  const std::string i16 =
      testing::expect_user_error([] { promote_types(DT::I8, DT::U8, kLoc); }, "int16");
  EXPECT_NE(i16.find("i8 and u8"), std::string::npos) << i16;
  const std::string f8 =
      testing::expect_user_error([] { promote_types(DT::F16, DT::F8E5M2, kLoc); },
                                 "promotion for float8 types is not supported");
  EXPECT_NE(f8.find("f16 and f8e5m2"), std::string::npos) << f8;
}

TEST(Promotion, ScalarOperandsFoldToPythonNumbers) {
  Graph g;
  const ValueId five = g.scalar(5, DT::I64, {});
  const ValueId sum = g.binary(BinaryOp::Add, five, five, {});
  EXPECT_EQ(g.node(sum).kind, OpKind::Scalar);
  EXPECT_EQ(g.node(sum).scalar, 10);
  const ValueId third =
      g.binary(BinaryOp::Div, g.scalar(1, DT::I64, {}), g.scalar(3, DT::I64, {}), {});
  EXPECT_EQ(g.node(third).kind, OpKind::Scalar);
  EXPECT_EQ(g.node(third).scalar, 1.0 / 3.0);  // kept in double, as Python does
  const ValueId neg_true = g.unary(UnaryOp::Neg, g.scalar(1, DT::Bool, {}), {});
  EXPECT_EQ(g.node(neg_true).dtype, DT::I64);
  EXPECT_EQ(g.node(neg_true).scalar, -1);
  const ValueId neg_half = g.unary(UnaryOp::Neg, g.scalar(0.5, DT::F64, {}), {});
  EXPECT_TRUE(g.node(neg_half).is_wrapped_number());
  EXPECT_EQ(g.node(neg_half).scalar, -0.5);
  // A folded number is still a wrapped number: a zero-dim f16 tensor keeps f16.
  const ValueId z = testing::param(g, DT::F16, {});
  EXPECT_EQ(g.node(g.binary(BinaryOp::Mul, z, neg_half, {})).dtype, DT::F16);
  // maximum of two numbers is not Python arithmetic: it builds a node.
  EXPECT_EQ(g.node(g.binary(BinaryOp::Maximum, five, five, {})).kind, OpKind::Binary);
}

TEST(Promotion, ScalarFoldingErrorsLikePython) {
  Graph g;
  const ValueId one = g.scalar(1, DT::I64, {});
  const ValueId zero = g.scalar(0, DT::I64, {});
  testing::expect_user_error([&] { g.binary(BinaryOp::Div, one, zero, kLoc); }, "division by zero");
  const ValueId big = g.scalar(4611686018427387904.0, DT::I64, {});  // 2^62
  testing::expect_user_error([&] { g.binary(BinaryOp::Mul, big, big, kLoc); }, "overflow");
}

}  // namespace
}  // namespace tilefuse
