#include "codegen/cuda/passes/epilogue.h"

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <unordered_set>
#include <utility>

#include "analysis/axis_info.h"
#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "passes/simplify.h"
#include "tir/functor.h"
#include "tir/structural.h"
#include "tir/tma_limits.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

EpilogueNest epilogue_nest(const ForNode* op, const BufferNode* frag) {
  EpilogueNest n;
  std::function<void(const Stmt&)> find = [&](const Stmt& s) {
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) find(t);
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      find(l->body);
    } else if (const ForNode* f = s.as<ForNode>(); f && f->for_kind == ForKind::Parallel) {
      TF_CHECK(!n.inner, "cuda backend: two inner loops in a fragment nest");
      n.inner = f;
    }
  };
  find(op->body);
  TF_CHECK(n.inner != nullptr && frag->shape.size() == 2 &&
               const_of(op->extent, "a parallel extent") ==
                   const_of(frag->shape[0], "a fragment extent") &&
               const_of(n.inner->extent, "a parallel extent") ==
                   const_of(frag->shape[1], "a fragment extent"),
           "cuda backend: a fragment is accessed by a nest that does not cover it in 2-D");
  bool one_store = true;
  std::function<void(const Stmt&)> scan = [&](const Stmt& s) {
    if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      scan(l->body);
    } else if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) scan(t);
    } else if (s.get() == n.inner) {
      scan(n.inner->body);
    } else if (const StoreNode* st = s.as<StoreNode>();
               st && !n.store && st->buffer.scope() == MemScope::Global) {
      n.store = st;
    } else if (!s.as<CheckNode>()) {
      one_store = false;
    }
  };
  scan(op->body);
  if (!one_store) n.store = nullptr;
  if (!n.store) return n;
  std::function<void(const Stmt&)> collect = [&](const Stmt& st) {
    if (const LetStmtNode* l = st.as<LetStmtNode>()) {
      n.lets.push_back(l);
      collect(l->body);
    } else if (const SeqNode* q = st.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) collect(t);
    } else if (st.get() == n.inner) {
      collect(n.inner->body);
    }
  };
  collect(op->body);
  struct Uses : IRVisitor {
    std::unordered_set<const VarNode*> vars;
    using IRVisitor::visit;
    void visit(const VarNode* v) override { vars.insert(v); }
  } u;
  for (const Expr& e : n.store->indices) u.visit_expr(e);
  if (n.store->mask.defined()) u.visit_expr(n.store->mask);
  n.address_let.assign(n.lets.size(), false);
  for (size_t i = n.lets.size(); i-- > 0;)
    if (u.vars.count(n.lets[i]->var.get())) {
      n.address_let[i] = true;
      u.visit_expr(n.lets[i]->value);
    }
  return n;
}

namespace {

// Whether a value reads memory: loads a buffer other than a fragment (the
// accumulator's elements are the thread's own registers).
bool reads_memory(const Expr& e) {
  for (const LoadNode* l : loads_in(e))
    if (l->buffer.scope() != MemScope::Fragment) return true;
  return false;
}

// Why the nest's values and addresses keep it from being staged ("" when
// they do not): the copy-out recomputes the store's address and mask from
// the nest's lets, so those must read no memory and no fragment; values
// (the lets and the stored value) that load memory are not staged either.
std::string staging_problem(const EpilogueNest& n) {
  bool reads = n.store->mask.defined() && has_load(n.store->mask);
  for (const Expr& e : n.store->indices) reads = reads || has_load(e);
  for (size_t i = 0; i < n.lets.size(); ++i)
    reads = reads || (n.address_let[i] && has_load(n.lets[i]->value));
  if (reads) return "the store's address or mask reads memory";
  // (The stored value too: a bias load inline in it is the same bias. And
  // only memory: a value reading just the accumulator, relu(x @ y), is
  // staged like x @ y.)
  bool loads = reads_memory(n.store->value);
  for (const LetStmtNode* l : n.lets) loads = loads || reads_memory(l->value);
  if (loads) return "a value of the nest loads memory (staged, such epilogues spilled)";
  return "";
}


// The split-K workspace that can be held in the accumulators' fragment
// order (LaunchPlan::workspace_fragment_order): the param index, or -1.
// The kernel is split (attr SPLIT_K) or stream-K (attr STREAM_K); one
// fragment nest stores the buffer,
// its value the accumulator element at the nest's own (i, j) and its last
// two indices those vars, unmasked; the buffer is a param whose last two
// dims are the fragment's, compact; every other access is a load in a nest
// over the same fragment, at that nest's (i, j). Then no one but the nests
// sees where an element sits, so the printer may place element e of
// thread t at e * threads + t of each slice.
int fragment_order_workspace(const Kernel& kernel, const std::vector<const ForNode*>& nests,
                             const ForNode** store_nest) {
  const auto split = kernel.attrs.find("SPLIT_K");
  const bool sk = kernel.attrs.count("STREAM_K") > 0;
  if (!sk && (split == kernel.attrs.end() || split->second == tir::AttrValue(int64_t{1})))
    return -1;
  struct Access : IRVisitor {
    std::vector<const StoreNode*> stores;
    std::vector<const LoadNode*> loads;
    using IRVisitor::visit;
    void visit(const StoreNode* op) override {
      if (op->buffer.scope() == MemScope::Global) stores.push_back(op);
      IRVisitor::visit(op);
    }
    void visit(const LoadNode* op) override {
      if (op->buffer.scope() == MemScope::Global) loads.push_back(op);
      IRVisitor::visit(op);
    }
  };
  Access all;  // every global access of the kernel
  all.visit_stmt(kernel.body);
  for (const ForNode* op : nests) {
    const BufferNode* frag = fragment_used(Stmt(op));
    const EpilogueNest n = epilogue_nest(op, frag);
    if (!n.store || n.store->mask.defined() || n.store->indices.size() < 2) continue;
    const Buffer& w = n.store->buffer;
    const size_t r = n.store->indices.size();
    const LoadNode* v = n.store->value.as<LoadNode>();
    if (!v || v->buffer.get() != frag || v->indices.size() != 2 ||
        !same_value(v->indices[0], op->var) || !same_value(v->indices[1], n.inner->var) ||
        !same_value(n.store->indices[r - 2], op->var) ||
        !same_value(n.store->indices[r - 1], n.inner->var))
      continue;
    int param = -1;
    for (size_t p = 0; p < kernel.params.size(); ++p)
      if (kernel.params[p].is_buffer() && kernel.params[p].buffer.same_as(w))
        param = static_cast<int>(p);
    if (param < 0 || w->shape.size() != r || !w->strides.empty() ||
        !structural_equal(w->shape[r - 2], frag->shape[0]) ||
        !structural_equal(w->shape[r - 1], frag->shape[1]))
      continue;
    // Every access of w: this store, and loads in nests over frag at their own (i, j).
    size_t seen = 0;
    bool ok = true;
    for (const StoreNode* st : all.stores) seen += st->buffer.same_as(w);
    ok = seen == 1;
    size_t in_nests = 0, loads = 0;
    for (const LoadNode* l : all.loads) loads += l->buffer.same_as(w);
    for (const ForNode* other : nests) {
      if (fragment_used(Stmt(other)) != frag) continue;
      const EpilogueNest m = epilogue_nest(other, frag);
      Access in;
      in.visit_stmt(Stmt(other));
      for (const LoadNode* l : in.loads) {
        if (!l->buffer.same_as(w)) continue;
        ++in_nests;
        const size_t k = l->indices.size();
        ok = ok && k == r && same_value(l->indices[k - 2], other->var) &&
             same_value(l->indices[k - 1], m.inner->var);
      }
    }
    if (ok && in_nests == loads) {
      *store_nest = op;
      return param;
    }
  }
  return -1;
}

// What axis_info proves of the staged copy-out's 16-byte row chunks (vec
// elements at columns vec*c .. vec*c + vec - 1 of a row): whether every
// chunk is stored to vec contiguous elements whose first address is 16-byte
// aligned, and whether the store's mask varies within a chunk.
struct ChunkProof {
  bool contiguous = false;
  bool mask_varies = false;
};

ChunkProof prove_chunks(const Kernel& kernel, const ForNode* op, const EpilogueNest& n,
                        int64_t vec) {
  const int64_t* rmin = as_const_int(op->min);
  const int64_t* cmin = as_const_int(n.inner->min);
  if (!rmin || !cmin || *rmin != 0 || *cmin != 0) return {};
  const int64_t rows = const_of(op->extent, "a parallel extent");
  const int64_t cols = const_of(n.inner->extent, "a parallel extent");
  if (cols % vec != 0) return {};
  // Dim 0 the row var over the rows, dim 1 the column var over the columns.
  analysis::AxisInfo info(kernel, {op->var, n.inner->var}, {rows, cols});
  const Expr as_load = LoadNode::make(n.store->buffer, n.store->indices, n.store->mask);
  const analysis::AccessFacts a = info.access(as_load.as<LoadNode>());
  // Consecutive on aligned runs of a multiple of vec columns: each chunk
  // (aligned on vec) lies in one run, so its elements are consecutive; the
  // run's first address is 16-byte aligned, and a chunk starts 16*k bytes
  // after it.
  if (a.offset_facts.contiguity[1] % vec != 0 || a.byte_divisibility[1] < 16) return {};
  return {true, a.mask_constancy[1] % vec != 0};
}

// Whether `mask` (in the nest's vars) says only that the 2-D store's
// indices `idx` lie within the output's `dims` (rows, columns): a
// conjunction of `idx[d] < dims[d]` terms. A TMA store clips at those
// bounds itself (PTX ISA 9.7.9.25.5.2: box elements outside the tensor are
// not written), so such a mask (M and N tails) needs no test.
bool mask_is_bounds(const Expr& mask, const std::vector<Expr>& idx, const int64_t dims[2]) {
  if (const AndNode* a = mask.as<AndNode>())
    return mask_is_bounds(a->a, idx, dims) && mask_is_bounds(a->b, idx, dims);
  const LTNode* lt = mask.as<LTNode>();
  const int64_t* bound = lt ? as_const_int(lt->b) : nullptr;
  if (!bound) return false;
  for (int d = 0; d < 2; ++d) {
    const Expr diff = passes::simplify(SubNode::make(lt->a, idx[d]));  // (kept alive: read below)
    const int64_t* c = as_const_int(diff);
    if (*bound == dims[d] && c && *c == 0) return true;
  }
  return false;
}

// The tensor map a TMA store of the staged rows x cols tile of nest `op`
// uses (EpiloguePlan::tma_store), or why there is none: the store is
// unmasked (or masked by the output's bounds alone, mask_is_bounds), into
// a 2-D global buffer of constant shape, row-major with a 16-byte aligned
// base and row pitch, at (row origin + the row var, column
// origin + the column var) with both origins free of the nest's vars (the
// nest's lets substituted), its rows 128-byte strips of 16-bit elements.
// The map's box is one strip of the tile (64 columns x rows), 128-byte
// swizzled (PTX ISA 9.7.9.27, the tensor map's swizzle modes).
std::optional<TensorMapPlan> tma_store_map(const Kernel& kernel, const ForNode* op,
                                           const EpilogueNest& n, int64_t rows, int64_t cols,
                                           std::string* why) {
  const StoreNode* st = n.store;
  const Buffer& b = st->buffer;
  const int64_t elem = dtype_size(b.dtype());
  auto no = [&](const std::string& w) -> std::optional<TensorMapPlan> {
    *why = w;
    return std::nullopt;
  };
  if (b->shape.size() != 2 || elem != 2) return no("not a 2-D store of 16-bit elements");
  if (rows > 256 || (cols * elem) % 128 != 0) return no("the tile is not whole 128-byte strips");
  const int64_t* d0 = as_const_int(b->shape[0]);
  const int64_t* d1 = as_const_int(b->shape[1]);
  if (!d0 || !d1) return no("an output of symbolic size");
  int64_t pitch = *d1;
  if (!b->strides.empty()) {
    const int64_t* s0 = as_const_int(b->strides[0]);
    const int64_t* s1 = as_const_int(b->strides[1]);
    if (!s0 || !s1 || *s1 != 1) return no("an output that is not row-major");
    pitch = *s0;
  }
  if (const std::string_view w = tma_map_out_of_range({*d0, *d1}, {pitch}, elem); !w.empty())
    return no(std::string(w));
  if ((pitch * elem) % 16 != 0 || b->alignment < 16)
    return no("an output row pitch or base not 16-byte aligned");
  // The indices in the nest's vars: its lets substituted, last first.
  std::vector<Expr> idx = st->indices;
  for (Expr& e : idx)
    for (size_t i = n.lets.size(); i-- > 0;) e = substitute(e, n.lets[i]->var, n.lets[i]->value);
  if (st->mask.defined()) {
    Expr mask = st->mask;
    for (size_t i = n.lets.size(); i-- > 0;)
      mask = substitute(mask, n.lets[i]->var, n.lets[i]->value);
    const int64_t dims[2] = {*d0, *d1};
    if (!mask_is_bounds(mask, idx, dims)) return no("a masked store");
  }
  const Var& r = op->var;
  const Var& c = n.inner->var;
  const Expr o0 = passes::simplify(SubNode::make(idx[0], r));
  const Expr o1 = passes::simplify(SubNode::make(idx[1], c));
  if (uses_var(o0, r) || uses_var(o0, c) || uses_var(o1, r) || uses_var(o1, c))
    return no("the store is not at (row origin + row, column origin + column)");
  TensorMapPlan m;
  m.param = -1;
  for (size_t p = 0; p < kernel.params.size(); ++p)
    if (kernel.params[p].is_buffer() && kernel.params[p].buffer.same_as(b))
      m.param = static_cast<int>(p);
  if (m.param < 0) return no("the output is not a kernel parameter");
  m.elem_bytes = static_cast<int>(elem);
  m.dims = {*d1, *d0};
  m.strides = {pitch * elem};
  m.box = {static_cast<int>(128 / elem), static_cast<int>(rows)};
  m.swizzle_bytes = 128;
  return m;
}

// Whether the stored value is a cast of an f32 value to the f16 / bf16
// output (tf::cast_pack2 converts such pairs).
bool casts_f32_to_half(const StoreNode* st) {
  const CastNode* c = st->value.as<CastNode>();
  const DType out = st->buffer.dtype();
  return c && c->dtype == out && c->value.dtype() == DType::F32 &&
         (out == DType::F16 || out == DType::BF16);
}

}  // namespace

Kernel plan_epilogues(const Kernel& kernel, const passes::PassContext& context) {
  TF_CHECK(kernel.launch.defined, "epilogue runs after lower_gemm");
  const auto allocs = allocations(kernel.body);
  // The shared memory a staged tile may take: all of it below the
  // mbarriers of a warp-specialized loop.
  int64_t room = kernel.launch.dynamic_shared_bytes;
  struct Find : IRVisitor {
    std::vector<const ForNode*> nests;  // outermost parallel loops over a fragment
    int64_t mbarriers = -1;
    int consumer_registers = 0;  // of a warp-specialized loop's MMA warpgroups (0: not set)
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      if (const auto* p = std::get_if<PipelinePlan>(&op->plan);
          p && p->form == PipelineForm::WarpSpecialized) {
        mbarriers = p->mbarrier_offset;
        consumer_registers = p->consumer_registers;
      }
      if (op->for_kind == ForKind::Parallel && fragment_used(Stmt(op))) {
        nests.push_back(op);
        return;
      }
      IRVisitor::visit(op);
    }
  } find;
  find.visit_stmt(kernel.body);
  if (find.mbarriers >= 0) room = find.mbarriers;
  // A persistent kernel's producer fills the rings for the next tile while
  // the epilogue runs: the staged tile then has a region of its own, after
  // the rest, within the 227 KiB a block may have (sm_90).
  const bool own_region = kernel.launch.persistent;
  // Consumer teams (ping-pong) store their tiles at once: a region each.
  const int teams = kernel.launch.consumer_teams;
  // (1024-byte aligned where its tile may go out by TMA: the swizzle.)
  const bool tma_stores = own_region && context.cuda.tma_store_epilogue;
  // A register_a main loop (its A fragments in the MMA threads' registers)
  // stores per warp, not as one staged tile: beside the whole tile's
  // staging ptxas serialized its wgmma for want of registers (session 25:
  // gather_heavy and moe_up_proj at 128x256x64/4/8/persistent, whose tile
  // fits once A_s takes no shared memory); the per-warp slabs do not.
  const bool register_a = has_register_a_loop(kernel.body);
  const int64_t align = tma_stores ? 1024 : 128;
  const int64_t region = (kernel.launch.dynamic_shared_bytes + align - 1) / align * align;
  if (own_region) room = kMaxDynamicSharedBytes - region;
  int64_t region_bytes = 0;
  // The staged nests: their tile's bytes, their note's index, the output's
  // name and why not by TMA (their offsets and notes follow the layout).
  struct StagedNest {
    const ForNode* op;
    int64_t bytes;
    size_t note;
    std::string name, no_tma;
    // Set where the whole tile does not fit (why) but the per-warp slabs
    // may: staged only per warp, else paired.
    std::string whole_tile_why;
    // The TMA maps its tile (box: a 64-column strip) and its slabs (box: 16
    // rows x 64 columns) would use, where it has them.
    std::optional<TensorMapPlan> tile_map, slab_map;
    // A MMA warp's 16x64 slabs of this tile (stmatrix tiles only).
    int64_t warp_slabs = 0;
  };
  std::vector<StagedNest> staged_nests;
  std::vector<TensorMapPlan> store_maps;     // TMA stores' maps, after the launch's
  PlanEdits edits;
  std::vector<std::string> notes;
  // Split-K's partials in fragment order: stored and read back by the
  // threads that own the elements, coalesced, without a shared-memory tile.
  const ForNode* ws_nest = nullptr;
  const int ws_param = fragment_order_workspace(kernel, find.nests, &ws_nest);
  int ws_vector = 1;  // LaunchPlan::workspace_vector
  // Per-warp slabs (see below): the MMA threads, and whether one buffer a
  // warp would fit after every other shared byte.
  const int64_t mma_threads =
      kernel.launch.consumer_threads > 0
          ? int64_t{kernel.launch.consumer_threads} * kernel.launch.consumer_teams
          : kernel.launch.num_threads;
  auto align_up = [](int64_t v, int64_t a) { return (v + a - 1) / a * a; };
  const bool warp_buffers_fit =
      context.cuda.warp_staged_epilogue &&
      align_up(kernel.launch.dynamic_shared_bytes, 128) + mma_threads / 32 * kWarpSlabBytes <=
          kMaxDynamicSharedBytes;
  for (const ForNode* op : find.nests) {
    if (op == ws_nest) {
      EpiloguePlan fo;
      fo.form = EpilogueForm::FragmentOrder;
      edits.loops[op] = fo;
      // (LaunchPlan::workspace_vector: an MMA fragment holds 4 elements of
      // each m16n8 block a thread, so a multiple of any V of 16 bytes.)
      const BufferNode* wf = fragment_used(Stmt(op));
      auto wit = allocs.find(wf);
      const FragmentPlan* wp = wit == allocs.end() ? nullptr : fragment_plan(wit->second);
      const int64_t wbytes = dtype_size(kernel.params[static_cast<size_t>(ws_param)].buffer.dtype());
      if (wp && wp->family != MmaFamily::SimtFma && (wbytes == 4 || wbytes == 8))
        ws_vector = static_cast<int>(16 / wbytes);
      notes.push_back(
          "epilogue into " + kernel.params[static_cast<size_t>(ws_param)].buffer.name() +
          ": split-K partials in the accumulators' fragment order (" +
          (ws_vector > 1
               ? fmt::format("{} elements of a thread a 16-byte access, element e of thread t at "
                             "((e / {}) * threads + t) * {} + e % {}",
                             ws_vector, ws_vector, ws_vector, ws_vector)
               : std::string("element e of thread t at e * threads + t")) +
          " of its slice: coalesced, not staged)");
      continue;
    }
    const BufferNode* frag = fragment_used(Stmt(op));
    auto it = allocs.find(frag);
    const FragmentPlan* f = it == allocs.end() ? nullptr : fragment_plan(it->second);
    TF_CHECK(f != nullptr, "epilogue: fragment " + frag->name + " has no FragmentPlan");
    const EpilogueNest n = epilogue_nest(op, frag);
    EpiloguePlan plan;
    if (f->family == MmaFamily::SimtFma || !n.store) {
      edits.loops[op] = plan;  // per_element
      continue;
    }
    const int64_t out_bytes = dtype_size(n.store->buffer.dtype());
    const int64_t pitch = const_of(frag->shape[1], "a fragment extent") + 16 / out_bytes;
    const int64_t stage_bytes = const_of(frag->shape[0], "a fragment extent") * pitch * out_bytes;
    // A wgmma D fragment is stmatrix's (PTX ISA 9.7.9.17): 16-bit outputs
    // stage four pairs an instruction. Measured on the H200 (hand-edited
    // seed kernel): 0.5 to 1.1 us of 32, 20% fewer instructions; 32-bit
    // stores of the packed pairs gained nothing. Its addressing takes
    // registers beside the accumulators: at 128 a thread within the 168 of
    // a 384-thread block it spilled 36 bytes (bmm 128x256, ptxas 13.0), so
    // there only with a register budget.
    const int threads = kernel.launch.consumer_threads > 0 ? kernel.launch.consumer_threads
                                                           : kernel.launch.num_threads;
    const int64_t accumulators = int64_t{f->block_m} * f->block_n / threads;
    const bool stmatrix_values = context.cuda.stmatrix_epilogue && f->family == MmaFamily::Wgmma &&
                                 out_bytes == 2 &&
                                 (accumulators <= 64 || find.consumer_registers >= 200);
    std::string why;
    // Where the whole tile does not fit but its values could be staged per
    // warp, the whole tile's reason, kept should the slabs not fit either.
    std::string whole_tile_why;
    if (!context.cuda.staged_epilogue)
      why = "the staged_epilogue option is off";
    else if (stage_bytes * (own_region ? teams : 1) > room)
      why = own_region ? fmt::format("its {}-byte tile{} does not fit beside the persistent "
                                     "kernel's rings",
                                     stage_bytes, teams > 1 ? " (one a consumer team)" : "")
                       : fmt::format("its {}-byte tile exceeds the kernel's shared memory",
                                     stage_bytes);
    if (!why.empty() && context.cuda.staged_epilogue && stmatrix_values && warp_buffers_fit)
      whole_tile_why = std::exchange(why, "");
    if (why.empty()) why = staging_problem(n);
    const bool staged = why.empty() && out_bytes >= 1 && out_bytes <= 8 && 16 % out_bytes == 0;
    if (staged) {
      plan.form = EpilogueForm::Staged;
      plan.pitch = pitch;
      plan.stmatrix = stmatrix_values && ((pitch * out_bytes) % 16 == 0 || !whole_tile_why.empty());
      const int64_t vec = 16 / out_bytes;
      if (context.cuda.proved_epilogue_chunks) {
        const ChunkProof proof = prove_chunks(kernel, op, n, vec);
        plan.contiguous_chunks = proof.contiguous;
        plan.chunk_mask_varies = proof.contiguous && proof.mask_varies;
      }
      plan.pair_cast = context.cuda.pair_cast_epilogue && casts_f32_to_half(n.store);
      StagedNest sn{op, whole_tile_why.empty() ? stage_bytes : 0, notes.size(),
                    n.store->buffer.name(), "", whole_tile_why, std::nullopt, std::nullopt};
      if (plan.stmatrix) {
        const int64_t rows = const_of(frag->shape[0], "a fragment extent");
        const int64_t cols = const_of(frag->shape[1], "a fragment extent");
        if (tma_stores && whole_tile_why.empty() && !register_a)
          sn.tile_map = tma_store_map(kernel, op, n, rows, cols, &sn.no_tma);
        if (context.cuda.warp_staged_epilogue && context.cuda.warp_tma_store)
          sn.slab_map = tma_store_map(kernel, op, n, 16, cols, &sn.no_tma);
        sn.warp_slabs = rows * cols / (mma_threads / 32) / (kWarpSlabBytes / out_bytes);
      }
      staged_nests.push_back(std::move(sn));
      notes.emplace_back();  // (written once the shared memory is laid out)
    } else {
      plan.form = EpilogueForm::Paired;
      plan.why = why;
      notes.push_back("epilogue into " + n.store->buffer.name() +
                      ": paired stores from the accumulators, not staged: " + why);
    }
    edits.loops[op] = plan;
  }
  // Per-warp slabs (EpiloguePlan::per_warp) for stmatrix tiles: a
  // kWarpSlabBytes buffer a MMA warp (two where their slabs go out by TMA),
  // after every other shared byte, shared by the kernel's per-warp nests
  // (each warp runs them in order); the persistent kernel's remaining
  // tiles after them. A tile the persistent kernel can store whole by TMA
  // stays whole: measured on the H200 (session 15, gather_heavy at
  // 128x256x64/3/8/persistent, two rounds) 63.5, 66.6 us against 66.7, 67.5
  // with TMA slabs and 66.7, 66.4 with the warps' copy-out.
  // Measured on the H200 (bench/RESULTS.md, session 14): the seed 32.1-32.8
  // -> 31.1-31.3 us, gemm_f16 30.5-31.1 -> 29.0-30.4, at 128x256x64/3/8.
  std::unordered_set<const ForNode*> per_warp;
  bool slab_tma = true;  // every per-warp nest's slabs by TMA
  if (context.cuda.warp_staged_epilogue)
    for (const StagedNest& sn : staged_nests) {
      const EpiloguePlan& p = std::get<EpiloguePlan>(edits.loops.at(sn.op));
      if (p.stmatrix && !sn.tile_map) {
        per_warp.insert(sn.op);
        // (One nest's plain stores would read buffers that another's TMA
        // boxes may still read: all by TMA, or none.)
        slab_tma = slab_tma && sn.slab_map.has_value();
      }
    }
  slab_tma = slab_tma && !per_warp.empty();
  const int64_t warp_offset =
      align_up(kernel.launch.dynamic_shared_bytes, slab_tma ? 1024 : 128);
  int slab_buffers = per_warp.empty() ? 0 : slab_tma ? 2 : 1;
  auto warp_bytes = [&] { return mma_threads / 32 * slab_buffers * kWarpSlabBytes; };
  // The persistent kernel's own-region tiles that remain, after the slabs.
  // Their tile's bytes (the largest), where they start, and the end of it all.
  int64_t tiles_base = region;
  auto own_tiles_layout = [&](int64_t base, int64_t* bytes, int64_t* at) {
    *bytes = 0;
    for (const StagedNest& sn : staged_nests)
      if (own_region && !per_warp.count(sn.op)) *bytes = std::max(*bytes, sn.bytes);
    *at = align_up(base, align);
    return *bytes == 0 ? base : *at + (teams > 1 ? teams * align_up(*bytes, align) : *bytes);
  };
  auto fits = [&] {
    return own_tiles_layout(warp_offset + warp_bytes(), &region_bytes, &tiles_base) <=
           kMaxDynamicSharedBytes;
  };
  // CudaOptions::slab_buffers_all: in a one-tile kernel, a buffer for each
  // of a warp's slabs, so that no slab waits for an earlier box's read
  // (cp.async.bulk.wait_group.read) and the last epilogue, the kernel's
  // end, only waits for its stores' writes. Where the buffers fit and cost
  // no block an SM. Measured on an H100 (bench/RESULTS.md, session 45,
  // three interleaved rounds): the seed at 128x256x64/4/8/ra256 29.3-29.9
  // -> 29.2 us, with /tail3 29.4-30.0 -> 29.2-29.4; persistent kernels
  // (gather_heavy, repeats, moe_up_proj) level to 0.6% slower: they keep two.
  if (slab_tma && context.cuda.slab_buffers_all && !kernel.launch.persistent) {
    int64_t slabs = 0;
    for (const StagedNest& sn : staged_nests)
      if (per_warp.count(sn.op)) slabs = std::max(slabs, sn.warp_slabs);
    if (slabs > slab_buffers && slabs <= kMaxWarpSlabBuffers) {
      auto blocks_per_sm = [&] {
        return kSharedBytesPerSm / (warp_offset + warp_bytes() + kReservedSharedBytesPerBlock);
      };
      const int two = slab_buffers;
      const int64_t blocks = blocks_per_sm();
      slab_buffers = static_cast<int>(slabs);
      if (!fits() || blocks_per_sm() < blocks) slab_buffers = two;
    }
  }
  if (slab_buffers == 2 && !fits()) {
    slab_buffers = 1;
    if (fits())
      notes.push_back(fmt::format("epilogue: one slab buffer a warp, not two (two, {} bytes, do "
                                  "not fit beside the kernel's other shared memory)",
                                  2 * warp_bytes()));
  }
  if (slab_buffers > 0 && !fits()) {
    per_warp.clear();
    notes.push_back(fmt::format("epilogue: not staged per warp (its {} bytes of warp buffers do not "
                                "fit beside the kernel's other shared memory)",
                                warp_bytes()));
    slab_buffers = 0;
    slab_tma = false;
  }
  const int64_t end = own_tiles_layout(
      per_warp.empty() ? kernel.launch.dynamic_shared_bytes : warp_offset + warp_bytes(),
      &region_bytes, &tiles_base);
  // Team t's region starts t * team_stride bytes after the first.
  const int64_t team_stride = align_up(region_bytes, align);
  const int first_map = static_cast<int>(kernel.launch.tensor_maps.size());
  for (StagedNest& sn : staged_nests) {
    EpiloguePlan& p = std::get<EpiloguePlan>(edits.loops.at(sn.op));
    if (!sn.whole_tile_why.empty() && !per_warp.count(sn.op)) {
      // Only its slabs fitted, and they were not taken.
      EpiloguePlan paired;
      paired.form = EpilogueForm::Paired;
      paired.why = sn.whole_tile_why;
      p = paired;
      notes[sn.note] = "epilogue into " + sn.name +
                       ": paired stores from the accumulators, not staged: " + sn.whole_tile_why;
      continue;
    }
    std::optional<TensorMapPlan>* map = nullptr;
    if (per_warp.count(sn.op)) {
      p.per_warp = true;
      p.pitch = 0;
      p.offset = warp_offset;
      p.slab_buffers = slab_buffers;
      if (slab_tma) map = &sn.slab_map;
    } else {
      if (own_region) {
        p.offset = tiles_base;
        if (teams > 1) p.team_stride = team_stride;
      }
      if (sn.tile_map) map = &sn.tile_map;
    }
    if (map) {
      p.tma_store = first_map + static_cast<int>(store_maps.size());
      store_maps.push_back(**map);
    }
    notes[sn.note] =
        "epilogue into " + sn.name + ": staged through shared memory" +
        (p.per_warp ? fmt::format(" per warp by stmatrix (each MMA warp its own 16-row slabs, 64 "
                                  "columns at a time in {} of its own; no block barrier)",
                                  tir::warp_slab_buffers_words(p.slab_buffers))
                    : p.stmatrix ? " by stmatrix" : "") +
        (p.pair_cast ? ", f32 pairs cast together" : "") +
        (p.tma_store >= 0
             ? std::string(p.per_warp ? ", stored by TMA (a 128-byte swizzled box a slab, from "
                                        "the warp's lane 0)"
                                      : ", stored by TMA (a 128-byte swizzled box a 64-column "
                                        "strip)")
             : ", stored in 16-byte row chunks" +
                   std::string(!p.contiguous_chunks ? ""
                               : p.chunk_mask_varies
                                   ? " (proved contiguous and aligned; masked per element)"
                                   : " (proved contiguous and aligned)") +
                   (sn.no_tma.empty() ? "" : " (not by TMA: " + sn.no_tma + ")"));
  }
  Kernel out = with_plans(kernel, edits);
  if (ws_param >= 0) {
    out.launch.workspace_fragment_order = ws_param;
    out.launch.workspace_vector = ws_vector;
  }
  for (TensorMapPlan& m : store_maps) out.launch.tensor_maps.push_back(std::move(m));
  if (!per_warp.empty() || region_bytes > 0) out.launch.dynamic_shared_bytes = end;
  for (std::string& n : notes) out.launch.notes.push_back(std::move(n));
  return out;
}

}  // namespace tilefuse::codegen
