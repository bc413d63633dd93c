#include "codegen/cuda/passes/persistent.h"

#include <fmt/format.h>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

namespace {

// Why two consumer teams cannot take turns in `kernel` ("" when they can):
// each team counts the ring's iterations of the tiles it skips, so every
// tile's main loop must run the same, constant, number of them; and a team
// may share nothing in shared memory with the other but the ring (the
// staged epilogue gets a region a team).
std::string pingpong_problem(const Kernel& kernel, const passes::PassContext& context) {
  const std::optional<std::vector<RoleItem>> roles = persistent_roles(kernel, nullptr);
  if (!roles) return "the kernel's roles do not split";
  // Two teams hold two tiles' accumulators: one warpgroup each (up to 128
  // f32 a thread, under the 208-register budget of a 384-thread block).
  if (kernel.launch.consumer_threads != 128)
    return fmt::format("teams of one MMA warpgroup (the tile's is {} threads)",
                       kernel.launch.consumer_threads);
  // The teams' accumulators fit only under register budgets (setmaxnreg:
  // 168 registers a thread of a 384-thread block without them spill), which
  // register_budgets gives where the producer computes no addresses.
  if (!context.cuda.setmaxnreg) return "register budgets (the setmaxnreg option is off)";
  for (const RoleItem& it : *roles)
    if (it.kind == RoleItem::Kind::kLoop)
      for (const CopyNode* c : split_pipelined_body(it.stmt.as<ForNode>()).copies)
        if (c->plan->mechanism != CopyMechanism::Tma && !c->plan->hoisted)
          return "register budgets, which a producer computing copy " + c->dst.name() +
                 "'s addresses does not get";
  for (const RoleItem& it : *roles) {
    if (it.kind == RoleItem::Kind::kLoop && !as_const_int(it.stmt.as<ForNode>()->extent))
      return "a main loop whose trip count is not a constant";
    if (it.kind != RoleItem::Kind::kConsumer) continue;
    BufferUse use;
    use.visit_stmt(it.stmt);
    for (const auto* set : {&use.reads, &use.writes})
      for (const BufferNode* b : *set)
        if (b->scope == MemScope::Shared)
          return "the MMA warpgroups' statements use shared buffer " + b->name;
  }
  return "";
}

// Where a role's ring count (an int over the block's tiles) folds
// (LaunchPlan::ring_fold_at): at 2^30 where it could reach that, which
// leaves a tile's iterations (ping-pong: two tiles') of room below 2^31.
// One block may take every tile (the runtime's grid is not known here), so
// a block runs at most tiles x trip ring iterations; a ping-pong team
// counts the other team's tiles too, the same bound. Stream-K's trip
// varies with the piece: unbounded, as any trip that is not a constant.
void ring_fold(const Kernel& kernel, const std::vector<RoleItem>& roles,
               const passes::PassContext& context, LaunchPlan& launch) {
  constexpr int64_t kFoldAt = int64_t{1} << 30;
  if (context.cuda.ring_fold_every_tile) {
    launch.ring_fold_at = 1;
    launch.notes.push_back(
        "the ring count folds after every tile (the ring_fold_every_tile option, a testing aid)");
    return;
  }
  const int64_t* trip = nullptr;
  for (const RoleItem& it : roles)
    if (it.kind == RoleItem::Kind::kLoop) trip = as_const_int(it.stmt.as<ForNode>()->extent);
  if (!trip || launch.stream_k_units > 0) {
    launch.ring_fold_at = kFoldAt;
    launch.notes.push_back(
        "the ring count folds every tile once past 2^30: a trip count that is not a constant");
    return;
  }
  // tiles x trip (make_persistent took constant grid extents only)
  int64_t iterations = *trip;
  bool overflow = false;
  for (const GridDim& g : kernel.grid)
    overflow = __builtin_mul_overflow(iterations, *as_const_int(g.extent), &iterations) || overflow;
  if (!overflow && iterations < kFoldAt) return;
  launch.ring_fold_at = kFoldAt;
  launch.notes.push_back("the ring count folds every tile once past 2^30: the block may run " +
                         (overflow ? std::string("over 2^63") : std::to_string(iterations)) +
                         " ring iterations");
}

}  // namespace

Kernel make_persistent(const Kernel& kernel, const passes::PassContext& context) {
  // Asked for by the option (every kernel) or by the GEMM config (the
  // kernel attr PERSISTENT, which the tuner searches).
  const auto attr = kernel.attrs.find("PERSISTENT");
  const bool by_config = attr != kernel.attrs.end() && attr->second == tir::AttrValue(int64_t{1});
  if (!context.cuda.persistent && !by_config) return kernel;
  Kernel out = kernel;
  if (pipelined_loops(kernel.body, true).empty()) {
    // (The option asks every kernel, pointwise ones too: a note only where
    // the config asked.)
    if (by_config)
      out.launch.notes.push_back(
          "not persistent: no warp-specialized main loop (the persistent form is sm_90a's "
          "warp-specialized wgmma kernel's)");
    return by_config ? out : kernel;
  }
  std::string why;
  if (kernel.grid.empty()) why = "no grid";
  for (const GridDim& g : kernel.grid)
    if (!as_const_int(g.extent)) why = "a grid extent that is not a constant";
  struct Arrival : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const LastArrivalNode*) override { found = true; }
  } arrival;
  arrival.visit_stmt(kernel.body);
  // Stream-K (gemm_template.h's StreamKSchedule, in the kernel's attrs): the
  // blocks take the whole tiles round robin, then their pieces in turn.
  auto attr_int = [&](const char* name) -> int64_t {
    const auto it = kernel.attrs.find(name);
    if (it == kernel.attrs.end()) return 0;
    const int64_t* v = std::get_if<int64_t>(&it->second);
    return v ? *v : 0;
  };
  const int64_t sk_units = attr_int("STREAM_K");
  // (A split-K tile's blocks meet at its counter; a persistent block would
  // take the tiles of one split in turn: stream-K is the persistent form.)
  if (why.empty() && arrival.found && sk_units == 0)
    why = "split-K (the K splits of a tile meet at a counter)";
  std::optional<std::vector<RoleItem>> roles;
  if (why.empty()) roles = persistent_roles(kernel, &why);
  if (!why.empty()) {
    out.launch.notes.push_back("not persistent: " + why);
    return out;
  }
  out.launch.persistent = true;
  if (sk_units > 0) {
    out.launch.stream_k_units = sk_units;
    out.launch.stream_k_dp_tiles = attr_int("STREAM_K_DP_TILES");
    out.launch.stream_k_pieces = attr_int("STREAM_K_PIECES");
    out.launch.notes.push_back(fmt::format(
        "persistent stream-K over {} blocks: each takes {} whole tiles round robin, then its {} "
        "piece(s) of the K iterations of the last tiles in turn; the producer fills the next "
        "piece's stages while the MMA warpgroups store the last",
        sk_units, out.launch.stream_k_dp_tiles / sk_units, out.launch.stream_k_pieces));
  } else {
    out.launch.notes.push_back(
        "persistent: each block takes tiles block, block + blocks, ...; the producer fills the "
        "next tile's stages while the MMA warpgroups store the last");
  }
  ring_fold(kernel, *roles, context, out.launch);
  const auto pingpong = kernel.attrs.find("PINGPONG");
  if (pingpong != kernel.attrs.end() && pingpong->second == tir::AttrValue(int64_t{1})) {
    const std::string no = sk_units > 0 ? "stream-K (a block's pieces run in one sequence)"
                                        : pingpong_problem(kernel, context);
    if (!no.empty()) {
      out.launch.notes.push_back("not ping-pong: " + no);
      return out;
    }
    out.launch.consumer_teams = 2;
    out.launch.num_threads += out.launch.consumer_threads;
    out.launch.notes.push_back(fmt::format(
        "ping-pong: two teams of {} MMA threads take the block's tiles in turn, their main loops "
        "one after the other, so that one team's epilogue runs during the other's main loop",
        out.launch.consumer_threads));
  }
  return out;
}

}  // namespace tilefuse::codegen
