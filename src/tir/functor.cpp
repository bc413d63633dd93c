#include "tir/functor.h"

#include "core/stack_guard.h"
#include "tir/structural.h"

namespace tilefuse::tir {

// ---- IRVisitor ---------------------------------------------------------------

void IRVisitor::visit_expr(const Expr& e) {
  check_stack("a Tile IR expression");
  switch (e.kind()) {
#define TF_TIR_CASE(name, ...)                      \
  case ExprKind::name:                              \
    visit(static_cast<const name##Node*>(e.get())); \
    return;
    TILEFUSE_FOR_EACH_TIR_EXPR(TF_TIR_CASE)
#undef TF_TIR_CASE
  }
}

void IRVisitor::visit_stmt(const Stmt& s) {
  check_stack("a Tile IR statement");
  switch (s.kind()) {
#define TF_TIR_CASE(name, ...)                      \
  case StmtKind::name:                              \
    visit(static_cast<const name##Node*>(s.get())); \
    return;
    TILEFUSE_FOR_EACH_TIR_STMT(TF_TIR_CASE)
#undef TF_TIR_CASE
  }
}

namespace {
template <class V>
void visit_all(V* v, const std::vector<Expr>& es) {
  for (const Expr& e : es) v->visit_expr(e);
}
}  // namespace

void IRVisitor::visit(const IntImmNode*) {}
void IRVisitor::visit(const FloatImmNode*) {}
void IRVisitor::visit(const VarNode*) {}
#define TF_TIR_BINARY(name, ...)                \
  void IRVisitor::visit(const name##Node* op) { \
    visit_expr(op->a);                          \
    visit_expr(op->b);                          \
  }
TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_BINARY)
#undef TF_TIR_BINARY
void IRVisitor::visit(const NotNode* op) {
  visit_expr(op->a);
}
void IRVisitor::visit(const SelectNode* op) {
  visit_expr(op->cond);
  visit_expr(op->true_value);
  visit_expr(op->false_value);
}
void IRVisitor::visit(const CastNode* op) {
  visit_expr(op->value);
}
void IRVisitor::visit(const CallNode* op) {
  visit_all(this, op->args);
}
void IRVisitor::visit(const LoadNode* op) {
  visit_all(this, op->indices);
  if (op->mask.defined()) visit_expr(op->mask);
  if (op->other.defined()) visit_expr(op->other);
}
void IRVisitor::visit(const HookLoadNode* op) {
  visit_all(this, op->indices);
  if (op->mask.defined()) visit_expr(op->mask);
}

void IRVisitor::visit(const ForNode* op) {
  visit_expr(op->min);
  visit_expr(op->extent);
  visit_stmt(op->body);
}
void IRVisitor::visit(const IfThenElseNode* op) {
  visit_expr(op->cond);
  visit_stmt(op->then_case);
  if (op->else_case.defined()) visit_stmt(op->else_case);
}
void IRVisitor::visit(const LetStmtNode* op) {
  visit_expr(op->value);
  visit_stmt(op->body);
}
void IRVisitor::visit(const StoreNode* op) {
  visit_all(this, op->indices);
  visit_expr(op->value);
  if (op->mask.defined()) visit_expr(op->mask);
}
void IRVisitor::visit(const HookStoreNode* op) {
  visit_all(this, op->indices);
  visit_expr(op->value);
  if (op->mask.defined()) visit_expr(op->mask);
}
void IRVisitor::visit(const CopyNode* op) {
  visit_all(this, op->extents);
  visit_all(this, op->dst_indices);
  visit_expr(op->value);
}
void IRVisitor::visit(const GemmNode* op) {
  visit_all(this, op->a.prefix);
  visit_all(this, op->b.prefix);
  visit_all(this, op->c.prefix);
}
void IRVisitor::visit(const FillNode* op) {
  visit_expr(op->value);
}
void IRVisitor::visit(const CheckNode* op) {
  visit_expr(op->cond);
  visit_all(this, op->args);
}
void IRVisitor::visit(const BarrierNode*) {}
void IRVisitor::visit(const SeqNode* op) {
  for (const Stmt& s : op->stmts) visit_stmt(s);
}
void IRVisitor::visit(const AllocateNode* op) {
  visit_stmt(op->body);
}
void IRVisitor::visit(const LastArrivalNode* op) {
  visit_all(this, op->indices);
  visit_expr(op->count);
  visit_stmt(op->body);
}
void IRVisitor::visit(const EvaluateNode* op) {
  visit_expr(op->value);
}

// ---- IRMutator ---------------------------------------------------------------

Expr IRMutator::mutate(const Expr& e) {
  check_stack("a Tile IR expression");
  switch (e.kind()) {
#define TF_TIR_CASE(name, ...) \
  case ExprKind::name:         \
    return visit(static_cast<const name##Node*>(e.get()));
    TILEFUSE_FOR_EACH_TIR_EXPR(TF_TIR_CASE)
#undef TF_TIR_CASE
  }
  return e;
}

Stmt IRMutator::mutate(const Stmt& s) {
  check_stack("a Tile IR statement");
  switch (s.kind()) {
#define TF_TIR_CASE(name, ...) \
  case StmtKind::name:         \
    return visit(static_cast<const name##Node*>(s.get()));
    TILEFUSE_FOR_EACH_TIR_STMT(TF_TIR_CASE)
#undef TF_TIR_CASE
  }
  return s;
}

Kernel IRMutator::mutate_kernel(const Kernel& k) {
  Kernel out = k;
  for (GridDim& g : out.grid) g.extent = mutate(g.extent);
  out.body = mutate(k.body);
  return out;
}

bool IRMutator::mutate_all(const std::vector<Expr>& in, std::vector<Expr>* out) {
  bool changed = false;
  out->clear();
  out->reserve(in.size());
  for (const Expr& e : in) {
    out->push_back(mutate_opt(e));
    changed |= !out->back().same_as(e);
  }
  return changed;
}

bool IRMutator::mutate_tile(const TileRef& in, TileRef* out) {
  out->buffer = mutate_buffer(in.buffer);
  bool changed = mutate_all(in.prefix, &out->prefix);
  return changed || !out->buffer.same_as(in.buffer);
}

Expr IRMutator::visit(const IntImmNode* op) {
  return op;
}
Expr IRMutator::visit(const FloatImmNode* op) {
  return op;
}
Expr IRMutator::visit(const VarNode* op) {
  return op;
}
#define TF_TIR_BINARY(name, ...)                         \
  Expr IRMutator::visit(const name##Node* op) {          \
    Expr a = mutate(op->a), b = mutate(op->b);           \
    if (a.same_as(op->a) && b.same_as(op->b)) return op; \
    return name##Node::make(std::move(a), std::move(b)); \
  }
TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_BINARY)
#undef TF_TIR_BINARY

Expr IRMutator::visit(const NotNode* op) {
  Expr a = mutate(op->a);
  if (a.same_as(op->a)) return op;
  return NotNode::make(std::move(a));
}

Expr IRMutator::visit(const SelectNode* op) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return op;
  return SelectNode::make(std::move(c), std::move(t), std::move(f));
}

Expr IRMutator::visit(const CastNode* op) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return op;
  return CastNode::make(op->dtype, std::move(v));
}

Expr IRMutator::visit(const CallNode* op) {
  std::vector<Expr> args;
  if (!mutate_all(op->args, &args)) return op;
  return CallNode::make(op->op, std::move(args));
}

Expr IRMutator::visit(const LoadNode* op) {
  Buffer buf = mutate_buffer(op->buffer);
  std::vector<Expr> idx;
  bool changed = mutate_all(op->indices, &idx);
  Expr mask = mutate_opt(op->mask), other = mutate_opt(op->other);
  if (!changed && buf.same_as(op->buffer) && mask.same_as(op->mask) && other.same_as(op->other))
    return op;
  return LoadNode::make(std::move(buf), std::move(idx), std::move(mask), std::move(other));
}

Expr IRMutator::visit(const HookLoadNode* op) {
  std::vector<Expr> idx;
  bool changed = mutate_all(op->indices, &idx);
  Expr mask = mutate_opt(op->mask);
  if (!changed && mask.same_as(op->mask)) return op;
  return HookLoadNode::make(op->dtype, op->name, std::move(idx), std::move(mask));
}

Stmt IRMutator::visit(const ForNode* op) {
  Expr min = mutate(op->min), extent = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return op;
  return ForNode::make(op->var, std::move(min), std::move(extent), op->for_kind, op->num_stages,
                       std::move(body), op->plan);
}

Stmt IRMutator::visit(const IfThenElseNode* op) {
  Expr cond = mutate(op->cond);
  Stmt then_case = mutate(op->then_case), else_case = mutate_opt(op->else_case);
  if (cond.same_as(op->cond) && then_case.same_as(op->then_case) &&
      else_case.same_as(op->else_case))
    return op;
  return IfThenElseNode::make(std::move(cond), std::move(then_case), std::move(else_case));
}

Stmt IRMutator::visit(const LetStmtNode* op) {
  Expr value = mutate(op->value);
  Stmt body = mutate(op->body);
  if (value.same_as(op->value) && body.same_as(op->body)) return op;
  return LetStmtNode::make(op->var, std::move(value), std::move(body));
}

Stmt IRMutator::visit(const StoreNode* op) {
  Buffer buf = mutate_buffer(op->buffer);
  std::vector<Expr> idx;
  bool changed = mutate_all(op->indices, &idx);
  Expr value = mutate(op->value), mask = mutate_opt(op->mask);
  if (!changed && buf.same_as(op->buffer) && value.same_as(op->value) && mask.same_as(op->mask))
    return op;
  return StoreNode::make(std::move(buf), std::move(idx), std::move(value), std::move(mask));
}

Stmt IRMutator::visit(const HookStoreNode* op) {
  std::vector<Expr> idx;
  bool changed = mutate_all(op->indices, &idx);
  Expr value = mutate(op->value), mask = mutate_opt(op->mask);
  if (!changed && value.same_as(op->value) && mask.same_as(op->mask)) return op;
  return HookStoreNode::make(op->name, std::move(idx), std::move(value), std::move(mask));
}

std::optional<CopyPlan> rebased_plan(const CopyNode* op, const Expr& value) {
  if (!op->plan || !op->plan->vector_load.defined() || value.same_as(op->value)) return op->plan;
  CopyPlan plan = *op->plan;
  plan.vector_load = Expr();
  for (const LoadNode* l : loads_in(value))
    if (structural_equal(Expr(l), op->plan->vector_load)) {
      plan.vector_load = Expr(l);
      break;
    }
  TF_CHECK(plan.vector_load.defined(),
           "tir: a pass rewrote the vector load of the copy into " + op->dst.name() +
               " after lower_copies decided it");
  return plan;
}

Stmt IRMutator::visit(const CopyNode* op) {
  std::vector<Expr> extents, dst_idx;
  bool changed = mutate_all(op->extents, &extents);
  Buffer dst = mutate_buffer(op->dst);
  changed |= mutate_all(op->dst_indices, &dst_idx);
  Expr value = mutate(op->value);
  if (!changed && dst.same_as(op->dst) && value.same_as(op->value)) return op;
  return CopyNode::make(op->vars, std::move(extents), std::move(dst), std::move(dst_idx),
                        std::move(value), rebased_plan(op, value));
}

Stmt IRMutator::visit(const GemmNode* op) {
  TileRef a, b, c;
  bool changed = mutate_tile(op->a, &a);
  changed |= mutate_tile(op->b, &b);
  changed |= mutate_tile(op->c, &c);
  if (!changed) return op;
  return GemmNode::make(std::move(a), std::move(b), std::move(c), op->trans_a, op->trans_b);
}

Stmt IRMutator::visit(const FillNode* op) {
  Buffer buf = mutate_buffer(op->buffer);
  Expr value = mutate(op->value);
  if (buf.same_as(op->buffer) && value.same_as(op->value)) return op;
  return FillNode::make(std::move(buf), std::move(value));
}

Stmt IRMutator::visit(const CheckNode* op) {
  Expr cond = mutate(op->cond);
  std::vector<Expr> args;
  bool changed = mutate_all(op->args, &args);
  if (!changed && cond.same_as(op->cond)) return op;
  return CheckNode::make(std::move(cond), op->code, op->message, std::move(args), op->loc);
}

Stmt IRMutator::visit(const BarrierNode* op) {
  return op;
}

Stmt IRMutator::visit(const SeqNode* op) {
  std::vector<Stmt> stmts;
  stmts.reserve(op->stmts.size());
  bool changed = false;
  for (const Stmt& s : op->stmts) {
    stmts.push_back(mutate(s));
    changed |= !stmts.back().same_as(s);
  }
  if (!changed) return op;
  // A pass may replace a statement by a Seq or by nothing; keep Seqs flat.
  return make_seq(std::move(stmts));
}

Stmt IRMutator::visit(const AllocateNode* op) {
  Buffer buf = mutate_buffer(op->buffer);
  Stmt body = mutate(op->body);
  if (buf.same_as(op->buffer) && body.same_as(op->body)) return op;
  return AllocateNode::make(std::move(buf), std::move(body), op->plan);
}

Stmt IRMutator::visit(const LastArrivalNode* op) {
  std::vector<Expr> indices;
  bool same = true;
  for (const Expr& i : op->indices) {
    indices.push_back(mutate(i));
    same = same && indices.back().same_as(i);
  }
  Expr count = mutate(op->count);
  Stmt body = mutate(op->body);
  if (same && count.same_as(op->count) && body.same_as(op->body)) return op;
  return LastArrivalNode::make(op->counter, std::move(indices), std::move(count), std::move(body));
}

Stmt IRMutator::visit(const EvaluateNode* op) {
  Expr value = mutate(op->value);
  if (value.same_as(op->value)) return op;
  return EvaluateNode::make(std::move(value));
}

std::vector<const LoadNode*> loads_in(const Expr& e) {
  struct Collect : IRVisitor {
    std::vector<const LoadNode*> loads;
    using IRVisitor::visit;
    void visit(const LoadNode* l) override {
      IRVisitor::visit(l);
      loads.push_back(l);
    }
  } c;
  c.visit_expr(e);
  return c.loads;
}

}  // namespace tilefuse::tir
