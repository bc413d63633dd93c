// Dead code elimination: a liveness sweep over buffers (which are read?),
// then a mutator that drops what writes only unread buffers and what binds
// unused vars, repeated until a sweep changes nothing (dropping a store can
// make the buffer it read from unread too).
#include "passes/dce.h"

#include <unordered_map>
#include <unordered_set>

#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::passes {

namespace {

using namespace tir;  // NOLINT

// Buffers whose contents are read: loaded anywhere, or a gemm's A / B. A
// gemm's C is read only to be written back, which does not keep C alive.
struct Reads : IRVisitor {
  using IRVisitor::visit;
  std::unordered_set<const BufferNode*> buffers;
  void visit(const LoadNode* op) override {
    buffers.insert(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const GemmNode* op) override {
    buffers.insert(op->a.buffer.get());
    buffers.insert(op->b.buffer.get());
    IRVisitor::visit(op);
  }
};


// Adds `delta` to the count of every read of a var (a Var expression; the
// vars a For, LetStmt or Copy binds are not reads), inner allocs' shapes
// included. A let whose var has no read left is dead: counting once per
// sweep, and subtracting what each dropped statement read, decides a chain
// of lets in one linear sweep (a per-let search of its body would be
// quadratic in the chain).
struct VarReads : IRVisitor {
  using IRVisitor::visit;
  std::unordered_map<const VarNode*, int>* counts = nullptr;
  int delta = 1;
  void visit(const VarNode* op) override { (*counts)[op] += delta; }
  void visit(const AllocateNode* op) override {
    for (const Expr& e : op->buffer->shape) visit_expr(e);
    IRVisitor::visit(op);
  }
};

bool is_empty(const Stmt& s) {
  const auto* seq = s.as<SeqNode>();
  return seq && seq->stmts.empty();
}

Stmt nothing() {
  return make_seq({});
}

class DeadCode : public IRMutator {
 public:
  DeadCode(std::unordered_set<const BufferNode*> reads, const Stmt& body)
      : reads_(std::move(reads)) {
    VarReads count;
    count.counts = &var_reads_;
    count.visit_stmt(body);
  }
  using IRMutator::mutate;
  using IRMutator::visit;

 private:
  bool dead(const Buffer& b) const {
    return b.scope() != MemScope::Global && !reads_.count(b.get());
  }
  // Nothing, in place of `s`, whose var reads no longer count.
  Stmt drop(const Stmt& s) {
    VarReads uncount;
    uncount.counts = &var_reads_;
    uncount.delta = -1;
    uncount.visit_stmt(s);
    return nothing();
  }

  Stmt visit(const StoreNode* op) override { return dead(op->buffer) ? drop(op) : op; }
  Stmt visit(const CopyNode* op) override { return dead(op->dst) ? drop(op) : op; }
  Stmt visit(const FillNode* op) override { return dead(op->buffer) ? drop(op) : op; }
  Stmt visit(const GemmNode* op) override { return dead(op->c.buffer) ? drop(op) : op; }
  Stmt visit(const EvaluateNode* op) override { return drop(op); }

  Stmt visit(const LetStmtNode* op) override {
    Stmt body = mutate(op->body);
    if (var_reads_[op->var.get()] <= 0) {
      VarReads uncount;
      uncount.counts = &var_reads_;
      uncount.delta = -1;
      uncount.visit_expr(op->value);
      return body;
    }
    if (body.same_as(op->body)) return op;
    return LetStmtNode::make(op->var, op->value, body);
  }

  Stmt visit(const AllocateNode* op) override {
    Stmt body = mutate(op->body);
    if (!mentions_buffer(body, op->buffer.get())) return body;
    if (body.same_as(op->body)) return op;
    return AllocateNode::make(op->buffer, body);
  }

  Stmt visit(const IfThenElseNode* op) override {
    const int64_t* c = as_const_int(op->cond);
    if (c && *c) return mutate(op->then_case);
    if (c && !*c) return op->else_case.defined() ? mutate(op->else_case) : nothing();
    Stmt t = mutate(op->then_case), e = mutate_opt(op->else_case);
    if (e.defined() && is_empty(e)) e = Stmt();
    if (is_empty(t) && !e.defined()) return nothing();  // the condition has no effect
    if (is_empty(t)) return IfThenElseNode::make(NotNode::make(op->cond), e);
    if (t.same_as(op->then_case) && e.same_as(op->else_case)) return op;
    return IfThenElseNode::make(op->cond, t, e);
  }

  Stmt visit(const ForNode* op) override {
    if (const int64_t* n = as_const_int(op->extent); n && *n <= 0) return nothing();
    Stmt body = mutate(op->body);
    if (is_empty(body)) return nothing();
    if (body.same_as(op->body)) return op;
    return ForNode::make(op->var, op->min, op->extent, op->for_kind, op->num_stages, body);
  }

  std::unordered_set<const BufferNode*> reads_;
  std::unordered_map<const VarNode*, int> var_reads_;
};

}  // namespace

Kernel eliminate_dead_code(const Kernel& kernel) {
  Kernel out = kernel;
  // Each sweep removes at least one statement, so this ends; the bound only
  // guards against a bug.
  for (int sweep = 0; sweep < 64; ++sweep) {
    Reads reads;
    reads.visit_stmt(out.body);
    Stmt body = DeadCode(std::move(reads.buffers), out.body).mutate(out.body);
    if (body.same_as(out.body)) break;
    out.body = body;
  }
  return out;
}

}  // namespace tilefuse::passes
