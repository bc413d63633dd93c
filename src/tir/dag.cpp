#include "tir/dag.h"

#include <algorithm>
#include <bit>
#include <utility>

#include <xxhash.h>

namespace tilefuse::tir {

std::vector<Expr> expr_children(const Expr& e) {
  std::vector<Expr> out;
  auto add = [&](const Expr& c) {
    if (c.defined()) out.push_back(c);
  };
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var:
      break;
#define TF_TIR_BINARY(name, ...)         \
  case ExprKind::name: {                 \
    const auto* op = e.as<name##Node>(); \
    add(op->a);                          \
    add(op->b);                          \
    break;                               \
  }
      TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_BINARY)
#undef TF_TIR_BINARY
    case ExprKind::Not:
      add(e.as<NotNode>()->a);
      break;
    case ExprKind::Select: {
      const auto* op = e.as<SelectNode>();
      add(op->cond);
      add(op->true_value);
      add(op->false_value);
      break;
    }
    case ExprKind::Cast:
      add(e.as<CastNode>()->value);
      break;
    case ExprKind::Call:
      for (const Expr& a : e.as<CallNode>()->args) add(a);
      break;
    case ExprKind::Load: {
      const auto* op = e.as<LoadNode>();
      for (const Expr& i : op->indices) add(i);
      add(op->mask);
      add(op->other);
      break;
    }
    case ExprKind::HookLoad: {
      const auto* op = e.as<HookLoadNode>();
      for (const Expr& i : op->indices) add(i);
      add(op->mask);
      break;
    }
  }
  return out;
}

Expr with_children(const Expr& e, const std::vector<Expr>& children) {
  const std::vector<Expr> old = expr_children(e);
  TF_CHECK(old.size() == children.size(), "with_children: wrong number of operands");
  bool same = true;
  for (size_t i = 0; i < old.size(); ++i) same = same && old[i].same_as(children[i]);
  if (same) return e;
  size_t next = 0;
  auto take = [&](const Expr& c) { return c.defined() ? children[next++] : c; };
  auto take_all = [&](const std::vector<Expr>& cs) {
    std::vector<Expr> out;
    out.reserve(cs.size());
    for (const Expr& c : cs) out.push_back(take(c));
    return out;
  };
  switch (e.kind()) {
#define TF_TIR_BINARY(name, ...)                         \
  case ExprKind::name: {                                 \
    const auto* op = e.as<name##Node>();                 \
    Expr a = take(op->a);                                \
    Expr b = take(op->b);                                \
    return name##Node::make(std::move(a), std::move(b)); \
  }
    TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_BINARY)
#undef TF_TIR_BINARY
    case ExprKind::Not:
      return NotNode::make(take(e.as<NotNode>()->a));
    case ExprKind::Select: {
      const auto* op = e.as<SelectNode>();
      Expr c = take(op->cond);
      Expr t = take(op->true_value);
      Expr f = take(op->false_value);
      return SelectNode::make(std::move(c), std::move(t), std::move(f));
    }
    case ExprKind::Cast:
      return CastNode::make(e.dtype(), take(e.as<CastNode>()->value));
    case ExprKind::Call: {
      const auto* op = e.as<CallNode>();
      return CallNode::make(op->op, take_all(op->args));
    }
    case ExprKind::Load: {
      const auto* op = e.as<LoadNode>();
      std::vector<Expr> idx = take_all(op->indices);
      Expr mask = take(op->mask);
      Expr other = take(op->other);
      return LoadNode::make(op->buffer, std::move(idx), std::move(mask), std::move(other));
    }
    case ExprKind::HookLoad: {
      const auto* op = e.as<HookLoadNode>();
      std::vector<Expr> idx = take_all(op->indices);
      Expr mask = take(op->mask);
      return HookLoadNode::make(op->dtype, op->name, std::move(idx), std::move(mask));
    }
    default:
      break;
  }
  return e;  // leaves have no operands
}

std::vector<Expr> post_order(const std::vector<Expr>& roots,
                             const std::function<bool(const ExprNode*)>& known) {
  std::vector<Expr> order;
  std::unordered_set<const ExprNode*> done;
  auto skip = [&](const Expr& e) { return known && known(e.get()); };
  // (node, its operands, the next operand to enter)
  struct Frame {
    Expr node;
    std::vector<Expr> kids;
    size_t next = 0;
  };
  std::vector<Frame> stack;
  for (const Expr& r : roots) {
    if (!r.defined() || done.count(r.get()) || skip(r)) continue;
    stack.push_back({r, expr_children(r), 0});
    done.insert(r.get());
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < f.kids.size()) {
        Expr c = f.kids[f.next++];
        if (!skip(c) && done.insert(c.get()).second) stack.push_back({c, expr_children(c), 0});
        continue;
      }
      order.push_back(std::move(f.node));
      stack.pop_back();
    }
  }
  return order;
}

uint64_t tree_size(const Expr& e, uint64_t cap) {
  if (!e.defined()) return 0;
  std::unordered_map<const ExprNode*, uint64_t> size;
  for (const Expr& n : post_order({e})) {
    uint64_t s = 1;
    for (const Expr& c : expr_children(n)) s = std::min(cap, s + size.at(c.get()));
    size[n.get()] = std::min(cap, s);
  }
  return size.at(e.get());
}

void IRGraphVisitor::visit_expr(const Expr& e) {
  if (!visited_.insert(e.get()).second) return;
  IRVisitor::visit_expr(e);
}

// ---- ExprInterner ------------------------------------------------------------

namespace {

// The node's own data, without its operands (which shallow_equal compares by
// identity): kind, dtype, constants, the var's or buffer's identity, names.
uint64_t own_hash(const ExprNode* n) {
  uint64_t h = XXH64(&n->kind, sizeof(n->kind), static_cast<uint64_t>(n->dtype));
  auto mix = [&h](uint64_t v) { h = XXH64(&v, sizeof(v), h); };
  switch (n->kind) {
    case ExprKind::IntImm:
      mix(static_cast<uint64_t>(static_cast<const IntImmNode*>(n)->value));
      break;
    case ExprKind::FloatImm:
      mix(std::bit_cast<uint64_t>(static_cast<const FloatImmNode*>(n)->value));
      break;
    case ExprKind::Var:
      mix(reinterpret_cast<uintptr_t>(n));
      break;
    case ExprKind::Call:
      mix(static_cast<uint64_t>(static_cast<const CallNode*>(n)->op));
      break;
    case ExprKind::Load: {
      const auto* l = static_cast<const LoadNode*>(n);
      mix(reinterpret_cast<uintptr_t>(l->buffer.get()));
      mix(l->mask.defined() * 2 + l->other.defined());
      break;
    }
    case ExprKind::HookLoad: {
      const auto* l = static_cast<const HookLoadNode*>(n);
      h = XXH64(l->name.data(), l->name.size(), h);
      mix(l->mask.defined());
      break;
    }
    default:
      break;
  }
  return h;
}

bool own_equal(const ExprNode* a, const ExprNode* b) {
  if (a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
    case ExprKind::IntImm:
      return static_cast<const IntImmNode*>(a)->value == static_cast<const IntImmNode*>(b)->value;
    case ExprKind::FloatImm:
      return std::bit_cast<uint64_t>(static_cast<const FloatImmNode*>(a)->value) ==
             std::bit_cast<uint64_t>(static_cast<const FloatImmNode*>(b)->value);
    case ExprKind::Var:
      return a == b;
    case ExprKind::Call:
      return static_cast<const CallNode*>(a)->op == static_cast<const CallNode*>(b)->op;
    case ExprKind::Load: {
      const auto* x = static_cast<const LoadNode*>(a);
      const auto* y = static_cast<const LoadNode*>(b);
      return x->buffer.same_as(y->buffer) && x->mask.defined() == y->mask.defined() &&
             x->other.defined() == y->other.defined();
    }
    case ExprKind::HookLoad: {
      const auto* x = static_cast<const HookLoadNode*>(a);
      const auto* y = static_cast<const HookLoadNode*>(b);
      return x->name == y->name && x->mask.defined() == y->mask.defined();
    }
    default:
      return true;
  }
}

}  // namespace

size_t ExprInterner::KeyHash::operator()(const Key& k) const {
  uint64_t h = own_hash(k.node);
  for (const Expr& c : expr_children(Expr(k.node))) {
    const auto p = reinterpret_cast<uintptr_t>(c.get());
    h = XXH64(&p, sizeof(p), h);
  }
  return static_cast<size_t>(h);
}

bool ExprInterner::KeyEqual::operator()(const Key& a, const Key& b) const {
  if (a.node == b.node) return true;
  if (!own_equal(a.node, b.node)) return false;
  const std::vector<Expr> x = expr_children(Expr(a.node)), y = expr_children(Expr(b.node));
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!x[i].same_as(y[i])) return false;
  return true;
}

Expr ExprInterner::intern(const Expr& e) {
  if (!e.defined()) return e;
  if (auto it = canonical_.find(e.get()); it != canonical_.end()) return it->second;
  // The new nodes below `e`, operands first (nodes already interned are not
  // entered), each rebuilt over canonical operands and looked up.
  const auto known = [this](const ExprNode* n) { return canonical_.count(n) > 0; };
  for (const Expr& node : post_order({e}, known)) {
    std::vector<Expr> kids = expr_children(node);
    for (Expr& c : kids) c = canonical_.at(c.get());
    const Expr rebuilt = with_children(node, kids);
    auto [it, inserted] = table_.insert(Key{rebuilt.get()});
    const Expr canon(it->node);
    // Both keys stay alive (kept_) so that no freed address is looked up.
    if (inserted) {
      canonical_.emplace(rebuilt.get(), canon);
      kept_.push_back(canon);
    }
    if (canonical_.emplace(node.get(), canon).second) kept_.push_back(node);
  }
  return canonical_.at(e.get());
}

}  // namespace tilefuse::tir
