#include "codegen/cuda/passes/register_a.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "analysis/modulus_remainder.h"
#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "passes/simplify.h"
#include "tir/builder.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

namespace {

// Does `e` read only global memory that the kernel never writes?
bool reads_only_inputs(const Expr& e, const Writers& writers) {
  if (!e.defined()) return true;
  for (const LoadNode* l : loads_in(e))
    if (l->buffer.scope() != MemScope::Global || writers.of(l->buffer.get()) != 0) return false;
  return true;
}

bool is_const_int(const Expr& e, int64_t v) {
  const int64_t* c = as_const_int(e);
  return c != nullptr && *c == v;
}

// Every copy of the kernel that names tensor map `map`.
int copies_of_map(const Stmt& body, int map) {
  struct V : IRVisitor {
    int map = -1, n = 0;
    using IRVisitor::visit;
    void visit(const CopyNode* op) override {
      if (op->plan && op->plan->mechanism == CopyMechanism::Tma && op->plan->tensor_map == map)
        ++n;
      IRVisitor::visit(op);
    }
  } v;
  v.map = map;
  v.visit_stmt(body);
  return v.n;
}

// The checks of a prologue statement `for i in parallel(0, rows) { lets;
// if (guard) { check(...) } ... }` as checks over `row` (the guard folded
// into each condition, the lets inlined); nullopt for any other shape.
std::optional<std::vector<Stmt>> row_checks_of(const Stmt& s, int64_t rows, const Var& row) {
  const ForNode* f = s.as<ForNode>();
  if (!f || f->for_kind != ForKind::Parallel || !is_const_int(f->min, 0) ||
      !is_const_int(f->extent, rows))
    return std::nullopt;
  std::vector<Stmt> out;
  VarMap at;
  at[f->var.get()] = row;
  bool ok = true;
  std::function<void(const Stmt&, const Expr&)> walk = [&](const Stmt& t, const Expr& guard) {
    if (!ok || !t.defined()) return;
    if (const SeqNode* q = t.as<SeqNode>()) {
      for (const Stmt& u : q->stmts) walk(u, guard);
    } else if (const LetStmtNode* l = t.as<LetStmtNode>()) {
      at[l->var.get()] = substitute(l->value, at);
      walk(l->body, guard);
    } else if (const IfThenElseNode* i = t.as<IfThenElseNode>(); i && !i->else_case.defined()) {
      const Expr c = substitute(i->cond, at);
      walk(i->then_case, guard.defined() ? (guard && c) : c);
    } else if (const CheckNode* k = t.as<CheckNode>()) {
      Expr cond = substitute(k->cond, at);
      if (guard.defined()) cond = !guard || cond;
      std::vector<Expr> args;
      for (const Expr& a : k->args) args.push_back(substitute(a, at));
      out.push_back(CheckNode::make(cond, k->code, k->message, args, k->loc));
    } else {
      ok = false;
    }
  };
  walk(f->body, Expr());
  if (!ok || out.empty()) return std::nullopt;
  return out;
}

}  // namespace

Kernel register_a(const Kernel& kernel, const passes::PassContext& context) {
  // (Its budgets are setmaxnreg's: without them the MMA warps' 128
  // accumulators and 64 fragment registers spill and ptxas serializes wgmma.)
  // (on for every kernel by the option, or for one by its config: the
  // kernel attr REGISTER_A, which the tuner searches)
  const auto attr = kernel.attrs.find("REGISTER_A");
  const bool asked = context.cuda.register_a ||
                     (attr != kernel.attrs.end() && attr->second == AttrValue(int64_t{1}));
  if (!asked) return kernel;
  const LaunchPlan& lp = kernel.launch;
  auto skip = [&](const std::string& why) {
    Kernel out = kernel;
    out.launch.notes.push_back("no register A: " + why);
    return out;
  };
  // (With the option on for every kernel, kernels with no such loop say
  // nothing; one whose config asked for it says why not.)
  const bool by_config = attr != kernel.attrs.end() && attr->second == AttrValue(int64_t{1});
  auto quiet = [&](const std::string& why) { return by_config ? skip(why) : kernel; };
  if (!context.cuda.setmaxnreg) return quiet("no register budgets (setmaxnreg is off)");
  const ForNode* loop = top_level_pipelined(kernel.body);
  if (!loop) return quiet("no pipelined main loop at the kernel's top level");
  const auto* plan0 = std::get_if<PipelinePlan>(&loop->plan);
  if (!plan0 || plan0->form != PipelineForm::WarpSpecialized)
    return quiet("the main loop is not warp-specialized");
  // (A 2-block multicast cluster is fine: it shares B's TMA boxes, which
  // keep their multicast below, and the MMA warps release each stage in
  // both blocks, as any consumer of a multicast ring does.)
  if (lp.consumer_teams != 1 || lp.split_k_cluster || lp.stream_k_units > 0)
    return skip("ping-pong teams, a split-K cluster or stream-K");
  const PipelinedBody body = split_pipelined_body(loop);
  if (body.consumer.size() != 1 || body.copies.size() != 2)
    return skip("the loop is not one gemm fed by two copies");
  const GemmNode* g = body.consumer[0].as<GemmNode>();
  if (!g || !whole_tile_gemm(g)) return skip("the loop's consumer is not a whole-tile gemm");
  const auto allocs = allocations(kernel.body);
  const AllocateNode* c_alloc = allocs.count(g->c.buffer.get()) ? allocs.at(g->c.buffer.get())
                                                                 : nullptr;
  const FragmentPlan* fp = c_alloc ? fragment_plan(c_alloc) : nullptr;
  if (!fp || fp->family != MmaFamily::Wgmma || dtype_size(fp->operand) != 2 || fp->block_k != 64 ||
      fp->warps_n != 1 || fp->block_m != 64 * fp->warps_m)
    return skip("the accumulator is not a wgmma tile of 16-bit operands, BLOCK_K 64, 64 rows a "
                "warpgroup and one warpgroup across N");
  const CopyNode* a = nullptr;
  const CopyNode* b = nullptr;
  for (const CopyNode* c : body.copies) {
    if (c->dst.get() == g->a.buffer.get()) a = c;
    if (c->dst.get() == g->b.buffer.get()) b = c;
  }
  if (!a || !b) return skip("the gemm's operands are not the loop's copies");
  const CopyPlan& ap = *a->plan;
  const LoadNode* src = a->value.as<LoadNode>();
  if (ap.mechanism != CopyMechanism::CpAsync || !ap.hoisted || ap.width != 16 ||
      ap.iteration_mask.defined() || ap.step != 64 || !src || ap.hoisted_indices.size() != 2 ||
      a->vars.size() != 2)
    return skip("A's copy is not a hoisted 16-byte cp.async of one k-tile an iteration with no "
                "per-iteration mask");
  // (the copy's column var at the loop's first k-tile: the hoisted column
  // index is the var itself, the row's elements contiguous)
  if (ap.hoisted_indices[1].as<VarNode>() != a->vars[1].get() ||
      (!src->buffer->strides.empty() && !is_const_int(src->buffer->strides.back(), 1)))
    return skip("A's hoisted column is not its copy's column var over contiguous elements");
  const CopyPlan& bp = *b->plan;
  if (bp.mechanism != CopyMechanism::Tma || bp.row_gather || bp.tensor_map < 0)
    return skip("B's copy is not an affine TMA copy");
  const TensorMapPlan& map = lp.tensor_maps.at(bp.tensor_map);
  if (map.dims.size() != 2 || map.box != std::vector<int>{64, 64} || map.swizzle_bytes != 128 ||
      map.elem_bytes != 2 || map.dims[1] % 64 != 0 || copies_of_map(kernel.body, bp.tensor_map) != 1)
    return skip("B's tensor map is not a 2-D map of 64x64 boxes (128-byte swizzle) of its own "
                "over K a multiple of 64");
  const int64_t* trip = as_const_int(loop->extent);
  if (!trip || *trip <= 0 || *trip % kRegisterASlots != 0 || !is_const_int(loop->min, 0))
    return skip(fmt::format("the main loop's trip count is not a constant multiple of {}",
                            kRegisterASlots));

  // The permutation is relative to each box's first row: every box's K
  // coordinate must be a multiple of 32 (the 5-D view's last dim), which a
  // slice of B's rows at another offset is not (w[16:528]: found in review).
  {
    VarMap lets;
    for (const auto& [v, e] : body.lets) lets[v.get()] = substitute(e, lets);
    for (const TmaBox& box : bp.boxes) {
      if (box.coords.size() != 2) return skip("B's boxes are not 2-D");
      const analysis::ModulusRemainder mr =
          analysis::modulus_remainder(passes::simplify(substitute(box.coords[1], lets)));
      const bool aligned = mr.modulus == 0 ? mr.remainder % 32 == 0
                                           : mr.modulus % 32 == 0 && mr.remainder % 32 == 0;
      if (!aligned)
        return skip("B's K coordinate is not proved a multiple of 32 (a slice of its rows at "
                    "another offset)");
    }
  }

  // Forward A's hoisted addresses to global memory.
  Writers writers;
  writers.visit_stmt(kernel.body);
  const Prefix prefix = prefix_of(kernel.body, loop);
  std::unordered_map<const BufferNode*, const CopyNode*> staged;
  for (const Stmt& s : prefix.stmts) {
    const CopyNode* c = s.as<CopyNode>();
    if (c && c->dst.scope() == MemScope::Shared && identity_copy(c) && writers.of(c->dst.get()) == 1)
      staged[c->dst.get()] = c;
  }
  ForwardStaged f(staged);
  CopyPlan new_a = ap;
  Expr new_a_value;  // A's copy's value with the staged reads forwarded
  for (Expr& e : new_a.hoisted_indices) e = passes::simplify(f.forward(e));
  new_a.hoisted_mask = f.forward(new_a.hoisted_mask);
  if (new_a.hoisted_mask.defined()) new_a.hoisted_mask = passes::simplify(new_a.hoisted_mask);
  bool pure = f.ok;
  for (const Expr& e : new_a.hoisted_indices) pure = pure && reads_only_inputs(e, writers);
  pure = pure && reads_only_inputs(new_a.hoisted_mask, writers);
  if (!pure)
    return skip("A's row addresses read shared memory that no copy before the loop stages from "
                "the kernel's inputs");
  new_a.mechanism = CopyMechanism::Fragment;
  new_a.cache_all = false;
  new_a.cache_by_repeats = false;
  new_a.no_allocate = context.cuda.fragment_no_allocate;
  new_a.word_loads = context.cuda.fragment_word_loads;
  // (the L2 prefetch size: every kernel's by the option, or one's by its
  // config's kernel attr FRAGMENT_L2_PREFETCH, which the tuner searches)
  const auto l2p = kernel.attrs.find("FRAGMENT_L2_PREFETCH");
  if (context.cuda.fragment_l2_prefetch ||
      (l2p != kernel.attrs.end() && l2p->second == AttrValue(int64_t{256})))
    new_a.l2_prefetch = 256;
  new_a.reason = fmt::format(
      "the MMA warps load their wgmma A fragments (two rows, two 16-byte chunks each a k-tile, "
      "{} k-tiles ahead) by {}: A never enters shared memory (register_a; was: {})",
      kRegisterAAhead,
      new_a.word_loads ? "32-bit ld.global, each word straight into its register of wgmma's "
                         "order, a masked row reading a zero row"
                       : "ld.global.nc",
      ap.reason);

  // B's rows in the fragments' K order.
  CopyPlan new_b = bp;
  for (TmaBox& box : new_b.boxes) {
    const Expr k = box.coords[1];
    box.coords = {box.coords[0], make_int(k.dtype(), 0), make_int(k.dtype(), 0),
                  make_int(k.dtype(), 0), passes::simplify(k / 32)};
  }
  new_b.reason += "; K permuted inside each 64-row k-tile by a 5-D box (register_a)";
  Kernel out = kernel;
  TensorMapPlan& m = out.launch.tensor_maps[bp.tensor_map];
  const int64_t row = map.strides.at(0);
  m.dims = {map.dims[0], 2, 4, 4, map.dims[1] / 32};
  m.strides = {row, 8 * row, 2 * row, 32 * row};
  m.box = {64, 2, 4, 4, 2};

  // The prologue's index checks of A's rows, absorbed into the fragment
  // copy (CopyPlan::row_checks: each MMA thread checks its rows where it
  // computes their addresses), where they read only the kernel's inputs
  // once forwarded.
  std::unordered_set<const StmtNode*> absorbed;
  const int64_t* rows = as_const_int(a->extents[0]);
  for (const Stmt& s : prefix.stmts) {
    if (!rows) break;
    std::optional<std::vector<Stmt>> checks = row_checks_of(s, *rows, a->vars[0]);
    if (!checks) continue;
    std::vector<Stmt> fwd;
    bool inputs = true;
    for (const Stmt& k : *checks) {
      const CheckNode* c = k.as<CheckNode>();
      ForwardStaged cf(staged);
      const Expr cond = passes::simplify(cf.forward(c->cond));
      std::vector<Expr> args;
      for (const Expr& e : c->args) args.push_back(passes::simplify(cf.forward(e)));
      inputs = inputs && cf.ok && reads_only_inputs(cond, writers);
      for (const Expr& e : args) inputs = inputs && reads_only_inputs(e, writers);
      fwd.push_back(CheckNode::make(cond, c->code, c->message, args, c->loc));
    }
    if (!inputs) continue;
    absorbed.insert(s.get());
    for (Stmt& k : fwd) new_a.row_checks.push_back(std::move(k));
  }
  // The staged buffers nothing reads any more once A's copy and the
  // absorbed checks read global memory (their staging copies and
  // allocations go; an index prologue then leaves the producer).
  std::unordered_set<const BufferNode*> dead;
  {
    struct Reads : IRVisitor {
      std::unordered_map<const BufferNode*, std::unordered_set<const BufferNode*>> by;
      const std::unordered_set<const StmtNode*>* skip = nullptr;
      const CopyNode* a = nullptr;
      const BufferNode* into = nullptr;  // the staging copy being visited, or null
      using IRVisitor::visit;
      void visit(const LoadNode* op) override {
        by[op->buffer.get()].insert(into);
        IRVisitor::visit(op);
      }
      void visit(const CopyNode* op) override {
        if (op == a) return;  // (forwarded below)
        const BufferNode* saved = into;
        into = op->dst.get();
        IRVisitor::visit(op);
        into = saved;
      }
      void visit(const ForNode* op) override {
        if (!skip->count(op)) IRVisitor::visit(op);
      }
    } reads;
    reads.skip = &absorbed;
    reads.a = a;
    reads.visit_stmt(kernel.body);
    for (const auto& [buf, c] : staged) dead.insert(buf);
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = dead.begin(); it != dead.end();) {
        bool live = false;
        if (auto r = reads.by.find(*it); r != reads.by.end())
          for (const BufferNode* reader : r->second) live = live || !dead.count(reader);
        if (live) {
          it = dead.erase(it);
          changed = true;
        } else {
          ++it;
        }
      }
    }
  }
  {
    ForwardStaged vf(staged);
    const Expr v = vf.forward(a->value);
    if (!vf.ok) {
      dead.clear();  // (A's copy keeps reading them)
    } else {
      new_a_value = passes::simplify(v);
    }
  }

  PipelinePlan plan = *plan0;
  plan.register_a_ahead = kRegisterAAhead;
  PlanEdits edits;
  edits.loops[loop] = plan;
  edits.copies[a] = new_a;
  edits.copies[b] = new_b;
  out = with_plans(out, edits);
  std::vector<std::string> gone;
  bool prefetched_gone = false;
  for (const auto& [buf, c] : staged)
    if (dead.count(buf)) {
      gone.push_back(buf->name);
      prefetched_gone = prefetched_gone || (c->plan && c->plan->next_tile);
    }
  std::sort(gone.begin(), gone.end());
  if (!absorbed.empty() || !dead.empty()) {
    // (Identities in `out`: with_plans rebuilt the nodes it edited, so the
    // absorbed checks and staging copies are found again by what they are.)
    struct Drop final : IRMutator {
      std::unordered_set<const BufferNode*> dead;
      std::unordered_set<const StmtNode*> absorbed;
      Expr a_value;
      bool shared_written = false;
      using IRMutator::visit;
      Stmt visit(const CopyNode* op) override {
        if (dead.count(op->dst.get())) return SeqNode::make({});
        if (op->plan && op->plan->mechanism == CopyMechanism::Fragment && a_value.defined())
          return CopyNode::make(op->vars, op->extents, op->dst, op->dst_indices, a_value,
                                *op->plan);
        return IRMutator::visit(op);
      }
      Stmt visit(const AllocateNode* op) override {
        if (dead.count(op->buffer.get())) return mutate(op->body);
        return IRMutator::visit(op);
      }
      Stmt visit(const ForNode* op) override {
        // (by identity: with_plans rebuilt only the path to the nodes it
        // edited, not these prologue statements)
        if (absorbed.count(op)) return SeqNode::make({});
        return IRMutator::visit(op);
      }
    } drop;
    drop.dead = dead;
    drop.absorbed = absorbed;
    drop.a_value = new_a_value;
    out.body = drop.mutate(out.body);
  }
  if (prefetched_gone)
    std::erase_if(out.launch.notes,
                  [](const std::string& n) { return n.starts_with("prologue prefetch:"); });
  out.launch.notes.push_back(fmt::format(
      "register A: the MMA warps load {}'s rows into their wgmma A fragments ({} k-tiles ahead, "
      "a ring of {}) and wgmma reads A from registers; {}'s TMA box reads K in the fragments' "
      "order{}{}",
      a->dst.name(), kRegisterAAhead, kRegisterASlots, b->dst.name(),
      absorbed.empty() ? "" : "; each MMA thread checks its rows' indices where it computes their "
                              "addresses (the prologue's checks, absorbed)",
      gone.empty() ? "" : fmt::format("; {} no longer staged in shared memory", fmt::join(gone, ", "))));
  return out;
}

}  // namespace tilefuse::codegen
