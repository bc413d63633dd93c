// The printer's copies (cp.async, register-staged, TMA) and the pipelined
// loop forms (printer.h; PipelineForm in tir/plan.h).
#include <fmt/format.h>

#include <unordered_set>

#include "codegen/cuda/printer.h"
#include "core/error.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: the printer reads the Tile IR

void Printer::emit_copy(const CopyNode* op, bool pipelined, RegPhase phase,
                        const std::string& regs) {
  const Buffer& dst = op->dst;
  TF_CHECK(dst.scope() == MemScope::Shared || dst.scope() == MemScope::Local,
           "cuda printer: a copy into " + std::string(mem_scope_name(dst.scope())) + " memory");
  TF_CHECK(op->plan.has_value(), "cuda printer: copy into " + dst.name() + " has no CopyPlan");
  const CopyPlan& plan = *op->plan;
  TF_CHECK(plan.mechanism == CopyMechanism::CpAsync || plan.mechanism == CopyMechanism::Register,
           "cuda printer: a " + std::string(copy_mechanism_name(plan.mechanism)) +
               " copy into " + dst.name() + " outside a warp-specialized producer");
  const std::string mode(copy_mechanism_name(plan.mechanism));
  int64_t width = plan.width;
  std::vector<int64_t> ext;
  for (const Expr& e : op->extents) ext.push_back(const_of(e, "a copy extent"));
  const int64_t elem = dtype_size(dst.dtype());
  const LoadNode* src = op->value.as<LoadNode>();
  int64_t vec = 1;
  if (mode == "cp_async") {
    vec = width / elem;
    bool ok =
        src && dst.scope() == MemScope::Shared && vec >= 1 && width % elem == 0 && !ext.empty() &&
        ext.back() % vec == 0 && (width == 4 || width == 8 || width == 16) &&
        (!src->other.defined() || (as_const_int(src->other) && *as_const_int(src->other) == 0));
    TF_CHECK(ok, "cuda printer: copy into " + dst.name() + " cannot be issued as cp.async");
  }
  // A register-staged copy may read its main source a vector at a time.
  const bool vectorized = mode == "register" && plan.vector_load.defined();
  if (vectorized) vec = width / dtype_size(plan.vector_load.dtype());
  TF_CHECK(phase == RegPhase::kWhole || mode == "register",
           "cuda printer: only register-staged copies are split");
  if (phase != RegPhase::kStore && record_copies_)
    result_.copies.push_back(
        {dst.name(), mode, width, pipelined ? shared(dst).stages : 1, plan.cache_all, false});

  int64_t total = 1;
  for (int64_t e : ext) total *= e;
  total /= vec;
  line(fmt::format("// copy {} <- {} ({}{} B){}", dst.name(), src ? src->buffer.name() : "prologue",
                   mode == "cp_async" ? "cp.async " : "register-staged, ", width,
                   phase == RegPhase::kLoad    ? ": loads into registers"
                   : phase == RegPhase::kStore ? ": registers to shared memory"
                                               : ""));
  std::string v = "tf_v" + std::to_string(tmp_++);
  for (const Var& cv : op->vars) nonneg_.vars.insert(cv.get());
  thread_loop(total, v, [&] {
    std::vector<std::string> decl = copy_var_decls(op, ext, vec, v);
    if (vectorized) {
      emit_vector_lanes(op, vec, decl, phase, regs);
      return;
    }
    for (const std::string& s : decl) line(s);
    if (mode == "cp_async") {
      std::string pred = src->mask.defined() ? expr(src->mask) : "true";
      line("const bool tf_pred = " + pred + ";");
      line(fmt::format("tf::cp_async_{}{}({}, tf_pred ? static_cast<const void*>({}) : {}, tf_pred);",
                       width, plan.cache_all && width == 16 ? "_ca" : "",
                       address(dst, op->dst_indices), address(src->buffer, src->indices),
                       buf(src->buffer)));
    } else if (phase == RegPhase::kLoad) {
      line(fmt::format("{}[{}] = {};", regs, trip_var_, expr(op->value)));
    } else if (phase == RegPhase::kStore) {
      line(fmt::format("{} = {}[{}];", element(dst, op->dst_indices), regs, trip_var_));
    } else {
      line(element(dst, op->dst_indices) + " = " + expr(op->value) + ";");
    }
  });
}

std::vector<std::string> Printer::copy_var_decls(const CopyNode* op,
                                                 const std::vector<int64_t>& ext, int64_t vec,
                                                 const std::string& v) {
  // Decompose the flat vector index; the innermost var steps by vec.
  int64_t stride = 1;
  std::vector<std::string> decl(ext.size());
  for (size_t d = ext.size(); d-- > 0;) {
    const int64_t e = d + 1 == ext.size() ? ext[d] / vec : ext[d];
    std::string x = stride == 1 ? v : "(" + v + " / " + std::to_string(stride) + ")";
    if (d > 0) x += " % " + std::to_string(e);
    if (d + 1 == ext.size() && vec > 1) x = "(" + x + ") * " + std::to_string(vec);
    decl[d] = fmt::format("const int {} = {};", var(op->vars[d]), x);
    stride *= e;
  }
  return decl;
}

void Printer::emit_hoisted_setup(const CopyNode* op, const std::string& id,
                                 const std::string& loop_min) {
  (void)loop_min;
  const CopyPlan& plan = *op->plan;
  const LoadNode* src = op->value.as<LoadNode>();
  std::vector<int64_t> ext;
  for (const Expr& e : op->extents) ext.push_back(const_of(e, "a copy extent"));
  const int64_t vec = plan.width / dtype_size(op->dst.dtype());
  int64_t total = 1;
  for (int64_t e : ext) total *= e;
  total /= vec;
  const int64_t rounds = total / threads_;
  line(fmt::format("// copy {} <- {}: each slot's source address and size once, before the loop "
                   "(hoist_copy_addresses)",
                   op->dst.name(), src->buffer.name()));
  line(fmt::format("const char* tf_hs{}[{}];", id, rounds));
  line(fmt::format("unsigned tf_hz{}[{}];", id, rounds));
  for (const Var& cv : op->vars) nonneg_.vars.insert(cv.get());
  const std::string v = tmp("tf_v");
  thread_loop(total, v, [&] {
    for (const std::string& d : copy_var_decls(op, ext, vec, v)) line(d);
    line("const bool tf_ok = " +
         (plan.hoisted_mask.defined() ? expr(plan.hoisted_mask) : std::string("true")) + ";");
    line(fmt::format("tf_hs{}[{}] = reinterpret_cast<const char*>(tf_ok ? {} : {});", id,
                     trip_var_, address(src->buffer, plan.hoisted_indices), buf(src->buffer)));
    line(fmt::format("tf_hz{}[{}] = tf_ok ? {}u : 0u;", id, trip_var_, plan.width));
  });
  line(fmt::format("const unsigned tf_hd{} = tf::smem_addr({});", id, buf(op->dst)));
  if (plan.cache_by_repeats) {
    // hoist_copy_addresses marks only a copy of 2+ rounds whose slots
    // divide evenly over the producer threads (every lane runs every slot,
    // as the ballot needs) and whose slot 1 reads slot 0's column chunk.
    TF_CHECK(rounds >= 2 && rounds * threads_ == total,
             "cuda printer: l1_by_repeats on a copy of fewer than 2 rounds or with idle lanes");
    line(fmt::format("// the tile's cache level for {}, per warp (l1_by_repeats): .ca where 16+ "
                     "lanes read one source in their slots 0 and 1 (repeated rows), else .cg",
                     op->dst.name()));
    line(fmt::format("const bool tf_hl{0} = tf::l1_by_repeated_rows(tf_hs{0}[0], tf_hz{0}[0], "
                     "tf_hs{0}[1], tf_hz{0}[1]);",
                     id));
  }
}

void Printer::emit_hoisted_copy(const CopyNode* op, const std::string& id, const std::string& k,
                                const std::string& loop_min) {
  const CopyPlan& plan = *op->plan;
  const LoadNode* src = op->value.as<LoadNode>();
  std::vector<int64_t> ext;
  for (const Expr& e : op->extents) ext.push_back(const_of(e, "a copy extent"));
  const int64_t elem = dtype_size(op->dst.dtype());
  const int64_t vec = plan.width / elem;
  int64_t total = 1;
  for (int64_t e : ext) total *= e;
  total /= vec;
  result_.copies.push_back(
      {op->dst.name(), "cp_async", plan.width, shared(op->dst).stages, plan.cache_all, true,
       plan.cache_by_repeats});
  line(fmt::format("// copy {} <- {} (cp.async{} {} B, hoisted addresses: +{} bytes an iteration)",
                   op->dst.name(), src->buffer.name(),
                   plan.cache_by_repeats ? " .ca or .cg by the tile's repeats,"
                   : plan.cache_all      ? ".ca"
                                         : "",
                   plan.width, plan.step * dtype_size(src->buffer.dtype())));
  const std::string v = tmp("tf_v");
  thread_loop(total, v, [&] {
    for (const std::string& d : copy_var_decls(op, ext, vec, v)) line(d);
    const std::string size =
        plan.iteration_mask.defined()
            ? fmt::format("({}) ? tf_hz{}[{}] : 0u", expr(plan.iteration_mask), id, trip_var_)
            : fmt::format("tf_hz{}[{}]", id, trip_var_);
    const std::string dst = fmt::format("tf_hd{} + ({}) * {}", id,
                                        shared_offset(op->dst, op->dst_indices), elem);
    const std::string from =
        fmt::format("tf_hs{}[{}] + (static_cast<long long>({}) - ({})) * {}ll", id, trip_var_, k,
                    loop_min, plan.step * dtype_size(src->buffer.dtype()));
    if (plan.cache_by_repeats)
      line(fmt::format("tf::cp_async_16_l1_if({}, {}, {}, tf_hl{});", dst, from, size, id));
    else
      line(fmt::format("tf::cp_async_sized<{}, {}>({}, {}, {});", plan.width,
                       plan.cache_all ? "true" : "false", dst, from, size));
  });
}

// One vector of a vectorized register copy: the main load `vload` read
// `vec` elements at a time into tf_vl (masked off: `other` in every lane),
// then each lane's element computed and stored (or kept in `regs`).
// `decl` declares the copy vars; the inner one becomes lane 0 (tf_j0).
void Printer::emit_vector_lanes(const CopyNode* op, int64_t vec, std::vector<std::string> decl,
                                RegPhase phase, const std::string& regs) {
  const LoadNode* vload = op->plan->vector_load.as<LoadNode>();
  const std::string jname = var(op->vars.back());
  const std::string inner = decl.back();
  const size_t eq = inner.find(" = ");
  decl.back() = "const int tf_j0 = " + inner.substr(eq + 3);
  for (const std::string& s : decl) line(s);
  const std::string lane = "tf_l" + std::to_string(tmp_++);
  const std::string vl = "tf_vl" + std::to_string(tmp_++);
  if (phase != RegPhase::kStore) {
    line(fmt::format("{} {}[{}];", cuda_type(vload->buffer.dtype()), vl, vec));
    open("");
    line(fmt::format("const int {} = tf_j0;", jname));
    const std::string other =
        vload->other.defined() ? expr(vload->other) : literal(make_const(vload->buffer.dtype(), 0));
    const std::string ld = fmt::format("tf::load_vector<{}>({}, {});", vec, vl,
                                       address(vload->buffer, vload->indices));
    if (vload->mask.defined()) {
      line(fmt::format("if ({}) {{", expr(vload->mask)));
      line("  " + ld);
      line("} else {");
      line(fmt::format("  for (int tf_k = 0; tf_k < {}; ++tf_k) {}[tf_k] = {};", vec, vl, other));
      line("}");
    } else {
      line(ld);
    }
    close();
  }
  line("#pragma unroll");
  open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", lane, vec));
  line(fmt::format("const int {} = tf_j0 + {};", jname, lane));
  vector_load_ = op->plan->vector_load;
  vector_lane_ = vl + "[" + lane + "]";
  const std::string slot = fmt::format("{} * {} + {}", trip_var_, vec, lane);
  if (phase == RegPhase::kLoad) {
    line(fmt::format("{}[{}] = {};", regs, slot, expr(op->value)));
  } else if (phase == RegPhase::kStore) {
    line(fmt::format("{} = {}[{}];", element(op->dst, op->dst_indices), regs, slot));
  } else {
    line(element(op->dst, op->dst_indices) + " = " + expr(op->value) + ";");
  }
  vector_load_ = Expr();
  close();
}

void Printer::emit_tma_copy(const CopyNode* op) {
  const CopyPlan& t = *op->plan;
  const SharedPlan& si = shared(op->dst);
  const int64_t stage_elems = tile_elems(op->dst);
  result_.copies.push_back({op->dst.name(), "tma", 16, si.stages});
  if (t.row_gather) {
    const TmaBox& o = t.boxes.at(0);
    line(fmt::format("// copy {} <- {} (TMA: one {}-byte box per gathered row, tf_map{})",
                     op->dst.name(), op->value.as<LoadNode>()->buffer.name(),
                     t.tma_bytes / t.rows, t.tensor_map));
    const std::string r = tmp("tf_g");
    open(fmt::format("for (int {0} = {1}; {0} < {2}; {0} += {3})", r, tid_sym_, t.rows,
                     threads_sym_));
    const Var& row = op->vars[0];
    nonneg_.vars.insert(row.get());
    line(fmt::format("const int {} = {};", var(row), r));
    // The row coordinate (the gathered one) is the only one reading memory;
    // a masked row reads row -1: out of bounds, zero-filled.
    std::string coords;
    for (const Expr& c : o.coords)
      coords += t.row_mask.defined() && has_load(c)
                    ? fmt::format(", ({}) ? static_cast<int>({}) : -1", expr(t.row_mask), expr(c))
                    : ", static_cast<int>(" + expr(c) + ")";
    line(fmt::format(
        "tf::tma_load<{}>(&{}[(tf_stage) * {} + {} * {}], &tf_map{}{}, &tf_full[tf_stage]);",
        o.coords.size(), buf(op->dst), stage_elems, var(row), t.row_pitch, t.tensor_map, coords));
    close();
    return;
  }
  line(fmt::format("// copy {} <- {} (TMA: {} box{} of {} bytes, tf_map{})", op->dst.name(),
                   op->value.as<LoadNode>()->buffer.name(), t.boxes.size(),
                   t.boxes.size() > 1 ? "es" : "",
                   t.tma_bytes / static_cast<int64_t>(t.boxes.size()), t.tensor_map));
  if (t.multicast) {
    // Block r of the cluster issues boxes r, r + cluster, ...: each lands in
    // every block of the cluster (mask: all of them).
    const int cluster = multicast_cluster();
    for (int r = 0; r < cluster; ++r) {
      open(r == 0 ? fmt::format("if (tf_crank == {})", r)
                  : fmt::format("else if (tf_crank == {})", r));
      for (size_t b = static_cast<size_t>(r); b < t.boxes.size(); b += static_cast<size_t>(cluster)) {
        const TmaBox& o = t.boxes[b];
        std::string coords;
        for (const Expr& c : o.coords) coords += ", static_cast<int>(" + expr(c) + ")";
        line(fmt::format("tf::tma_load_multicast<{}>(&{}[(tf_stage) * {} + {}], &tf_map{}{}, "
                         "&tf_full[tf_stage], {});",
                         o.coords.size(), buf(op->dst), stage_elems, o.smem_offset, t.tensor_map,
                         coords, (1 << cluster) - 1));
      }
      --indent_;
      line("}");
    }
    return;
  }
  for (const TmaBox& o : t.boxes) {
    std::string coords;
    for (const Expr& c : o.coords) coords += ", static_cast<int>(" + expr(c) + ")";
    line(fmt::format(
        "tf::tma_load<{}>(&{}[(tf_stage) * {} + {}], &tf_map{}{}, &tf_full[tf_stage]);",
        o.coords.size(), buf(op->dst), stage_elems, o.smem_offset, t.tensor_map, coords));
  }
}

void Printer::emit_loop_lets(const ForNode* op, const std::vector<std::pair<Var, Expr>>& lets,
                             const std::vector<Stmt>& users, const std::string& k_decl) {
  struct Uses : IRVisitor {
    std::unordered_set<const VarNode*> vars;
    using IRVisitor::visit;
    void visit(const VarNode* v) override { vars.insert(v); }
  } u;
  for (const Stmt& st : users) u.visit_stmt(st);
  std::vector<bool> keep(lets.size(), false);
  for (size_t i = lets.size(); i-- > 0;)
    if (u.vars.count(lets[i].first.get())) {
      keep[i] = true;
      u.visit_expr(lets[i].second);
    }
  if (!k_decl.empty() && u.vars.count(op->var.get())) line(k_decl);
  for (size_t i = 0; i < lets.size(); ++i)
    if (keep[i])
      line(fmt::format("const {} {} = {};", cuda_type(lets[i].first.dtype()), var(lets[i].first),
                       expr(lets[i].second)));
}

// What the producer's copies signal on a stage's `full` mbarrier: cp.async
// copies arrive when they land (one .noinc arrival per producer thread);
// register-staged ones store to shared memory, fence for the async proxy
// and arrive (release) after; TMA copies: producer thread 0 announces the
// stage's bytes (mbarrier.arrive.expect_tx, one arrival) and issues them,
// and they complete the transaction count as they land.
struct StageArrivals {
  bool async_copies = false, sync_copies = false;
  int64_t tma_bytes = 0;
};
static StageArrivals stage_arrivals(const PipelinedBody& body) {
  StageArrivals a;
  for (const CopyNode* c : body.copies) {
    if (c->plan->mechanism == CopyMechanism::Fragment) continue;  // (the MMA warps' own)
    if (c->plan->mechanism == CopyMechanism::Tma) {
      a.tma_bytes += c->plan->tma_bytes;
      continue;
    }
    (c->plan->mechanism == CopyMechanism::CpAsync ? a.async_copies : a.sync_copies) = true;
  }
  return a;
}

void Printer::ws_setup(const PipelinedBody& body, const PipelinePlan& plan) {
  const StageArrivals arr = stage_arrivals(body);
  const int stages = plan.stages, producer = plan.producer_threads;
  const int mma_threads = plan.consumer_threads * k_.launch.consumer_teams;
  const int full_count = (arr.async_copies ? producer : 0) + (arr.sync_copies ? producer : 0) +
                         (arr.tma_bytes > 0 ? 1 : 0);
  line(fmt::format(
      "// warp specialization: warpgroup {} (threads {}..{}) issues each stage's copies and "
      "signals the stage's `full` mbarrier; warpgroups 0..{} wait on it, run the stage's wgmma "
      "and release the stage through its `empty` mbarrier ({} stages)",
      mma_threads / 128, mma_threads, mma_threads + producer - 1,
      mma_threads / 128 - 1, stages));
  line(fmt::format("unsigned long long* tf_full = reinterpret_cast<unsigned long long*>(tf_smem + {});",
                   plan.mbarrier_offset));
  line(fmt::format("unsigned long long* tf_empty = tf_full + {};", stages));
  if (k_.launch.consumer_teams > 1)
    line(fmt::format("unsigned long long* tf_order = tf_empty + {};", stages));
  const int cluster = multicast_cluster();
  open("if (tf_tid == 0)");
  open(fmt::format("for (int tf_s = 0; tf_s < {}; ++tf_s)", stages));
  line(fmt::format("tf::mbar_init(&tf_full[tf_s], {});", full_count));
  if (cluster > 1)  // one arrival per MMA warp of each block of the cluster
    line(fmt::format("tf::mbar_init(&tf_empty[tf_s], kMmaThreads / 32 * {});", cluster));
  else
    line("tf::mbar_init(&tf_empty[tf_s], kMmaThreads);");
  close();
  if (k_.launch.consumer_teams > 1) {
    line("// the consumer teams' turns: team t waits on tf_order[t] before its main loop; the other "
         "team's threads arrive on it after theirs");
    line("tf::mbar_init(&tf_order[0], kMmaThreads);");
    line("tf::mbar_init(&tf_order[1], kMmaThreads);");
  }
  if (cluster > 1) line("tf::fence_mbarrier_init();");
  close();
  line(block_barrier_);
  if (cluster > 1) {
    line(fmt::format(
        "// cluster of {} blocks: each block's mbarriers are initialized before the other's "
        "multicast copies and arrivals reach them",
        cluster));
    line("tf::cluster_sync();");
    line("const unsigned tf_crank = tf::cluster_ctarank();");
  }
}

void Printer::ws_producer_loop(const ForNode* op, const PipelinedBody& body,
                               const PipelinePlan& plan, const std::string& it,
                               const std::string& base) {
  const StageArrivals arr = stage_arrivals(body);
  const std::vector<const CopyNode*>& copies = body.copies;
  const int stages = plan.stages;
  const std::string t = cuda_type(op->var.dtype());
  const std::string k = var(op->var);
  const std::string lo = expr(op->min), n = expr(op->extent);
  // The iteration's place in the stage ring: the loop's own count, or in a
  // persistent kernel the count over every tile so far (`base` + it).
  const std::string g = base.empty() ? it : "(" + base + " + " + it + ")";
  auto is_tma = [](const CopyNode* c) { return c->plan->mechanism == CopyMechanism::Tma; };
  for (const CopyNode* c : copies) stage_expr_[c->dst.get()] = "tf_stage";
  // A stage's TMA copies: thread 0 announces their bytes and issues the
  // affine boxes; each thread issues its row-gather boxes.
  auto emit_tma_copies = [&] {
    open("if (tf_ptid == 0)");
    line(fmt::format("tf::mbar_arrive_expect_tx(&tf_full[tf_stage], {});", arr.tma_bytes));
    for (const CopyNode* c : copies)
      if (is_tma(c) && !c->plan->row_gather) emit_tma_copy(c);
    close();
    for (const CopyNode* c : copies)
      if (is_tma(c) && c->plan->row_gather) emit_tma_copy(c);
  };
  // producer_start's affine lead: the TMA copies of the first stages go
  // first, in a function of their own that the loop calls for the rest.
  const int lead = plan.affine_lead;
  if (lead > 0) {
    TF_CHECK(base.empty() && lead <= stages && arr.tma_bytes > 0,
             "cuda printer: an affine lead outside a non-persistent loop with TMA copies");
    std::vector<Stmt> tma_stmts;
    for (const CopyNode* c : copies) {
      TF_CHECK(!is_tma(c) || !c->plan->row_gather,
               "cuda printer: an affine lead with row-gather TMA copies");
      if (is_tma(c)) tma_stmts.push_back(Stmt(c));
    }
    open(fmt::format("auto tf_issue_affine = [&]({} {}, int tf_stage)", t, k));
    emit_loop_lets(op, body.lets, tma_stmts);
    emit_tma_copies();
    --indent_;
    line("};");
    line(fmt::format(
        "// the affine copies of the first {} stages, before the gathered rows' addresses: their "
        "bytes stream while the index load is in flight (producer_start)",
        lead));
    const int64_t* trip = as_const_int(op->extent);
    open(trip && *trip >= lead
             ? fmt::format("for (int tf_s = 0; tf_s < {}; ++tf_s)", lead)
             : fmt::format("for (int tf_s = 0; tf_s < {} && tf_s < {}; ++tf_s)", lead, n));
    line(fmt::format("tf_issue_affine({} + tf_s, tf_s);", lo));
    close();
  }
  std::vector<Stmt> copy_stmts;
  std::unordered_map<const CopyNode*, std::string> hoisted;
  for (const CopyNode* c : copies) {
    if (c->plan->mechanism == CopyMechanism::Fragment) continue;  // (the MMA warps load it)
    if (c->plan->hoisted) {
      hoisted[c] = std::to_string(tmp_++);
      emit_hoisted_setup(c, hoisted[c], lo);
      continue;  // (its own lets are inlined into the plan)
    }
    if (lead > 0 && is_tma(c)) continue;  // (in tf_issue_affine)
    copy_stmts.push_back(Stmt(c));
  }
  open(fmt::format("auto tf_issue = [&]({} {}, int tf_stage)", t, k));
  emit_loop_lets(op, body.lets, copy_stmts);
  if (arr.tma_bytes > 0 && lead == 0) emit_tma_copies();
  for (const CopyNode* c : copies) {
    if (is_tma(c) || c->plan->mechanism == CopyMechanism::Fragment) continue;
    if (hoisted.count(c))
      emit_hoisted_copy(c, hoisted.at(c), k, lo);
    else
      emit_copy(c, true);
  }
  --indent_;
  line("};");
  open(fmt::format("for ({} {} = 0; {} < {}; ++{})", t, it, it, n, it));
  line(fmt::format("const int tf_stage = {} % {};", g, stages));
  line(fmt::format(
      "if ({0} >= {1}) tf::mbar_wait(&tf_empty[tf_stage], ({0} / {1} + 1) & 1);  // tile i - {1} "
      "released",
      g, stages));
  if (lead > 0) line(fmt::format("if ({0} >= {1}) tf_issue_affine({2} + {0}, tf_stage);", it, lead, lo));
  line(fmt::format("tf_issue({} + {}, tf_stage);", lo, it));
  if (arr.sync_copies) {
    line("tf::fence_async_proxy();");
    line("tf::mbar_arrive(&tf_full[tf_stage]);");
  }
  if (arr.async_copies) line("tf::cp_async_mbar_arrive(&tf_full[tf_stage]);");
  close();
  // (a persistent kernel's producer drains once, after its tile loop)
  if (base.empty()) ws_cluster_drain(plan, t, n);
  for (const CopyNode* cp : copies) stage_expr_.erase(cp->dst.get());
}

std::string Printer::stage_release() const {
  // In a multicast cluster each MMA warp releases the stage in every block
  // (their producers' multicast copies write both): lane r arrives on block
  // r's `empty` mbarrier, which counts kMmaThreads / 32 arrivals a block.
  const int cluster = multicast_cluster();
  return cluster > 1 ? fmt::format("tf::mbar_arrive_lane_cluster<{}>", cluster)
                     : "tf::mbar_arrive";
}

void Printer::ws_cluster_drain(const PipelinePlan& plan, const std::string& type,
                               const std::string& total) {
  if (multicast_cluster() <= 1) return;
  // The other block's MMA warps arrive on this block's `empty` mbarriers
  // up to their last stage: the block stays until they have.
  const int stages = plan.stages;
  line("// the other blocks of the cluster release their last stages here before it exits");
  open(fmt::format("for ({0} tf_g = ({1} > {2} ? {1} - {2} : 0); tf_g < {1}; ++tf_g)", type,
                   total, stages));
  line(fmt::format("tf::mbar_wait(&tf_empty[tf_g % {0}], (tf_g / {0}) & 1);", stages));
  close();
}

const CopyNode* Printer::fragment_copy(const PipelinedBody& body) {
  for (const CopyNode* c : body.copies)
    if (c->plan && c->plan->mechanism == CopyMechanism::Fragment) return c;
  return nullptr;
}

void Printer::ra_declare() {
  line(fmt::format("unsigned tf_ra[{}][16];  // A's fragments, a k-tile each (register_a)",
                   kRegisterASlots));
  line("const char* tf_rap[2];  // the source of this thread's two fragment rows");
  line("bool tf_rao[2];  // ... and whether each is read (masked rows hold zeros)");
}

// The one global load the fragment rows' addresses read (a gather's
// index), or undefined when they read none or several.
Expr Printer::fragment_row_load(const CopyNode* a) {
  std::vector<const LoadNode*> loads = loads_in(a->plan->hoisted_indices.at(0));
  if (a->plan->hoisted_mask.defined())
    for (const LoadNode* l : loads_in(a->plan->hoisted_mask)) loads.push_back(l);
  for (const Stmt& s : a->plan->row_checks) {
    const CheckNode* k = s.as<CheckNode>();
    for (const LoadNode* l : loads_in(k->cond)) loads.push_back(l);
    for (const Expr& e : k->args)
      for (const LoadNode* l : loads_in(e)) loads.push_back(l);
  }
  Expr one;
  for (const LoadNode* l : loads) {
    if (!one.defined()) one = Expr(l);
    else if (!structural_equal(Expr(l), one)) return Expr();
  }
  return one;
}

void Printer::ra_each_row(const CopyNode* a, const std::string& acc, const std::string& loaded,
                          const std::function<void()>& body) {
  for (const Var& cv : a->vars) nonneg_.vars.insert(cv.get());
  line("#pragma unroll");
  open("for (int tf_h = 0; tf_h < 2; ++tf_h)");
  line(fmt::format("const int {} = {}.fragment_row(tf_h);", var(a->vars[0]), acc));
  line(fmt::format("const int {} = 0;", var(a->vars[1])));
  // (the row's index, loaded ahead into `loaded`[tf_h]: ra_preload)
  const Expr saved_load = vector_load_;
  const std::string saved_lane = vector_lane_;
  if (!loaded.empty()) {
    vector_load_ = fragment_row_load(a);
    vector_lane_ = loaded + "[tf_h]";
  }
  body();
  vector_load_ = saved_load;
  vector_lane_ = saved_lane;
  close();
}

void Printer::ra_rows(const CopyNode* a, const std::string& acc, const std::string& p,
                      const std::string& ok, const std::string& loaded) {
  const CopyPlan& plan = *a->plan;
  const LoadNode* src = a->value.as<LoadNode>();
  TF_CHECK(src && a->vars.size() == 2, "cuda printer: a fragment copy that is not a 2-D load");
  ra_each_row(a, acc, loaded, [&] {
    line("const bool tf_ok = " +
         (plan.hoisted_mask.defined() ? expr(plan.hoisted_mask) : std::string("true")) + ";");
    line(fmt::format("{}[tf_h] = reinterpret_cast<const char*>(tf_ok ? {} : {}) + "
                     "{}.fragment_chunk_bytes();",
                     p, address(src->buffer, plan.hoisted_indices), buf(src->buffer), acc));
    line(fmt::format("{}[tf_h] = tf_ok;", ok));
  });
}

void Printer::ra_checks(const CopyNode* a, const std::string& acc, const std::string& loaded,
                        bool cold) {
  if (a->plan->row_checks.empty()) return;
  line(cold ? "// the index checks of this thread's rows (CopyPlan::row_checks), reported out of "
              "line (tf::report_cold)"
            : "// the index checks of this thread's rows (CopyPlan::row_checks)");
  ra_each_row(a, acc, loaded, [&] {
    for (const Stmt& s : a->plan->row_checks)
      emit_check(s.as<CheckNode>(), cold ? "tf::report_cold" : "tf::report");
  });
}

bool Printer::ra_preload(const CopyNode* a, const std::string& acc, const std::string& loaded) {
  const Expr l = fragment_row_load(a);
  if (!l.defined()) return false;
  ra_each_row(a, acc, "", [&] { line(fmt::format("{}[tf_h] = {};", loaded, expr(l))); });
  return true;
}

void Printer::ra_load(const CopyNode* a, const std::string& slot,
                      const std::function<std::string(int)>& src,
                      const std::function<std::string(int)>& ok) {
  const bool l2_256 = a->plan->l2_prefetch == 256;
  const std::string targs = l2_256                 ? fmt::format("<{}, true>", a->plan->no_allocate)
                            : a->plan->no_allocate ? "<true>"
                                                   : "";
  line(fmt::format("tf::load_a_fragment{}{}(tf_ra[{}], {}, {}, {}, {});",
                   a->plan->word_loads ? "_words" : "", targs, slot, src(0), src(1), ok(0), ok(1)));
}

int64_t Printer::fragment_step_bytes(const CopyNode* a) {
  return a->plan->step * dtype_size(a->value.as<LoadNode>()->buffer.dtype());
}

void Printer::ra_first_fragments(const CopyNode* a, const std::string& acc, int ahead) {
  ra_rows(a, acc, "tf_rap", "tf_rao");
  ra_checks(a, acc, "");
  const int64_t bytes = fragment_step_bytes(a);
  line("#pragma unroll");
  open(fmt::format("for (int tf_q = 0; tf_q < {}; ++tf_q)", ahead));
  ra_load(
      a, "tf_q",
      [&](int h) {
        return fmt::format("tf_rap[{}] + static_cast<long long>(tf_q) * {}ll", h, bytes);
      },
      [](int h) { return fmt::format("tf_rao[{}]", h); });
  close();
}

void Printer::ws_consumer_loop(const ForNode* op, const PipelinedBody& body,
                               const PipelinePlan& plan, const std::string& it,
                               const std::string& base, const std::string& after_loop) {
  const GemmNode* g = body.consumer.at(0).as<GemmNode>();
  TF_CHECK(g != nullptr, "cuda printer: a warp-specialized loop whose consumer is no gemm");
  const int stages = plan.stages;
  const std::string t = cuda_type(op->var.dtype());
  const std::string n = expr(op->extent);
  const std::string gi = base.empty() ? it : "(" + base + " + " + it + ")";
  // The MMA warpgroups: tile i's wgmma stays in flight while tile i - 1's
  // are waited for and its stage released.
  const std::string c = buf(g->c.buffer), a = buf(g->a.buffer), b = buf(g->b.buffer);
  const CopyNode* frag = fragment_copy(body);
  if (plan.register_a_ahead > 0) {
    TF_CHECK(frag != nullptr && frag->dst.get() == g->a.buffer.get(),
             "cuda printer: register_a without the gemm's A as a fragment copy");
    TF_CHECK(!plan.consumer_fence, "cuda printer: register_a with a consumer fence");
    ws_consumer_loop_register_a(op, frag, plan, it, base, after_loop, c, b, g);
    return;
  }
  const int tail = plan.split_tail;
  const int64_t trip = tail > 0 ? const_of(op->extent, "a split tail's trip count") : 0;
  // k-tile k's stage (and its full wait): printed in the loop and the tail
  auto stage = [&](const std::string& k, bool full) {
    const std::string gk = base.empty() ? k : "(" + base + " + " + k + ")";
    line(fmt::format("const int tf_stage = {} % {};", gk, stages));
    if (!full) return;
    line(fmt::format("tf::mbar_wait(&tf_full[tf_stage], ({} / {}) & 1);", gk, stages));
    // (the block timeline: when the first stage had landed)
    timeline_first_stage(k + " == 0");
    if (plan.consumer_fence)
      line("tf::fence_async_proxy();  // the stage's generic-proxy writes, for wgmma");
  };
  const std::string operands = fmt::format("{} + tf_stage * {}, {} + tf_stage * {}", a,
                                           tile_elems(g->a.buffer), b, tile_elems(g->b.buffer));
  open(fmt::format("for ({} {} = 0; {} < {}; ++{})", t, it, it,
                   tail > 0 ? std::to_string(trip - tail) : n, it));
  stage(it, true);
  line(fmt::format("{}.mma_async({});", c, operands));
  line(fmt::format("{}.wait_prior();  // this warpgroup's MMAs of tile i - 1 are done", c));
  const int cluster = multicast_cluster();
  const std::string arrive = stage_release();
  line(fmt::format("if ({0} > 0) {4}(&tf_empty[({1} + {2}) % {3}]);", it, gi, stages - 1, stages,
                   arrive));
  close();
  const bool release_last = !base.empty() || cluster > 1;
  if (tail > 0) {
    TF_CHECK(after_loop.empty(), "cuda printer: a split tail after a loop with a statement after it");
    split_tail_issue(tail, trip, 0, stage,
                     [&](int h, const std::string&) {
                       line(fmt::format("{}.mma_async_half<{}>({});", c, h, operands));
                     },
                     c);
    timeline_loop_end();  // (the block timeline: at half 0's wait)
    // The stage before the tail goes back now; the tail's once half 1 is done.
    if (release_last) {
      line(fmt::format("const int tf_tail_base = {};", base.empty() ? "0" : base));
      line(fmt::format("{}(&tf_empty[(tf_tail_base + {}) % {}]);", arrive, trip - tail - 1,
                       stages));
    }
    split_tail_mid_ = [this, c, tail, trip, stages, arrive, release_last] {
      split_tail_half1_done(c, tail, trip, stages, release_last ? arrive : "");
    };
    return;
  }
  if (!after_loop.empty()) line(after_loop);
  line(fmt::format("{}.wait();", c));
  // (the block timeline: a main loop's end, right after its last wgmma
  // wait; marked later, after the stage's release, ptxas moved register_a's
  // loads, session 38)
  timeline_loop_end();
  if (release_last)  // the last stage goes back to the producer(s)
    line(fmt::format("if ({0} > 0) {3}(&tf_empty[({1}{0} - 1) % {2}]);", n,
                     base.empty() ? "" : base + " + ", stages, arrive));
}

void Printer::split_tail_issue(int tail, int64_t n, int first_half,
                               const std::function<void(const std::string&, bool)>& stage,
                               const std::function<void(int, const std::string&)>& half,
                               const std::string& c) {
  line(first_half == 0
           ? fmt::format("// the split tail: k-tiles {} .. {}, N half 0 of each, then N half 1 of "
                         "each",
                         n - tail, n - 1)
           : fmt::format("// the split tail: N half 1 of k-tiles {} .. {} (half 0 of each went "
                         "in the loop)",
                         n - tail, n - 1));
  for (int h = first_half; h < 2; ++h) {
    line("#pragma unroll");
    open(fmt::format("for (int tf_tt = 0; tf_tt < {}; ++tf_tt)", tail));
    line(fmt::format("const int tf_k = {} + tf_tt;", n - tail));
    stage("tf_k", h == 0);
    half(h, "tf_k");
    close();
  }
  line(fmt::format("tf::wgmma_wait<{}>();  // the split tail: half 0 done (half 1's may run on)",
                   tail));
  line(fmt::format("{0}.pin<0, decltype({0})::kElems / 2>();", c));
}

void Printer::split_tail_half1_done(const std::string& c, int tail, int64_t n, int stages,
                                    const std::string& arrive) {
  line("tf::wgmma_wait<0>();  // the split tail: half 1 done");
  line(fmt::format("{0}.pin<decltype({0})::kElems / 2, decltype({0})::kElems>();", c));
  if (arrive.empty()) return;
  for (int64_t k = n - tail; k < n; ++k)
    line(fmt::format("{}(&tf_empty[(tf_tail_base + {}) % {}]);", arrive, k, stages));
}

void Printer::ws_consumer_loop_register_a(const ForNode* op, const CopyNode* frag,
                                          const PipelinePlan& plan, const std::string& it,
                                          const std::string& base, const std::string& after_loop,
                                          const std::string& c, const std::string& b,
                                          const GemmNode* g) {
  const int stages = plan.stages, ahead = plan.register_a_ahead, slots = kRegisterASlots;
  const std::string t = cuda_type(op->var.dtype());
  const std::string n = expr(op->extent);
  const std::string i = "tf_i";
  const std::string gi = base.empty() ? i : "(" + base + " + " + i + ")";
  result_.copies.push_back({frag->dst.name(), "fragment", frag->plan->width, slots, false, true,
                            false, frag->plan->no_allocate, frag->plan->l2_prefetch,
                            frag->plan->word_loads});
  if (base.empty()) {
    // (a persistent kernel's MMA warps do this before their tile loop and
    // load each next tile's first fragments during the last k-tiles)
    ra_declare();
    ra_first_fragments(frag, c, ahead);
  }
  if (!base.empty() && ra_preload_next_) ra_preload_next_();
  line(fmt::format("// A's fragments by the MMA warps (register_a): k-tile i + {} loads into the "
                   "fragment k-tile i - 1's wgmma group read",
                   ahead));
  // (Unrolled whole, as the trip count is a constant: every fragment index
  // and branch is then static; 70 against 64 us on gather_heavy, session 24.)
  line("#pragma unroll");
  open(fmt::format("for ({0} {1} = 0; {1} < {2}; {1} += {3})", t, it, n, slots));
  line("#pragma unroll");
  open(fmt::format("for (int tf_u = 0; tf_u < {}; ++tf_u)", slots));
  line(fmt::format("const int {} = {} + tf_u;", i, it));
  line(fmt::format("const int tf_stage = {} % {};", gi, stages));
  line(fmt::format("tf::mbar_wait(&tf_full[tf_stage], ({} / {}) & 1);", gi, stages));
  timeline_first_stage(i + " == 0");
  // (No fence.proxy.async: the ring holds only B, written by TMA (the async
  // proxy, made visible by the mbarrier's transaction count), and the fence
  // would wait for this thread's fragment loads in flight: 58 -> 78 us on
  // gather_heavy, session 24.)
  const int tail = plan.split_tail;
  const int64_t trip = tail > 0 ? const_of(op->extent, "a split tail's trip count") : 0;
  const std::string operand_b = fmt::format("{} + tf_stage * {}", b, tile_elems(g->b.buffer));
  // In a multicast cluster the last stage goes back too: the other
  // block's producer waits for it before it exits (ws_cluster_drain).
  const std::string arrive = stage_release();
  const bool release_last = !base.empty() || multicast_cluster() > 1;
  const std::string release =
      fmt::format("if ({0} > 0) {4}(&tf_empty[({1} + {2}) % {3}]);", i, gi, stages - 1, stages,
                  arrive);
  if (tail > 0) {
    // The split tail: half 0 of its k-tiles here, half 1 after the loop. The
    // tail's first k-tile waits for the one before it (its stage and slot
    // go back); the later ones' fragment loads would overwrite slots that
    // half 1 still reads, so they go after the final wait (the epilogue).
    open(fmt::format("if ({} < {})", i, trip - tail));
  }
  line(fmt::format("{}.mma_async_rs(tf_ra[tf_u], {});", c, operand_b));
  line(fmt::format("{}.wait_prior();  // this warpgroup's MMAs of tile i - 1 are done", c));
  line(release);
  if (tail > 0) {
    close_open("else");
    line(fmt::format("{}.mma_async_rs_half<0>(tf_ra[tf_u], {});", c, operand_b));
    open(fmt::format("if ({} == {})", i, trip - tail));
    line("tf::wgmma_wait<1>();  // k-tile i - 1 done: its stage and fragment slot are free");
    line(release);
    close();
    close();
    open(fmt::format("if ({} <= {})", i, trip - tail));
  }
  // One load statement an iteration, whatever it reads (this tile's rows, the
  // next tile's, or nothing: masked off): loads under branches made ptxas
  // land them in temporaries and copy them into the fragment at the join,
  // waiting for them there (76 against 58 us on gather_heavy, session 24).
  const int64_t bytes = fragment_step_bytes(frag);
  const std::string slot = fmt::format("(tf_u + {}) % {}", ahead, slots);
  // (with_next_rows: the first load of the next tile's rows computes them)
  auto load = [this, frag, slot, bytes, ahead, n, base](bool with_next_rows) {
    line(fmt::format("const int tf_kn = tf_i + {};", ahead));
    line(fmt::format("const bool tf_here = tf_kn < {};", n));
    if (base.empty()) {
      ra_load(
          frag, slot,
          [&](int h) {
            return fmt::format("tf_rap[{}] + static_cast<long long>(tf_kn) * {}ll", h, bytes);
          },
          [](int h) { return fmt::format("tf_here && tf_rao[{}]", h); });
      return;
    }
    TF_CHECK(static_cast<bool>(ra_next_rows_), "cuda printer: register_a's next tile unset");
    line(fmt::format("const bool tf_next = !tf_here && ({});", ra_has_next_));
    if (with_next_rows) {
      open(fmt::format("if (tf_next && tf_kn == {})", n));
      ra_next_rows_();
      close();
    }
    line(fmt::format("const long long tf_ko = static_cast<long long>(tf_here ? tf_kn : tf_kn - {}) "
                     "* {}ll;",
                     n, bytes));
    ra_load(
        frag, slot,
        [](int h) { return fmt::format("(tf_here ? tf_rap[{0}] : tf_ranp[{0}]) + tf_ko", h); },
        [](int h) { return fmt::format("tf_here ? tf_rao[{0}] : tf_next && tf_rano[{0}]", h); });
  };
  TF_CHECK(i == "tf_i", "cuda printer: register_a's k-tile variable");
  load(true);
  if (tail > 0) close();
  close();
  close();
  if (!after_loop.empty()) line(after_loop);
  if (tail > 0) {
    split_tail_issue(
        tail, trip, 1,
        [&](const std::string& k, bool) {
          line(fmt::format("const int tf_stage = {} % {};",
                           base.empty() ? k : "(" + base + " + " + k + ")", stages));
        },
        [&](int h, const std::string& k) {
          line(fmt::format("{}.mma_async_rs_half<{}>(tf_ra[{} % {}], {});", c, h, k, slots,
                           operand_b));
        },
        c);
  } else {
    line(fmt::format("{}.wait();", c));
  }
  timeline_loop_end();  // (the block timeline, as in ws_consumer_loop)
  if (release_last) {
    if (tail > 0)
      line(fmt::format("const int tf_tail_base = {};", base.empty() ? "0" : base));
    else
      line(fmt::format("if ({0} > 0) {3}(&tf_empty[({1}{0} - 1) % {2}]);", n,
                       base.empty() ? "" : base + " + ", stages, arrive));
  }
  if (!base.empty()) {
    line("tf_rap[0] = tf_ranp[0], tf_rap[1] = tf_ranp[1];  // the next tile's rows");
    line("tf_rao[0] = tf_rano[0], tf_rao[1] = tf_rano[1];");
  }
  if (tail > 0) {
    const bool persistent = !base.empty();
    split_tail_mid_ = [this, c, tail, trip, stages, slots, persistent, load, release_last,
                       arrive] {
      split_tail_half1_done(c, tail, trip, stages, release_last ? arrive : "");
      if (!persistent) return;  // (a one-tile kernel loads no next tile)
      // The tail's deferred fragment loads: the next tile's k-tiles into
      // the slots half 1 has now read (its rows already in tf_ranp / tf_rap).
      for (int64_t k = trip - tail + 1; k < trip; ++k) {
        open("");
        line(fmt::format("const int tf_i = {}, tf_u = {};  // the split tail's deferred load", k,
                         k % slots));
        load(false);
        close();
      }
    };
  }
}

void Printer::timeline_first_stage(const std::string& when) {
  if (!k_.launch.block_timeline()) return;
  line(fmt::format("if ({}) tf::timeline_first_stage(tf_smem + {}, tf_tid);", when,
                   k_.launch.timeline_slot));
}

void Printer::timeline_loop_end() {
  if (!k_.launch.block_timeline()) return;
  line(fmt::format("tf::timeline_loop_end(tf_smem + {}, tf_tid);", k_.launch.timeline_slot));
}

void Printer::ws_producer_role(const PipelinePlan& plan, const std::function<void()>& body) {
  // (The producer follows every consumer team's threads.)
  const std::string consumers =
      k_.launch.consumer_teams > 1
          ? fmt::format("{} * kMmaThreads", k_.launch.consumer_teams)
          : std::string("kMmaThreads");
  open(fmt::format("if (tf_tid >= {})", consumers));
  if (plan.producer_registers > 0)
    line(fmt::format("tf::setmaxnreg_dec<{}>();  // the producer's register budget",
                     plan.producer_registers));
  line(fmt::format("constexpr int kProducerThreads = {};", plan.producer_threads));
  line(fmt::format("const int tf_ptid = tf_tid - {};", consumers));
  if (plan.single_issuer)
    line("if (tf_ptid != 0) return;  // thread 0 issues every copy (TMA); the others have none "
         "(single_issuer)");
  const int saved_threads = threads_;
  const std::string saved_sym = threads_sym_, saved_tid = tid_sym_;
  threads_ = plan.producer_threads, threads_sym_ = "kProducerThreads", tid_sym_ = "tf_ptid";
  body();
  line("tf::cp_async_wait_all();  // its copies land before it exits");
  line("return;");
  close();
  threads_ = saved_threads, threads_sym_ = saved_sym, tid_sym_ = saved_tid;
  if (plan.consumer_registers > 0)
    line(fmt::format("tf::setmaxnreg_inc<{}>();  // the MMA warpgroups' register budget",
                     plan.consumer_registers));
}

void Printer::emit_warp_specialized(const ForNode* op, const PipelinedBody& body,
                                    const PipelinePlan& plan) {
  if (nonneg_.holds(op->min)) nonneg_.vars.insert(op->var.get());
  if (!plan.setup_at_entry) ws_setup(body, plan);
  const std::string it = "tf_it" + std::to_string(tmp_++);
  // The producer warpgroup.
  ws_producer_role(plan, [&] { ws_producer_loop(op, body, plan, it, ""); });
  ws_consumer_loop(op, body, plan, it, "");
  // From here on only the MMA warpgroups run.
  threads_ = plan.consumer_threads, threads_sym_ = "kMmaThreads";
  block_barrier_ = barrier_for(BarrierKind::Consumers);
  if (plan.barrier_after) line(block_barrier_);
}

void Printer::emit_pipelined(const ForNode* op) {
  const auto* planp = std::get_if<PipelinePlan>(&op->plan);
  TF_CHECK(planp != nullptr, "cuda printer: pipelined loop " + op->var.name() +
                                 " has no PipelinePlan");
  const PipelinePlan& plan = *planp;
  result_.loops.push_back({op->var.name(), std::string(pipeline_form_name(plan.form)), plan.stages,
                           plan.issue_ahead, plan.wgmma_in_flight, plan.producer_threads,
                           plan.consumer_threads, plan.producer_registers,
                           plan.consumer_registers, plan.why, plan.single_issuer});
  const PipelinedBody body = split_pipelined_body(op);
  const std::vector<std::pair<Var, Expr>>& lets = body.lets;
  const std::vector<const CopyNode*>& copies = body.copies;
  const std::vector<Stmt>& consumer = body.consumer;
  const int stages = plan.stages;
  const std::string t = cuda_type(op->var.dtype());
  const std::string k = var(op->var);
  const std::string lo = expr(op->min), n = expr(op->extent);
  if (nonneg_.holds(op->min)) nonneg_.vars.insert(op->var.get());
  if (plan.form == PipelineForm::InOrder) {
    line(fmt::format("// pipelined loop run in order ({})", plan.why));
    for (const CopyNode* c : copies) stage_expr_[c->dst.get()] = "0";
    open(fmt::format("for ({} {} = {}; {} < {} + {}; ++{})", t, k, lo, k, lo, n, k));
    line(block_barrier_);
    for (auto& [v, val] : lets)
      line(fmt::format("const {} {} = {};", cuda_type(v.dtype()), var(v), expr(val)));
    for (const CopyNode* c : copies) emit_copy(c, false);
    line("tf::cp_async_commit();");
    line("tf::cp_async_wait<0>();");
    line(block_barrier_);
    for (const Stmt& s : consumer) stmt(s);
    close();
    line(block_barrier_);
    return;
  }
  const GemmNode* g = consumer.size() == 1 ? consumer[0].as<GemmNode>() : nullptr;
  if (plan.form == PipelineForm::WarpSpecialized) {
    emit_warp_specialized(op, body, plan);
    return;
  }
  line(
      fmt::format("// software pipeline: {} stages; iteration i computes tile i while the "
                  "copies of tile i + {} are in flight",
                  stages, stages - 1));
  // wgmma asynchronous to the copies: tile i's MMAs are issued, then tile
  // i + S - 1's copies into the stage tile i - 1 used; each warpgroup waits
  // for its MMAs at the end of the iteration, so after the next barrier
  // every warpgroup is done with tile i's stage.
  const bool wgmma_async = plan.form == PipelineForm::WgmmaAsync;
  // Register-staged copies with a fixed slot count are double-buffered in
  // registers: loaded before the consumer runs, stored to their stage after.
  // Not under an asynchronous wgmma: the copies already overlap the MMAs,
  // and the registers are the accumulators'.
  std::vector<std::string> regs(copies.size());
  bool split = false;
  for (size_t c = 0; c < copies.size(); ++c) {
    const CopyNode* cp = copies[c];
    if (cp->plan->register_slots == 0) continue;
    regs[c] = "tf_rb" + std::to_string(tmp_++);
    line(fmt::format("{} {}[{}];  // register double buffer of {}", cuda_type(cp->dst.dtype()),
                     regs[c], cp->plan->register_slots, cp->dst.name()));
    split = true;
  }
  auto emit_lets_for = [&](const std::vector<Stmt>& users, const std::string& k_decl = "") {
    emit_loop_lets(op, lets, users, k_decl);
  };
  std::vector<Stmt> copy_stmts, split_stmts;
  for (size_t c = 0; c < copies.size(); ++c) {
    copy_stmts.push_back(Stmt(copies[c]));
    if (!regs[c].empty())  // the store phase reads only the destination indices
      for (const Expr& e : copies[c]->dst_indices) split_stmts.push_back(EvaluateNode::make(e));
  }
  // The producer: the copies of one iteration into one stage.
  open(fmt::format("auto tf_issue = [&]({} {}, int tf_stage)", t, k));
  for (const CopyNode* c : copies) stage_expr_[c->dst.get()] = "tf_stage";
  emit_lets_for(copy_stmts);
  for (size_t c = 0; c < copies.size(); ++c)
    emit_copy(copies[c], true, regs[c].empty() ? RegPhase::kWhole : RegPhase::kLoad, regs[c]);
  --indent_;
  line("};");
  if (split) {
    open(fmt::format("auto tf_store = [&]({} {}, int tf_stage)", t, k));
    emit_lets_for(split_stmts);
    for (size_t c = 0; c < copies.size(); ++c)
      if (!regs[c].empty()) emit_copy(copies[c], true, RegPhase::kStore, regs[c]);
    --indent_;
    line("};");
  }
  const std::string it = "tf_it" + std::to_string(tmp_++);
  // With 4 or more stages the wgmma loop keeps one MMA group in flight
  // across the barrier (wgmma.wait_group 1): the tensor cores do not wait
  // for the barrier and the copy issue. The stage the copies overwrite is
  // then the one of tile i - 2 (done by every warpgroup: each waited for it
  // before the barrier), so tiles are issued S - 2 ahead instead of S - 1.
  const bool keep_one = wgmma_async && plan.wgmma_in_flight > 0;
  const int ahead = plan.issue_ahead;
  open(fmt::format("for (int tf_s = 0; tf_s < {}; ++tf_s)", ahead));
  open(fmt::format("if (tf_s < {})", n));
  line(fmt::format("tf_issue({} + tf_s, tf_s);", lo));
  if (split) line(fmt::format("tf_store({} + tf_s, tf_s);", lo));
  close();
  line("tf::cp_async_commit();");
  close();
  const std::string next = fmt::format("{} + {}", it, ahead);
  for (const CopyNode* c : copies) stage_expr_[c->dst.get()] = "tf_stage";
  // The MMA consumer with its fragments software-pipelined (the CUTLASS
  // multistage main loop): while step s is multiplied, step s + 1's
  // fragments load; at the last step of a tile the loop waits for the next
  // tile and loads its first fragments before the last MMAs of this one.
  // The next tile's copies are issued after the first step.
  const bool frag_pipeline = plan.form == PipelineForm::FragmentPipelined;
  if (wgmma_async) {
    const std::string c = buf(g->c.buffer), a = buf(g->a.buffer), b = buf(g->b.buffer);
    line("// wgmma: tile i's MMAs run while tile i + " + std::to_string(ahead) +
         "'s copies are issued" +
         (keep_one ? "; one MMA group stays in flight across the barrier" : ""));
    open(fmt::format("for ({} {} = 0; {} < {}; ++{})", t, it, it, n, it));
    line(fmt::format("tf::cp_async_wait<{}>();", ahead - 1));
    line(block_barrier_);
    line(fmt::format("const int tf_stage = {} % {};", it, stages));
    line(fmt::format("const bool tf_more = {} < {};", next, n));
    line(fmt::format("{}.mma_async({} + tf_stage * {}, {} + tf_stage * {});", c, a,
                     tile_elems(g->a.buffer), b, tile_elems(g->b.buffer)));
    if (keep_one)
      line(fmt::format("{}.wait_prior();  // this warpgroup's MMAs of tile i - 1 are done", c));
    line(fmt::format("if (tf_more) tf_issue({} + {}, ({}) % {});", lo, next, next, stages));
    line("tf::cp_async_commit();");
    if (split)
      line(fmt::format("if (tf_more) tf_store({} + {}, ({}) % {});", lo, next, next, stages));
    // (At the end of the iteration, not the start of the next: a wait at
    // the loop head makes ptxas serialize the wgmma, C7514.)
    if (!keep_one) line(fmt::format("{}.wait();  // this warpgroup's MMAs of tile i", c));
    close();
    line(fmt::format("{}.wait();", c));
  } else if (frag_pipeline) {
    const std::string c = buf(g->c.buffer), a = buf(g->a.buffer), b = buf(g->b.buffer);
    const int64_t ta = tile_elems(g->a.buffer);
    const int64_t tb = tile_elems(g->b.buffer);
    line(fmt::format("// MMA fragments double-buffered across k16 steps and tiles"));
    line(fmt::format("tf::cp_async_wait<{}>();", stages - 2));
    line(block_barrier_);
    line(fmt::format("typename decltype({})::Frags tf_fr[2];", c));
    line(fmt::format("{}.load_frags({}, {}, 0, tf_fr[0]);", c, a, b));
    open(fmt::format("for ({} {} = 0; {} < {}; ++{})", t, it, it, n, it));
    line(fmt::format("const int tf_stage = {} % {};", it, stages));
    line(fmt::format("const bool tf_more = {} < {};", next, n));
    line("#pragma unroll");
    open(fmt::format("for (int tf_kk = 0; tf_kk < decltype({})::kSteps; ++tf_kk)", c));
    line("int tf_rs = tf_stage, tf_rk = tf_kk + 1;");
    open(fmt::format("if (tf_kk == decltype({})::kSteps - 1)", c));
    if (split)
      line(fmt::format("if (tf_more) tf_store({} + {}, ({}) % {});", lo, next, next, stages));
    line(fmt::format("tf::cp_async_wait<{}>();", stages - 2));
    line(block_barrier_);
    line(fmt::format("tf_rs = ({} + 1) % {};", it, stages));
    line("tf_rk = 0;");
    close();
    line(fmt::format(
        "{}.load_frags({} + tf_rs * {}, {} + tf_rs * {}, tf_rk, tf_fr[(tf_kk + 1) % 2]);", c, a, ta,
        b, tb));
    open("if (tf_kk == 0)");
    line(fmt::format("if (tf_more) tf_issue({} + {}, ({}) % {});", lo, next, next, stages));
    line("tf::cp_async_commit();");
    close();
    line(fmt::format("{}.mma_frags(tf_fr[tf_kk % 2]);", c));
    close();
    close();
  } else {
    open(fmt::format("for ({} {} = 0; {} < {}; ++{})", t, it, it, n, it));
    line(fmt::format("tf::cp_async_wait<{}>();", stages - 2));
    line(block_barrier_);
    line(fmt::format("const bool tf_more = {} < {};", next, n));
    line(fmt::format("if (tf_more) tf_issue({} + {}, ({}) % {});", lo, next, next, stages));
    line("tf::cp_async_commit();");
    line(fmt::format("const int tf_stage = {} % {};", it, stages));
    emit_lets_for(consumer, fmt::format("const {} {} = {} + {};", t, k, lo, it));
    for (const Stmt& s : consumer) stmt(s);
    if (split)
      line(fmt::format("if (tf_more) tf_store({} + {}, ({}) % {});", lo, next, next, stages));
    close();
  }
  line("tf::cp_async_wait<0>();");
  line(block_barrier_);
  for (const CopyNode* c : copies) stage_expr_.erase(c->dst.get());
}

}  // namespace tilefuse::codegen
