// expr_lowering and inline_hooks in isolation: the expression built for
// each kind of node (views composed into index maps, opmath and rounding,
// Python scalars, integer math, gathers with their checks), the placement
// of checks by inline_hooks, and 64-bit indices for large tensors.
#include "lower/expr_lowering.h"

#include <gtest/gtest.h>

#include "lower_test_util.h"
#include "passes/inline_hooks.h"
#include "tir/builder.h"

namespace tilefuse {
namespace {

using tir::Expr;
using tir::Var;

// Lowers the program's single output at coordinates (i, j, ...), every
// parameter being a buffer named after it.
struct Lowered {
  std::string value;
  std::vector<std::string> checks;
};

Lowered lower_output(const std::string& src, const Expr& mask = {}) {
  const Program p = testing::parse(src);
  const Graph& g = p.graph;
  std::map<ValueId, tir::Buffer> buffers;
  for (ValueId v : g.parameters()) {
    const Node& n = g.node(v);
    std::vector<Expr> shape, strides;
    for (size_t d = 0; d < n.shape.size(); ++d) {
      shape.push_back(tir::make_int(index_dtype(n.shape[d]), n.shape[d]));
      strides.push_back(tir::make_int(index_dtype(n.strides[d]), n.strides[d]));
    }
    buffers[v] =
        tir::BufferNode::make(n.name, n.dtype, tir::MemScope::Global, shape, strides, true);
  }
  const ValueId out = g.outputs()[0];
  std::vector<Expr> coords;
  const char* names[] = {"i", "j", "l"};
  for (size_t d = 0; d < g.node(out).shape.size(); ++d) coords.push_back(Var(names[d]));
  const DimEnv env(g, {});
  const LoweredExpr e = ExprLowering(env, buffers).lower(out, coords, mask);
  Lowered r;
  r.value = tir::print(e.value);
  for (const tir::Stmt& c : e.checks) r.checks.push_back(tir::print(c));
  return r;
}

TEST(ExprLowering, ViewsComposeIntoIndexMaps) {
  // slice rows 1::2, transpose, then a slice of the (new) rows: x[1 + 2*j, 2 + i].
  EXPECT_EQ(lower_output("def f(x: f32[9, 8]):\n    return x[1::2].T[2:5]\n").value,
            "x[1 + j*2, 2 + i]");
  // expand drops the broadcast dim; select inserts the fixed index.
  EXPECT_EQ(lower_output("def f(x: f32[1, 8]):\n    return x.expand(4, 8)\n").value, "x[0, j]");
  EXPECT_EQ(lower_output("def f(x: f32[3, 8]):\n    return x[-1].expand(5, 8)\n").value, "x[2, j]");
}

TEST(ExprLowering, HalfMathRunsInF32AndRoundsAtEveryNode) {
  // A Python float stays f32 (opmath), never rounded to f16 first.
  EXPECT_EQ(lower_output("def f(x: f16[4]):\n    return torch.relu(x * 0.1)\n").value,
            "f16(select(f32(f16(f32(x[i])*0.1)) < 0.0, 0.0, f32(f16(f32(x[i])*0.1))))");
  // An i32 operand of an f16 op is rounded to f16 first (TensorIterator).
  EXPECT_EQ(lower_output("def f(x: f16[4], n: i32[4]):\n    return x + n\n").value,
            "f16(f32(x[i]) + f32(f16(n[i])))");
  // Broadcast operands read index 0 / drop leading dims.
  EXPECT_EQ(
      lower_output("def f(x: f32[3, 4], b: f32[1, 4], c: f32[4]):\n    return x * b + c\n").value,
      "x[i, j]*b[0, j] + c[j]");
}

TEST(ExprLowering, IntegersComputeInI64AndWrap) {
  EXPECT_EQ(lower_output("def f(x: i8[4], y: i8[4]):\n    return x * y\n").value,
            "i8(i64(x[i])*i64(y[i]))");
  // True division of integers is f32; comparisons give bool directly.
  EXPECT_EQ(lower_output("def f(x: i32[4]):\n    return x / 2\n").value, "f32(x[i])/2.0");
  EXPECT_EQ(lower_output("def f(x: i32[4]):\n    return x > 2\n").value, "i64(x[i]) > 2_i64");
}

TEST(ExprLowering, ActivationsUseTheReferenceFormulas) {
  EXPECT_EQ(lower_output("def f(x: f32[4]):\n    return torch.gelu(x)\n").value,
            "x[i]*0.5*(1.0 + erf(x[i]*0.70710677))");
  EXPECT_EQ(lower_output("def f(x: f32[4]):\n    return torch.silu(x)\n").value,
            "x[i]/(1.0 + exp(neg(x[i])))");
  EXPECT_EQ(lower_output("def f(x: f64[4]):\n    return torch.sigmoid(x)\n").value,
            "1.0_f64/(1.0_f64 + exp(neg(x[i])))");
  EXPECT_EQ(lower_output("def f(x: f32[4]):\n    return torch.clamp(x, 0, 6)\n").value,
            "select(6.0 < select(x[i] < 0.0, 0.0, x[i]), 6.0, select(x[i] < 0.0, 0.0, x[i]))");
}

TEST(ExprLowering, GatherWrapsChecksAndMasks) {
  const Var m("m"), k("k");
  const Lowered r =
      lower_output("def f(x: f16[6, 5], idx: i32[4]):\n    return x[idx]\n", m < 4 && k < 5);
  // The index is loaded (i64), wrapped once; the gathered load is masked by
  // the bounds condition too; the check is guarded by the conjuncts over
  // the index position only (i < 4), not by the column's.
  EXPECT_EQ(r.value,
            "load(x, [select(i64(load(idx, [i], mask=(m < 4 && k < 5))) < 0_i64, "
            "i64(load(idx, [i], mask=(m < 4 && k < 5))) + 6_i64, "
            "i64(load(idx, [i], mask=(m < 4 && k < 5)))), j], mask=(m < 4 && k < 5 && "
            "(i64(load(idx, [i], mask=(m < 4 && k < 5))) >= -6_i64 && "
            "i64(load(idx, [i], mask=(m < 4 && k < 5))) < 6_i64)))");
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_NE(r.checks[0].find("msg=\"index {} is out of bounds for dim 0 of `x` (size 6): "
                             "`idx`[{}] = {}\""),
            std::string::npos)
      << r.checks[0];
  // m is not a var of the position [i]: the check is unguarded here.
  EXPECT_EQ(r.checks[0].find("!("), std::string::npos) << r.checks[0];
}

TEST(ExprLowering, LargeTensorsUseI64Indices) {
  // 3e9 elements: the flat index and every coordinate are i64.
  const Program p = testing::parse("def f(x: f16[3000000000]):\n    return torch.relu(x)\n");
  const std::vector<LoweredKernel> ks = lower_plan(p.graph, build_fused_plan(p.graph));
  ASSERT_EQ(ks.size(), 1u);
  const std::string text = tir::print(ks[0].kernel);
  EXPECT_NE(text.find("let flat = i64(pid)*1024_i64 + i64(i)"), std::string::npos) << text;
  EXPECT_NE(text.find("f16[3000000000_i64]"), std::string::npos) << text;
  // A [2^20, 4096] operand: its row coordinate is widened before the
  // row * stride product (2^32 elements).
  const Program q = testing::parse(
      "def f(x: f16[1048576, 4096], w: f16[4096, 8]):\n    return torch.relu(x) @ w\n");
  const std::string g = tir::print(lower_plan(q.graph, build_fused_plan(q.graph))[0].kernel);
  EXPECT_NE(g.find("load(x, [i64(pid_m*128 + i"), std::string::npos) << g;
}

TEST(InlineHooks, ChecksOfACopyRunOverItsRegionBeforeIt) {
  tir::KernelBuilder b("k");
  tir::Buffer out = b.output("out", DType::F32, {4, 8});
  tir::Buffer s = b.alloc("s", tir::MemScope::Shared, DType::F32, {4, 8});
  b.copy(s, [&](const std::vector<Var>& ij) {
    return b.load_input("A", {ij[0], ij[1]}, DType::F32, ij[1] < 8);
  });
  b.store_output("C", {0, 0}, tir::load(s, {0, 0}));
  const tir::Kernel templ = b.build();

  passes::HookTable table;
  table.inputs["A"] = [](const std::vector<Expr>& idx, const Expr& mask) {
    passes::HookExpansion e;
    e.value = tir::cast(DType::F32, idx[0]) + 1.0f;
    e.checks.push_back(tir::CheckNode::make(idx[0] < 4, 1, "bad {}", {idx[0]}));
    return e;
  };
  table.outputs["C"] = [&](const std::vector<Expr>& idx, const Expr& v, const Expr& mask) {
    return tir::StoreNode::make(out, idx, v, mask);
  };
  const tir::Kernel k = passes::inline_hooks(templ, table);
  tir::VerifyOptions vo;
  vo.allow_hooks = false;
  EXPECT_TRUE(tir::verify_errors(k, vo).empty()) << k;
  EXPECT_EQ(tir::print(k.body),
            "alloc s: shared f32[4, 8]\n"
            "for i in parallel(0, 4) {\n"
            "  for j in parallel(0, 8) {\n"
            "    check(i < 4, code=1, msg=\"bad {}\", args=[i])\n"
            "  }\n"
            "}\n"
            "copy (i_1: 4, j_1: 8) s[i_1, j_1] = select(j_1 < 8, f32(i_1) + 1.0, 0.0)\n"
            "out[0, 0] = s[0, 0]\n");

  passes::HookTable missing;
  missing.outputs = table.outputs;
  EXPECT_THROW(passes::inline_hooks(templ, missing), InternalError);
}

}  // namespace
}  // namespace tilefuse
