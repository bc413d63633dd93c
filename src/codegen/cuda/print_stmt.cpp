// The printer's statements, thread-distributed nests and epilogues
// (printer.h).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "codegen/cuda/passes/epilogue.h"
#include "codegen/cuda/printer.h"
#include "core/error.h"
#include "passes/simplify.h"
#include "tir/structural.h"
#include "core/stack_guard.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: the printer reads the Tile IR

std::string Printer::barrier_for(BarrierKind kind) const {
  switch (kind) {
    case BarrierKind::Block:
      return "__syncthreads();";
    case BarrierKind::BlockAsync:
      return "tf::async_barrier();";
    case BarrierKind::Consumers:
      // (Consumer teams: each its own named barrier, tf_team_bar.)
      return k_.launch.consumer_teams > 1
                 ? fmt::format("tf::team_barrier<{}>(tf_team_bar);", consumer_threads_)
                 : fmt::format("tf::mma_barrier<{}>();", consumer_threads_);
  }
  return "";
}

// `for (v = tid; v < total; v += threads)`, or a fixed-trip unrolled loop
// when total is a multiple of the block.
void Printer::thread_loop(int64_t total, const std::string& v, const std::function<void()>& body) {
  const bool saved = in_threads_;
  in_threads_ = true;
  if (trip_always_ && total < threads_) {
    // One slot, on the first `total` threads (a trip var for register slots).
    trip_var_ = "0";
    open(fmt::format("if ({} < {})", tid_sym_, total));
    line(fmt::format("const int {} = {};", v, tid_sym_));
  } else if (total % threads_ == 0 && total / threads_ <= 64) {
    line("#pragma unroll");
    std::string r = "tf_r" + std::to_string(tmp_++);
    trip_var_ = r;
    open(fmt::format("for (int {} = 0; {} < {}; ++{})", r, r, total / threads_, r));
    line(fmt::format("const int {} = {} * {} + {};", v, r, threads_sym_, tid_sym_));
  } else {
    TF_CHECK(!trip_always_, "cuda printer: register slots over an uneven thread loop");
    open(fmt::format("for (int {} = {}; {} < {}; {} += {})", v, tid_sym_, v, total, v,
                     threads_sym_));
  }
  body();
  close();
  in_threads_ = saved;
}

void Printer::emit_check(const CheckNode* op, const char* report) {
  // Each distinct check (code and message) gets its own id in the status
  // word; codes are categories, and two checks may share one.
  int id = 0;
  for (const CudaCheck& c : result_.checks)
    if (c.code == op->code && c.message == op->message && c.loc.line == op->loc.line &&
        c.loc.col == op->loc.col)
      id = c.id;
  if (id == 0) {
    id = static_cast<int>(result_.checks.size()) + 1;
    result_.checks.push_back(
        {id, op->code, op->message, static_cast<int>(op->args.size()), op->loc});
  }
  TF_CHECK(op->args.size() <= static_cast<size_t>(kStatusArgs),
           fmt::format("cuda emitter: a check with more than {} args", kStatusArgs));
  std::string args;
  for (const Expr& a : op->args) args += ", static_cast<long long>(" + expr(a) + ")";
  line(fmt::format("if (!{}) {}(tf_status, {}{});", expr(op->cond), report, id, args));
}

void Printer::emit_alloc(const AllocateNode* op) {
  emit_alloc_decl(op);
  stmt(op->body);
}

void Printer::emit_alloc_decl(const AllocateNode* op) {
  const Buffer& b = op->buffer;
  const std::string n = buf(b), t = cuda_type(b.dtype());
  switch (b.scope()) {
    case MemScope::Shared: {
      const SharedPlan& info = shared(b);
      if (info.stages == 0) {
        line(fmt::format("// {}: never in shared memory (the MMA warps load it into registers: a "
                         "fragment copy)",
                         n));
        break;
      }
      line(fmt::format("{}* {} = reinterpret_cast<{}*>(tf_smem + {});  // {}{}", t, n, t,
                       info.offset, shared_layout_name(info.layout),
                       info.stages > 1 ? ", " + std::to_string(info.stages) + " stages" : ""));
      break;
    }
    case MemScope::Fragment: {
      const FragmentPlan* f = fragment_plan(op);
      TF_CHECK(f != nullptr, "cuda printer: fragment " + b.name() + " has no FragmentPlan");
      line(fragment_tile_type(*f, b.dtype()) + " " + n + ";");
      break;
    }
    case MemScope::Local:
      line(fmt::format("{} {}[{}];", t, n, const_numel(b)));
      break;
    case MemScope::Global:
      TF_CHECK(false, "cuda emitter: alloc of a global buffer");
  }
}



std::string Printer::fragment_order_offset() const {
  const int v = k_.launch.workspace_vector;
  if (v == 1) return fmt::format("{} * {} + {}", frag_e_, threads_sym_, tid_sym_);
  return fmt::format("{} + {} % {}", fragment_order_vector(fmt::format("{} / {}", frag_e_, v)),
                     frag_e_, v);
}

std::string Printer::fragment_order_vector(const std::string& group) const {
  return fmt::format("(({}) * {} + {}) * {}", group, threads_sym_, tid_sym_,
                     k_.launch.workspace_vector);
}

std::string Printer::fragment_order_text() const {
  const int v = k_.launch.workspace_vector;
  if (v == 1) return fmt::format("element e of thread t at e * {} + t", threads_sym_);
  return fmt::format("element e of thread t at (e / {} * {} + t) * {} + e % {}: {} elements a "
                     "16-byte access",
                     v, threads_sym_, v, v, v);
}

std::vector<const LoadNode*> Printer::workspace_vector_loads(const ForNode* op) const {
  std::vector<const LoadNode*> out;
  const int ws = k_.launch.workspace_fragment_order;
  if (k_.launch.workspace_vector == 1 || ws < 0 || k_.launch.split_k_cluster) return out;
  const Buffer& w = k_.params[static_cast<size_t>(ws)].buffer;
  // The variables the nest binds (its loops' and lets'): a slice reading
  // one cannot be loaded before the element loop.
  struct Scan : IRVisitor {
    const BufferNode* w = nullptr;
    std::unordered_set<const VarNode*> bound;
    std::vector<const LoadNode*> loads;
    using IRVisitor::visit;
    void visit(const ForNode* f) override {
      bound.insert(f->var.get());
      IRVisitor::visit(f);
    }
    void visit(const LetStmtNode* l) override {
      bound.insert(l->var.get());
      IRVisitor::visit(l);
    }
    void visit(const LoadNode* l) override {
      if (l->buffer.get() == w) loads.push_back(l);
      IRVisitor::visit(l);
    }
  } scan;
  scan.w = w.get();
  scan.visit_stmt(Stmt(op));
  struct Uses : IRVisitor {
    const std::unordered_set<const VarNode*>* bound = nullptr;
    bool hit = false;
    using IRVisitor::visit;
    void visit(const VarNode* v) override { hit = hit || bound->count(v); }
  };
  for (const LoadNode* l : scan.loads) {
    const size_t r = l->indices.size();
    Uses uses;
    uses.bound = &scan.bound;
    for (size_t d = 0; d + 2 < r; ++d) uses.visit_expr(l->indices[d]);
    // (a mask is the vector's too: it may not vary within the nest)
    if (l->mask.defined()) uses.visit_expr(l->mask);
    if (uses.hit) return {};
    bool dup = false;
    for (const LoadNode* o : out) dup = dup || structural_equal(Expr(o), Expr(l));
    if (!dup) out.push_back(l);
  }
  return out;
}

std::string Printer::workspace_slice(const std::vector<Expr>& indices) {
  // The slice's first element: the indices with the nest's (i, j) at 0.
  TF_CHECK(frag_vars_.size() == 2 && indices.size() >= 2,
           "cuda printer: a workspace access outside a nest over its fragment");
  std::vector<Expr> at0 = indices;
  for (size_t d = at0.size() - 2; d < at0.size(); ++d) {
    VarMap zero;
    for (const VarNode* v : frag_vars_) zero[v] = make_int(v->dtype, 0);
    at0[d] = passes::simplify(substitute(at0[d], zero));
  }
  return address(k_.params[static_cast<size_t>(k_.launch.workspace_fragment_order)].buffer, at0);
}

void Printer::emit_fragment_nest(const ForNode* op, const BufferNode* frag) {
  // for i in parallel { lets; for j in parallel { body } } over frag[i, j]:
  // one iteration per accumulator element the thread owns.
  const auto* plan = std::get_if<EpiloguePlan>(&op->plan);
  TF_CHECK(plan != nullptr, "cuda printer: an epilogue nest without an EpiloguePlan");
  result_.epilogues.push_back(
      {std::string(epilogue_form_name(plan->form)), plan->stmatrix, plan->contiguous_chunks,
       plan->pair_cast, plan->per_warp, plan->tma_store >= 0, plan->why});
  const EpilogueNest nest = epilogue_nest(op, frag);
  const ForNode* inner = nest.inner;
  const std::string f = buf(Buffer(frag));
  frag_ = frag;
  frag_vars_ = {op->var.get(), inner->var.get()};
  frag_e_ = "tf_e" + std::to_string(tmp_++);
  nonneg_.vars.insert(op->var.get());
  nonneg_.vars.insert(inner->var.get());
  const bool saved = in_threads_;
  in_threads_ = true;
  // The statements around the inner loop run once per element (lets and
  // checks are pure).
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      if (nonneg_.holds(l->value)) nonneg_.vars.insert(l->var.get());
      line(
          fmt::format("const {} {} = {};", cuda_type(l->var.dtype()), var(l->var), expr(l->value)));
      walk(l->body);
    } else if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) walk(t);
    } else if (s.get() == inner) {
      walk(inner->body);
    } else {
      stmt(s);
    }
  };
  const StoreNode* store = nest.store;
  if (plan->form == EpilogueForm::FragmentOrder) {
    // (epilogue: the split-K workspace, LaunchPlan::workspace_fragment_order)
    TF_CHECK(store && k_.launch.workspace_fragment_order >= 0 &&
                 k_.params[static_cast<size_t>(k_.launch.workspace_fragment_order)]
                     .buffer.same_as(store->buffer),
             "cuda printer: a fragment-order nest that does not store the workspace");
    const std::string wt = cuda_type(store->buffer.dtype());
    if (k_.launch.split_k_cluster) {
      // (LaunchPlan::split_k_cluster: the partial tile in this block's own
      // shared memory, once every MMA thread is done reading the rings)
      line(fmt::format("// {}: this split's partial tile in this block's shared memory over the "
                       "operand rings, for the cluster's sum ({})",
                       store->buffer.name(), fragment_order_text()));
      line(block_barrier_ + "  // every MMA thread's last wgmma has read the rings");
      line(fmt::format("{0}* tf_wsp = reinterpret_cast<{0}*>(tf_smem);", wt));
      line("const unsigned tf_wsa = tf::smem_addr(tf_wsp);");
    } else {
      line(fmt::format("// {}: this tile's partial sums in the accumulators' fragment order "
                       "({})",
                       store->buffer.name(), fragment_order_text()));
      line(fmt::format("{}* tf_wsp = {};", wt, workspace_slice(store->indices)));
    }
    const int v = k_.launch.workspace_vector;
    if (v == 1) {
      line("#pragma unroll");
      open(fmt::format("for (int {0} = 0; {0} < decltype({1})::kElems; ++{0})", frag_e_, f));
      line(fmt::format("tf_wsp[{} * {} + {}] = {};", frag_e_, threads_sym_, tid_sym_,
                       expr(store->value)));
      close();
    } else {
      // (LaunchPlan::workspace_vector: V of the thread's elements a 16-byte
      // store)
      line(fmt::format("static_assert(decltype({})::kElems % {} == 0, \"the fragment's elements "
                       "come {} at a time\");",
                       f, v, v));
      const std::string e4 = frag_e_;
      line("#pragma unroll");
      open(fmt::format("for (int {0} = 0; {0} < decltype({1})::kElems; {0} += {2})", e4, f, v));
      line(fmt::format("{} tf_wv[{}];", wt, v));
      for (int q = 0; q < v; ++q) {
        frag_e_ = fmt::format("({} + {})", e4, q);
        line(fmt::format("tf_wv[{}] = {};", q, expr(store->value)));
      }
      frag_e_ = e4;
      line(fmt::format("tf::st_vec16(&tf_wsp[{}], tf_wv);",
                       fragment_order_vector(fmt::format("{} / {}", e4, v))));
      close();
    }
    in_threads_ = saved;
    frag_vars_.clear();
    return;
  }
  // Opens the loop over the thread's element pairs (e, e + 1) and captures
  // both elements' mask, address and value into tf_ok<k>, tf_p<k>, tf_v<k>;
  // returns the pair's first element index. The caller stores and closes.
  // Captures both elements of pair e0 (e0, e0 + 1) into tf_ok<k>, tf_p<k>,
  // tf_v<k>.
  // With the plan's pair_cast, tf_v<k> are the f32 operands of the stored
  // value's cast (the caller converts the pair with tf::cast_pack2).
  const bool pair_cast = plan->form == EpilogueForm::Staged && plan->pair_cast;
  auto capture_pair = [&](const std::string& t, const std::string& e0) {
    line(fmt::format("bool tf_ok0 = false, tf_ok1 = false;"));
    line(fmt::format("{0}* tf_p0 = nullptr; {0}* tf_p1 = nullptr; {1} tf_v0{{}}, tf_v1{{}};", t,
                     pair_cast ? "float" : t));
    for (int half = 0; half < 2; ++half) {
      frag_e_ = half == 0 ? e0 : "(" + e0 + " + 1)";
      open("");
      line(fmt::format("const int {} = {}.row({});", var(op->var), f, frag_e_));
      line(fmt::format("const int {} = {}.col({});", var(inner->var), f, frag_e_));
      capture_store_ = half;
      capture_uncast_ = pair_cast;
      walk(op->body);
      capture_store_ = -1;
      capture_uncast_ = false;
      close();
    }
    frag_e_ = e0;
  };
  auto open_pair_loop = [&](const std::string& t) {
    line("#pragma unroll");
    open(fmt::format("for (int {} = 0; {} < decltype({})::kElems; {} += 2)", frag_e_, frag_e_, f,
                     frag_e_));
    const std::string e0 = frag_e_;
    capture_pair(t, e0);
    return e0;
  };
  // The copy-out of a staged epilogue recomputes the store's address and
  // mask: the nest's lets they read (directly or through other lets).
  const std::vector<const LetStmtNode*>& nest_lets = nest.lets;
  const std::vector<bool>& address_let = nest.address_let;
  if (plan->form == EpilogueForm::Staged) {
    const std::string t = cuda_type(store->buffer.dtype());
    const int64_t out_bytes = dtype_size(store->buffer.dtype());
    const int64_t pitch = plan->pitch;
    const int64_t vec = 16 / out_bytes;
    const int64_t rows = const_of(frag->shape[0], "a fragment extent");
    const int64_t cols = const_of(frag->shape[1], "a fragment extent");
    const bool tma = plan->tma_store >= 0;
    // Per-warp slabs stored by TMA boxes from each warp's lane 0.
    const bool slab_tma = tma && plan->per_warp;
    const int64_t warp_bytes = int64_t{plan->slab_buffers} * kWarpSlabBytes;
    if (slab_tma)
      line(fmt::format("// epilogue staged per warp ({} x {} {}: each MMA warp its 16-row slabs, 64 "
                       "columns at a time, in {} of its own at shared offset {}), "
                       "each slab stored by a TMA box (tf_map{}) from the warp's lane 0",
                       rows, cols, t, warp_slab_buffers_words(plan->slab_buffers), plan->offset,
                       plan->tma_store));
    else if (tma)
      line(fmt::format("// epilogue staged in shared memory ({} x {} {}, 128-byte swizzled strips of "
                       "64 columns), stored by TMA (tf_map{})",
                       rows, cols, t, plan->tma_store));
    else if (plan->per_warp)
      line(fmt::format("// epilogue staged per warp ({} x {} {}: each MMA warp its 16-row slabs, 64 "
                       "columns at a time, in a {}-byte buffer of its own at shared offset {}), "
                       "stored in {}-byte row chunks{}",
                       rows, cols, t, kWarpSlabBytes, plan->offset, 16,
                       plan->contiguous_chunks ? " (proved contiguous and aligned)" : ""));
    else
      line(fmt::format("// epilogue staged in shared memory ({} x {} {}, row pitch {}), stored in "
                       "{}-byte row chunks{}",
                       rows, cols, t, pitch, 16,
                       plan->contiguous_chunks ? " (proved contiguous and aligned)" : ""));
    // A pair of values as the 32 bits of two 16-bit elements, the first in
    // the low half.
    const std::string packed = pair_cast ? fmt::format("tf::cast_pack2<{}>(tf_v0, tf_v1)", t)
                                         : "tf::pack_pair(tf_v0, tf_v1)";
    line(plan->per_warp
             ? fmt::format("const unsigned char* tf_es = tf_smem + {} + (tf_tid / 32) * {};  // "
                           "this warp's buffer{}",
                           plan->offset, warp_bytes, plan->slab_buffers > 1 ? "s" : "")
         : plan->team_stride > 0
             ? fmt::format("{0}* tf_es = reinterpret_cast<{0}*>(tf_smem + {1} + tf_team * {2});  "
                           "// this team's region",
                           t, plan->offset, plan->team_stride)
         : plan->offset > 0
             ? fmt::format("{0}* tf_es = reinterpret_cast<{0}*>(tf_smem + {1});", t, plan->offset)
             : fmt::format("{0}* tf_es = reinterpret_cast<{0}*>(tf_smem);", t));
    if (tma && !slab_tma) {
      // The last tile's TMA stores read this tile: the issuing thread waits
      // for them, the team at the barrier.
      line(fmt::format("if ({} == 0) tf::bulk_wait_read<0>();  // the last tile's TMA stores "
                       "have read the staged tile",
                       tid_sym_));
      line(block_barrier_);
    }
    // A per-warp epilogue stages and stores slab by slab: this opens the
    // slab loop, which the copy-out closes.
    const std::string slab = plan->per_warp ? "tf_s" + std::to_string(tmp_++) : "";
    TF_CHECK(!plan->per_warp || plan->stmatrix,
             "cuda printer: a per-warp staged epilogue without stmatrix");
    if (plan->stmatrix) {
      // Four pairs an stmatrix.x4: elements e8 .. e8 + 7 (WgmmaTile::stsm_row/col),
      // those of slab `slab` in a per-warp epilogue.
      const std::string e8 = frag_e_;
      line("const unsigned tf_esa = tf::smem_addr(tf_es);");
      line("#pragma unroll");
      if (plan->per_warp) {
        open(fmt::format("for (int {0} = 0; {0} < decltype({1})::kSlabs; ++{0})", slab, f));
        if (split_tail_mid_) {
          // The split tail: half 0's slabs went out while half 1's tail ran.
          open(fmt::format("if ({} == decltype({})::kSlabs / 2)", slab, f));
          split_tail_mid_();
          close();
          split_tail_mid_ = nullptr;
        }
        if (slab_tma) {
          // The slab's buffer, once the box last stored from it has been
          // read. With two buffers the warp's only other pending group is
          // the last slab's, from the other buffer (none before the first
          // slab). With B > 2, slab s < B takes a buffer the first slab's
          // wait emptied, and slab s >= B the one slab s - B's box read,
          // which B - 1 boxes have followed.
          const int buffers = plan->slab_buffers;
          line(buffers > 1 ? fmt::format("const unsigned tf_esb = tf_esa + ({} % {}) * {};", slab,
                                         buffers, kWarpSlabBytes)
                           : std::string("const unsigned tf_esb = tf_esa;"));
          open(fmt::format("if ({} % 32 == 0)", tid_sym_));
          if (buffers == 2)
            line(fmt::format("if ({} == 0) tf::bulk_wait_read<0>(); else tf::bulk_wait_read<1>();",
                             slab));
          else if (buffers > 2)
            line(fmt::format("if ({0} == 0) tf::bulk_wait_read<0>(); else if ({0} >= {1}) "
                             "tf::bulk_wait_read<{2}>();",
                             slab, buffers, buffers - 1));
          else
            line("tf::bulk_wait_read<0>();");
          close();
          line("__syncwarp();");
        }
        line("#pragma unroll");
        open(fmt::format("for (int {0} = {1} * 32; {0} < {1} * 32 + 32; {0} += 8)", e8, slab));
      } else {
        open(fmt::format("for (int {0} = 0; {0} < decltype({1})::kElems; {0} += 8)", e8, f));
      }
      line("unsigned tf_q[4];");
      line("#pragma unroll");
      open("for (int tf_pp = 0; tf_pp < 4; ++tf_pp)");
      const std::string e0 = tmp("tf_e");
      line(fmt::format("const int {} = {} + 2 * tf_pp;", e0, e8));
      capture_pair(t, e0);
      line("(void)tf_ok0; (void)tf_ok1; (void)tf_p0; (void)tf_p1;");
      line("tf_q[tf_pp] = " + packed + ";");
      close();
      if (plan->per_warp)
        line(fmt::format("tf::stmatrix_x4({} + {}.slab_stsm_offset({}), tf_q[0], tf_q[1], "
                         "tf_q[2], tf_q[3]);",
                         slab_tma ? "tf_esb" : "tf_esa", f, e8));
      else if (tma)  // (an 8-element row of a matrix is one 16-byte chunk of a strip)
        line(fmt::format("tf::stmatrix_x4(tf_esa + tf::mn_swizzled<{2}, {3}, {4}>({0}.stsm_row({1}), "
                         "{0}.stsm_col({1})) * {4}, tf_q[0], tf_q[1], tf_q[2], tf_q[3]);",
                         f, e8, rows, cols, out_bytes));
      else
        line(fmt::format(
            "tf::stmatrix_x4(tf_esa + ({0}.stsm_row({1}) * {2} + {0}.stsm_col({1})) * {3}, "
            "tf_q[0], tf_q[1], tf_q[2], tf_q[3]);",
            f, e8, pitch, out_bytes));
      close();
    } else {
      const std::string e0 = open_pair_loop(t);
      line("(void)tf_ok0; (void)tf_ok1; (void)tf_p0; (void)tf_p1;");
      if (pair_cast)
        line(fmt::format("*reinterpret_cast<unsigned*>(&tf_es[{0}.row({1}) * {2} + {0}.col({1})]) "
                         "= {3};",
                         f, e0, pitch, packed));
      else
        line(fmt::format("tf::store_pair(&tf_es[{0}.row({1}) * {2} + {0}.col({1})], tf_v0, tf_v1);",
                         f, e0, pitch));
      close();
    }
    // (The frag name, for the per-warp slab's rows and columns below.)
    const std::string frag_name = f;
    if (slab_tma) line("tf::fence_async_proxy();  // the slab, for the TMA store's reads");
    line(plan->per_warp ? std::string("__syncwarp();") : block_barrier_);
    // The nest's row and column vars bound to `row` and `col`, and the lets
    // the store's address and mask read (in the current block).
    auto bind_store_vars = [&](const std::string& row, const std::string& col) {
      line(fmt::format("const int {} = {};", var(op->var), row));
      line(fmt::format("const int {} = {};", var(inner->var), col));
      for (size_t i = 0; i < nest_lets.size(); ++i)
        if (address_let[i])
          line(fmt::format("const {} {} = {};", cuda_type(nest_lets[i]->var.dtype()),
                           var(nest_lets[i]->var), expr(nest_lets[i]->value)));
    };
    if (slab_tma) {
      // Lane 0 stores the slab by one box at the store's origin (the row
      // and column vars 0) plus the slab's, a bulk group of its own.
      TF_CHECK(store->indices.size() == 2,
               "cuda printer: a TMA-stored epilogue that is not a 2-D stmatrix tile");
      frag_ = nullptr;
      open(fmt::format("if ({} % 32 == 0)", tid_sym_));
      bind_store_vars("0", "0");
      line(fmt::format("tf::tma_store_2d(&tf_map{}, tf_esb, static_cast<int>({}) + "
                       "{}.slab_col({}), static_cast<int>({}) + {}.slab_row({}));",
                       plan->tma_store, expr(store->indices[1]), frag_name, slab,
                       expr(store->indices[0]), frag_name, slab));
      line("tf::bulk_commit();");
      close();
      close();  // the slab loop
      bulk_stores_ = true;
      warp_bulk_stores_ = true;
      in_threads_ = saved;
      frag_vars_.clear();
      return;
    }
    if (tma) {
      // One thread issues a box a strip at the store's origin (the row and
      // column vars 0) and commits them as one bulk group.
      TF_CHECK(plan->stmatrix && store->indices.size() == 2,
               "cuda printer: a TMA-stored epilogue that is not a 2-D stmatrix tile");
      frag_ = nullptr;
      open(fmt::format("if ({} == 0)", tid_sym_));
      bind_store_vars("0", "0");
      const int64_t strip_cols = 128 / out_bytes;
      for (int64_t s = 0; s < cols / strip_cols; ++s)
        line(fmt::format("tf::tma_store_2d(&tf_map{}, tf_esa + {}, static_cast<int>({}) + {}, "
                         "static_cast<int>({}));",
                         plan->tma_store, s * rows * 128, expr(store->indices[1]), s * strip_cols,
                         expr(store->indices[0])));
      line("tf::bulk_commit();");
      close();
      bulk_stores_ = true;
      in_threads_ = saved;
      frag_vars_.clear();
      return;
    }
    // The copy-out: 16-byte row chunks, each from tf_src at row tf_row,
    // columns tf_col .. tf_col + vec - 1 of the tile.
    frag_ = nullptr;  // (the fragment is not read here)
    // The store's address and mask at column tf_col + l of row tf_row,
    // assigned by `assign` (given the mask and the address) in a block of
    // their own.
    auto at_column = [&](int64_t l, const std::function<void(const std::string&,
                                                              const std::string&)>& assign) {
      open("");
      bind_store_vars("tf_row", l == 0 ? "tf_col" : fmt::format("tf_col + {}", l));
      assign(store->mask.defined() ? expr(store->mask) : "", address(store->buffer, store->indices));
      close();
    };
    // Stores the chunk at (tf_row, tf_col) from tf_src.
    auto store_chunk = [&] {
      if (plan->contiguous_chunks && !plan->chunk_mask_varies) {
        // Proved (epilogue pass): the chunk's vec elements are consecutive
        // from a 16-byte aligned address, so one address a chunk and no
        // run-time test of it; one mask a chunk (constant along the columns
        // of each).
        at_column(0, [&](const std::string& mask, const std::string& addr) {
          const std::string st = "tf::store16(" + addr + ", tf_src);";
          line(mask.empty() ? st : "if (" + mask + ") " + st);
        });
        return;
      }
      line("bool tf_ok[" + std::to_string(vec) + "];");
      std::string all = "tf_ok[0]";
      if (plan->contiguous_chunks) {
        // Proved contiguous and aligned, masked per element.
        line(fmt::format("{}* tf_p;", t));
        for (int64_t l = 0; l < vec; ++l)
          at_column(l, [&](const std::string& mask, const std::string& addr) {
            line(fmt::format("tf_ok[{}] = {};", l, mask));
            if (l == 0) line("tf_p = " + addr + ";");
          });
        for (int64_t l = 1; l < vec; ++l) all += fmt::format(" && tf_ok[{}]", l);
        open("if (" + all + ")");
        line("tf::store16(tf_p, tf_src);");
      } else {
        // Tested per chunk: one store where the addresses are consecutive
        // from a 16-byte aligned one and every element unmasked.
        line(fmt::format("{}* tf_p[{}];", t, vec));
        for (int64_t l = 0; l < vec; ++l)
          at_column(l, [&](const std::string& mask, const std::string& addr) {
            line(fmt::format("tf_ok[{}] = {};", l, mask.empty() ? "true" : mask));
            line(fmt::format("tf_p[{}] = {};", l, addr));
          });
        for (int64_t l = 1; l < vec; ++l)
          all += fmt::format(" && tf_ok[{0}] && tf_p[{0}] == tf_p[0] + {0}", l);
        open(fmt::format("if ({} && tf::aligned16(tf_p[0]))", all));
        line("tf::store16(tf_p[0], tf_src);");
      }
      --indent_;
      line("} else {");
      ++indent_;
      line("#pragma unroll");
      open(fmt::format("for (int tf_l = 0; tf_l < {}; ++tf_l)", vec));
      line(plan->contiguous_chunks ? "if (tf_ok[tf_l]) tf_p[tf_l] = tf_src[tf_l];"
                                   : "if (tf_ok[tf_l]) *tf_p[tf_l] = tf_src[tf_l];");
      close();
      close();
    };
    if (plan->per_warp) {
      // The slab's 64 columns x 16 rows: 4 chunks a lane (WgmmaTile::slab_chunk_*).
      line("#pragma unroll");
      open("for (int tf_k = 0; tf_k < 4; ++tf_k)");
      line(fmt::format("const int tf_row = {0}.slab_row({1}) + {0}.slab_chunk_row(tf_k);", frag_name,
                       slab));
      line(fmt::format("const int tf_col = {0}.slab_col({1}) + {0}.slab_chunk_col();", frag_name,
                       slab));
      line(fmt::format("const {0}* tf_src = reinterpret_cast<const {0}*>(tf_es + "
                       "{1}.slab_chunk_offset(tf_k));",
                       t, frag_name));
      store_chunk();
      close();
      line("__syncwarp();  // the warp's reads of its buffer are done before the next slab");
      close();  // the slab loop
    } else {
      // Chunk c is row c / (cols / vec), columns (c % (cols / vec)) * vec + 0..vec-1.
      const std::string c = "tf_c" + std::to_string(tmp_++);
      thread_loop(rows * cols / vec, c, [&] {
        line(fmt::format("const int tf_row = {} / {};", c, cols / vec));
        line(fmt::format("const int tf_col = ({} % {}) * {};", c, cols / vec, vec));
        line(fmt::format("const {}* tf_src = &tf_es[tf_row * {} + tf_col];", t, pitch));
        store_chunk();
      });
    }
    in_threads_ = saved;
    frag_vars_.clear();
    return;
  }
  if (plan->form == EpilogueForm::Paired) {
    const std::string t = cuda_type(store->buffer.dtype());
    const std::string e0 = open_pair_loop(t);
    line("if (tf_ok0 && tf_ok1 && tf_p1 == tf_p0 + 1 && tf::aligned_pair(tf_p0)) {");
    line("  tf::store_pair(tf_p0, tf_v0, tf_v1);");
    line("} else {");
    line("  if (tf_ok0) *tf_p0 = tf_v0;");
    line("  if (tf_ok1) *tf_p1 = tf_v1;");
    line("}");
  } else {
    // A split-K fix-up reads each partial's vectors once, V elements a
    // 16-byte load (LaunchPlan::workspace_vector), then its elements.
    // The vectors of D groups of V elements are in flight at a time (D =
    // 64 registers' worth, less where the accumulators leave fewer than 64
    // of 160, at least one group: tf::fixup_groups; a 128x256 tile's
    // stream-K fix-up of 6-8 pieces spilled 40-200 bytes with 64, session
    // 22): each group's loads are
    // issued D groups ahead, so the fix-up's sums of one group (branches
    // on the split, where the compiler puts them) never wait for a lone
    // round trip. Measured on the H200, session 21: a form with each
    // group's loads just before its sums ran fewtiles' 4-split fix-up 3 us
    // slower than the scalar loads it replaced.
    const std::vector<const LoadNode*> wl = workspace_vector_loads(op);
    if (!wl.empty()) {
      const int v = k_.launch.workspace_vector;
      const std::string wt = cuda_type(
          k_.params[static_cast<size_t>(k_.launch.workspace_fragment_order)].buffer.dtype());
      const std::string id = std::to_string(tmp_++);
      const std::string ng = "tf_ng" + id, pd = "tf_pd" + id, g = "tf_g" + id,
                        eb = "tf_eb" + id;
      line(fmt::format("constexpr int {} = decltype({})::kElems / {};  // groups of {} elements",
                       ng, f, v, v));
      line(fmt::format(
          "constexpr int {} = tf::fixup_groups(decltype({})::kElems * int(sizeof({})) / 4, {}, "
          "{});  // groups in flight",
          pd, f, wt, wl.size(), ng));
      // (a masked load's vector is loaded under its mask, nest-invariant,
      // by a predicated load, zeros where it is false)
      std::vector<std::string> ring, at;
      for (const LoadNode* l : wl) {
        ring.push_back("tf_wr" + std::to_string(tmp_++));
        // (`{}`: the group, filled in below)
        at.push_back(fmt::format("tf::ld_vec16_if(&({})[{}], {})", workspace_slice(l->indices),
                                 fragment_order_vector("{}"),
                                 l->mask.defined() ? expr(l->mask) : "true"));
        line(fmt::format("tf::Vec16<{}>::type {}[{}];", wt, ring.back(), pd));
      }
      line("#pragma unroll");
      open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", g, pd));
      for (size_t i = 0; i < wl.size(); ++i)
        line(fmt::format("{}[{}] = {};", ring[i], g, fmt::format(fmt::runtime(at[i]), g)));
      close();
      line("#pragma unroll");
      open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", g, ng));
      for (size_t i = 0; i < wl.size(); ++i) {
        const std::string name = "tf_wv" + std::to_string(tmp_++);
        line(fmt::format("const auto {} = {}[{} % {}];", name, ring[i], g, pd));
        ws_vectors_.emplace_back(wl[i], name);
      }
      open(fmt::format("if ({} + {} < {})", g, pd, ng));
      for (size_t i = 0; i < wl.size(); ++i)
        line(fmt::format("{}[{} % {}] = {};", ring[i], g, pd,
                         fmt::format(fmt::runtime(at[i]), g + " + " + pd)));
      close();
      line(fmt::format("const int {} = {} * {};", eb, g, v));
      line("#pragma unroll");
      open(fmt::format("for (int {0} = {1}; {0} < {1} + {2}; ++{0})", frag_e_, eb, v));
    } else {
      line("#pragma unroll");
      open(fmt::format("for (int {} = 0; {} < decltype({})::kElems; ++{})", frag_e_, frag_e_, f,
                       frag_e_));
    }
    line(fmt::format("const int {} = {}.row({});", var(op->var), f, frag_e_));
    line(fmt::format("const int {} = {}.col({});", var(inner->var), f, frag_e_));
    walk(op->body);
    if (!wl.empty()) {
      close();
      ws_vectors_.clear();
    }
  }
  close();
  in_threads_ = saved;
  frag_ = nullptr;
  frag_vars_.clear();
}

void Printer::emit_parallel(const ForNode* op) {
  if (const BufferNode* frag = fragment_used(Stmt(op))) {
    emit_fragment_nest(op, frag);
    return;
  }
  if (in_threads_) {  // already distributed: every thread runs this loop itself
    open(fmt::format("for (int {} = 0; {} < {}; ++{})", var(op->var), var(op->var),
                     expr(op->extent), var(op->var)));
    if (nonneg_.holds(op->min)) nonneg_.vars.insert(op->var.get());
    stmt(op->body);
    close();
    return;
  }
  // Flatten the chain of parallel loops whose bodies are lets / checks
  // around exactly one inner parallel loop.
  std::vector<const ForNode*> chain{op};
  for (;;) {
    Stmt s = chain.back()->body;
    const ForNode* next = nullptr;
    bool only_pure = true;
    std::function<void(const Stmt&)> walk = [&](const Stmt& t) {
      if (const LetStmtNode* l = t.as<LetStmtNode>()) {
        walk(l->body);
      } else if (const SeqNode* q = t.as<SeqNode>()) {
        for (const Stmt& u : q->stmts) walk(u);
      } else if (const ForNode* f = t.as<ForNode>(); f && f->for_kind == ForKind::Parallel) {
        if (next) only_pure = false;
        next = f;
      } else if (t.as<CheckNode>()) {
      } else {
        only_pure = false;
      }
    };
    walk(s);
    if (!next || !only_pure) break;
    chain.push_back(next);
  }
  std::vector<int64_t> ext;
  int64_t total = 1;
  for (const ForNode* f : chain) {
    TF_CHECK(as_const_int(f->min) && *as_const_int(f->min) == 0,
             "cuda emitter: a parallel loop that does not start at 0");
    ext.push_back(const_of(f->extent, "a parallel extent"));
    total *= ext.back();
    nonneg_.vars.insert(f->var.get());
  }
  std::string v = "tf_v" + std::to_string(tmp_++);
  std::unordered_map<const ForNode*, std::string> coord;
  int64_t stride = total;
  for (size_t d = 0; d < chain.size(); ++d) {
    stride /= ext[d];
    std::string x = stride == 1 ? v : "(" + v + " / " + std::to_string(stride) + ")";
    if (d > 0) x += " % " + std::to_string(ext[d]);
    coord[chain[d]] = x;
  }
  thread_loop(total, v, [&] {
    std::function<void(const Stmt&)> walk = [&](const Stmt& t) {
      if (const ForNode* f = t.as<ForNode>(); f && coord.count(f)) {
        line(fmt::format("const int {} = {};", var(f->var), coord.at(f)));
        walk(f->body);
      } else if (const LetStmtNode* l = t.as<LetStmtNode>()) {
        if (nonneg_.holds(l->value)) nonneg_.vars.insert(l->var.get());
        line(fmt::format("const {} {} = {};", cuda_type(l->var.dtype()), var(l->var),
                         expr(l->value)));
        walk(l->body);
      } else if (const SeqNode* q = t.as<SeqNode>()) {
        for (const Stmt& u : q->stmts) walk(u);
      } else {
        stmt(t);
      }
    };
    walk(Stmt(op));
  });
}

void Printer::emit_for(const ForNode* op) {
  switch (op->for_kind) {
    case ForKind::Pipelined:
      emit_pipelined(op);
      // (the block timeline: a main loop's end; a warp-specialized loop's
      // MMA warps marked it after their last wgmma wait, ws_consumer_loop)
      if (const auto* plan = std::get_if<tir::PipelinePlan>(&op->plan);
          plan == nullptr || plan->form != tir::PipelineForm::WarpSpecialized)
        timeline_loop_end();
      return;
    case ForKind::Parallel:
      emit_parallel(op);
      return;
    case ForKind::Unrolled:
      line("#pragma unroll");
      [[fallthrough]];
    case ForKind::Serial: {
      const std::string t = cuda_type(op->var.dtype()), v = var(op->var);
      if (nonneg_.holds(op->min)) nonneg_.vars.insert(op->var.get());
      open(fmt::format("for ({} {} = {}; {} < {} + {}; ++{})", t, v, expr(op->min), v,
                       expr(op->min), expr(op->extent), v));
      ++loop_depth_;
      stmt(op->body);
      --loop_depth_;
      close();
      return;
    }
  }
}

void Printer::stmt(const Stmt& s) {
  if (!s.defined()) return;
  check_stack("a Tile IR statement (CUDA emitter)");
  switch (s.kind()) {
    case StmtKind::For:
      emit_for(s.as<ForNode>());
      return;
    case StmtKind::IfThenElse: {
      const IfThenElseNode* op = s.as<IfThenElseNode>();
      open("if (" + expr(op->cond) + ")");
      stmt(op->then_case);
      if (op->else_case.defined()) {
        --indent_;
        line("} else {");
        ++indent_;
        stmt(op->else_case);
      }
      close();
      return;
    }
    case StmtKind::LetStmt: {
      const LetStmtNode* op = s.as<LetStmtNode>();
      if (nonneg_.holds(op->value)) nonneg_.vars.insert(op->var.get());
      line(fmt::format("const {} {} = {};", cuda_type(op->var.dtype()), var(op->var),
                       expr(op->value)));
      stmt(op->body);
      return;
    }
    case StmtKind::Store: {
      const StoreNode* op = s.as<StoreNode>();
      if (capture_store_ >= 0) {
        const int k = capture_store_;
        line(fmt::format("tf_ok{} = {};", k, op->mask.defined() ? expr(op->mask) : "true"));
        line(fmt::format("tf_p{} = {};", k, address(op->buffer, op->indices)));
        // (pair_cast: the cast's f32 operand; the caller converts the pair.)
        const CastNode* cast = op->value.as<CastNode>();
        TF_CHECK(!capture_uncast_ || cast != nullptr,
                 "cuda printer: a pair_cast epilogue whose stored value is not a cast");
        line(fmt::format("tf_v{} = {};", k, expr(capture_uncast_ ? cast->value : op->value)));
        return;
      }
      std::string st = element(op->buffer, op->indices) + " = " + expr(op->value) + ";";
      line(op->mask.defined() ? "if (" + expr(op->mask) + ") " + st : st);
      return;
    }
    case StmtKind::HookStore:
      TF_CHECK(false, "cuda emitter: a store_output hook was not inlined");
      return;
    case StmtKind::Copy: {
      // A copy outside a pipelined loop's producer is synchronous (sync put
      // the barriers around it).
      const CopyNode* op = s.as<CopyNode>();
      emit_copy(op, false);
      if (result_.copies.back().mode == "cp_async") {
        line("tf::cp_async_commit();");
        line("tf::cp_async_wait<0>();");
      }
      return;
    }
    case StmtKind::Gemm: {
      const GemmNode* op = s.as<GemmNode>();
      TF_CHECK(!op->trans_a && !op->trans_b && op->a.prefix.empty() && op->b.prefix.empty() &&
                   op->c.prefix.empty(),
               "cuda emitter: a transposed or prefixed gemm operand");
      auto tile = [&](const Buffer& b) {
        return buf(b) + (shared(b).stages > 1 ? " + (" + stage_expr_.at(b.get()) + ") * " +
                                                    std::to_string(tile_elems(b))
                                              : "");
      };
      line(fmt::format("{}.mma({}, {});", buf(op->c.buffer), tile(op->a.buffer),
                       tile(op->b.buffer)));
      return;
    }
    case StmtKind::Fill: {
      const FillNode* op = s.as<FillNode>();
      if (op->buffer.scope() == MemScope::Fragment) {
        line(fmt::format("{}.fill({});", buf(op->buffer), expr(op->value)));
      } else if (op->buffer.scope() == MemScope::Local) {
        line(fmt::format("for (int tf_f = 0; tf_f < {}; ++tf_f) {}[tf_f] = {};", const_numel(op->buffer),
                         buf(op->buffer), expr(op->value)));
      } else {
        TF_CHECK(op->buffer.scope() == MemScope::Shared, "cuda emitter: fill of a global buffer");
        const SharedPlan& info = shared(op->buffer);
        std::string v = "tf_v" + std::to_string(tmp_++);
        std::string val = expr(op->value);
        thread_loop(tile_elems(op->buffer) * info.stages, v,
                    [&] { line(fmt::format("{}[{}] = {};", buf(op->buffer), v, val)); });
      }
      return;
    }
    case StmtKind::Check:
      emit_check(s.as<CheckNode>());
      return;
    case StmtKind::Barrier:
      line(barrier_for(s.as<BarrierNode>()->barrier_kind));
      return;
    case StmtKind::Seq:
      for (const Stmt& t : s.as<SeqNode>()->stmts) stmt(t);
      return;
    case StmtKind::Allocate:
      emit_alloc(s.as<AllocateNode>());
      return;
    case StmtKind::Evaluate:
      line("(void)(" + expr(s.as<EvaluateNode>()->value) + ");");
      return;
    case StmtKind::LastArrival: {
      // tf::last_arrival (tf_status.cuh): fence, meet, thread 0's
      // atomicAdd, the answer shared by bar.red.or, fence. Over the threads
      // that run this part: the MMA warpgroups after a warp-specialized
      // loop (block_barrier_ is then theirs), else the whole block.
      const LastArrivalNode* op = s.as<LastArrivalNode>();
      TF_CHECK(!in_threads_, "cuda printer: if_last_arrival inside a thread-distributed loop");
      if (k_.launch.split_k_cluster) {
        // (LaunchPlan::split_k_cluster) Every block runs the body, in the
        // MMA warps whose elements it sums: warp w in the block of split
        // w % S (the grid's last var, the cluster rank).
        const int s_count = k_.launch.cluster_size;
        line("// split-K in the cluster: every block's partial tile is in its shared memory");
        line("tf::cluster_sync();");
        open(fmt::format("if ({} / 32 % {} == {})", tid_sym_, s_count, var(k_.grid.back().var)));
        stmt(op->body);
        close();
        line("tf::cluster_sync();  // no block exits while another reads its partial tile");
        return;
      }
      const bool consumers = block_barrier_ == barrier_for(BarrierKind::Consumers);
      open(fmt::format("if (tf::last_arrival<{}>(&{}, {}, {}))", consumers ? consumer_threads_ : 0,
                       element(op->counter, op->indices), expr(op->count), tid_sym_));
      stmt(op->body);
      close();
      return;
    }
  }
}

}  // namespace tilefuse::codegen
