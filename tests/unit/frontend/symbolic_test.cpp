// Symbolic dims in signatures (`x: f16[T, 4096]`): parsing, binding, how
// symbols flow through the ops, and the graph's text form.
#include <gtest/gtest.h>

#include <limits>

#include "frontend/frontend.h"

namespace tilefuse::testing {
namespace {

constexpr const char* kGather =
    "def g(x: f16[T, 64], w: f16[64, N], idx: i64[M] in [0, T)):\n"
    "    return x[idx] @ w\n";

TEST(Symbolic, UnboundSymbolsTakeGenericValues) {
  Program p = parse_program(kGather, "g.tfs");
  const Graph& g = p.graph;
  ASSERT_EQ(g.symbols().size(), 3u);
  EXPECT_EQ(g.symbols()[0].name, "T");
  EXPECT_EQ(g.symbols()[1].name, "N");
  EXPECT_EQ(g.symbols()[2].name, "M");
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(g.symbols()[i].value, generic_symbol_value(i));
  // Odd, distinct and far from the special sizes 0 and 1.
  EXPECT_EQ(generic_symbol_value(0) % 2, 1);
  EXPECT_EQ(generic_symbol_value(1, true) % 16, 0);
  EXPECT_NE(generic_symbol_value(1, true) % 32, 0);
  const Node& x = g.node(g.parameters()[0]);
  EXPECT_EQ(x.dim_symbols, (std::vector<SymbolId>{0, kFixedDim}));
  const Node& out = g.node(g.outputs()[0]);
  EXPECT_EQ(out.dim_symbols, (std::vector<SymbolId>{2, 1}));  // [M, N]
  EXPECT_EQ(symbolic_shape_string(g, out), "[M, N]");
  const Node& idx = g.node(g.parameters()[2]);
  ASSERT_TRUE(idx.range);
  EXPECT_EQ(idx.range->hi_symbol, 0);
  EXPECT_EQ(idx.range->hi, g.symbols()[0].value);
}

// Eight symbolic dims on one tensor: the generic placeholders (each over
// 1000) multiply past int64, which the generic graph tolerates (its strides
// saturate; kernels never read them). Given sizes are checked, and an
// overflow names only a size the user gave.
TEST(Symbolic, EightSymbolicDimsOnOneTensor) {
  const std::string src =
      "def f(x: f32[A, B, C, D, E, F, G, H], w: f32[H, 4], y: f32[4, K, K, K, K, K, K, K]):\n"
      "    return x @ w + 1.0, y[3] * 2.0\n";
  const Program p = parse_program(src, "f.tfs");
  const Graph& g = p.graph;
  ASSERT_EQ(g.symbols().size(), 9u);
  EXPECT_EQ(symbolic_shape_string(g, g.node(g.outputs()[0])), "[A, B, C, D, E, F, G, 4]");
  EXPECT_EQ(symbolic_shape_string(g, g.node(g.outputs()[1])), "[K, K, K, K, K, K, K]");
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(g.node(g.parameters()[0]).shape[0], generic_symbol_value(0));
  // y[3]: a view whose offset (3 * K^7 at ~1300) saturates; printed as `?`.
  const std::string text = g.to_string();
  EXPECT_NE(text.find("select %2 dim=0 index=3 : f32[K, K, K, K, K, K, K] strides=[" +
                      std::to_string(g.node(g.parameters()[2]).strides[1]) + ", "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("] offset=? root=%2"), std::string::npos) << text;
  for (const Node& n : g.nodes())
    for (int64_t st : n.strides) EXPECT_GE(st, 0) << text;  // saturated, not wrapped
  EXPECT_EQ(g.node(g.parameters()[2]).strides[0], max);
  // Small sizes: the exact shapes.
  SymbolValues small = {{"A", 2}, {"B", 1}, {"C", 3}, {"D", 2}, {"E", 1},
                        {"F", 2}, {"G", 2}, {"H", 3}, {"K", 2}};
  const Program b = parse_program(src, "f.tfs", &small);
  EXPECT_EQ(b.graph.node(b.graph.outputs()[0]).shape, (Shape{2, 1, 3, 2, 1, 2, 2, 4}));
  EXPECT_EQ(b.graph.node(b.graph.outputs()[1]).shape, (Shape{2, 2, 2, 2, 2, 2, 2}));
  // Given sizes whose product overflows: the message names the given size.
  SymbolValues huge = small;
  for (const char* s : {"A", "B", "C", "D"}) huge[s] = 100000;
  try {
    parse_program(src, "f.tfs", &huge);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "the shape of 'x' has too many elements with D = 100000 (the product of its dims "
              "overflows)");
    EXPECT_EQ(e.loc().line, 1);
    EXPECT_EQ(e.loc().col, 23);  // D
  }
  // A fixed dim that overflows after a huge symbol names the symbol too (it
  // said "the shape has too many elements", as of a program's own sizes).
  SymbolValues huge_t = {{"T", INT64_MAX}};
  try {
    parse_program("def f(x: f32[T, 2048]):\n    return x\n", "t.tfs", &huge_t);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "the shape of 'x' has too many elements with T = 9223372036854775807 (the product "
              "of its dims overflows)");
    EXPECT_EQ(e.loc().line, 1);
    EXPECT_EQ(e.loc().col, 17);  // 2048
  }
}

TEST(Symbolic, BoundValuesGiveTheSameNodes) {
  SymbolValues a = {{"T", 100}, {"N", 32}, {"M", 7}};
  SymbolValues b = {{"T", 1}, {"N", 16}, {"M", 0}};
  Program pa = parse_program(kGather, "g.tfs", &a);
  Program pb = parse_program(kGather, "g.tfs", &b);
  ASSERT_EQ(pa.graph.size(), pb.graph.size());
  for (ValueId v = 0; v < pa.graph.size(); ++v) {
    EXPECT_EQ(pa.graph.node(v).kind, pb.graph.node(v).kind);
    EXPECT_EQ(pa.graph.node(v).dim_symbols, pb.graph.node(v).dim_symbols);
  }
  EXPECT_EQ(pa.graph.node(pa.graph.outputs()[0]).shape, (Shape{7, 32}));
  EXPECT_EQ(pb.graph.node(pb.graph.outputs()[0]).shape, (Shape{0, 16}));
  // The text form names the symbols and their values, and prints symbolic
  // dims by name.
  const std::string text = pa.graph.to_string();
  EXPECT_EQ(text.substr(0, text.find('\n')), "symbols T=100, N=32, M=7");
  EXPECT_NE(text.find("parameter idx in [0, T) : i64[M]"), std::string::npos) << text;
  EXPECT_NE(text.find("matmul %3, %1 : f16[M, N]"), std::string::npos) << text;
}

TEST(Symbolic, UnknownNameInBindingIsAnError) {
  SymbolValues v = {{"Q", 3}};
  try {
    parse_program(kGather, "g.tfs", &v);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("`Q` is not a symbolic dim of 'g' (its symbolic dims: T, "
                                         "N, M)"),
              std::string::npos)
        << e.what();
  }
  SymbolValues neg = {{"T", -1}};
  EXPECT_THROW(parse_program(kGather, "g.tfs", &neg), UserError);
  const char* fixed = "def f(x: f32[4]):\n    return x\n";
  EXPECT_THROW(parse_program(fixed, "f.tfs", &v), UserError);
}

TEST(Symbolic, SymbolsFlowThroughOps) {
  // A bias broadcast from 1, a permute, where, addmm with a broadcast bias.
  const char* src =
      "def f(x: f32[B, T, 8], b: f32[1, 8], w: f32[8, N], a: f32[T, 8], c: f32[N]):\n"
      "    h = torch.relu(x + b)\n"
      "    y = h.permute(1, 0, 2)\n"
      "    z = torch.where(y > 0, y, 0.5)\n"
      "    return z @ w, torch.addmm(c, a, w), x[:, :, 2:4]\n";
  SymbolValues v = {{"B", 3}, {"T", 5}, {"N", 6}};
  Program p = parse_program(src, "f.tfs", &v);
  const Graph& g = p.graph;
  // z @ w: [T, B, N]; addmm: [T, N]; the slice of a fixed dim keeps B and T.
  EXPECT_EQ(symbolic_shape_string(g, g.node(g.outputs()[0])), "[T, B, N]");
  EXPECT_EQ(g.node(g.outputs()[0]).shape, (Shape{5, 3, 6}));
  EXPECT_EQ(symbolic_shape_string(g, g.node(g.outputs()[1])), "[T, N]");
  EXPECT_EQ(symbolic_shape_string(g, g.node(g.outputs()[2])), "[B, T, 2]");
}

TEST(Symbolic, ExpandOfFixedOneIsFixed) {
  // A .tfs body cannot name T: -1 keeps x's symbolic dim, a new dim is fixed.
  const char* src = "def f(x: f32[T, 1]):\n    return x.expand(3, -1, 4)\n";
  Program p = parse_program(src, "f.tfs");
  EXPECT_EQ(symbolic_shape_string(p.graph, p.graph.node(p.graph.outputs()[0])), "[3, T, 4]");
}

TEST(Symbolic, SymbolicRangeMayBeEmptyAtABinding) {
  // An index into a dim bound to 0: the program is valid (no index can be
  // drawn at random, but a caller may pass an empty index).
  SymbolValues v = {{"T", 0}, {"N", 4}, {"M", 0}};
  Program p = parse_program(kGather, "g.tfs", &v);
  EXPECT_EQ(p.graph.node(p.graph.parameters()[2]).range->hi, 0);
}

}  // namespace
}  // namespace tilefuse::testing
