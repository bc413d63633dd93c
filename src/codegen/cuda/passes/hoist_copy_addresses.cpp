#include "codegen/cuda/passes/hoist_copy_addresses.h"

#include <unordered_set>

#include "codegen/cuda/passes/software_pipeline.h"
#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "passes/simplify.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

namespace {

// Does `e` load a buffer of `written`?
bool loads_any(const Expr& e, const std::unordered_set<const BufferNode*>& written) {
  for (const LoadNode* l : loads_in(e))
    if (written.count(l->buffer.get())) return true;
  return false;
}

bool is_zero(const Expr& e) {
  const int64_t* c = as_const_int(e);
  return c && *c == 0;
}

// `e` as a sum of integer coefficients times terms (Add, Sub and a product
// with a constant expanded; anything else is one term, compared
// structurally), added into `terms` scaled by `scale`. The coefficients
// wrap modulo 2^64 (unsigned: no overflow for huge constants); a sum that
// is 0 modulo 2^64 is 0 modulo 2^bits of any integer dtype, where the
// integer ops are exact. A cast is a term of its own. (simplify keeps
// `(pid_k*16 + k)*64` whole; expanded, a split-K loop's address is seen to
// be affine in k.)
using LinearTerms = std::vector<std::pair<Expr, uint64_t>>;
void add_linear(const Expr& e, uint64_t scale, LinearTerms* terms) {
  if (const int64_t* c = as_const_int(e)) {
    terms->emplace_back(Expr(), static_cast<uint64_t>(*c) * scale);
    return;
  }
  if (const auto* a = e.as<AddNode>()) {
    add_linear(a->a, scale, terms);
    add_linear(a->b, scale, terms);
    return;
  }
  if (const auto* s = e.as<SubNode>()) {
    add_linear(s->a, scale, terms);
    add_linear(s->b, uint64_t{0} - scale, terms);
    return;
  }
  if (const auto* m = e.as<MulNode>()) {
    if (const int64_t* c = as_const_int(m->b))
      return add_linear(m->a, scale * static_cast<uint64_t>(*c), terms);
    if (const int64_t* c = as_const_int(m->a))
      return add_linear(m->b, scale * static_cast<uint64_t>(*c), terms);
  }
  terms->emplace_back(e, scale);
}

// Is the integer expression `e` zero for every value of its free vars, by
// its linear expansion (every term's coefficients summing to 0)?
bool linear_zero(const Expr& e) {
  if (!is_integral(e.dtype())) return false;
  LinearTerms terms;
  add_linear(e, 1, &terms);
  std::vector<bool> done(terms.size(), false);
  for (size_t i = 0; i < terms.size(); ++i) {
    if (done[i]) continue;
    uint64_t sum = 0;
    for (size_t j = i; j < terms.size(); ++j) {
      const bool same = terms[i].first.defined() == terms[j].first.defined() &&
                        (!terms[i].first.defined() ||
                         structural_equal(terms[i].first, terms[j].first));
      if (!same) continue;
      sum += terms[j].second;
      done[j] = true;
    }
    if (sum != 0) return false;
  }
  return true;
}

// The plan of copy `c` of the warp-specialized `loop` with its source
// address hoisted, or nullopt when the address is not affine in the loop
// var or its invariant part reads what the loop writes.
std::optional<CopyPlan> hoisted(const ForNode* loop, const CopyNode* c, const VarMap& lets,
                                const std::unordered_set<const BufferNode*>& written) {
  const LoadNode* src = c->value.as<LoadNode>();
  if (!src || src->buffer.scope() != MemScope::Global) return std::nullopt;
  const Var& k = loop->var;
  const Expr k0 = loop->min;
  CopyPlan plan = *c->plan;
  plan.hoisted_indices.clear();
  std::vector<int64_t> strides;
  {
    const Buffer& b = src->buffer;
    const size_t rank = src->indices.size();
    strides.assign(rank, 0);
    if (!b->strides.empty()) {
      for (size_t d = 0; d < rank; ++d) {
        const int64_t* s = as_const_int(b->strides[d]);
        if (!s) return std::nullopt;
        strides[d] = *s;
      }
    } else {
      int64_t s = 1;
      for (size_t d = rank; d-- > 0;) {
        strides[d] = s;
        const int64_t* e = as_const_int(b->shape[d]);
        if (!e) return std::nullopt;
        s *= *e;
      }
    }
  }
  int64_t step = 0;
  bool gathered = false;
  for (size_t d = 0; d < src->indices.size(); ++d) {
    const Expr idx = passes::simplify(substitute(src->indices[d], lets));
    const DType dt = idx.dtype();
    const Expr at0 = passes::simplify(substitute(idx, k, k0));
    const Expr at1 =
        passes::simplify(substitute(idx, k, AddNode::make(k0, make_int(k0.dtype(), 1))));
    const Expr diff = passes::simplify(SubNode::make(at1, at0));  // (owns *dstep)
    const int64_t* dstep = as_const_int(diff);
    if (!dstep) return std::nullopt;
    // Affine: idx == at0 + (k - k0) * dstep for every k.
    const Expr kk = dt == k.dtype() ? Expr(SubNode::make(k, k0))
                                    : CastNode::make(dt, SubNode::make(k, k0));
    const Expr rest = passes::simplify(
        SubNode::make(SubNode::make(idx, at0), MulNode::make(kk, make_int(dt, *dstep))));
    if (!(is_zero(rest) || linear_zero(rest)) || uses_var(at0, k) || loads_any(at0, written))
      return std::nullopt;
    gathered = gathered || has_load(at0);
    plan.hoisted_indices.push_back(at0);
    step += *dstep * strides[d];
  }
  // Only addresses that load (a gathered row) gain: an affine address costs
  // a few integer ops an iteration, and its slots' registers are the
  // producer's (three a slot).
  if (!gathered) return std::nullopt;
  plan.hoisted_mask = Expr();
  plan.iteration_mask = Expr();
  if (src->mask.defined()) {
    std::vector<Expr> terms;
    conjuncts(passes::simplify(substitute(src->mask, lets)), &terms);
    for (const Expr& t : terms) {
      Expr& into = uses_var(t, k) || loads_any(t, written) ? plan.iteration_mask
                                                            : plan.hoisted_mask;
      into = into.defined() ? AndNode::make(into, t) : t;
    }
  }
  plan.hoisted = true;
  plan.step = step;
  return plan;
}

// Do slots 0 and 1 of each of `threads` threads read the same column chunk
// of two rows? Slot q of thread t is vector q * threads + t of the copy's
// tile, the innermost dim fastest: so when `threads` is a multiple of the
// vectors a row (innermost extent / vec) and the tile has 2+ dims.
bool slot_pairs_share_column(const CopyNode* c, int64_t vec, int threads) {
  if (c->extents.size() < 2) return false;
  const int64_t* inner = as_const_int(c->extents.back());
  if (!inner || *inner % vec != 0) return false;
  return threads % (*inner / vec) == 0;
}

}  // namespace

Kernel hoist_copy_addresses(const Kernel& kernel, const passes::PassContext& context) {
  if (!context.cuda.hoist_copy_addresses) return kernel;
  PlanEdits edits;
  for (const ForNode* loop : pipelined_loops(kernel.body, /*warp_specialized=*/true)) {
    const PipelinePlan& p = std::get<PipelinePlan>(loop->plan);
    const PipelinedBody body = split_pipelined_body(loop);
    std::unordered_set<const BufferNode*> written;
    for (const CopyNode* c : body.copies) written.insert(c->dst.get());
    VarMap lets;
    for (const auto& [v, e] : body.lets) lets[v.get()] = substitute(e, lets);
    int64_t slots = 0;  // hoisted, a producer thread
    for (const CopyNode* c : body.copies) {
      if (!c->plan || c->plan->mechanism != CopyMechanism::CpAsync) continue;
      const int64_t vec = c->plan->width / dtype_size(c->dst.dtype());
      const int64_t n = copy_slots(c, p.producer_threads) / vec;  // 0: no fixed slots
      if (n == 0 || slots + n > kMaxHoistedSlots) continue;
      if (std::optional<CopyPlan> h = hoisted(loop, c, lets, written)) {
        // The L1 policy by the tile's repeated rows needs the hoisted
        // addresses (it compares them), a 16-byte gather through L1, and
        // a lane's slots 0 and 1 in the same column chunk of two rows: 2+
        // rounds, and the producer threads a multiple of a row's chunks.
        h->cache_by_repeats = h->cache_all && h->width == 16 &&
                              context.cuda.gather_cache_by_repeats && n >= 2 &&
                              slot_pairs_share_column(c, vec, p.producer_threads);
        edits.copies[c] = *h;
        slots += n;
      }
    }
  }
  return with_plans(kernel, edits);
}

}  // namespace tilefuse::codegen
