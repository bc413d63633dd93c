// The printer's persistent form (printer.h; passes/persistent.h): each role
// of a warp-specialized kernel in its own tile loop.
#include <fmt/format.h>

#include <functional>

#include "codegen/cuda/printer.h"
#include "core/error.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: the printer reads the Tile IR

void Printer::emit_persistent() {
  std::string why;
  const std::optional<std::vector<RoleItem>> roles = persistent_roles(k_, &why);
  TF_CHECK(roles.has_value(), "cuda printer: a persistent kernel that does not split: " + why);
  const ForNode* loop = nullptr;
  for (const RoleItem& it : *roles)
    if (it.kind == RoleItem::Kind::kLoop) loop = it.stmt.as<ForNode>();
  const PipelinePlan& plan = std::get<PipelinePlan>(loop->plan);
  const PipelinedBody body = split_pipelined_body(loop);
  if (nonneg_.holds(loop->min)) nonneg_.vars.insert(loop->var.get());
  const std::string tiles = grid_size();
  // The shared buffers are where the plan put them, for every tile.
  for (const RoleItem& it : *roles)
    if (it.kind == RoleItem::Kind::kAlloc && it.alloc->buffer.scope() == MemScope::Shared)
      emit_alloc_decl(it.alloc);
  ws_setup(body, plan);
  // The block's tiles (program ids) in turn: round robin, or stream-K's
  // whole tiles round robin and then the block's pieces
  // (LaunchPlan::stream_k_units). open_tiles opens the loop with tf_tile
  // set; first_tile is the block's first, next_tile / has_next the one
  // after tf_tile.
  std::function<void()> open_tiles;
  std::string first_tile, next_tile, has_next;
  const LaunchPlan& lp = k_.launch;
  if (lp.stream_k_units > 0) {
    const int64_t rounds = lp.stream_k_dp_tiles / lp.stream_k_units;
    const int64_t items = rounds + lp.stream_k_pieces;
    auto item = [&](const std::string& j) {
      return fmt::format(
          "({0} < {1} ? static_cast<int>(blockIdx.x) + {0} * {2} : {3} + static_cast<int>(blockIdx.x) "
          "* {4} + ({0} - {1}))",
          j, rounds, lp.stream_k_units, lp.stream_k_dp_tiles, lp.stream_k_pieces);
    };
    open_tiles = [this, items, item] {
      open(fmt::format("for (int tf_j = 0; tf_j < {}; ++tf_j)", items));
      line(fmt::format(
          "const int tf_tile = {};  // stream-K: the whole tiles round robin, then the pieces",
          item("tf_j")));
    };
    first_tile = item("0");
    next_tile = item("(tf_j + 1)");
    has_next = fmt::format("tf_j + 1 < {}", items);
  } else {
    open_tiles = [this, tiles] {
      open(fmt::format(
          "for (int tf_tile = static_cast<int>(blockIdx.x); tf_tile < {}; tf_tile += "
          "static_cast<int>(gridDim.x))",
          tiles));
    };
    first_tile = "static_cast<int>(blockIdx.x)";
    next_tile = "tf_tile + static_cast<int>(gridDim.x)";
    has_next = fmt::format("tf_tile + static_cast<int>(gridDim.x) < {}", tiles);
  }
  // The main loop's trip count, printed where the tile's lets are bound
  // (stream-K's varies with the piece).
  auto n = [&] { return expr(loop->extent); };
  // Lets are pure: each role computes the ones it reads, per tile.
  auto lets = [&]() {
    for (const RoleItem& it : *roles)
      if (it.kind == RoleItem::Kind::kLet) {
        if (nonneg_.holds(it.let_value)) nonneg_.vars.insert(it.let_var.get());
        line(fmt::format("const {} {} = {};", cuda_type(it.let_var.dtype()), var(it.let_var),
                         expr(it.let_value)));
      }
  };
  const std::string it = "tf_it" + std::to_string(tmp_++);
  // After a tile: the role's ring count on by `step` iterations, then, past
  // LaunchPlan::ring_fold_at, folded mod 2 * stages into [2 * stages,
  // 4 * stages) so that the int never overflows (the fold keeps every
  // stage and parity, the cluster drain's window and register_a's
  // not-the-first-tile test).
  auto count_ring = [&](const std::string& step) {
    line(fmt::format("tf_git += {};", step));
    if (lp.ring_fold_at > 0)
      line(fmt::format(
          "if (tf_git >= {0}) tf_git = tf_git % {1} + {1};  // the ring count folded mod 2 * "
          "stages (its stages and parities unchanged), bounded",
          lp.ring_fold_at, 2 * plan.stages));
  };
  // The producer: every tile's index prologue, then its copies; it runs
  // ahead into the next tile as far as the ring's free stages allow.
  // A prologue copy with CopyPlan::next_tile (prefetch_prologue) has its
  // loads issued a tile ahead into registers: for the block's first tile
  // before the loop, for tile t + 1 right after tile t's registers are
  // stored; its shared tile is then read by the rest of the prologue.
  const CopyNode* prefetch = nullptr;
  for (const RoleItem& r : *roles)
    if (const CopyNode* c = r.kind == RoleItem::Kind::kProducer ? r.stmt.as<CopyNode>() : nullptr;
        c && c->plan && c->plan->next_tile) {
      TF_CHECK(!prefetch, "cuda printer: two prefetched prologue copies");
      prefetch = c;
    }
  ws_producer_role(plan, [&] {
    const std::string barrier =
        fmt::format("tf::named_barrier<2, {}>();", plan.producer_threads);
    std::string regs;
    auto prefetch_loads = [&](const std::string& tile) {
      open("");
      emit_grid_vars(tile);
      lets();
      trip_always_ = true;
      emit_copy(prefetch, false, RegPhase::kLoad, regs);
      trip_always_ = false;
      close();
    };
    if (prefetch) {
      regs = "tf_pf" + std::to_string(tmp_++);
      line(fmt::format("{} {}[{}];  // the next tile's {}, loaded a tile ahead",
                       cuda_type(prefetch->dst.dtype()), regs, prefetch->plan->register_slots,
                       prefetch->dst.name()));
      prefetch_loads(first_tile);
    }
    line("int tf_git = 0;  // the ring iterations of the tiles before");
    open_tiles();
    emit_grid_vars("tf_tile");
    lets();
    // (the barriers order the producer's index prologue; none without one)
    bool prologue = false;
    for (const RoleItem& r : *roles) prologue = prologue || r.kind == RoleItem::Kind::kProducer;
    if (prologue) line(barrier + "  // the last tile's readers of the prologue's buffers are done");
    for (const RoleItem& r : *roles) {
      if (r.kind != RoleItem::Kind::kProducer) continue;
      if (r.stmt.get() != prefetch) {
        stmt(r.stmt);
        continue;
      }
      trip_always_ = true;
      emit_copy(prefetch, false, RegPhase::kStore, regs);
      trip_always_ = false;
      open(fmt::format("if ({})", has_next));
      record_copies_ = false;
      prefetch_loads(next_tile);
      record_copies_ = true;
      close();
      line(barrier + "  // the tile's " + prefetch->dst.name() + " is in shared memory");
    }
    if (prologue) line(barrier + "  // the prologue's buffers are written");
    ws_producer_loop(loop, body, plan, it, "tf_git");
    count_ring(n());
    close();
    ws_cluster_drain(plan, "int", "tf_git");
  });
  // The MMA warpgroups: every tile's main loop and epilogue.
  threads_ = plan.consumer_threads, threads_sym_ = "kMmaThreads";
  const int teams = k_.launch.consumer_teams;
  if (teams > 1) {
    // Ping-pong (passes/persistent.h): team t takes the block's tiles t,
    // t + 2, ... and counts the ring iterations of the other team's tiles
    // too; its main loop waits for the other team's last one (tf_order),
    // and it lets the other team's next one go once its own has issued its
    // last stage's MMAs.
    TF_CHECK(teams == 2 && as_const_int(loop->extent) && lp.stream_k_units == 0,
             "cuda printer: consumer teams need 2 teams, a constant trip count and no stream-K");
    line("const int tf_team = tf_tid / kMmaThreads;  // this thread's consumer team");
    line("const int tf_ctid = tf_tid % kMmaThreads;  // its thread within the team");
    line("const int tf_team_bar = tf_team == 0 ? 1 : 3;  // the team's named barrier");
    tid_sym_ = "tf_ctid";
  }
  block_barrier_ = barrier_for(BarrierKind::Consumers);
  for (const RoleItem& r : *roles)
    if (r.kind == RoleItem::Kind::kAlloc && r.alloc->buffer.scope() == MemScope::Fragment)
      emit_alloc_decl(r.alloc);
  if (plan.register_a_ahead > 0) {
    // register_a: the block's first tile's rows and fragments before the
    // tile loop; each next tile's during the last k-tiles of the one before.
    TF_CHECK(teams == 1, "cuda printer: register_a with consumer teams");
    const CopyNode* frag = fragment_copy(body);
    const GemmNode* g = body.consumer.at(0).as<GemmNode>();
    TF_CHECK(frag && g, "cuda printer: register_a without a fragment copy and a gemm");
    const std::string acc = buf(g->c.buffer);
    ra_declare();
    line("const char* tf_ranp[2] = {nullptr, nullptr};  // the next tile's rows");
    line("bool tf_rano[2] = {false, false};");
    open("");
    emit_grid_vars(first_tile);
    lets();
    ra_first_fragments(frag, acc, plan.register_a_ahead);
    close();
    ra_has_next_ = has_next;
    // The next tile's index is loaded at the start of each tile (ra_preload,
    // tf_rav), its rows' addresses computed from it during the last k-tiles:
    // loaded there, the MMA warps waited for it (a DRAM round trip a tile).
    const Expr row_load = fragment_row_load(frag);
    if (row_load.defined())
      line(fmt::format("{} tf_rav[2] = {{}};  // the next tile's index at this thread's rows",
                       cuda_type(row_load.dtype())));
    ra_preload_next_ = [this, frag, acc, next_tile, lets, has_next, row_load] {
      if (!row_load.defined()) return;
      open(fmt::format("if ({})", has_next));
      emit_grid_vars(next_tile);
      lets();
      ra_preload(frag, acc, "tf_rav");
      close();
    };
    ra_next_rows_ = [this, frag, acc, next_tile, lets, row_load] {
      open("");
      emit_grid_vars(next_tile);
      lets();
      ra_rows(frag, acc, "tf_ranp", "tf_rano", row_load.defined() ? "tf_rav" : "");
      close();
    };
  }
  if (teams > 1) {
    line(fmt::format("int tf_git = tf_team * {};  // the ring iterations of the tiles before", n()));
    line("int tf_turn = 0;  // this team's tiles before");
    open(fmt::format(
        "for (int tf_tile = static_cast<int>(blockIdx.x) + tf_team * static_cast<int>(gridDim.x); "
        "tf_tile < {}; tf_tile += 2 * static_cast<int>(gridDim.x))",
        tiles));
  } else {
    line("int tf_git = 0;  // the ring iterations of the tiles before");
    open_tiles();
  }
  emit_grid_vars("tf_tile");
  lets();
  if (plan.register_a_ahead > 0) {
    // register_a: the tile's row checks, from the index loaded a tile ahead
    // (the block's first tile's ran with its first fragments).
    const CopyNode* frag = fragment_copy(body);
    if (!frag->plan->row_checks.empty()) {
      open("if (tf_git > 0)");
      ra_checks(frag, buf(body.consumer.at(0).as<GemmNode>()->c.buffer),
                fragment_row_load(frag).defined() ? "tf_rav" : "", /*cold=*/true);
      close();
    }
  }
  for (const RoleItem& r : *roles) {
    if (r.kind == RoleItem::Kind::kConsumer) stmt(r.stmt);
    if (r.kind == RoleItem::Kind::kLoop) {
      if (teams > 1) {
        // Team 0's turn t follows team 1's turn t - 1; team 1's turn t
        // follows team 0's turn t. Each wait is for the phase after the
        // one this team last saw, so its parity is unambiguous.
        line("if (tf_team == 1 || tf_turn > 0)");
        line(
            "  tf::mbar_wait(&tf_order[tf_team], (tf_team == 0 ? tf_turn - 1 : tf_turn) & 1);  "
            "// the other team's main loop before this one has issued");
        ws_consumer_loop(loop, body, plan, it, "tf_git",
                         "tf::mbar_arrive(&tf_order[1 - tf_team]);  // the other team's turn");
        count_ring(std::to_string(2 * *as_const_int(loop->extent)));
        line("++tf_turn;");
      } else {
        ws_consumer_loop(loop, body, plan, it, "tf_git");
        count_ring(n());
      }
      // (the block timeline: ws_consumer_loop marked the tile's main loop's
      // end, the first two tiles' kept)
      // Every MMA warp (of the team) is past the last tile's epilogue (the
      // staged tile's readers) and done with this tile's main loop; none
      // where nothing the MMA warps run touches shared memory but the loop
      // (a per-warp epilogue: PipelinePlan::barrier_after, sync).
      if (plan.barrier_after) line(block_barrier_);
    }
  }
  close();
  if (bulk_stores_)
    line(fmt::format("if ({} {}== 0) tf::bulk_wait<0>();  // its TMA stores are done before it exits",
                     tid_sym_, warp_bulk_stores_ ? "% 32 " : ""));
  tid_sym_ = "tf_tid";
}

}  // namespace tilefuse::codegen
