// Every expression construct of the language builds the graph PyTorch
// would: operators and precedence, scalars, indexing, methods and torch.*
// functions with their keyword arguments.
#include <gtest/gtest.h>

#include "frontend/frontend.h"
#include "frontend_test_util.h"

namespace tilefuse::testing {
namespace {

// Parses `def f(<params>):\n    return <expr>\n` and returns the program.
Program expr(const std::string& params, const std::string& e) {
  return parse("def f(" + params + "):\n    return " + e + "\n");
}

const Node& input(const Program& p, const Node& n, size_t i) {
  return p.graph.node(n.inputs.at(i));
}

// --- operators ---------------------------------------------------------------

TEST(Operators, PrecedenceFollowsPython) {
  // a + b * c: the multiply binds tighter.
  Program p = expr("a: f32[4], b: f32[4], c: f32[4]", "a + b * c");
  EXPECT_EQ(output(p).binary, BinaryOp::Add);
  EXPECT_EQ(input(p, output(p), 1).binary, BinaryOp::Mul);

  // a - b - c is (a - b) - c.
  p = expr("a: f32[4], b: f32[4], c: f32[4]", "a - b - c");
  EXPECT_EQ(output(p).binary, BinaryOp::Sub);
  EXPECT_EQ(input(p, output(p), 0).binary, BinaryOp::Sub);
  EXPECT_EQ(input(p, output(p), 1).name, "c");

  // '@', '*' and '/' share a level, left associative: (a @ b) * c / d.
  p = expr("a: f32[4, 4], b: f32[4, 4], c: f32[4], d: f32[4]", "a @ b * c / d");
  EXPECT_EQ(output(p).binary, BinaryOp::Div);
  const Node& mul = input(p, output(p), 0);
  EXPECT_EQ(mul.binary, BinaryOp::Mul);
  EXPECT_EQ(input(p, mul, 0).kind, OpKind::Matmul);

  // Unary minus binds tighter than '@': (-a) @ b.
  p = expr("a: f32[4, 4], b: f32[4, 4]", "-a @ b");
  EXPECT_EQ(output(p).kind, OpKind::Matmul);
  EXPECT_EQ(input(p, output(p), 0).unary, UnaryOp::Neg);

  // Comparisons bind loosest: (a + 1) < (b * 2).
  p = expr("a: f32[4], b: f32[4]", "a + 1 < b * 2");
  EXPECT_EQ(output(p).binary, BinaryOp::Lt);
  EXPECT_EQ(output(p).dtype, DType::Bool);
  EXPECT_EQ(input(p, output(p), 0).binary, BinaryOp::Add);
  EXPECT_EQ(input(p, output(p), 1).binary, BinaryOp::Mul);

  // Parentheses override.
  p = expr("a: f32[4], b: f32[4], c: f32[4]", "(a + b) * c");
  EXPECT_EQ(output(p).binary, BinaryOp::Mul);
  EXPECT_EQ(input(p, output(p), 0).binary, BinaryOp::Add);
}

TEST(Operators, EveryComparison) {
  const std::pair<const char*, BinaryOp> cases[] = {{"==", BinaryOp::Eq}, {"!=", BinaryOp::Ne},
                                                    {"<", BinaryOp::Lt},  {"<=", BinaryOp::Le},
                                                    {">", BinaryOp::Gt},  {">=", BinaryOp::Ge}};
  for (const auto& [op, kind] : cases) {
    Program p = expr("a: i32[3], b: i64[3]", std::string("a ") + op + " b");
    EXPECT_EQ(output(p).binary, kind) << op;
    EXPECT_EQ(output(p).dtype, DType::Bool) << op;
    EXPECT_EQ(output(p).loc.col, 14) << op;
    EXPECT_EQ(output(p).loc.length, static_cast<int>(std::string(op).size())) << op;
  }
}

TEST(Operators, BinaryLocIsTheOperator) {
  Program p = expr("a: f32[4], b: f32[4]", "a  *  b");
  EXPECT_EQ(output(p).loc.line, 2);
  EXPECT_EQ(output(p).loc.col, 15);
  EXPECT_EQ(output(p).loc.length, 1);
}

TEST(Operators, UnaryPlusAndLogicalNot) {
  Program p = expr("a: f32[4]", "+a");
  EXPECT_EQ(p.graph.outputs()[0], p.graph.parameters()[0]);
  p = expr("m: bool[4]", "~m");
  EXPECT_EQ(output(p).unary, UnaryOp::LogicalNot);
  EXPECT_EQ(output(p).dtype, DType::Bool);
  p = expr("a: f32[4]", "~(a > 0)");
  EXPECT_EQ(output(p).unary, UnaryOp::LogicalNot);
}

// --- scalars -----------------------------------------------------------------

const Node& scalar_operand(const Program& p) {
  const Node& out = output(p);
  for (ValueId v : out.inputs)
    if (p.graph.node(v).kind == OpKind::Scalar) return p.graph.node(v);
  ADD_FAILURE() << "no scalar operand";
  return out;
}

TEST(Scalars, LiteralKindsAndPromotion) {
  Program p = expr("x: f16[4]", "x * 2");
  EXPECT_EQ(scalar_operand(p).scalar, 2.0);
  EXPECT_EQ(scalar_operand(p).dtype, DType::I64);
  EXPECT_EQ(output(p).dtype, DType::F16);  // a wrapped number does not promote

  p = expr("x: i32[4]", "x * 1.5");
  EXPECT_EQ(scalar_operand(p).scalar, 1.5);
  EXPECT_EQ(output(p).dtype, DType::F32);  // int tensor * float scalar -> default float

  p = expr("x: i32[4]", "x + True");
  EXPECT_EQ(scalar_operand(p).dtype, DType::Bool);
  EXPECT_EQ(output(p).dtype, DType::I32);

  p = expr("x: f32[4]", "x * 1e-3");
  EXPECT_DOUBLE_EQ(scalar_operand(p).scalar, 1e-3);
  p = expr("x: f32[4]", "x * .5 + 2.");
  EXPECT_EQ(scalar_operand(p).scalar, 2.0);
  p = expr("x: f32[4]", "x * 1_000");
  EXPECT_EQ(scalar_operand(p).scalar, 1000.0);
  p = expr("x: f32[4]", "x * 0x10");
  EXPECT_EQ(scalar_operand(p).scalar, 16.0);
}

TEST(Scalars, NegativeLiteralsAreFolded) {
  Program p = expr("x: f32[4]", "x + -1.5");
  EXPECT_EQ(output(p).binary, BinaryOp::Add);
  EXPECT_EQ(scalar_operand(p).scalar, -1.5);
  EXPECT_TRUE(nodes_of(p, OpKind::Unary).empty());
  // The folded literal spans the minus and the number.
  EXPECT_EQ(scalar_operand(p).loc.col, 16);
  EXPECT_EQ(scalar_operand(p).loc.length, 4);

  p = expr("x: f32[4]", "x * -2");
  EXPECT_EQ(scalar_operand(p).scalar, -2.0);
  EXPECT_EQ(scalar_operand(p).dtype, DType::I64);
}

TEST(Scalars, ConstantExpressionsFoldLikePython) {
  Program p = expr("x: f32[4]", "x * (1 / 4)");
  EXPECT_EQ(scalar_operand(p).scalar, 0.25);
  EXPECT_EQ(scalar_operand(p).dtype, DType::F32);  // int / int is a float
  p = expr("x: f32[4]", "x * (2 * 3 - 1)");
  EXPECT_EQ(scalar_operand(p).scalar, 5.0);
  EXPECT_EQ(scalar_operand(p).dtype, DType::I64);
  p = expr("x: f32[4]", "x + (True + True)");
  EXPECT_EQ(scalar_operand(p).scalar, 2.0);
  EXPECT_EQ(scalar_operand(p).dtype, DType::I64);
  p = expr("x: f32[4]", "x * (1 < 2)");
  EXPECT_EQ(scalar_operand(p).dtype, DType::Bool);
  EXPECT_EQ(scalar_operand(p).scalar, 1.0);
  // A constant bound to a name is still a Python number.
  p = parse("def f(x: f16[4]):\n    s = 0.5\n    k = -s\n    return x * k\n");
  EXPECT_EQ(scalar_operand(p).scalar, -0.5);
  EXPECT_EQ(output(p).dtype, DType::F16);
}

// Integer literals stay exact past 2^53 (PyTorch keeps Python ints as
// int64), through folding too; the largest i64 literal is accepted.
TEST(Scalars, IntegerLiteralsAreExactInt64) {
  Program p = expr("x: i64[4]", "x + 9007199254740993");
  EXPECT_EQ(scalar_operand(p).iscalar, 9007199254740993);
  p = expr("x: i64[4]", "x + 9223372036854775806");
  EXPECT_EQ(scalar_operand(p).iscalar, 9223372036854775806);
  p = expr("x: i64[4]", "x + (9007199254740993 - 1)");
  EXPECT_EQ(scalar_operand(p).iscalar, 9007199254740992);
  p = expr("x: i64[4]", "x * -9223372036854775807");
  EXPECT_EQ(scalar_operand(p).iscalar, -9223372036854775807);
  p = expr("x: i64[4]", "x * (9007199254740993 == 9007199254740992)");
  EXPECT_EQ(scalar_operand(p).dtype, DType::Bool);
  EXPECT_EQ(scalar_operand(p).iscalar, 0);
  EXPECT_THROW(expr("x: i64[4]", "x + (9223372036854775807 + 1)"), UserError);
}

// INT64_MIN is written as Python writes it, a '-' before 2**63, wherever a
// negated literal goes: an operand, a keyword argument, a range bound.
TEST(Scalars, Int64MinIsANegatedLiteral) {
  Program p = expr("x: i64[4]", "x + -9223372036854775808");
  EXPECT_EQ(scalar_operand(p).iscalar, INT64_MIN);
  EXPECT_EQ(scalar_operand(p).dtype, DType::I64);
  p = expr("x: i64[4]", "x * - 0x8000000000000000");
  EXPECT_EQ(scalar_operand(p).iscalar, INT64_MIN);
  p = expr("x: i64[4]", "x + (-9223372036854775808 + 1)");
  EXPECT_EQ(scalar_operand(p).iscalar, -9223372036854775807);
  p = expr("x: i64[4]", "torch.clamp(x, min=-9223372036854775808)");
  ASSERT_TRUE(output(p).clamp_min);
  EXPECT_EQ(*output(p).clamp_min, -9223372036854775808.0);
  p = parse("def f(i: i64[3] in [-9223372036854775808, 9223372036854775807)):\n    return i\n");
  ASSERT_TRUE(p.graph.node(p.graph.parameters()[0]).range);
  EXPECT_EQ(p.graph.node(p.graph.parameters()[0]).range->lo, INT64_MIN);
  EXPECT_EQ(p.graph.node(p.graph.parameters()[0]).range->hi, INT64_MAX);
}

// Symbolic dims at their generic placeholder sizes do not count toward the
// 2^40-element limit (four placeholders of ~1000 would pass it): the sizes
// are checked when given, at parse time with values, else when bound.
TEST(SymbolicDims, GenericSizesAreNotTooLarge) {
  const std::string src =
      "def f(x: f32[A, B, C, D], w: f32[D, 4]):\n    return x @ w\n";
  const Program p = parse(src);
  EXPECT_EQ(output(p).shape.size(), 4u);
  const SymbolValues huge = {{"A", 100000}, {"B", 100000}, {"C", 1000}, {"D", 1000}};
  EXPECT_THROW(parse_program(src, "test.tfs", &huge), UserError);
  // The error gives the sizes, not only the symbols of the type.
  const SymbolValues square = {{"A", 2000000}, {"B", 2000000}, {"C", 1}, {"D", 1}};
  try {
    parse_program(src, "test.tfs", &square);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("parameter `x` is too large: f32[A, B, C, D] with A = 2000000, "
                       "B = 2000000, C = 1, D = 1 has more than 2^40 elements"),
              std::string::npos)
        << msg;
  }
  const SymbolValues small = {{"A", 1}, {"B", 2}, {"C", 3}, {"D", 4}};
  EXPECT_EQ(output(parse_program(src, "test.tfs", &small)).shape, shape({1, 2, 3, 4}));
}

// --- indexing ------------------------------------------------------------------

TEST(Indexing, GatherAlongTheWrittenDim) {
  Program p = expr("x: f16[8, 6], i: i64[5]", "x[i]");
  const auto g0 = nodes_of(p, OpKind::Index);
  ASSERT_EQ(g0.size(), 1u);
  EXPECT_EQ(g0[0]->dim, 0);
  EXPECT_EQ(output(p).shape, shape({5, 6}));

  p = expr("x: f16[8, 6], i: i32[3, 2]", "x[:, i]");
  EXPECT_TRUE(nodes_of(p, OpKind::Slice).empty());  // a bare ':' is no view
  EXPECT_EQ(output(p).dim, 1);
  EXPECT_EQ(output(p).shape, shape({8, 3, 2}));

  p = expr("x: f16[2, 8, 6], i: i64[4]", "x[..., i]");
  EXPECT_EQ(output(p).dim, 2);
  EXPECT_EQ(output(p).shape, shape({2, 8, 4}));
}

TEST(Indexing, SlicesAreViews) {
  Program p = expr("x: f32[10, 12]", "x[2:8]");
  ASSERT_EQ(output(p).kind, OpKind::Slice);
  EXPECT_EQ(output(p).dim, 0);
  EXPECT_EQ(output(p).start, 2);
  EXPECT_EQ(output(p).end, 8);
  EXPECT_EQ(output(p).shape, shape({6, 12}));

  p = expr("x: f32[10, 12]", "x[:, ::5]");
  EXPECT_EQ(output(p).dim, 1);
  EXPECT_EQ(output(p).step, 5);
  EXPECT_EQ(output(p).shape, shape({10, 3}));

  p = expr("x: f32[10, 12]", "x[-3:, 1:-1:2]");
  EXPECT_EQ(output(p).shape, shape({3, 5}));
  const Node& first = input(p, output(p), 0);
  EXPECT_EQ(first.kind, OpKind::Slice);
  EXPECT_EQ(first.start, 7);

  p = expr("x: f32[10, 12]", "x[:]");
  EXPECT_EQ(output(p).shape, shape({10, 12}));
  p = expr("x: f32[10, 12]", "x[5:2]");  // empty, as in Python
  EXPECT_EQ(output(p).shape, shape({0, 12}));
  p = expr("x: f32[10, 12]", "x[2:None]");
  EXPECT_EQ(output(p).shape, shape({8, 12}));
}

TEST(Indexing, IntegerSelectRemovesTheDim) {
  Program p = expr("x: f32[10, 12]", "x[3]");
  ASSERT_EQ(output(p).kind, OpKind::Select);
  EXPECT_EQ(output(p).start, 3);
  EXPECT_EQ(output(p).shape, shape({12}));

  p = expr("x: f32[10, 12]", "x[-1, 2:4]");
  EXPECT_EQ(output(p).kind, OpKind::Slice);
  EXPECT_EQ(output(p).dim, 0);  // the select removed dim 0 first
  EXPECT_EQ(output(p).shape, shape({2}));
  EXPECT_EQ(input(p, output(p), 0).start, 9);

  p = expr("x: f32[4, 10, 12]", "x[..., 0]");
  EXPECT_EQ(output(p).shape, shape({4, 10}));
  EXPECT_EQ(output(p).dim, 2);
}

TEST(Indexing, SelectBeforeGatherShiftsTheGatherDim) {
  // PyTorch applies integer indices as selects, then the tensor index.
  Program p = expr("x: f32[4, 10, 12], i: i64[3]", "x[0, :, i]");
  EXPECT_EQ(output(p).kind, OpKind::Index);
  EXPECT_EQ(output(p).dim, 1);
  EXPECT_EQ(output(p).shape, shape({10, 3}));

  p = expr("x: f32[4, 10, 12], i: i64[3]", "x[i, 1:5, 2]");
  EXPECT_EQ(output(p).dim, 0);
  EXPECT_EQ(output(p).shape, shape({3, 4}));
}

TEST(Indexing, IndexSelectForms) {
  Program p = expr("x: f32[10, 12], i: i32[4]", "x.index_select(1, i)");
  EXPECT_EQ(output(p).kind, OpKind::Index);
  EXPECT_EQ(output(p).dim, 1);
  EXPECT_EQ(output(p).shape, shape({10, 4}));
  p = expr("x: f32[10, 12], i: i64[4]", "torch.index_select(x, dim=0, index=i)");
  EXPECT_EQ(output(p).dim, 0);
  EXPECT_EQ(output(p).shape, shape({4, 12}));
  p = expr("x: f32[10, 12], i: i64[4]", "torch.index_select(x, -1, i)");
  EXPECT_EQ(output(p).dim, 1);
  // A 0-d index keeps the dim, with size 1 (PyTorch: index.numel()); x[i]
  // drops it.
  p = expr("x: f32[10, 12], i: i64[]", "torch.index_select(x, 0, i)");
  EXPECT_EQ(output(p).kind, OpKind::Index);
  EXPECT_EQ(output(p).shape, shape({1, 12}));
  p = expr("x: f32[10, 12], i: i64[]", "x.index_select(1, i)");
  EXPECT_EQ(output(p).shape, shape({10, 1}));
  p = expr("x: f32[10, 12], i: i64[]", "x[i]");
  EXPECT_EQ(output(p).shape, shape({12}));
}

TEST(Indexing, IndexSelectDoesNotWrapNegatives) {
  // PyTorch's index_select raises for a negative index; x[i] wraps it.
  Program p = expr("x: f32[10, 12], i: i64[4]", "torch.index_select(x, 0, i)");
  EXPECT_FALSE(output(p).index_wraps_negative);
  EXPECT_NE(p.graph.to_string().find("index %0, %1 dim=0 negative=error : f32[4, 12]"),
            std::string::npos)
      << p.graph.to_string();
  p = expr("x: f32[10, 12], i: i64[4]", "x[i]");
  EXPECT_TRUE(output(p).index_wraps_negative);
  EXPECT_EQ(p.graph.to_string().find("negative="), std::string::npos);
}

// --- views ---------------------------------------------------------------------

TEST(Views, Transposes) {
  for (const char* e :
       {"x.T", "x.t()", "x.mT", "x.transpose(0, 1)", "x.transpose(-1, -2)",
        "torch.transpose(x, 0, 1)", "torch.t(x)", "x.permute(1, 0)", "x.permute((1, 0))",
        "x.permute([1, 0])", "torch.permute(x, (1, 0))", "x.swapaxes(0, 1)"}) {
    Program p = expr("x: f32[3, 5]", e);
    EXPECT_EQ(output(p).kind, OpKind::Permute) << e;
    EXPECT_EQ(output(p).perm, (std::vector<int64_t>{1, 0})) << e;
    EXPECT_EQ(output(p).shape, shape({5, 3})) << e;
  }
  Program p = expr("x: f32[2, 3, 5]", "x.T");  // reverses every dim, as PyTorch does
  EXPECT_EQ(output(p).shape, shape({5, 3, 2}));
  p = expr("x: f32[2, 3, 5]", "x.mT");
  EXPECT_EQ(output(p).shape, shape({2, 5, 3}));
  p = expr("x: f32[2, 3, 5]", "x.permute(2, 0, 1)");
  EXPECT_EQ(output(p).shape, shape({5, 2, 3}));
  p = expr("x: f32[5]", "x.t()");  // a no-op on 1-D
  EXPECT_EQ(p.graph.outputs()[0], p.graph.parameters()[0]);
}

TEST(Views, Expand) {
  for (const char* e : {"b.expand(4, 3)", "b.expand((4, 3))", "b.expand([4, -1])"}) {
    Program p = expr("b: f32[3]", e);
    EXPECT_EQ(output(p).kind, OpKind::Expand) << e;
    EXPECT_EQ(output(p).shape, shape({4, 3})) << e;
  }
  Program p = expr("b: f32[1, 3]", "b.expand(2, 5, -1, 3)");
  EXPECT_EQ(output(p).shape, shape({2, 5, 1, 3}));
}

TEST(Views, ContiguousAndCloneAreIdentities) {
  Program p = expr("x: f32[3, 5]", "x.t().contiguous().clone()");
  EXPECT_EQ(output(p).kind, OpKind::Permute);
}

// --- casts ---------------------------------------------------------------------

TEST(Casts, ToAndShorthands) {
  const std::pair<const char*, DType> cases[] = {
      {"x.to(torch.float16)", DType::F16},
      {"x.to(torch.half)", DType::F16},
      {"x.to(dtype=torch.bfloat16)", DType::BF16},
      {"x.to(f64)", DType::F64},
      {"x.to(torch.int32)", DType::I32},
      {"x.to(torch.float8_e4m3fn)", DType::F8E4M3},
      {"x.float()", DType::F32},
      {"x.half()", DType::F16},
      {"x.bfloat16()", DType::BF16},
      {"x.double()", DType::F64},
      {"x.int()", DType::I32},
      {"x.long()", DType::I64},
      {"x.bool()", DType::Bool},
      {"x.byte()", DType::U8},
      {"x.char()", DType::I8},
  };
  for (const auto& [e, dt] : cases) {
    Program p = expr("x: f32[3]", e);
    EXPECT_EQ(output(p).dtype, dt) << e;
    EXPECT_EQ(output(p).shape, shape({3})) << e;
  }
  // Python's types as dtypes mean what PyTorch makes of them.
  EXPECT_EQ(output(expr("x: f32[3]", "x.to(float)")).dtype, DType::F64);
  EXPECT_EQ(output(expr("x: f32[3]", "x.to(int)")).dtype, DType::I64);
  EXPECT_EQ(output(expr("x: f32[3]", "x.to(bool)")).dtype, DType::Bool);
  EXPECT_EQ(output(expr("x: f32[3]", "x.to(torch.float)")).dtype, DType::F32);
  EXPECT_EQ(output(expr("x: f32[3]", "x.to(torch.int)")).dtype, DType::I32);
  // Casting to the dtype a tensor already has returns it, as in PyTorch.
  Program same = expr("x: f16[3]", "x.half().to(torch.float16)");
  EXPECT_EQ(same.graph.outputs()[0], same.graph.parameters()[0]);
  // A dtype bound to a name.
  Program p = parse("def f(x: i8[3]):\n    dt = torch.float16\n    return x.to(dt)\n");
  EXPECT_EQ(output(p).kind, OpKind::Cast);
  EXPECT_EQ(output(p).dtype, DType::F16);
}

// --- elementwise functions -----------------------------------------------------

TEST(Functions, UnaryInEveryForm) {
  const std::pair<const char*, UnaryOp> ops[] = {
      {"relu", UnaryOp::Relu},       {"gelu", UnaryOp::Gelu}, {"silu", UnaryOp::Silu},
      {"sigmoid", UnaryOp::Sigmoid}, {"tanh", UnaryOp::Tanh}, {"exp", UnaryOp::Exp},
      {"log", UnaryOp::Log},         {"sqrt", UnaryOp::Sqrt}, {"abs", UnaryOp::Abs},
      {"neg", UnaryOp::Neg}};
  for (const auto& [name, op] : ops) {
    std::string n(name);
    std::vector<std::string> forms = {"x." + n + "()", "torch." + n + "(x)",
                                      "torch." + n + "(input=x)"};
    if (n == "relu" || n == "gelu" || n == "silu" || n == "sigmoid" || n == "tanh") {
      forms.push_back("F." + n + "(x)");
      forms.push_back("torch.nn.functional." + n + "(x)");
    }
    for (const std::string& e : forms) {
      Program p = expr("x: f32[2, 3]", e);
      EXPECT_EQ(output(p).kind, OpKind::Unary) << e;
      EXPECT_EQ(output(p).unary, op) << e;
      EXPECT_EQ(output(p).shape, shape({2, 3})) << e;
    }
  }
}

TEST(Functions, CallLocIsTheFunctionName) {
  Program p = expr("x: f32[2]", "torch.nn.functional.relu(x)");
  EXPECT_EQ(output(p).loc.col, 12);
  EXPECT_EQ(output(p).loc.length, 24);
  p = expr("x: f32[2]", "x.sigmoid()");
  EXPECT_EQ(output(p).loc.col, 14);
  EXPECT_EQ(output(p).loc.length, 7);
}

TEST(Functions, KeywordDefaultsAreAccepted) {
  Program p = expr("x: f32[2]", "F.relu(x, inplace=False)");
  EXPECT_EQ(output(p).unary, UnaryOp::Relu);
  p = expr("x: f32[2]", "F.gelu(x, approximate=\"none\")");
  EXPECT_EQ(output(p).unary, UnaryOp::Gelu);
}

TEST(Functions, BinaryInEveryForm) {
  const std::pair<const char*, BinaryOp> ops[] = {
      {"maximum", BinaryOp::Maximum}, {"minimum", BinaryOp::Minimum}, {"hypot", BinaryOp::Hypot}};
  for (const auto& [name, op] : ops) {
    std::string n(name);
    for (const std::string& e :
         {"a." + n + "(b)", "torch." + n + "(a, b)", "torch." + n + "(a, other=b)"}) {
      Program p = expr("a: f32[4, 1], b: f32[3]", e);
      EXPECT_EQ(output(p).binary, op) << e;
      EXPECT_EQ(output(p).shape, shape({4, 3})) << e;
    }
  }
}

TEST(Functions, ClampForms) {
  struct Case {
    const char* e;
    std::optional<double> min, max;
  };
  const Case cases[] = {{"x.clamp(min=0)", 0.0, std::nullopt},
                        {"x.clamp(max=6.5)", std::nullopt, 6.5},
                        {"x.clamp(0, 6)", 0.0, 6.0},
                        {"x.clamp(-1, max=1)", -1.0, 1.0},
                        {"torch.clamp(x, min=-2.5)", -2.5, std::nullopt},
                        {"torch.clamp(x, None, 3)", std::nullopt, 3.0},
                        {"torch.clip(x, 1, 2)", 1.0, 2.0},
                        {"x.clamp(min=None, max=1)", std::nullopt, 1.0}};
  for (const Case& c : cases) {
    Program p = expr("x: f32[4]", c.e);
    ASSERT_EQ(output(p).kind, OpKind::Clamp) << c.e;
    EXPECT_EQ(output(p).clamp_min, c.min) << c.e;
    EXPECT_EQ(output(p).clamp_max, c.max) << c.e;
  }
}

// The bounds' literal kind promotes like a Python number (torch.result_type):
// an int tensor clamped by a float bound is f32, by int bounds stays int.
TEST(Functions, ClampBoundsKindPromotes) {
  EXPECT_EQ(output(expr("x: i32[4]", "torch.clamp(x, 0.0, 6.0)")).dtype, DType::F32);
  EXPECT_EQ(output(expr("x: i32[4]", "torch.clamp(x, 0, 6.5)")).dtype, DType::F32);
  EXPECT_EQ(output(expr("x: i32[4]", "x.clamp(0, 6)")).dtype, DType::I32);
  EXPECT_EQ(output(expr("x: f16[4]", "x.clamp(min=-1.5)")).dtype, DType::F16);
}

// An int bound converts to an integer result dtype as PyTorch's
// Scalar::to does: the dtype's range is accepted (errors_test has the rest),
// and u8 takes a negative bound down to -255 by wrapping (PyTorch issue
// 107702: clamp(u8, -10, 10) is 10 everywhere). A float bound promotes and
// is not converted, however large.
TEST(Functions, ClampIntBoundsFitTheResultDtype) {
  Program p = expr("x: i8[4]", "torch.clamp(x, -128, 127)");
  EXPECT_EQ(output(p).dtype, DType::I8);
  EXPECT_EQ(output(p).clamp_min, -128.0);
  EXPECT_EQ(output(p).clamp_max, 127.0);
  p = expr("x: i32[4]", "x.clamp(-2147483648, 2147483647)");
  EXPECT_EQ(output(p).clamp_min, -2147483648.0);
  EXPECT_EQ(output(p).clamp_max, 2147483647.0);
  p = expr("x: u8[4]", "x.clamp(-10, 10)");
  EXPECT_EQ(output(p).dtype, DType::U8);
  EXPECT_EQ(output(p).clamp_min, 246.0);
  EXPECT_EQ(output(p).clamp_max, 10.0);
  p = expr("x: u8[4]", "x.clamp(max=-255)");
  EXPECT_EQ(output(p).clamp_max, 1.0);
  p = expr("x: i8[4]", "torch.clamp(x, 200.0)");
  EXPECT_EQ(output(p).dtype, DType::F32);
  EXPECT_EQ(output(p).clamp_min, 200.0);
  p = expr("x: bool[4]", "torch.clamp(x, 1099511627776)");  // i64: any int bound
  EXPECT_EQ(output(p).dtype, DType::I64);
}

TEST(Functions, Where) {
  Program p = expr("c: bool[4, 1], a: f32[3], b: f32[4, 3]", "torch.where(c, a, b)");
  EXPECT_EQ(output(p).kind, OpKind::Where);
  EXPECT_EQ(output(p).shape, shape({4, 3}));
  p = expr("a: f32[3]", "torch.where(a > 0, a, 0.0)");
  EXPECT_EQ(output(p).kind, OpKind::Where);
  EXPECT_EQ(output(p).dtype, DType::F32);
}

// --- matrix products -------------------------------------------------------------

TEST(Matmul, Forms) {
  for (const char* e : {"a @ b", "a.mm(b)", "a.matmul(b)", "torch.mm(a, b)", "torch.matmul(a, b)",
                        "torch.mm(input=a, mat2=b)"}) {
    Program p = expr("a: f16[8, 4], b: f16[4, 5]", e);
    EXPECT_EQ(output(p).kind, OpKind::Matmul) << e;
    EXPECT_EQ(output(p).shape, shape({8, 5})) << e;
    EXPECT_EQ(output(p).dtype, DType::F16) << e;
  }
  Program p = expr("a: f32[2, 8, 4], b: f32[2, 4, 5]", "torch.bmm(a, b)");
  EXPECT_EQ(output(p).shape, shape({2, 8, 5}));
  p = expr("a: f32[2, 8, 4], b: f32[2, 4, 5]", "a.bmm(b)");
  EXPECT_EQ(output(p).shape, shape({2, 8, 5}));
  // torch.matmul broadcasts batch dims and handles 1-D operands.
  p = expr("a: f32[3, 8, 4], b: f32[4, 5]", "a @ b");
  EXPECT_EQ(output(p).shape, shape({3, 8, 5}));
  p = expr("a: f32[8, 4], v: f32[4]", "a @ v");
  EXPECT_EQ(output(p).shape, shape({8}));
}

TEST(Matmul, AddmmWithScales) {
  Program p = expr("bias: f32[5], a: f32[8, 4], b: f32[4, 5]",
                   "torch.addmm(bias, a, b, beta=0.5, alpha=2)");
  ASSERT_EQ(output(p).kind, OpKind::Addmm);
  EXPECT_EQ(output(p).beta, 0.5);
  EXPECT_EQ(output(p).alpha, 2.0);
  EXPECT_EQ(output(p).shape, shape({8, 5}));
  p = expr("bias: f32[5], a: f32[8, 4], b: f32[4, 5]", "bias.addmm(a, b)");
  EXPECT_EQ(output(p).kind, OpKind::Addmm);
  EXPECT_EQ(output(p).beta, 1.0);
  EXPECT_EQ(output(p).alpha, 1.0);
}

TEST(Matmul, Linear) {
  Program p = expr("x: f16[8, 4], w: f16[5, 4], b: f16[5]", "F.linear(x, w, b)");
  ASSERT_EQ(output(p).kind, OpKind::Addmm);
  EXPECT_EQ(output(p).shape, shape({8, 5}));
  EXPECT_EQ(input(p, output(p), 2).kind, OpKind::Permute);
  p = expr("x: f16[2, 8, 4], w: f16[5, 4]", "F.linear(x, w)");
  EXPECT_EQ(output(p).kind, OpKind::Matmul);
  EXPECT_EQ(output(p).shape, shape({2, 8, 5}));
  p = expr("x: f16[2, 8, 4], w: f16[5, 4], b: f16[5]", "F.linear(x, weight=w, bias=b)");
  EXPECT_EQ(output(p).binary, BinaryOp::Add);
  EXPECT_EQ(output(p).shape, shape({2, 8, 5}));
}

// --- names and imports -------------------------------------------------------------

TEST(Names, ImportAliases) {
  Program p = parse(
      "import torch.nn as nn\n"
      "import torch.nn.functional as fn\n"
      "from torch.nn.functional import silu as act\n"
      "from torch import relu\n"
      "def f(x: f32[2]):\n"
      "    return nn.functional.gelu(fn.relu(act(relu(x))))\n");
  EXPECT_EQ(output(p).unary, UnaryOp::Gelu);
  const Node& r = input(p, output(p), 0);
  EXPECT_EQ(r.unary, UnaryOp::Relu);
  EXPECT_EQ(input(p, r, 0).unary, UnaryOp::Silu);
  EXPECT_EQ(input(p, input(p, r, 0), 0).unary, UnaryOp::Relu);
}

TEST(Names, FunctionsAreValues) {
  Program p = parse("def f(x: f32[2]):\n    act = torch.tanh\n    return act(x)\n");
  EXPECT_EQ(output(p).unary, UnaryOp::Tanh);
  EXPECT_EQ(output(p).loc.line, 3);
  EXPECT_EQ(output(p).loc.col, 12);
}

TEST(Names, ParametersMayShadowBuiltins) {
  Program p = parse("def f(F: f32[2], torch: f32[2]):\n    return F + torch\n");
  EXPECT_EQ(output(p).binary, BinaryOp::Add);
}

}  // namespace
}  // namespace tilefuse::testing
