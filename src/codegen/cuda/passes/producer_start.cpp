#include "codegen/cuda/passes/producer_start.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "passes/simplify.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

namespace {

// Loads of the forwarded buffers replaced by their staged values at the
// load's indices (ForwardStaged); the staging copies and the buffers'
// allocations removed. The hoisted address expressions of the loop's copies
// are rewritten too (the printer computes the addresses from them).
class Forward final : public ForwardStaged {
 public:
  using ForwardStaged::ForwardStaged;

 protected:
  using ForwardStaged::visit;
  Stmt visit(const CopyNode* op) override {
    if (staged_.count(op->dst.get())) return SeqNode::make({});
    Stmt s = IRMutator::visit(op);
    const CopyNode* c = s.as<CopyNode>();
    if (!c || !c->plan || !c->plan->hoisted) return checked(s);
    CopyPlan plan = *c->plan;
    for (Expr& e : plan.hoisted_indices) e = forward(e);
    plan.hoisted_mask = forward(plan.hoisted_mask);
    plan.iteration_mask = forward(plan.iteration_mask);
    return checked(CopyNode::make(c->vars, c->extents, c->dst, c->dst_indices, c->value, plan));
  }
  Stmt visit(const AllocateNode* op) override {
    if (staged_.count(op->buffer.get())) return mutate(op->body);
    return IRMutator::visit(op);
  }

 private:
  Stmt checked(Stmt s) const {
    TF_CHECK(ok, "producer_start: a masked or partial load of a staged buffer (the pass "
                 "forwards only whole, unmasked reads)");
    return s;
  }
};

// Does `s` write shared memory?
bool writes_shared(const Stmt& s) {
  Writers w;
  w.visit_stmt(s);
  for (const auto& [b, n] : w.count)
    if (b->scope == MemScope::Shared) return true;
  return false;
}

// How many distinct affine (TMA) tiles the first `kFirstBlocks` blocks of
// the grid read at the loop's first iteration, and how many blocks that
// is; nullopt when the grid or a box coordinate is not a constant there.
constexpr int64_t kFirstBlocks = 128;
// The affine lead's DRAM bytes over the first blocks: about what the
// H200's DRAM delivers (4.2 TB/s, a device-to-device copy) during one
// round trip of the index load (~1 us). Measured on skinny (session 11,
// 96 blocks, 16 KiB stages of weights of their own): a lead of 1-4 stages
// (1.5-6 MiB) 0.3-0.8 us faster than none, 8 stages (12 MiB) 1.2 us
// slower; the seed's 4 stages of shared tiles (1 MiB): 1-1.8 us faster.
constexpr int64_t kAffineLeadBytes = int64_t{4} << 20;
struct TileSharing {
  int64_t blocks = 0, tiles = 0;
};
std::optional<TileSharing> affine_tile_sharing(const Kernel& k, const ForNode* loop,
                                               const PipelinedBody& body, VarMap lets) {
  std::vector<int64_t> extents;
  int64_t total = 1;
  for (const GridDim& g : k.grid) {
    const int64_t* e = as_const_int(g.extent);
    if (!e || *e <= 0) return std::nullopt;
    extents.push_back(*e);
    total *= *e;
    if (total > (int64_t{1} << 40)) return std::nullopt;
  }
  // (`lets`: those before the loop; then the loop's own at its first
  // iteration.)
  lets[loop->var.get()] = loop->min;
  for (const auto& [v, e] : body.lets) lets[v.get()] = substitute(e, lets);
  std::vector<Expr> coords;
  for (const CopyNode* c : body.copies)
    if (c->plan && c->plan->mechanism == CopyMechanism::Tma)
      for (const TmaBox& b : c->plan->boxes)
        for (const Expr& e : b.coords) coords.push_back(substitute(e, lets));
  const int64_t blocks = std::min(total, kFirstBlocks);
  std::set<std::vector<int64_t>> tiles;
  for (int64_t linear = 0; linear < blocks; ++linear) {
    // (The printer's order: the last grid dim varies fastest.)
    VarMap at;
    int64_t rest = linear;
    for (size_t d = k.grid.size(); d-- > 0;) {
      at[k.grid[d].var.get()] = make_int(k.grid[d].var.dtype(), rest % extents[d]);
      rest /= extents[d];
    }
    std::vector<int64_t> tile;
    for (const Expr& e : coords) {
      const Expr v = passes::simplify(substitute(e, at));
      const int64_t* c = as_const_int(v);
      if (!c) return std::nullopt;
      tile.push_back(*c);
    }
    tiles.insert(std::move(tile));
  }
  return TileSharing{blocks, static_cast<int64_t>(tiles.size())};
}

}  // namespace

Kernel producer_start(const Kernel& kernel, const passes::PassContext& context) {
  if (!context.cuda.producer_start || kernel.launch.persistent) return kernel;
  const ForNode* loop = top_level_pipelined(kernel.body);
  if (!loop) return kernel;
  const auto* plan0 = std::get_if<PipelinePlan>(&loop->plan);
  if (!plan0 || plan0->form != PipelineForm::WarpSpecialized) return kernel;
  const Prefix prefix = prefix_of(kernel.body, loop);
  if (!prefix.reached) return kernel;

  // 1. Staged buffers to forward.
  Writers writers;
  writers.visit_stmt(kernel.body);
  // Where each buffer is read outside the loop's hoisted copies: those
  // reads keep the buffer.
  std::unordered_set<const BufferNode*> read_elsewhere;
  std::unordered_set<const CopyNode*> hoisted_copies;
  for (const CopyNode* c : split_pipelined_body(loop).copies)
    if (c->plan && c->plan->hoisted) hoisted_copies.insert(c);
  {
    struct Reads : IRVisitor {
      const std::unordered_set<const CopyNode*>* hoisted;
      std::unordered_set<const BufferNode*>* out;
      using IRVisitor::visit;
      bool in_hoisted = false;
      void visit(const LoadNode* op) override {
        // (A hoisted copy's whole, unmasked reads are forwarded; any
        // other read keeps the buffer.)
        if (!in_hoisted || op->mask.defined() || op->indices.size() != op->buffer->shape.size())
          out->insert(op->buffer.get());
        IRVisitor::visit(op);
      }
      void visit(const CopyNode* op) override {
        in_hoisted = hoisted->count(op) > 0;
        IRVisitor::visit(op);
        in_hoisted = false;
      }
    } r;
    r.hoisted = &hoisted_copies;
    r.out = &read_elsewhere;
    r.visit_stmt(kernel.body);
  }
  std::unordered_map<const BufferNode*, const CopyNode*> staged;
  for (const Stmt& s : prefix.stmts) {
    const CopyNode* c = s.as<CopyNode>();
    if (!c || c->dst.scope() != MemScope::Shared || !identity_copy(c)) continue;
    const BufferNode* b = c->dst.get();
    if (writers.of(b) != 1 || read_elsewhere.count(b)) continue;
    bool pure = true;
    for (const LoadNode* l : loads_in(c->value))
      pure = pure && l->buffer.scope() == MemScope::Global && writers.of(l->buffer.get()) == 0;
    if (pure) staged[b] = c;
  }
  Kernel out = kernel;
  std::vector<std::string> forwarded;
  if (!staged.empty()) {
    Forward f(staged);
    out.body = f.mutate(kernel.body);
    for (const Stmt& s : prefix.stmts)
      if (const CopyNode* c = s.as<CopyNode>(); c && staged.count(c->dst.get()))
        forwarded.push_back(c->dst.name());
  }

  // 2. The set-up at entry, when nothing before the loop writes shared
  // memory (else the producer would have to wait for it at a barrier).
  const ForNode* new_loop = top_level_pipelined(out.body);
  TF_CHECK(new_loop != nullptr, "producer_start: the loop went away");
  const Prefix after = prefix_of(out.body, new_loop);
  std::unordered_set<const BarrierNode*> barriers;
  for (const Stmt& s : after.stmts) {
    if (const BarrierNode* b = s.as<BarrierNode>()) {
      barriers.insert(b);
      continue;
    }
    if (writes_shared(s)) return staged.empty() ? kernel : out;
  }
  // The barriers before the loop order nothing now (no shared memory is
  // written there: the lowering's barrier after the staging copies).
  if (!barriers.empty()) {
    struct Drop final : IRMutator {
      const std::unordered_set<const BarrierNode*>* drop;
      using IRMutator::visit;
      Stmt visit(const BarrierNode* op) override {
        return drop->count(op) ? SeqNode::make({}) : Stmt(op);
      }
    } drop;
    drop.drop = &barriers;
    out.body = drop.mutate(out.body);
    new_loop = top_level_pipelined(out.body);
    TF_CHECK(new_loop != nullptr, "producer_start: the loop went away");
  }
  PipelinePlan plan = std::get<PipelinePlan>(new_loop->plan);
  plan.setup_at_entry = true;

  // 3. The affine lead.
  const PipelinedBody body = split_pipelined_body(new_loop);
  bool affine = false, row_gather = false, gathered_setup = false;
  int64_t stage_bytes = 0;  // the TMA bytes of one block's stage
  for (const CopyNode* c : body.copies) {
    if (!c->plan) continue;
    if (c->plan->mechanism == CopyMechanism::Tma) {
      (c->plan->row_gather ? row_gather : affine) = true;
      stage_bytes += c->plan->tma_bytes;
    }
    if (c->plan->hoisted)
      for (const Expr& e : c->plan->hoisted_indices) gathered_setup = gathered_setup || has_load(e);
  }
  std::string lead_note;
  if (affine && !row_gather && gathered_setup && out.launch.cluster_size == 1) {
    // As many stages as keep the lead's DRAM bytes (the distinct affine
    // tiles of the first blocks: shared tiles come from L2 after the
    // first read) within what the DRAM delivers during the index's round
    // trip; more queue ahead of the first gathered stage and delay it.
    const std::optional<TileSharing> share =
        affine_tile_sharing(out, new_loop, body, after.lets);
    if (!share) {
      lead_note = "; no affine lead: the grid or a tile coordinate is not a constant";
    } else {
      const int64_t unique = std::max<int64_t>(1, share->tiles * stage_bytes);
      const int64_t lead = std::min<int64_t>(plan.stages, kAffineLeadBytes / unique);
      const std::string why = fmt::format(
          "the first {} blocks read {} distinct affine tiles, {} KiB a stage; at most {} MiB "
          "ahead of the index load",
          share->blocks, share->tiles, unique / 1024, kAffineLeadBytes >> 20);
      if (lead <= 0) {
        lead_note = "; no affine lead: " + why;
      } else {
        plan.affine_lead = static_cast<int>(lead);
        lead_note = fmt::format(
            "; it issues the TMA copies of the first {} of {} stages before its gathered rows' "
            "addresses, whose index load then overlaps those bytes ({})",
            lead, plan.stages, why);
      }
    }
  }
  PlanEdits edits;
  edits.loops[new_loop] = plan;
  out = with_plans(out, edits);
  std::string what;
  for (const std::string& n : forwarded) what += (what.empty() ? "" : ", ") + n;
  out.launch.notes.push_back(fmt::format(
      "producer start: the mbarriers are set up at the kernel's entry and the producer does not "
      "wait for the statements before the main loop{}{}",
      forwarded.empty() ? ""
                        : fmt::format("; it loads the rows it gathers itself ({} forwarded from "
                                      "shared memory into its hoisted addresses)",
                                      what),
      lead_note));
  return out;
}

}  // namespace tilefuse::codegen
