#include "analysis/axis_info.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>
#include <unordered_set>

#include "tir/functor.h"
#include "core/text.h"
#include "tir/printer.h"
#include "tir/structural.h"

namespace tilefuse::analysis {
namespace {

using namespace tir;  // NOLINT: an analysis of the Tile IR

// The largest power of two dividing v (kMaxDivisibility for 0).
int64_t pow2_divisor(int64_t v) {
  if (v == 0) return kMaxDivisibility;
  uint64_t u = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  return std::min<int64_t>(int64_t(u & (~u + 1)), kMaxDivisibility);
}

int64_t mul_div(int64_t a, int64_t b) {
  return a >= kMaxDivisibility / b ? kMaxDivisibility : a * b;
}

class LetCollector : public IRVisitor {
 public:
  std::unordered_map<const VarNode*, Expr>* lets;
  using IRVisitor::visit;
  void visit(const LetStmtNode* op) override {
    (*lets)[op->var.get()] = op->value;
    IRVisitor::visit(op);
  }
};

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += v[i] >= kMaxDivisibility ? "max" : std::to_string(v[i]);
  }
  return s + "]";
}


}  // namespace

AxisInfo::AxisInfo(const Kernel& kernel, std::vector<Var> vars, std::vector<int64_t> extents)
    : vars_(std::move(vars)), extents_(std::move(extents)) {
  LetCollector lc;
  lc.lets = &lets_;
  if (kernel.body.defined()) lc.visit_stmt(kernel.body);
  for (const KernelParam& p : kernel.params) {
    if (p.is_buffer()) continue;
    auto it = kernel.attrs.find(p.var.name() + "_divisibility");
    if (it != kernel.attrs.end())
      if (const int64_t* v = std::get_if<int64_t>(&it->second))
        param_divisibility_[p.var.get()] = pow2_divisor(*v);
  }
}

// Constant along every dim of the region.
AxisFacts AxisInfo::scalar(int64_t divisibility) const {
  size_t n = vars_.size();
  return {std::vector<int64_t>(n, 1), std::vector<int64_t>(n, divisibility), extents_};
}

AxisFacts AxisInfo::facts(const Expr& e) {
  auto it = memo_.find(e.get());
  if (it != memo_.end()) return it->second.second;
  AxisFacts f = compute(e);
  memo_[e.get()] = {e, f};
  return f;
}

AxisFacts AxisInfo::compute(const Expr& e) {
  const size_t n = vars_.size();
  if (const int64_t* c = as_const_int(e)) {
    // A constant: no run of two consecutive values; constant everywhere.
    return scalar(pow2_divisor(*c));
  }
  if (e.kind() == ExprKind::FloatImm) return scalar(1);
  if (const VarNode* v = e.as<VarNode>()) {
    for (size_t d = 0; d < n; ++d) {
      if (vars_[d].get() != v) continue;
      // arange(0, extent) along its own dim: one run starting at 0 (divisible
      // by anything); along the others it is a constant of unknown value.
      AxisFacts f = scalar(1);
      f.contiguity[d] = extents_[d];
      f.divisibility[d] = kMaxDivisibility;
      f.constancy[d] = 1;
      return f;
    }
    auto let = lets_.find(v);
    if (let != lets_.end()) return facts(let->second);
    auto p = param_divisibility_.find(v);
    return scalar(p != param_divisibility_.end() ? p->second : 1);
  }
  auto bin = [&](const Expr& a, const Expr& b) { return std::make_pair(facts(a), facts(b)); };
  AxisFacts r = scalar(1);
  switch (e.kind()) {
    case ExprKind::Add:
    case ExprKind::Sub: {
      const bool add = e.kind() == ExprKind::Add;
      const Expr& a = add ? e.as<AddNode>()->a : e.as<SubNode>()->a;
      const Expr& b = add ? e.as<AddNode>()->b : e.as<SubNode>()->b;
      auto [fa, fb] = bin(a, b);
      for (size_t d = 0; d < n; ++d) {
        // a contiguous on runs of ca plus b constant on runs of kb: on the
        // common aligned runs, gcd(ca, kb), a + b still steps by 1 (and
        // symmetrically for +; a - b steps by -1 when b is the contiguous one).
        r.contiguity[d] = std::gcd(fa.contiguity[d], fb.constancy[d]);
        if (add)
          r.contiguity[d] = std::max(r.contiguity[d], std::gcd(fa.constancy[d], fb.contiguity[d]));
        // (s_a + s_b) at a run start is divisible by whatever divides both.
        r.divisibility[d] = std::min(fa.divisibility[d], fb.divisibility[d]);
        // Constant on runs where both are constant.
        r.constancy[d] = std::gcd(fa.constancy[d], fb.constancy[d]);
      }
      return r;
    }
    case ExprKind::Mul: {
      auto [fa, fb] = bin(e.as<MulNode>()->a, e.as<MulNode>()->b);
      const int64_t* ca = as_const_int(e.as<MulNode>()->a);
      const int64_t* cb = as_const_int(e.as<MulNode>()->b);
      for (size_t d = 0; d < n; ++d) {
        // a*1 is a; otherwise a step of 1 becomes a step of |b| != 1.
        r.contiguity[d] = cb && *cb == 1 ? fa.contiguity[d] : ca && *ca == 1 ? fb.contiguity[d] : 1;
        // s_a*s_b with da | s_a and db | s_b: da*db divides it.
        r.divisibility[d] = mul_div(fa.divisibility[d], fb.divisibility[d]);
        // Constant where both factors are.
        r.constancy[d] = std::gcd(fa.constancy[d], fb.constancy[d]);
      }
      return r;
    }
    case ExprKind::Div:
    case ExprKind::Mod: {
      const bool div = e.kind() == ExprKind::Div;
      const Expr& a = div ? e.as<DivNode>()->a : e.as<ModNode>()->a;
      const Expr& b = div ? e.as<DivNode>()->b : e.as<ModNode>()->b;
      AxisFacts fa = facts(a), fb = facts(b);
      const int64_t* c = as_const_int(b);
      for (size_t d = 0; d < n; ++d) {
        r.constancy[d] = std::gcd(fa.constancy[d], fb.constancy[d]);
        if (!c || *c <= 0) continue;  // unknown divisor: only constancy survives
        const int64_t cd = pow2_divisor(*c);
        if (div) {
          // floor(a / c): a run of ca consecutive values starting at a
          // multiple of g = gcd(ca, c, da) stays inside one multiple-of-c
          // block for g points, so the quotient is constant on runs of g.
          int64_t g = std::gcd(std::gcd(fa.contiguity[d], *c), fa.divisibility[d]);
          r.constancy[d] = std::max(r.constancy[d], g);
          r.contiguity[d] = *c == 1 ? fa.contiguity[d] : 1;
          // c | s_a gives s_a / c divisible by da / c (powers of two).
          r.divisibility[d] = *c == 1 ? fa.divisibility[d]
                              : fa.divisibility[d] % *c == 0
                                  ? std::max<int64_t>(fa.divisibility[d] / cd, 1)
                                  : 1;
        } else {
          // a mod c: within a run, values stay consecutive until they cross
          // a multiple of c; runs of g = gcd(ca, c, da) start at multiples
          // of g, which divides c, so they never cross one.
          r.contiguity[d] = std::gcd(std::gcd(fa.contiguity[d], *c), fa.divisibility[d]);
          // s_a mod c = s_a - q*c: divisible by gcd(da, c).
          r.divisibility[d] = std::min(fa.divisibility[d], cd);
          r.constancy[d] = fa.constancy[d];  // equal inputs, equal remainders
        }
      }
      return r;
    }
    case ExprKind::Min:
    case ExprKind::Max: {
      const bool mn = e.kind() == ExprKind::Min;
      auto [fa, fb] = bin(mn ? e.as<MinNode>()->a : e.as<MaxNode>()->a,
                          mn ? e.as<MinNode>()->b : e.as<MaxNode>()->b);
      for (size_t d = 0; d < n; ++d) {
        // The result is one of the operands at every point: it is divisible
        // by what divides both; it may switch operand anywhere (contiguity
        // 1) but is constant where both are.
        r.divisibility[d] = std::min(fa.divisibility[d], fb.divisibility[d]);
        r.constancy[d] = std::gcd(fa.constancy[d], fb.constancy[d]);
      }
      return r;
    }
    case ExprKind::Select: {
      const SelectNode* op = e.as<SelectNode>();
      AxisFacts fc = facts(op->cond), ft = facts(op->true_value), ff = facts(op->false_value);
      for (size_t d = 0; d < n; ++d) {
        // On runs where the condition is constant the result is one operand:
        // it keeps the facts both operands share there.
        r.contiguity[d] = std::gcd(fc.constancy[d], std::gcd(ft.contiguity[d], ff.contiguity[d]));
        r.divisibility[d] = std::min(ft.divisibility[d], ff.divisibility[d]);
        r.constancy[d] = std::gcd(fc.constancy[d], std::gcd(ft.constancy[d], ff.constancy[d]));
      }
      return r;
    }
    case ExprKind::EQ:
    case ExprKind::NE:
    case ExprKind::LT:
    case ExprKind::LE:
    case ExprKind::GT:
    case ExprKind::GE: {
      Expr a, b;
      ExprKind k = e.kind();
      switch (k) {
#define TF_CMP(K)           \
  case ExprKind::K:         \
    a = e.as<K##Node>()->a; \
    b = e.as<K##Node>()->b; \
    break;
        TF_CMP(EQ)
        TF_CMP(NE)
        TF_CMP(LT)
        TF_CMP(LE) TF_CMP(GT) TF_CMP(GE)
#undef TF_CMP
            default : break;
      }
      AxisFacts fa = facts(a), fb = facts(b);
      // x < y and x >= y flip only where x == y; so do y > x and y <= x.
      const bool flips_at_eq_ab = k == ExprKind::LT || k == ExprKind::GE;
      const bool flips_at_eq_ba = k == ExprKind::GT || k == ExprKind::LE;
      for (size_t d = 0; d < n; ++d) {
        r.constancy[d] = std::gcd(fa.constancy[d], fb.constancy[d]);
        // x contiguous on runs of cx from multiples of dx, y constant and a
        // multiple of dy: x == y can only happen at a point where x is a
        // multiple of g = gcd(cx, dx, dy), i.e. at the start of an aligned
        // run of g, so the comparison is constant on those runs.
        auto contig_vs_const = [&](const AxisFacts& x, const AxisFacts& y) {
          if (x.contiguity[d] > 1 && y.constancy[d] == extents_[d])
            r.constancy[d] =
                std::max(r.constancy[d],
                         std::gcd(std::gcd(x.contiguity[d], x.divisibility[d]), y.divisibility[d]));
        };
        if (flips_at_eq_ab) contig_vs_const(fa, fb);
        if (flips_at_eq_ba) contig_vs_const(fb, fa);
      }
      return r;
    }
    case ExprKind::And:
    case ExprKind::Or: {
      const bool an = e.kind() == ExprKind::And;
      auto [fa, fb] = bin(an ? e.as<AndNode>()->a : e.as<OrNode>()->a,
                          an ? e.as<AndNode>()->b : e.as<OrNode>()->b);
      for (size_t d = 0; d < n; ++d) r.constancy[d] = std::gcd(fa.constancy[d], fb.constancy[d]);
      return r;
    }
    case ExprKind::Not:
      r.constancy = facts(e.as<NotNode>()->a).constancy;
      return r;
    case ExprKind::Cast: {
      const CastNode* op = e.as<CastNode>();
      AxisFacts f = facts(op->value);
      // Integer casts keep the value (index producers only narrow values
      // that fit, ir.h "Offsets"); any other cast keeps only constancy.
      if (is_integral(op->dtype) && is_integral(op->value.dtype())) return f;
      r.constancy = f.constancy;
      return r;
    }
    case ExprKind::Call: {
      const CallNode* op = e.as<CallNode>();
      r.constancy = extents_;
      for (const Expr& a : op->args) {
        AxisFacts f = facts(a);
        for (size_t d = 0; d < n; ++d) r.constancy[d] = std::gcd(r.constancy[d], f.constancy[d]);
      }
      return r;
    }
    case ExprKind::Load: {
      // An unknown value (divisibility 1, no runs), but equal addresses give
      // equal values: constant where every index and the mask are.
      const LoadNode* op = e.as<LoadNode>();
      r.constancy = extents_;
      auto meet = [&](const Expr& x) {
        if (!x.defined()) return;
        AxisFacts f = facts(x);
        for (size_t d = 0; d < n; ++d) r.constancy[d] = std::gcd(r.constancy[d], f.constancy[d]);
      };
      for (const Expr& i : op->indices) meet(i);
      meet(op->mask);
      meet(op->other);
      return r;
    }
    default:
      return r;  // hooks: nothing known
  }
}

AccessFacts AxisInfo::access(const LoadNode* load) {
  AccessFacts a;
  const Buffer& b = load->buffer;
  a.elem_bytes = dtype_size(b.dtype());
  a.base_alignment = static_cast<int>(pow2_divisor(b->alignment > 0 ? b->alignment : a.elem_bytes));
  // Element strides: the buffer's, else compact row-major. The offset is
  // built in i64 (ir.h "Offsets"); unit strides add no multiplication.
  auto to_i64 = [](const Expr& e) -> Expr {
    if (const int64_t* c = as_const_int(e)) return make_int(DType::I64, *c);
    return e.dtype() == DType::I64 ? e : CastNode::make(DType::I64, e);
  };
  auto is_one = [](const Expr& e) { return as_const_int(e) && *as_const_int(e) == 1; };
  std::vector<Expr> strides = b->strides;
  if (strides.empty()) {
    Expr s = make_int(DType::I64, 1);
    strides.assign(b->shape.size(), Expr());
    for (size_t d = b->shape.size(); d-- > 0;) {
      strides[d] = s;
      Expr dim = to_i64(b->shape[d]);
      s = is_one(s) ? dim : MulNode::make(s, dim);
    }
  }
  Expr off;
  for (size_t d = 0; d < load->indices.size(); ++d) {
    Expr idx = to_i64(load->indices[d]), st = to_i64(strides[d]);
    Expr term = is_one(st) ? idx : MulNode::make(idx, st);
    off = off.defined() ? AddNode::make(off, term) : term;
  }
  if (!off.defined()) off = make_int(DType::I64, 0);
  a.offset = off;
  a.offset_facts = facts(off);
  for (size_t d = 0; d < vars_.size(); ++d)
    a.byte_divisibility.push_back(
        std::min<int64_t>(a.base_alignment, mul_div(a.offset_facts.divisibility[d], a.elem_bytes)));
  a.mask_constancy = load->mask.defined() ? facts(load->mask).constancy : extents_;
  return a;
}

namespace {

// The innermost statements of a nest of parallel loops (through lets and
// sequences), with the stores among them.
void collect_stores(const Stmt& s, std::vector<const StoreNode*>* out) {
  struct V : IRVisitor {
    std::vector<const StoreNode*>* out;
    using IRVisitor::visit;
    void visit(const StoreNode* op) override { out->push_back(op); }
    void visit(const ForNode*) override {}  // a nested non-parallel loop is its own matter
  } v;
  v.out = out;
  v.visit_stmt(s);
}

class Printer : public IRVisitor {
 public:
  explicit Printer(const Kernel& k) : kernel_(k) {}
  std::ostringstream out;

  using IRVisitor::visit;
  void visit(const CopyNode* op) override {
    std::vector<int64_t> ext;
    for (const Expr& e : op->extents) {
      const int64_t* c = as_const_int(e);
      if (!c) return;
      ext.push_back(*c);
    }
    region("copy " + op->dst.name(), op->vars, ext, {op->value}, {});
  }

  // A nest of parallel loops over constant ranges is a region too (the
  // epilogue's element-wise stores).
  void visit(const ForNode* op) override {
    if (op->for_kind != ForKind::Parallel) return IRVisitor::visit(op);
    std::vector<Var> vars;
    std::vector<int64_t> ext;
    Stmt body = Stmt(op);
    while (true) {
      while (const LetStmtNode* l = body.as<LetStmtNode>()) body = l->body;
      const ForNode* f = body.as<ForNode>();
      if (!f || f->for_kind != ForKind::Parallel) break;
      const int64_t* c = as_const_int(f->extent);
      const int64_t* m = as_const_int(f->min);
      if (!c || !m || *m != 0) return IRVisitor::visit(op);
      vars.push_back(f->var);
      ext.push_back(*c);
      body = f->body;
    }
    std::vector<const StoreNode*> stores;
    collect_stores(body, &stores);
    std::vector<Expr> exprs;
    for (const StoreNode* st : stores) {
      for (const Expr& i : st->indices) exprs.push_back(i);
      exprs.push_back(st->value);
      if (st->mask.defined()) exprs.push_back(st->mask);
    }
    region("parallel", vars, ext, exprs, stores);
  }

 private:
  void region(const std::string& head, const std::vector<Var>& vars,
              const std::vector<int64_t>& ext, const std::vector<Expr>& exprs,
              const std::vector<const StoreNode*>& stores) {
    AxisInfo info(kernel_, vars, ext);
    out << head << " (";
    for (size_t d = 0; d < vars.size(); ++d)
      out << (d ? ", " : "") << vars[d].name() << ": " << ext[d];
    out << ")\n";
    std::vector<Expr> seen;
    auto address = [&](const std::string& what, const LoadNode* l) {
      AccessFacts a = info.access(l);
      out << "  " << what << ": offset " << one_line(print(a.offset))
          << " contiguity=" << list(a.offset_facts.contiguity)
          << " divisibility=" << list(a.offset_facts.divisibility)
          << " bytes=" << list(a.byte_divisibility) << " mask_constancy=" << list(a.mask_constancy)
          << "\n";
    };
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      struct Kids : IRVisitor {
        std::vector<Expr> kids;
        using IRVisitor::visit_expr;
        void visit_expr(const Expr& e) override { kids.push_back(e); }
      };
      // Children first (post-order): the base visit_expr dispatches to
      // visit(node), which hands each child to the collector's visit_expr.
      Kids k;
      k.IRVisitor::visit_expr(e);
      for (const Expr& c : k.kids) walk(c);
      for (const Expr& s : seen)
        if (structural_equal(s, e)) return;
      seen.push_back(e);
      if (const LoadNode* l = e.as<LoadNode>()) address("address " + one_line(print(e)), l);
      if (!is_integral(e.dtype()) || e.as<IntImmNode>()) return;
      AxisFacts f = info.facts(e);
      out << "  " << one_line(print(e)) << ": contiguity=" << list(f.contiguity)
          << " divisibility=" << list(f.divisibility) << " constancy=" << list(f.constancy) << "\n";
    };
    for (const Expr& e : exprs) walk(e);
    for (const StoreNode* st : stores) {
      Expr as_load = LoadNode::make(st->buffer, st->indices, st->mask);
      address("store " + st->buffer.name() + "[...]", as_load.as<LoadNode>());
    }
  }

  const Kernel& kernel_;
};

}  // namespace

std::string print_axis_info(const Kernel& kernel) {
  Printer p(kernel);
  p.visit_stmt(kernel.body);
  return p.out.str();
}

}  // namespace tilefuse::analysis
