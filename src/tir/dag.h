// Expressions as DAGs.
//
// An Expr is a handle to an immutable node, so one node may be the operand of
// several others: `x * x` built from one `x` holds that node twice. A walk
// that treats such an expression as a tree (IRVisitor, IRMutator, the
// printer) visits a shared node once per use, which is exponential in the
// nesting of shared values (`y = y * y` twenty times). The helpers here visit
// each distinct node once, without recursion, so they cost time linear in the
// number of distinct nodes at any depth:
// - expr_children / with_children: a node's operands, and the node rebuilt
//   with others (the generic shape every DAG algorithm needs);
// - post_order: every distinct node below some roots, operands first;
// - tree_size: the size a tree walk would see (saturating);
// - IRGraphVisitor: an IRVisitor that enters each distinct node once (like
//   Halide's IRGraphVisitor);
// - ExprInterner: hash-consing, so structurally equal expressions built
//   twice become one node (then pointer equality is structural equality).
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tir/functor.h"
#include "tir/ir.h"

namespace tilefuse::tir {

// The operands of `e` in IRVisitor order; undefined optional operands (a
// load's mask or other) are skipped.
std::vector<Expr> expr_children(const Expr& e);

// `e` with its operands replaced by `children` (the count and order of
// expr_children(e)); `e` itself when every child is the same node.
Expr with_children(const Expr& e, const std::vector<Expr>& children);

// Every distinct node reachable from `roots` (undefined roots skipped), each
// after all of its operands. Iterative: any depth. Nodes for which `known`
// returns true are neither listed nor entered (a caller's memo), so a walk
// over a small new expression on top of a large known DAG costs the small
// part only.
std::vector<Expr> post_order(const std::vector<Expr>& roots,
                             const std::function<bool(const ExprNode*)>& known = {});

// The number of nodes a tree walk of `e` visits (a shared node counted once
// per use), saturating at `cap`. Linear in the distinct nodes.
uint64_t tree_size(const Expr& e, uint64_t cap = UINT64_MAX);

// An IRVisitor that enters each distinct expression node once per visitor
// (a second use of a node is skipped). For analyses that collect facts (the
// vars or buffers an expression reads), where repeats add nothing.
class IRGraphVisitor : public IRVisitor {
 public:
  using IRVisitor::visit;
  void visit_expr(const Expr& e) override;

 private:
  std::unordered_set<const ExprNode*> visited_;
};

// Hash-consing of expressions: intern(e) returns the one node structurally
// equal to `e` among every expression interned so far (vars and buffers by
// identity, constants by dtype and value, NaN payloads kept apart), so
// equal expressions built twice become pointer-equal and a DAG shares every
// repeated subexpression. Iterative; each new node costs O(1) expected.
class ExprInterner {
 public:
  Expr intern(const Expr& e);

 private:
  struct Key {
    const ExprNode* node;  // a canonical node; hashed and compared shallowly
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct KeyEqual {
    bool operator()(const Key& a, const Key& b) const;
  };
  std::unordered_set<Key, KeyHash, KeyEqual> table_;
  // Every node interned, and what it became (itself when canonical); the
  // nodes are kept alive in kept_, so an address is never reused.
  std::unordered_map<const ExprNode*, Expr> canonical_;
  std::vector<Expr> kept_;
};

}  // namespace tilefuse::tir
