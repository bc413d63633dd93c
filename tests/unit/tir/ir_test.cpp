// Node identity through mutators, substitution, structural equality/hash.
#include <gtest/gtest.h>

#include <cmath>
#include <unordered_set>

#include "test_kernels.h"
#include "tir/builder.h"
#include "tir/functor.h"
#include "tir/parser.h"
#include "tir/printer.h"
#include "tir/structural.h"

namespace tilefuse::tir {
namespace {

// Changes nothing, but rebuilds nothing either.
class Identity final : public IRMutator {};

// Replaces every integer constant 32 by 16.
class Shrink final : public IRMutator {
 protected:
  using IRMutator::visit;
  Expr visit(const IntImmNode* op) override {
    return op->value == 32 ? make_int(op->dtype, 16) : Expr(op);
  }
};

// Counts visited nodes by kind name.
class Counter final : public IRVisitor {
 public:
  int loads = 0, vars = 0, fors = 0;

 protected:
  using IRVisitor::visit;
  void visit(const LoadNode* op) override {
    ++loads;
    IRVisitor::visit(op);
  }
  void visit(const VarNode*) override { ++vars; }
  void visit(const ForNode* op) override {
    ++fors;
    IRVisitor::visit(op);
  }
};

TEST(TirIR, IdentityMutatorReturnsTheSameNodes) {
  for (const Kernel& k : {testing::gemm_kernel(), testing::gather_kernel()}) {
    Identity id;
    EXPECT_TRUE(id.mutate(k.body).same_as(k.body));
    Kernel out = id.mutate_kernel(k);
    EXPECT_TRUE(out.body.same_as(k.body));
    for (size_t i = 0; i < k.grid.size(); ++i)
      EXPECT_TRUE(out.grid[i].extent.same_as(k.grid[i].extent));
  }
}

TEST(TirIR, MutatorRebuildsOnlyTheChangedPath) {
  Kernel k = testing::gemm_kernel();
  Stmt out = Shrink().mutate(k.body);
  EXPECT_FALSE(out.same_as(k.body));
  // The epilogue loop has no 32 in it, so it is shared with the input.
  auto last_stmt = [](const Stmt& s) {
    const Stmt* cur = &s;
    while (true) {
      if (const auto* a = cur->as<AllocateNode>()) {
        cur = &a->body;
      } else if (const auto* seq = cur->as<SeqNode>()) {
        return seq->stmts.back();
      } else {
        return *cur;
      }
    }
  };
  EXPECT_TRUE(last_stmt(out).same_as(last_stmt(k.body)));
  EXPECT_NE(print(out).find("alloc A_s: shared f16[128, 32]"), std::string::npos)
      << "buffers are not rewritten by default";
  EXPECT_NE(print(out).find("for k in pipelined(0, (K + 31)/16, stages=3)"), std::string::npos)
      << print(out);
}

TEST(TirIR, VisitorSeesEveryNode) {
  Counter c;
  c.visit_stmt(testing::gather_kernel().body);
  EXPECT_EQ(c.fors, 3);
  EXPECT_EQ(c.loads, 2);
  EXPECT_GT(c.vars, 10);
}

TEST(TirIR, Substitute) {
  Var i("i"), j("j"), k("k");
  Expr e = i * 4 + j;
  Expr out = substitute(e, i, k + 1);
  EXPECT_EQ(print(out), "(k + 1)*4 + j");
  EXPECT_TRUE(substitute(e, k, i).same_as(e)) << "nothing replaced: the same node";
  VarMap both{{i.get(), j}, {j.get(), i}};
  EXPECT_EQ(print(substitute(e, both)), "j*4 + i") << "simultaneous, not re-scanned";

  // In statements; a binding of the var shadows the mapping below it.
  Buffer b = BufferNode::make("b", DType::I32, MemScope::Local, {8});
  Stmt s = make_seq({StoreNode::make(b, {i}, j),
                     ForNode::make(i, 0, 8, ForKind::Serial, 0, StoreNode::make(b, {i}, i))});
  EXPECT_EQ(print(substitute(s, i, make_int(DType::I32, 3))), R"(b[3] = j
for i in serial(0, 8) {
  b[i] = i
}
)");
  Stmt let = LetStmtNode::make(k, i + 1, StoreNode::make(b, {k}, i));
  EXPECT_EQ(print(substitute(let, i, j)), "let k = j + 1\nb[k] = j\n");
}

TEST(TirIR, StructuralEqualityAndHash) {
  Var i("i"), j("j");
  Expr a = i * 4 + 1, b = i * 4 + 1;
  EXPECT_FALSE(a.same_as(b));
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_FALSE(structural_equal(a, j * 4 + 1)) << "free vars match only themselves";
  EXPECT_FALSE(structural_equal(a, i * 4 + 2));
  EXPECT_FALSE(structural_equal(
      a, i * make_int(DType::I32, 4) + make_int(DType::I32, 1) + make_int(DType::I32, 0)));
  EXPECT_FALSE(structural_equal(make_int(DType::I32, 1), make_int(DType::I64, 1)));
  EXPECT_FALSE(structural_equal(make_const(DType::F32, 0.0), make_const(DType::F32, -0.0)));
  EXPECT_TRUE(structural_equal(make_const(DType::F32, NAN), make_const(DType::F32, NAN)));
  EXPECT_FALSE(structural_equal(AddNode::make(i, j), AddNode::make(j, i)));

  // Bound vars match by position whatever their names.
  Buffer buf = BufferNode::make("b", DType::I32, MemScope::Local, {8});
  Var x("x"), y("y");
  Stmt s1 = ForNode::make(x, 0, 8, ForKind::Serial, 0, StoreNode::make(buf, {x}, x + i));
  Stmt s2 = ForNode::make(y, 0, 8, ForKind::Serial, 0, StoreNode::make(buf, {y}, y + i));
  Stmt s3 = ForNode::make(y, 0, 8, ForKind::Parallel, 0, StoreNode::make(buf, {y}, y + i));
  Stmt s4 = ForNode::make(y, 0, 8, ForKind::Serial, 0, StoreNode::make(buf, {y}, y + j));
  EXPECT_TRUE(structural_equal(s1, s2));
  EXPECT_EQ(structural_hash(s1), structural_hash(s2));
  EXPECT_FALSE(structural_equal(s1, s3));
  EXPECT_FALSE(structural_equal(s1, s4));

  // Usable as a CSE table key.
  std::unordered_set<Expr, ExprStructuralHash, ExprStructuralEqual> table;
  table.insert(a);
  EXPECT_TRUE(table.count(b));
  EXPECT_FALSE(table.count(j * 4 + 1));

  // Kernels: params and grid vars are bound, so two builds are equal.
  EXPECT_TRUE(structural_equal(testing::gemm_kernel(), testing::gemm_kernel()));
  EXPECT_EQ(structural_hash(testing::gemm_kernel()), structural_hash(testing::gemm_kernel()));
  EXPECT_FALSE(structural_equal(testing::gemm_kernel(), testing::gather_kernel()));
  Kernel renamed = testing::gemm_kernel();
  renamed.attrs["num_stages"] = int64_t{4};
  EXPECT_FALSE(structural_equal(testing::gemm_kernel(), renamed));
}

TEST(TirIR, MakeSeqFlattens) {
  Stmt a = BarrierNode::make(), b = BarrierNode::make(), c = BarrierNode::make();
  Stmt nested = SeqNode::make({a, SeqNode::make({b, SeqNode::make({c})})});
  Stmt flat = make_seq({nested});
  ASSERT_NE(flat.as<SeqNode>(), nullptr);
  EXPECT_EQ(flat.as<SeqNode>()->stmts.size(), 3u);
  EXPECT_TRUE(make_seq({a}).same_as(a));
  EXPECT_EQ(make_seq({}).as<SeqNode>()->stmts.size(), 0u);
}

TEST(TirIR, NodeListsAreComplete) {
  EXPECT_EQ(expr_kind_name(ExprKind::HookLoad), "HookLoad");
  EXPECT_EQ(stmt_kind_name(StmtKind::Evaluate), "Evaluate");
  EXPECT_EQ(intrinsic_name(Intrinsic::Fma), "fma");
  EXPECT_EQ(intrinsic_arity(Intrinsic::Hypot), 2);
  EXPECT_TRUE(intrinsic_float_only(Intrinsic::Exp));
  EXPECT_FALSE(intrinsic_float_only(Intrinsic::Abs));
  EXPECT_TRUE(is_binary_op(ExprKind::Max));
  EXPECT_FALSE(is_binary_op(ExprKind::Select));
  EXPECT_TRUE(is_comparison(ExprKind::GE));
  EXPECT_FALSE(is_comparison(ExprKind::And));
  EXPECT_EQ(make_const(DType::I8, 300.7).as<IntImmNode>()->value, 44) << "truncates, wraps";
  EXPECT_EQ(make_const(DType::F16, 0.1).as<FloatImmNode>()->value, 0.0999755859375);
}

}  // namespace
}  // namespace tilefuse::tir
