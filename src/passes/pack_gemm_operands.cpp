// pack_gemm_operands (see the header): which staged gemm operands the CPU
// gemm packs from their source instead.
#include "passes/pack_gemm_operands.h"

#include <unordered_map>
#include <unordered_set>

#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::passes {
namespace {

using namespace tir;  // NOLINT

// How each buffer is used in the whole kernel.
struct Uses {
  int copies = 0;        // copies writing it
  int other_writes = 0;  // stores, fills, a gemm's C
  int loads = 0;         // element reads
  int gemm_operand = 0;  // reads as a gemm's A or B
};

struct CountUses : IRVisitor {
  using IRVisitor::visit;
  std::unordered_map<const BufferNode*, Uses> uses;
  void visit(const LoadNode* op) override {
    ++uses[op->buffer.get()].loads;
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    ++uses[op->buffer.get()].other_writes;
    IRVisitor::visit(op);
  }
  void visit(const FillNode* op) override {
    ++uses[op->buffer.get()].other_writes;
    IRVisitor::visit(op);
  }
  void visit(const CopyNode* op) override {
    ++uses[op->dst.get()].copies;
    IRVisitor::visit(op);
  }
  void visit(const GemmNode* op) override {
    ++uses[op->a.buffer.get()].gemm_operand;
    ++uses[op->b.buffer.get()].gemm_operand;
    ++uses[op->c.buffer.get()].other_writes;
    IRVisitor::visit(op);
  }
};


bool is_var(const Expr& e, const Var& v) {
  const auto* var = e.as<VarNode>();
  return var && var == v.get();
}

// `j` or `e + j` / `j + e` with e free of j: lane l of a row batch is the
// lane-0 value plus l.
bool unit_affine(const Expr& e, const Var& j) {
  if (is_var(e, j)) return true;
  const auto* add = e.as<AddNode>();
  if (!add) return false;
  return (is_var(add->b, j) && !uses_var(add->a, j)) ||
         (is_var(add->a, j) && !uses_var(add->b, j));
}

// Each conjunct free of j, or `unit_affine(j) < b` with b free of j: the
// mask holds for a prefix of every row.
bool prefix_mask(const Expr& mask, const Var& j) {
  if (!mask.defined()) return true;
  std::vector<Expr> terms;
  conjuncts(mask, &terms);
  for (const Expr& t : terms) {
    if (!uses_var(t, j)) continue;
    const auto* lt = t.as<LTNode>();
    if (!lt || !unit_affine(lt->a, j) || uses_var(lt->b, j)) return false;
  }
  return true;
}

// Drops from the masks of the loads nested in `e` (an index or the mask of
// the copy's load) each conjunct over j that is also a conjunct of the
// copy's mask `outer`, for a nested load whose indices do not use j. Where
// `outer` holds, so do the dropped conjuncts; where it does not, the copy
// reads nothing. Such a load (`index[m]` masked by `m < M && k*32 + j < K`
// when there is no K loop) is then the same for the whole row: what the
// gemm's row-by-row packing needs.
struct DropImpliedMasks : IRMutator {
  using IRMutator::visit;
  Var j;
  std::vector<Expr> outer;
  Expr visit(const LoadNode* op) override {
    Expr e = IRMutator::visit(op);
    const auto* load = e.as<LoadNode>();
    if (!load->mask.defined() || !uses_var(load->mask, j)) return e;
    for (const Expr& i : load->indices)
      if (uses_var(i, j)) return e;
    std::vector<Expr> terms, kept;
    conjuncts(load->mask, &terms);
    for (const Expr& t : terms) {
      bool implied = false;
      for (const Expr& o : outer) implied = implied || (uses_var(t, j) && structural_equal(t, o));
      if (!implied) kept.push_back(t);
    }
    if (kept.size() == terms.size()) return e;
    Expr mask;
    for (const Expr& t : kept) mask = mask.defined() ? AndNode::make(mask, t) : t;
    return LoadNode::make(load->buffer, load->indices, mask, load->other);
  }
};

// The copy's value with DropImpliedMasks applied to its load's row indices
// and mask (the value itself when nothing is dropped).
Expr simplified_value(const CopyNode* op) {
  const auto* load = op->value.as<LoadNode>();
  if (!load || !load->mask.defined()) return op->value;
  DropImpliedMasks drop;
  drop.j = op->vars.back();
  conjuncts(load->mask, &drop.outer);
  std::vector<Expr> indices = load->indices;
  for (size_t d = 0; d + 1 < indices.size(); ++d) indices[d] = drop.mutate(indices[d]);
  std::vector<Expr> terms;
  for (const Expr& t : drop.outer) terms.push_back(drop.mutate(t));
  Expr mask;
  for (const Expr& t : terms) mask = mask.defined() ? AndNode::make(mask, t) : t;
  bool same = true;
  for (size_t d = 0; d < indices.size(); ++d) same = same && indices[d].same_as(load->indices[d]);
  for (size_t t = 0; t < terms.size(); ++t) same = same && terms[t].same_as(drop.outer[t]);
  if (same) return op->value;
  return LoadNode::make(load->buffer, indices, mask, load->other);
}

// The copy's own conditions (the header's first three bullets, less the
// readers), on its value as simplified_value leaves it.
bool packable_copy(const CopyNode* op, const Expr& value,
                   const std::unordered_map<const BufferNode*, Uses>& uses) {
  if (!op->plan || op->plan->mechanism != CopyMechanism::Direct) return false;
  const Buffer& dst = op->dst;
  if (dst.scope() != MemScope::Shared || dst.rank() != 2 || op->vars.size() != 2) return false;
  for (int d = 0; d < 2; ++d) {
    const int64_t* ext = as_const_int(op->extents[d]);
    const int64_t* dim = as_const_int(dst->shape[d]);
    if (!ext || !dim || *ext != *dim || !is_var(op->dst_indices[d], op->vars[d])) return false;
  }
  if (!dst->strides.empty()) return false;  // a shared tile is compact row-major
  const auto it = uses.find(dst.get());
  if (it == uses.end()) return false;
  const Uses& u = it->second;
  if (u.copies != 1 || u.other_writes != 0 || u.loads != 0 || u.gemm_operand < 1) return false;
  const auto* load = value.as<LoadNode>();
  if (!load || load->other.defined() || load->dtype != dst.dtype()) return false;
  const Buffer& src = load->buffer;
  if (src.get() == dst.get() || load->indices.empty()) return false;
  if (!src->strides.empty()) {
    const int64_t* last = as_const_int(src->strides.back());
    if (!last || *last != 1) return false;
  }
  const Var& j = op->vars[1];
  for (size_t d = 0; d + 1 < load->indices.size(); ++d)
    if (uses_var(load->indices[d], j)) return false;
  return unit_affine(load->indices.back(), j) && prefix_mask(load->mask, j);
}

enum class Scan { kContinue, kFound, kBlocked };

// Looks for the gemm that reads `dst` in the statements after its copy.
// `readers` counts the gemms found; a statement that touches dst any other
// way blocks.
Scan scan(const Stmt& s, const Buffer& dst, int* readers) {
  if (const auto* g = s.as<GemmNode>()) {
    const bool a = g->a.buffer.same_as(dst), b = g->b.buffer.same_as(dst);
    if (!a && !b) return g->c.buffer.same_as(dst) ? Scan::kBlocked : Scan::kContinue;
    if (g->c.buffer.same_as(dst)) return Scan::kBlocked;
    if (a && (!g->a.prefix.empty() || g->trans_a)) return Scan::kBlocked;
    if (b && (!g->b.prefix.empty() || g->trans_b)) return Scan::kBlocked;
    const DType c = g->c.buffer.dtype();
    if (c != DType::F32 && c != DType::F64) return Scan::kBlocked;  // the executor's packed path
    ++*readers;
    return Scan::kFound;
  }
  if (const auto* let = s.as<LetStmtNode>()) {
    if (mentions_buffer(let->value, dst.get())) return Scan::kBlocked;
    return scan(let->body, dst, readers);
  }
  if (const auto* seq = s.as<SeqNode>()) {
    for (const Stmt& t : seq->stmts) {
      const Scan r = scan(t, dst, readers);
      if (r != Scan::kContinue) return r;
    }
    return Scan::kContinue;
  }
  return mentions_buffer(s, dst.get()) ? Scan::kBlocked : Scan::kContinue;
}

struct FindPackable : IRVisitor {
  using IRVisitor::visit;
  const std::unordered_map<const BufferNode*, Uses>* uses = nullptr;
  std::unordered_map<const CopyNode*, Expr> packable;  // the copy -> its new value
  void visit(const SeqNode* op) override {
    for (size_t i = 0; i < op->stmts.size(); ++i) {
      const auto* copy = op->stmts[i].as<CopyNode>();
      if (!copy) continue;
      const Expr value = simplified_value(copy);
      if (!packable_copy(copy, value, *uses)) continue;
      int readers = 0;
      Scan r = Scan::kContinue;
      for (size_t t = i + 1; t < op->stmts.size() && r == Scan::kContinue; ++t)
        r = scan(op->stmts[t], copy->dst, &readers);
      // Every read of the tile is that gemm's.
      if (r == Scan::kFound && readers == uses->at(copy->dst.get()).gemm_operand)
        packable.emplace(copy, value);
    }
    IRVisitor::visit(op);
  }
};

struct MarkPacked : IRMutator {
  using IRMutator::visit;
  const std::unordered_map<const CopyNode*, Expr>* packable = nullptr;
  Stmt visit(const CopyNode* op) override {
    const auto it = packable->find(op);
    if (it == packable->end()) return IRMutator::visit(op);
    const Expr& value = it->second;
    CopyPlan plan = *op->plan;
    plan.mechanism = CopyMechanism::GemmPack;
    plan.vector_load = Expr();
    const LoadNode* load = value.as<LoadNode>();
    bool gathered = false;
    for (size_t d = 0; d + 1 < load->indices.size(); ++d) gathered |= has_load(load->indices[d]);
    plan.reason = "cpu target: the gemm packs this operand straight from `" +
                  load->buffer.name() + "`, row by row" +
                  (gathered ? " through the gathered row index" : "") + "; nothing is staged";
    if (report) {
      for (CopyDecision& d : report->copies) {
        if (d.dst == op->dst.name() && d.mode == copy_mechanism_name(CopyMechanism::Direct)) {
          d.mode = std::string(copy_mechanism_name(CopyMechanism::GemmPack));
          d.reason = plan.reason;
        }
      }
    }
    return CopyNode::make(op->vars, op->extents, op->dst, op->dst_indices, value,
                          std::move(plan));
  }
  CopyReport* report = nullptr;
};

}  // namespace

Kernel pack_gemm_operands(const Kernel& kernel, CopyReport* report) {
  CountUses count;
  count.visit_stmt(kernel.body);
  FindPackable find;
  find.uses = &count.uses;
  find.visit_stmt(kernel.body);
  if (find.packable.empty()) return kernel;
  MarkPacked mark;
  mark.packable = &find.packable;
  mark.report = report;
  Kernel out = kernel;
  out.body = mark.mutate(kernel.body);
  return out;
}

}  // namespace tilefuse::passes
