// Shapes of a kernel the CUDA backend passes and the printer agree on: how a
// pipelined loop's body splits into a producer and a consumer, which
// gemm it runs, where the buffers are declared. Facts about the IR, no
// decisions.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tir/functor.h"
#include "tir/ir.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

// The buffers an expression or statement reads (loads) and writes (stores,
// copies), after visit_expr / visit_stmt.
struct BufferUse : tir::IRVisitor {
  std::unordered_set<const tir::BufferNode*> reads, writes;
  using tir::IRVisitor::visit;
  void visit(const tir::LoadNode* op) override {
    reads.insert(op->buffer.get());
    tir::IRVisitor::visit(op);
  }
  void visit(const tir::StoreNode* op) override {
    writes.insert(op->buffer.get());
    tir::IRVisitor::visit(op);
  }
  void visit(const tir::CopyNode* op) override {
    writes.insert(op->dst.get());
    tir::IRVisitor::visit(op);
  }
};

// The top-level statements before a pipelined loop (through sequences,
// lets and allocations), in program order, the lets in scope at the loop
// (each inlined into the next), and whether the walk reached it.
struct Prefix {
  std::vector<tir::Stmt> stmts;
  tir::VarMap lets;
  bool reached = false;
};
Prefix prefix_of(const tir::Stmt& body, const tir::ForNode* loop);

// Is `c` `dst[v0, v1, ...] = value` over its own vars in order?
bool identity_copy(const tir::CopyNode* c);

// The statements that write each buffer (stores, copies and fills), after
// visit_stmt.
struct Writers : tir::IRVisitor {
  std::unordered_map<const tir::BufferNode*, int> count;
  using tir::IRVisitor::visit;
  void visit(const tir::StoreNode* op) override {
    ++count[op->buffer.get()];
    tir::IRVisitor::visit(op);
  }
  void visit(const tir::CopyNode* op) override {
    ++count[op->dst.get()];
    tir::IRVisitor::visit(op);
  }
  void visit(const tir::FillNode* op) override {
    ++count[op->buffer.get()];
    tir::IRVisitor::visit(op);
  }
  int of(const tir::BufferNode* b) const {
    auto it = count.find(b);
    return it == count.end() ? 0 : it->second;
  }
};

// Loads of staged shared buffers (each written once, before the loop, by
// the identity copy it maps to) replaced by their staged values at the
// load's indices, transitively (a staged value may read another staged
// buffer); `ok` turns false at a masked or partial read of one.
class ForwardStaged : public tir::IRMutator {
 public:
  explicit ForwardStaged(
      const std::unordered_map<const tir::BufferNode*, const tir::CopyNode*>& staged)
      : staged_(staged) {}
  tir::Expr forward(const tir::Expr& e) { return e.defined() ? mutate(e) : e; }
  bool ok = true;

 protected:
  using tir::IRMutator::visit;
  tir::Expr visit(const tir::LoadNode* op) override {
    auto it = staged_.find(op->buffer.get());
    if (it == staged_.end()) return tir::IRMutator::visit(op);
    const tir::CopyNode* c = it->second;
    if (op->indices.size() != c->vars.size() || op->mask.defined()) {
      ok = false;
      return tir::IRMutator::visit(op);
    }
    tir::VarMap at;
    for (size_t d = 0; d < c->vars.size(); ++d) at[c->vars[d].get()] = mutate(op->indices[d]);
    return mutate(substitute(c->value, at));
  }
  const std::unordered_map<const tir::BufferNode*, const tir::CopyNode*>& staged_;
};

// A pipelined loop's body: a chain of lets, then the copies into shared
// tiles (the producer), then the rest (the consumer). `regular` is false
// when the body has another shape (a let or copy after a consumer
// statement, a copy into non-shared memory): the loop then runs in order.
struct PipelinedBody {
  std::vector<std::pair<tir::Var, tir::Expr>> lets;
  std::vector<const tir::CopyNode*> copies;
  std::vector<tir::Stmt> consumer;
  bool regular = true;
};
PipelinedBody split_pipelined_body(const tir::ForNode* loop);

// The kernel's one pipelined loop when the body reaches it through
// sequences, lets and allocations only (it runs once per block, in every
// thread); null when there is none, more than one, or it sits inside
// another loop or a branch (*nested is then set when not null).
const tir::ForNode* top_level_pipelined(const tir::Stmt& body, bool* nested = nullptr);

// A gemm of two whole shared tiles into a whole accumulator, untransposed:
// it has no index expression, so it can be split into k16 steps.
bool whole_tile_gemm(const tir::GemmNode* g);

// Every Allocate of the kernel, by buffer (tir/structural.h).
using tir::allocations;

// Every pipelined loop of the kernel, in program order; with
// `warp_specialized`, only those whose plan is warp_specialized.
std::vector<const tir::ForNode*> pipelined_loops(const tir::Stmt& body,
                                                 bool warp_specialized = false);

// Does a warp-specialized loop of the kernel load its A operand into wgmma
// fragments (PipelinePlan::register_a_ahead > 0; passes/register_a.h)?
bool has_register_a_loop(const tir::Stmt& body);
// Does one issue its last k-tiles N half by N half (PipelinePlan::split_tail
// > 0; passes/split_tail.h)?
bool has_split_tail_loop(const tir::Stmt& body);

// Every Gemm of the kernel, in program order.
std::vector<const tir::GemmNode*> gemms(const tir::Stmt& body);

// The gemm of a pipelined loop that wgmma runs asynchronously to the
// copies: the loop's whole consumer is one whole-tile gemm whose A and B
// are both filled by the loop's own copies and whose accumulator is a
// wgmma tile (FragmentPlan on its Allocate); null otherwise (and for a
// loop that is not regular, has no copies or fewer than 2 stages).
const tir::GemmNode* wgmma_async_gemm(
    const tir::ForNode* loop,
    const std::unordered_map<const tir::BufferNode*, const tir::AllocateNode*>& allocs);

// A warp-specialized kernel's top-level statements by role, for a
// persistent tile loop (passes/persistent.h): in program order, lets (both
// roles compute them, per tile), allocations, the statements before the
// warp-specialized loop that only feed its copies (the producer runs them:
// a gather's index checks and row-index copies), the loop, and the rest
// (the MMA warpgroups: the accumulator's fill, the epilogue).
struct RoleItem {
  enum class Kind { kLet, kAlloc, kProducer, kConsumer, kLoop };
  Kind kind;
  tir::Stmt stmt;                 // kProducer, kConsumer, kLoop
  tir::Var let_var;               // kLet
  tir::Expr let_value;            // kLet
  const tir::AllocateNode* alloc = nullptr;  // kAlloc
};
// The items, or nullopt with *why when the kernel does not split so (no
// top-level warp-specialized loop; a statement before it that the MMA
// warpgroups need or that writes what the epilogue reads; a local buffer).
std::optional<std::vector<RoleItem>> persistent_roles(const tir::Kernel& k, std::string* why);

// The plan part of an allocation (nullptr when it has none of that kind).
const tir::SharedPlan* shared_plan(const tir::AllocateNode* a);
const tir::FragmentPlan* fragment_plan(const tir::AllocateNode* a);

// The first fragment buffer a statement loads or stores (the accumulator
// an epilogue nest reads), or null.
const tir::BufferNode* fragment_used(const tir::Stmt& s);

// Plan parts to set, by the node they go on (nodes of the kernel given to
// with_plans, by identity).
struct PlanEdits {
  std::unordered_map<const tir::BufferNode*, tir::BufferPlan> buffers;  // on their Allocate
  std::unordered_map<const tir::ForNode*, tir::LoopPlan> loops;
  std::unordered_map<const tir::CopyNode*, tir::CopyPlan> copies;
  bool empty() const { return buffers.empty() && loops.empty() && copies.empty(); }
};
// The kernel with the edits applied (other plan parts unchanged).
tir::Kernel with_plans(const tir::Kernel& k, const PlanEdits& edits);

// The product of constant extents of a buffer (InternalError naming `what`
// for a non-constant one).
int64_t const_numel(const tir::Buffer& b);
int64_t const_of(const tir::Expr& e, const char* what);

}  // namespace tilefuse::codegen
