#include "codegen/cuda/passes/sync.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
#include <unordered_set>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

namespace {

const PipelinePlan* pipeline_plan(const ForNode* f) {
  return std::get_if<PipelinePlan>(&f->plan);
}
// (A per-warp one is not: its warp buffers lie after every other shared
// byte and each warp orders its own accesses.)
bool staged_epilogue(const ForNode* f) {
  const auto* e = std::get_if<EpiloguePlan>(&f->plan);
  return e && e->form == EpilogueForm::Staged && !e->per_warp;
}
// Whether a statement holds a barrier.
bool contains_barrier(const Stmt& s) {
  struct Find : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const BarrierNode*) override { found = true; }
  } f;
  f.visit_stmt(s);
  return f.found;
}
// A pipelined loop whose first copies are issued before any barrier of its
// own (ring, fragment_pipelined, wgmma_async; in_order opens each
// iteration with one, warp_specialized after its mbarrier initialization).
bool opens_without_barrier(const ForNode* f) {
  const PipelinePlan* p = pipeline_plan(f);
  return p && p->form != PipelineForm::InOrder && p->form != PipelineForm::WarpSpecialized;
}

// The shared buffers a statement or expression touches (loads, stores,
// copies, gemm operands, fills), and whether it touches shared memory the IR
// does not show (a staged epilogue's tile, a pipelined loop's rings).
class SharedAccess : public IRVisitor {
 public:
  std::unordered_set<const BufferNode*> buffers;
  bool hidden = false;
  bool any() const { return hidden || !buffers.empty(); }

 protected:
  using IRVisitor::visit;
  void note(const Buffer& b) {
    if (b.scope() == MemScope::Shared) buffers.insert(b.get());
  }
  void visit(const LoadNode* op) override {
    note(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    note(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const CopyNode* op) override {
    note(op->dst);
    IRVisitor::visit(op);
  }
  void visit(const GemmNode* op) override {
    note(op->a.buffer);
    note(op->b.buffer);
    IRVisitor::visit(op);
  }
  void visit(const FillNode* op) override {
    note(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const ForNode* op) override {
    hidden = hidden || staged_epilogue(op) || op->for_kind == ForKind::Pipelined;
    IRVisitor::visit(op);
  }
};

SharedAccess accesses(const Stmt& s) {
  SharedAccess a;
  a.visit_stmt(s);
  return a;
}

// Inserts the barriers around synchronous copies and before staged
// epilogues, in program order (`touched`: shared buffers earlier code used).
// A synchronous copy in straight-line code leaves its tile `pending`: the
// barrier that makes it visible goes before the first later statement that
// touches a pending tile (none when a warp-specialized loop's opening
// barrier or an explicit one comes first), so independent copies (a
// gather's row indices and their masks) share one barrier. Inside a loop or
// a branch the barrier follows the copy.
class Insert final : public IRMutator {
 public:
  explicit Insert(const Stmt& body) {
    struct Producer : IRVisitor {
      std::unordered_set<const CopyNode*> copies;
      using IRVisitor::visit;
      void visit(const ForNode* op) override {
        if (op->for_kind == ForKind::Pipelined)
          for (const CopyNode* c : split_pipelined_body(op).copies) copies.insert(c);
        IRVisitor::visit(op);
      }
    } p;
    p.visit_stmt(body);
    producer_ = std::move(p.copies);
  }

  Stmt mutate(const Stmt& s) override {
    if (!s.defined() || pending_.empty() || s.as<SeqNode>() || s.as<AllocateNode>())
      return IRMutator::mutate(s);
    if (s.as<BarrierNode>()) {
      pending_.clear();
      return IRMutator::mutate(s);
    }
    if (const ForNode* f = s.as<ForNode>()) {
      const PipelinePlan* p = pipeline_plan(f);
      if (p && p->form == PipelineForm::WarpSpecialized) {
        pending_.clear();  // it opens with a block barrier
        return IRMutator::mutate(s);
      }
    }
    const LetStmtNode* l = s.as<LetStmtNode>();
    const SharedAccess a = accesses(l ? EvaluateNode::make(l->value) : s);
    bool touches = a.hidden;
    for (const BufferNode* b : a.buffers) touches = touches || pending_.count(b);
    if (!touches) return IRMutator::mutate(s);
    pending_.clear();
    return make_seq({BarrierNode::make(), IRMutator::mutate(s)});
  }

 protected:
  using IRMutator::visit;
  Stmt visit(const SeqNode* op) override {
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& s : op->stmts) {
      Stmt t = mutate(s);
      changed |= !t.same_as(s);
      out.push_back(t);
    }
    return changed ? make_seq(std::move(out)) : Stmt(op);
  }
  Stmt visit(const LetStmtNode* op) override {
    touch(accesses(EvaluateNode::make(op->value)));
    return IRMutator::visit(op);
  }
  Stmt visit(const ForNode* op) override {
    if (staged_epilogue(op)) {
      touch(accesses(Stmt(op)));
      staged_ = true;
      return make_seq({BarrierNode::make(), Stmt(op)});
    }
    if (op->for_kind == ForKind::Pipelined) {
      // The loop's own copies are its form's; deeper statements are not.
      // Its first copies write its tiles before any barrier of a form that
      // opens without one: a barrier before it when earlier code touched
      // them, a staged epilogue reused the shared memory (from offset 0,
      // over any tile) or a loop runs it again (a K loop in a tile loop).
      bool before = false;
      if (opens_without_barrier(op)) {
        before = depth_ > 0 || staged_;
        for (const CopyNode* c : split_pipelined_body(op).copies)
          before = before || touched_.count(c->dst.get()) > 0;
      }
      touch(accesses(Stmt(op)));
      Stmt s = IRMutator::visit(op);
      return before ? make_seq({BarrierNode::make(), s}) : s;
    }
    const bool counted = op->for_kind == ForKind::Serial || op->for_kind == ForKind::Unrolled;
    depth_ += counted;
    ++nested_;
    Stmt s = IRMutator::visit(op);
    --nested_;
    depth_ -= counted;
    return s;
  }
  Stmt visit(const IfThenElseNode* op) override {
    ++nested_;
    Stmt s = IRMutator::visit(op);
    --nested_;
    return s;
  }
  Stmt visit(const CopyNode* op) override {
    if (producer_.count(op) || op->dst.scope() != MemScope::Shared) {
      touch(accesses(Stmt(op)));
      return op;
    }
    const bool before = depth_ > 0 || touched_.count(op->dst.get());
    touch(accesses(Stmt(op)));
    std::vector<Stmt> seq;
    if (before) seq.push_back(BarrierNode::make());
    seq.push_back(Stmt(op));
    if (nested_ > 0)
      seq.push_back(BarrierNode::make());
    else
      pending_.insert(op->dst.get());
    return make_seq(std::move(seq));
  }
#define TF_TOUCH(Kind)                     \
  Stmt visit(const Kind##Node* op) override { \
    touch(accesses(Stmt(op)));             \
    return op;                             \
  }
  TF_TOUCH(Store)
  TF_TOUCH(Gemm)
  TF_TOUCH(Fill)
  TF_TOUCH(Check)
  TF_TOUCH(Evaluate)
#undef TF_TOUCH

 private:
  void touch(const SharedAccess& a) { touched_.insert(a.buffers.begin(), a.buffers.end()); }
  std::unordered_set<const CopyNode*> producer_;
  std::unordered_set<const BufferNode*> touched_;
  std::unordered_set<const BufferNode*> pending_;  // written by sync copies, no barrier since
  bool staged_ = false;  // a staged epilogue ran (its tile is not an IR buffer)
  int depth_ = 0;   // serial / unrolled loops around
  int nested_ = 0;  // any loop or branch around
};

// Finds the redundant barriers and each kept barrier's kind, walking
// straight-line code in program order.
class Dedupe {
 public:
  explicit Dedupe(bool async) : async_(async) {}
  std::unordered_set<const BarrierNode*> remove;
  std::unordered_map<const BarrierNode*, BarrierKind> kinds;

  void walk(const Stmt& s) {
    if (!s.defined()) return;
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) walk(t);
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      if (accesses(EvaluateNode::make(l->value)).any()) unsync();
      walk(l->body);
    } else if (const AllocateNode* a = s.as<AllocateNode>()) {
      walk(a->body);
    } else if (const BarrierNode* b = s.as<BarrierNode>()) {
      if (synced_) {
        remove.insert(b);
        return;
      }
      kinds[b] = after_ws_ ? BarrierKind::Consumers
                 : async_  ? BarrierKind::BlockAsync
                           : BarrierKind::Block;
      synced_ = true;
      pending_ = b;
    } else if (const ForNode* f = s.as<ForNode>(); f && pipeline_plan(f)) {
      if (pipeline_plan(f)->form == PipelineForm::WarpSpecialized) {
        // The loop opens with a barrier of its own (after its mbarriers'
        // set-up), unless producer_start moved that set-up to the entry.
        if (pending_ && !pipeline_plan(f)->setup_at_entry) remove.insert(pending_);
        after_ws_ = true;
      }
      nested(f->body);
      // Every form ends with a barrier (a warp-specialized loop unless its
      // plan says none is needed).
      synced_ = pipeline_plan(f)->barrier_after;
      pending_ = nullptr;
    } else if (const ForNode* f = s.as<ForNode>()) {
      nested(f->body);
      if (accesses(s).any()) unsync();
    } else if (const LastArrivalNode* la = s.as<LastArrivalNode>()) {
      // tf::last_arrival meets the running threads in every block before
      // the last one runs the body (split-K's fix-up): the body starts
      // synced, and so does what follows unless the body touched shared
      // memory.
      synced_ = true;
      pending_ = nullptr;
      walk(la->body);
      synced_ = !accesses(la->body).any();
      pending_ = nullptr;
    } else if (const IfThenElseNode* i = s.as<IfThenElseNode>()) {
      nested(i->then_case);
      nested(i->else_case);
      if (accesses(s).any()) unsync();
    } else if (accesses(s).any()) {
      unsync();
    }
  }

 private:
  void unsync() {
    synced_ = false;
    pending_ = nullptr;
  }
  // A body entered again or conditionally: on its own.
  void nested(const Stmt& s) {
    const bool synced = synced_;
    const BarrierNode* pending = pending_;
    synced_ = false;
    pending_ = nullptr;
    walk(s);
    synced_ = synced;
    pending_ = pending;
  }
  bool async_;
  bool synced_ = false, after_ws_ = false;
  const BarrierNode* pending_ = nullptr;
};

class Apply final : public IRMutator {
 public:
  explicit Apply(const Dedupe& d) : d_(d) {}

 protected:
  using IRMutator::visit;
  Stmt visit(const BarrierNode* op) override {
    if (d_.remove.count(op)) return SeqNode::make({});
    auto it = d_.kinds.find(op);
    const BarrierKind k = it == d_.kinds.end() ? op->barrier_kind : it->second;
    return k == op->barrier_kind ? Stmt(op) : BarrierNode::make(k);
  }

 private:
  const Dedupe& d_;
};

}  // namespace

// The warp-specialized loops after which nothing the MMA warpgroups run
// touches shared memory: they need no barrier after them
// (PipelinePlan::barrier_after). Such a loop is at the kernel's top level
// (verifier), so in a kernel that is not persistent what follows it in
// program order is all that runs after it. In a persistent one the MMA
// warpgroups run their statements before it too (the next tile's), so
// none of those may touch shared memory or meet at a barrier (the
// producer's, persistent_roles, are the producer's own).
std::unordered_set<const ForNode*> loops_without_barrier_after(const Kernel& kernel) {
  if (kernel.launch.persistent) {
    std::string why;
    const std::optional<std::vector<RoleItem>> roles = persistent_roles(kernel, &why);
    if (!roles) return {};
    const ForNode* loop = nullptr;
    for (const RoleItem& r : *roles) {
      if (r.kind == RoleItem::Kind::kLoop) loop = r.stmt.as<ForNode>();
      if (r.kind == RoleItem::Kind::kConsumer &&
          (accesses(r.stmt).any() || contains_barrier(r.stmt)))
        return {};
    }
    const PipelinePlan* p = loop ? pipeline_plan(loop) : nullptr;
    if (!p || p->form != PipelineForm::WarpSpecialized) return {};
    return {loop};
  }
  struct Walk {
    std::vector<const ForNode*> open;  // loops after which nothing touched shared memory yet
    void leaf(const Stmt& s) {
      if (accesses(s).any() || s.as<BarrierNode>()) open.clear();
    }
    void walk(const Stmt& s) {
      if (!s.defined()) return;
      if (const SeqNode* q = s.as<SeqNode>()) {
        for (const Stmt& t : q->stmts) walk(t);
      } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
        leaf(EvaluateNode::make(l->value));
        walk(l->body);
      } else if (const AllocateNode* a = s.as<AllocateNode>()) {
        walk(a->body);
      } else if (const ForNode* f = s.as<ForNode>();
                 f && pipeline_plan(f) &&
                 pipeline_plan(f)->form == PipelineForm::WarpSpecialized) {
        leaf(s);
        open.push_back(f);
      } else {
        leaf(s);
      }
    }
  } w;
  w.walk(kernel.body);
  return {w.open.begin(), w.open.end()};
}

// The warp-specialized loops whose producer is one thread
// (PipelinePlan::single_issuer): every copy of the ring is an affine TMA
// copy (thread 0 announces the stage's bytes and issues its boxes) and the
// producer runs nothing but the loop. In a kernel that is not persistent
// the producer role is the loop alone; in a persistent one it also runs the
// statements persistent_roles gives it (an index prologue), which take every
// producer thread.
std::unordered_set<const ForNode*> single_issuer_loops(const Kernel& kernel) {
  // (Not a register_a loop: there ptxas spilled 204-268 bytes with the
  // other producer threads gone at the top, none with them looping beside
  // thread 0: gather_k512_bf16 at 128x256x64/4/8/persistent, session 25.)
  std::unordered_set<const ForNode*> out = tma_only_producer_loops(kernel);
  std::erase_if(out, [](const ForNode* f) { return pipeline_plan(f)->register_a_ahead > 0; });
  return out;
}

std::unordered_set<const ForNode*> tma_only_producer_loops(const Kernel& kernel) {
  std::vector<const ForNode*> loops = pipelined_loops(kernel.body, /*warp_specialized=*/true);
  if (kernel.launch.persistent) {
    const std::optional<std::vector<RoleItem>> roles = persistent_roles(kernel, nullptr);
    if (!roles) return {};
    for (const RoleItem& r : *roles)
      if (r.kind == RoleItem::Kind::kProducer) return {};
  }
  std::unordered_set<const ForNode*> out;
  for (const ForNode* f : loops) {
    const PipelinedBody body = split_pipelined_body(f);
    bool tma_only = body.regular && !body.copies.empty();
    // (A fragment copy is the MMA warps' own: register_a.)
    for (const CopyNode* c : body.copies)
      tma_only = tma_only && c->plan &&
                 (c->plan->mechanism == CopyMechanism::Fragment ||
                  (c->plan->mechanism == CopyMechanism::Tma && !c->plan->row_gather));
    if (tma_only) out.insert(f);
  }
  return out;
}

std::unordered_set<const ForNode*> async_proxy_ring_loops(const Kernel& kernel) {
  std::unordered_set<const ForNode*> out;
  for (const ForNode* f : pipelined_loops(kernel.body, /*warp_specialized=*/true)) {
    const PipelinedBody body = split_pipelined_body(f);
    bool async_only = !body.copies.empty();
    for (const CopyNode* c : body.copies)
      async_only = async_only && c->plan &&
                   (c->plan->mechanism == CopyMechanism::Tma ||
                    c->plan->mechanism == CopyMechanism::Fragment);
    if (async_only) out.insert(f);
  }
  return out;
}

Kernel place_barriers(const Kernel& kernel, const passes::PassContext&) {
  TF_CHECK(kernel.launch.defined, "sync runs after lower_gemm");
  Kernel out = kernel;
  Insert insert(kernel.body);
  out.body = insert.mutate(kernel.body);
  // (Before the dedupe, which takes a loop without one as unsynced after it.)
  PlanEdits edits;
  auto edit = [&](const ForNode* f) -> PipelinePlan& {
    auto [it, fresh] = edits.loops.try_emplace(f, *pipeline_plan(f));
    (void)fresh;
    return std::get<PipelinePlan>(it->second);
  };
  for (const ForNode* f : loops_without_barrier_after(out)) edit(f).barrier_after = false;
  for (const ForNode* f : single_issuer_loops(out)) edit(f).single_issuer = true;
  for (const ForNode* f : async_proxy_ring_loops(out)) edit(f).consumer_fence = false;
  if (!edits.loops.empty()) out = with_plans(out, edits);
  Dedupe dedupe(kernel.launch.async_barriers);
  dedupe.walk(out.body);
  Apply apply(dedupe);
  out.body = apply.mutate(out.body);
  return out;
}

}  // namespace tilefuse::codegen
