// Let-binding of lowered values (see let_binding.h).
#include "lower/let_binding.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "tir/dag.h"

namespace tilefuse {
namespace {

using tir::Expr;
using tir::Stmt;

bool is_trivial(const Expr& e) {
  return e.as<tir::IntImmNode>() || e.as<tir::FloatImmNode>() || e.as<tir::VarNode>();
}

// The expressions of a check statement (its condition, then its args).
std::vector<Expr> check_exprs(const Stmt& s) {
  const auto* c = s.as<tir::CheckNode>();
  TF_CHECK(c != nullptr, "bind_values: a check that is not a CheckNode");
  std::vector<Expr> out = {c->cond};
  out.insert(out.end(), c->args.begin(), c->args.end());
  return out;
}

}  // namespace

LoweredExpr bind_values(const LoweredExpr& in, const LetBindOptions& options) {
  std::vector<Expr> roots = {in.value};
  for (const Stmt& c : in.checks)
    for (const Expr& e : check_exprs(c)) roots.push_back(e);
  const std::vector<Expr> order = tir::post_order(roots);

  // Uses of each node: as an operand (once per operand slot) or a root.
  std::unordered_map<const tir::ExprNode*, int> uses;
  for (const Expr& n : order)
    for (const Expr& c : tir::expr_children(n)) ++uses[c.get()];
  for (const Expr& r : roots)
    if (r.defined()) ++uses[r.get()];

  struct Shape {
    int64_t nodes = 1, depth = 1;
  };
  std::unordered_map<const tir::ExprNode*, Shape> shape;  // as a tree, bound operands counted as 1
  std::unordered_set<const tir::ExprNode*> bound;
  auto effective = [&](const Expr& c) {
    return bound.count(c.get()) ? Shape{} : shape.at(c.get());
  };
  for (const Expr& n : order) {
    if (is_trivial(n)) {
      shape[n.get()] = Shape{};
      continue;
    }
    const std::vector<Expr> kids = tir::expr_children(n);
    auto measure = [&] {
      Shape s;
      for (const Expr& c : kids) {
        const Shape k = effective(c);
        s.nodes += k.nodes;
        s.depth = std::max(s.depth, k.depth + 1);
      }
      return s;
    };
    Shape s = measure();
    while (s.nodes > options.max_nodes || s.depth > options.max_depth) {
      // Bind the largest operand still inline (the deepest among equals).
      const Expr* pick = nullptr;
      for (const Expr& c : kids) {
        if (is_trivial(c) || bound.count(c.get())) continue;
        const Shape k = shape.at(c.get());
        if (!pick || k.nodes > shape.at(pick->get()).nodes ||
            (k.nodes == shape.at(pick->get()).nodes && k.depth > shape.at(pick->get()).depth))
          pick = &c;
      }
      if (!pick) break;
      bound.insert(pick->get());
      s = measure();
    }
    shape[n.get()] = s;
    const int min_shared =
        n.dtype() == DType::Bool ? options.min_shared_bool_nodes : options.min_shared_nodes;
    if (uses[n.get()] >= 2 && s.nodes >= min_shared) bound.insert(n.get());
  }

  LoweredExpr out;
  out.lets = in.lets;
  if (bound.empty()) {
    out.value = in.value;
    out.checks = in.checks;
    return out;
  }
  // Rebuild operands first; a bound node's let value is its rebuilt
  // expression, its uses read the var. Post-order lists a node after its
  // operands, so the lets come out in dependency order.
  std::unordered_map<const tir::ExprNode*, Expr> use;
  for (const Expr& n : order) {
    std::vector<Expr> kids = tir::expr_children(n);
    for (Expr& c : kids) c = use.at(c.get());
    Expr e = tir::with_children(n, kids);
    if (bound.count(n.get())) {
      tir::Var v("t", n.dtype());
      out.lets.emplace_back(v, e);
      use[n.get()] = v;
    } else {
      use[n.get()] = e;
    }
  }
  out.value = use.at(in.value.get());
  for (const Stmt& s : in.checks) {
    const auto* c = s.as<tir::CheckNode>();
    std::vector<Expr> args;
    for (const Expr& a : c->args) args.push_back(use.at(a.get()));
    out.checks.push_back(
        tir::CheckNode::make(use.at(c->cond.get()), c->code, c->message, args, c->loc));
  }
  return out;
}

Stmt wrap_in_lets(const LoweredExpr& e, Stmt stmt) {
  std::vector<Stmt> body = e.checks;
  body.push_back(std::move(stmt));
  Stmt s = tir::make_seq(std::move(body));
  for (size_t i = e.lets.size(); i-- > 0;)
    s = tir::LetStmtNode::make(e.lets[i].first, e.lets[i].second, s);
  return s;
}

}  // namespace tilefuse
