#include "codegen/cuda/passes/split_k_cluster.h"

#include <unordered_set>

#include <fmt/format.h>

#include "codegen/cuda/structure.h"
#include "core/dtype.h"
#include "core/error.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

namespace {

// Every access of one buffer, the if_last_arrival nodes and the epilogue
// nests, in program order.
struct Scan : IRVisitor {
  const BufferNode* workspace = nullptr;
  std::vector<const StoreNode*> stores;
  std::vector<const LoadNode*> loads;
  std::vector<const LastArrivalNode*> arrivals;
  using IRVisitor::visit;
  void visit(const StoreNode* op) override {
    if (op->buffer.get() == workspace) stores.push_back(op);
    IRVisitor::visit(op);
  }
  void visit(const LoadNode* op) override {
    if (op->buffer.get() == workspace) loads.push_back(op);
    IRVisitor::visit(op);
  }
  void visit(const LastArrivalNode* op) override {
    arrivals.push_back(op);
    IRVisitor::visit(op);
  }
};

// The epilogue nests (loops with an EpiloguePlan) of a statement.
std::vector<const ForNode*> epilogue_nests(const Stmt& s) {
  struct Nests : IRVisitor {
    std::vector<const ForNode*> found;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      if (std::holds_alternative<EpiloguePlan>(op->plan)) found.push_back(op);
      IRVisitor::visit(op);
    }
  } n;
  n.visit_stmt(s);
  return n.found;
}

const VarNode* grid_var_of(const Expr& e) {
  Expr v = e;
  while (const CastNode* c = v.as<CastNode>()) v = c->value;
  return v.as<VarNode>();
}

// Why the kernel cannot reduce in a cluster ("" when it can); *dim is then
// the split's grid dim and *partial_bytes the partial tile's size.
std::string why_not(const Kernel& k, int64_t split, size_t* dim, int64_t* partial_bytes) {
  const LaunchPlan& launch = k.launch;
  if (split > LaunchPlan::kMaxClusterBlocks)
    return fmt::format("{} splits (a portable cluster holds at most {} blocks)", split,
                       LaunchPlan::kMaxClusterBlocks);
  if (launch.persistent) return "persistent";
  if (launch.cluster_size > 1) return "already a cluster of multicast copies";
  if (launch.workspace_fragment_order < 0)
    return "the workspace is not in the accumulators' fragment order";
  const Buffer& ws = k.params[static_cast<size_t>(launch.workspace_fragment_order)].buffer;
  Scan scan;
  scan.workspace = ws.get();
  scan.visit_stmt(k.body);
  if (scan.stores.size() != 1 || scan.arrivals.size() != 1)
    return "not one workspace store and one if_last_arrival";
  const StoreNode* store = scan.stores[0];
  const size_t r = store->indices.size();
  if (r != 4) return "the workspace is not [split, tile, row, column]";
  // The split: a grid var of extent `split`.
  const VarNode* s = grid_var_of(store->indices[0]);
  *dim = k.grid.size();
  for (size_t d = 0; d < k.grid.size(); ++d) {
    const int64_t* e = as_const_int(k.grid[d].extent);
    if (s && k.grid[d].var.get() == s && e && *e == split) *dim = d;
  }
  if (*dim == k.grid.size()) return "the workspace's split index is not a grid dim of the split";
  // Each load reads one split's slice of this block's tile.
  for (const LoadNode* l : scan.loads) {
    const int64_t* at = as_const_int(l->indices[0]);
    if (l->indices.size() != r || !at || *at < 0 || *at >= split ||
        !structural_equal(l->indices[1], store->indices[1]))
      return "a workspace load that does not read one split's slice of the block's tile";
  }
  // The body's epilogues meet no block barrier: only some warps run it.
  for (const ForNode* n : epilogue_nests(scan.arrivals[0]->body)) {
    const EpiloguePlan& p = std::get<EpiloguePlan>(n->plan);
    if (p.form == EpilogueForm::Staged && !p.per_warp)
      return "an epilogue staged through a whole-tile buffer (its block barriers need every "
             "warp)";
    if (p.form == EpilogueForm::FragmentOrder) return "a workspace store after the arrival";
  }
  // The partial tile at shared offset 0, over the main loops' operand rings
  // only.
  *partial_bytes = const_of(ws->shape[2], "a workspace extent") *
                   const_of(ws->shape[3], "a workspace extent") * dtype_size(ws.dtype());
  const int64_t end = *partial_bytes;
  if (end > launch.dynamic_shared_bytes)
    return fmt::format("its {}-byte partial tile exceeds the kernel's {} bytes of shared memory",
                       end, launch.dynamic_shared_bytes);
  std::unordered_set<const BufferNode*> rings;
  for (const ForNode* loop : pipelined_loops(k.body)) {
    for (const CopyNode* c : split_pipelined_body(loop).copies) rings.insert(c->dst.get());
    const auto* p = std::get_if<PipelinePlan>(&loop->plan);
    if (p && p->mbarrier_offset >= 0 && p->mbarrier_offset < end)
      return fmt::format("its {}-byte partial tile would cover the main loop's mbarriers", end);
  }
  for (const auto& [buffer, alloc] : allocations(k.body)) {
    const SharedPlan* p = shared_plan(alloc);
    if (p && p->offset >= 0 && p->offset < end && !rings.count(buffer))
      return fmt::format("its {}-byte partial tile would cover {}, which is not an operand ring",
                         end, buffer->name);
  }
  for (const ForNode* n : epilogue_nests(k.body)) {
    const EpiloguePlan& p = std::get<EpiloguePlan>(n->plan);
    if (p.form == EpilogueForm::Staged && p.offset < end)
      return fmt::format("its {}-byte partial tile would cover the epilogue's buffers", end);
  }
  return "";
}

}  // namespace

Kernel form_split_k_cluster(const Kernel& kernel, const passes::PassContext& context) {
  if (!context.cuda.split_k_cluster) return kernel;
  const auto it = kernel.attrs.find("SPLIT_K");
  const int64_t* split = it == kernel.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
  if (!split || *split < 2) return kernel;
  Kernel out = kernel;
  size_t dim = 0;
  int64_t bytes = 0;
  const std::string why = !context.target.has_tma() ? "clusters need sm_90"
                                                     : why_not(kernel, *split, &dim, &bytes);
  if (!why.empty()) {
    out.launch.notes.push_back("split-K through the workspace, not a cluster: " + why);
    return out;
  }
  // The split fastest: a tile's splits are consecutive program ids, one
  // cluster, split s its rank s.
  const GridDim g = out.grid[dim];
  out.grid.erase(out.grid.begin() + static_cast<std::ptrdiff_t>(dim));
  out.grid.push_back(g);
  out.launch.cluster_size = static_cast<int>(*split);
  out.launch.split_k_cluster = true;
  out.launch.notes.push_back(fmt::format(
      "split-K in a cluster of {0} blocks (a tile's K splits, split s = rank s): each stores its "
      "{1}-byte partial tile in its own shared memory over the dead operand rings, and MMA warp w "
      "of the block of split w % {0} sums warp w's elements over the cluster in split order "
      "(ld.shared::cluster) and runs their epilogue; no workspace, no counter",
      *split, bytes));
  return out;
}

}  // namespace tilefuse::codegen
