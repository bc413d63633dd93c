#include "codegen/cuda/passes/layout.h"

#include <unordered_map>
#include <unordered_set>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

namespace {

// The ring depth of every shared buffer a pipelined loop's copies fill (at
// any depth inside it), and the allocations in program order.
class Scan : public IRVisitor {
 public:
  std::unordered_map<const BufferNode*, int> stages;
  std::vector<const AllocateNode*> shared;
  std::vector<const ForNode*> ws_loops;
  std::unordered_set<const BufferNode*> swizzled_tma;
  // Tiles a fragment copy fills (register_a) and tiles anything else writes.
  std::unordered_set<const BufferNode*> fragment_filled, other_writes;
  void visit(const StoreNode* op) override {
    other_writes.insert(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const FillNode* op) override {
    other_writes.insert(op->buffer.get());
    IRVisitor::visit(op);
  }

 protected:
  using IRVisitor::visit;
  void visit(const AllocateNode* op) override {
    if (op->buffer.scope() == MemScope::Shared) shared.push_back(op);
    IRVisitor::visit(op);
  }
  void visit(const CopyNode* op) override {
    if (stages_ > 1) stages[op->dst.get()] = stages_;
    (op->plan && op->plan->mechanism == CopyMechanism::Fragment ? fragment_filled : other_writes)
        .insert(op->dst.get());
    if (op->plan && op->plan->mechanism == CopyMechanism::Tma)
      swizzled_tma.insert(op->dst.get());
    IRVisitor::visit(op);
  }
  void visit(const ForNode* op) override {
    const int saved = stages_;
    if (const auto* p = std::get_if<PipelinePlan>(&op->plan)) {
      stages_ = p->stages;
      if (p->form == PipelineForm::WarpSpecialized) ws_loops.push_back(op);
    } else {
      TF_CHECK(op->for_kind != ForKind::Pipelined,
               "layout: pipelined loop " + op->var.name() + " has no PipelinePlan");
    }
    IRVisitor::visit(op);
    stages_ = saved;
  }

 private:
  int stages_ = 1;
};

}  // namespace

Kernel layout(const Kernel& kernel, const passes::PassContext& context) {
  TF_CHECK(kernel.launch.defined, "layout runs after lower_gemm");
  const auto allocs = allocations(kernel.body);
  std::unordered_set<const BufferNode*> wgmma_operands;
  for (const GemmNode* g : gemms(kernel.body)) {
    auto it = allocs.find(g->c.buffer.get());
    const FragmentPlan* f = it == allocs.end() ? nullptr : fragment_plan(it->second);
    if (f && f->family == MmaFamily::Wgmma) {
      wgmma_operands.insert(g->a.buffer.get());
      wgmma_operands.insert(g->b.buffer.get());
    }
  }
  Scan scan;
  scan.visit_stmt(kernel.body);
  PlanEdits edits;
  int64_t offset = 0;
  for (const AllocateNode* al : scan.shared) {
    const Buffer& b = al->buffer;
    SharedPlan p;
    if (const SharedPlan* given = shared_plan(al)) p.layout = given->layout;
    if (auto st = scan.stages.find(b.get()); st != scan.stages.end()) p.stages = st->second;
    if (scan.fragment_filled.count(b.get()) && !scan.other_writes.count(b.get())) {
      // (only a fragment copy fills it: the MMA warps hold it in registers
      // and it never enters shared memory; register_a. Its offset keeps a
      // wgmma operand's alignment, which the verifier checks.)
      p.stages = 0;
      p.offset = (offset + 1023) / 1024 * 1024;
      p.bytes = 0;
      edits.buffers[b.get()] = p;
      continue;
    }
    const bool swizzled = p.layout == SharedLayout::Swizzled || p.layout == SharedLayout::MnSwizzled;
    const bool wgmma_operand = wgmma_operands.count(b.get()) > 0;
    const int64_t tile_bytes = const_numel(b) * dtype_size(b.dtype());
    const int64_t align =
        wgmma_operand || (swizzled && scan.swizzled_tma.count(b.get())) ? 1024 : 128;
    TF_CHECK(align != 1024 || tile_bytes % 1024 == 0,
             "layout: a wgmma or swizzled TMA tile " + b.name() +
                 " that is not a multiple of 1024 bytes");
    offset = (offset + align - 1) / align * align;
    p.offset = offset;
    p.bytes = tile_bytes * p.stages;
    offset += (p.bytes + 127) / 128 * 128;
    edits.buffers[b.get()] = p;
  }
  for (const ForNode* loop : scan.ws_loops) {
    PipelinePlan p = std::get<PipelinePlan>(loop->plan);
    offset = (offset + 7) / 8 * 8;
    p.mbarrier_offset = offset;
    // `full` and `empty` a stage; consumer teams take turns through an
    // `order` pair after them.
    offset += 2 * 8 * int64_t{p.stages} + (kernel.launch.consumer_teams > 1 ? 2 * 8 : 0);
    edits.loops[loop] = p;
  }
  Kernel out = with_plans(kernel, edits);
  // The block timeline's slot (a measuring aid) right after the mbarriers,
  // before the regions later passes place after every other byte at an
  // alignment (the epilogue's, 128 or 1024 bytes): its bytes then mostly sit
  // in that alignment's padding, and a kernel whose regions fill the
  // device's shared memory to the byte still fits with it.
  if (context.cuda.block_timeline) {
    offset = (offset + 7) / 8 * 8;
    out.launch.timeline_slot = offset;
    offset += LaunchPlan::kTimelineSlotBytes;
  }
  out.launch.dynamic_shared_bytes = offset;
  out.launch.shared_align = wgmma_operands.empty() ? 128 : 1024;
  return out;
}

}  // namespace tilefuse::codegen
