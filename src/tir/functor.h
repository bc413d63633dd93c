// Visitor and mutator over the Tile IR, generated from the node lists in
// ir.h so that a new node kind cannot be forgotten.
//
// IRVisitor walks every child expression and statement in evaluation order
// (it does not descend into buffer shapes). IRMutator rebuilds a node only
// when one of its children changed and otherwise returns the node itself, so
// `mutator.mutate(s).same_as(s)` tells whether a pass changed anything and
// untouched subtrees cost nothing. Binding vars (of For, LetStmt, Copy) are
// not mutated; buffers go through mutate_buffer (identity by default).
//
// Subclasses override the `visit` overloads of the kinds they care about,
// call the base implementation for the default traversal, and say
// `using IRMutator::visit;` (or IRVisitor) so the other overloads stay
// visible. Entry points are visit_expr/visit_stmt and mutate.
#pragma once

#include <vector>

#include "tir/ir.h"

namespace tilefuse::tir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void visit_expr(const Expr& e);
  virtual void visit_stmt(const Stmt& s);

 protected:
#define TF_TIR_DECL(name, ...) virtual void visit(const name##Node* op);
  TILEFUSE_FOR_EACH_TIR_EXPR(TF_TIR_DECL)
  TILEFUSE_FOR_EACH_TIR_STMT(TF_TIR_DECL)
#undef TF_TIR_DECL
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);
  virtual Buffer mutate_buffer(const Buffer& b) { return b; }
  // The kernel with its grid extents and body mutated; params unchanged.
  Kernel mutate_kernel(const Kernel& k);

 protected:
#define TF_TIR_DECL(name, ...) virtual Expr visit(const name##Node* op);
  TILEFUSE_FOR_EACH_TIR_EXPR(TF_TIR_DECL)
#undef TF_TIR_DECL
#define TF_TIR_DECL(name, ...) virtual Stmt visit(const name##Node* op);
  TILEFUSE_FOR_EACH_TIR_STMT(TF_TIR_DECL)
#undef TF_TIR_DECL

  // Mutates each element into *out; true when any changed. Undefined
  // elements stay undefined.
  bool mutate_all(const std::vector<Expr>& in, std::vector<Expr>* out);
  // Mutates an optional expression (undefined stays undefined).
  Expr mutate_opt(const Expr& e) {
    return e.defined() ? mutate(e) : e;
  }
  Stmt mutate_opt(const Stmt& s) {
    return s.defined() ? mutate(s) : s;
  }
  bool mutate_tile(const TileRef& in, TileRef* out);
};

// Every Load in `e`, in IRVisitor order with a load's own operands (its
// indices, mask, other) before it.
std::vector<const LoadNode*> loads_in(const Expr& e);

// The plan of `op` for the copy rebuilt with `value`: the same, with its
// vector load (CopyPlan::vector_load, a node of the value) moved to the
// structurally equal load of the new value. InternalError when there is
// none (a pass changed the load after lower_copies decided it).
std::optional<CopyPlan> rebased_plan(const CopyNode* op, const Expr& value);

}  // namespace tilefuse::tir
