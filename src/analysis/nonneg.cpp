#include "analysis/nonneg.h"

#include "tir/functor.h"

namespace tilefuse::analysis {

using namespace tir;  // NOLINT: an analysis of the Tile IR

bool NonNegative::holds(const Expr& e) const {
  if (const int64_t* c = as_const_int(e)) return *c >= 0;
  switch (e.kind()) {
    case ExprKind::Var:
      return vars.count(e.as<VarNode>()) > 0;
    case ExprKind::Add:
      return holds(e.as<AddNode>()->a) && holds(e.as<AddNode>()->b);
    case ExprKind::Mul:
      return holds(e.as<MulNode>()->a) && holds(e.as<MulNode>()->b);
    case ExprKind::Min:
      return holds(e.as<MinNode>()->a) && holds(e.as<MinNode>()->b);
    case ExprKind::Max:
      return holds(e.as<MaxNode>()->a) || holds(e.as<MaxNode>()->b);
    case ExprKind::Div: {  // floor(a / c) >= 0 for a >= 0, c > 0
      const int64_t* c = as_const_int(e.as<DivNode>()->b);
      return c && *c > 0 && holds(e.as<DivNode>()->a);
    }
    case ExprKind::Mod: {  // floor modulo takes the divisor's sign
      const int64_t* c = as_const_int(e.as<ModNode>()->b);
      return c && *c > 0;
    }
    case ExprKind::Cast: {  // widening keeps the value
      const CastNode* op = e.as<CastNode>();
      return is_integral(op->dtype) && is_integral(op->value.dtype()) &&
             dtype_size(op->dtype) >= dtype_size(op->value.dtype()) && holds(op->value);
    }
    case ExprKind::Select:
      return holds(e.as<SelectNode>()->true_value) && holds(e.as<SelectNode>()->false_value);
    default:
      return false;
  }
}

void NonNegative::add_kernel(const Kernel& k) {
  for (const GridDim& g : k.grid) vars.insert(g.var.get());
  for (const KernelParam& p : k.params) {
    if (!p.is_buffer()) continue;
    for (const Expr& d : p.buffer->shape)
      if (const VarNode* v = d.as<VarNode>()) vars.insert(v);  // a size is >= 0
  }
  struct Walk : IRVisitor {
    NonNegative* nn = nullptr;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      if (nn->holds(op->min)) nn->vars.insert(op->var.get());
      IRVisitor::visit(op);
    }
    void visit(const LetStmtNode* op) override {
      if (nn->holds(op->value)) nn->vars.insert(op->var.get());
      IRVisitor::visit(op);
    }
    void visit(const CopyNode* op) override {
      for (const Var& v : op->vars) nn->vars.insert(v.get());
      IRVisitor::visit(op);
    }
  } w;
  w.nn = this;
  w.visit_stmt(k.body);
}

}  // namespace tilefuse::analysis
