#include "codegen/cuda/passes/cluster.h"

#include <fmt/format.h>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "passes/simplify.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

namespace {

constexpr int kClusterSize = 2;
// Pairs checked one by one: a grid of more tiles than this stays without a
// cluster rather than slow the compile (2^16 tiles of 64x64 is a 16384^2
// output).
constexpr int64_t kMaxCheckedTiles = int64_t{1} << 16;

// Every LetStmt binding of the kernel (a var is bound once: the verifier),
// each value with the lets it reads substituted, so an expression over lets
// becomes one over the grid var, the loop var and params.
VarMap all_lets(const Stmt& body) {
  struct Lets : IRVisitor {
    std::vector<std::pair<Var, Expr>> order;
    using IRVisitor::visit;
    void visit(const LetStmtNode* op) override {
      order.emplace_back(op->var, op->value);
      IRVisitor::visit(op);
    }
  } lets;
  lets.visit_stmt(body);
  VarMap map;
  for (const auto& [v, e] : lets.order) map[v.get()] = substitute(e, map);
  return map;
}

// The grid vars' values at linear program id `p` (blockIdx.x: the last
// dim fastest, as the printer flattens the grid), as a substitution.
VarMap grid_at(const std::vector<GridDim>& grid, int64_t p) {
  VarMap at;
  for (size_t d = grid.size(); d-- > 0;) {
    const int64_t extent = *as_const_int(grid[d].extent);
    at[grid[d].var.get()] = make_int(grid[d].var.dtype(), p % extent);
    p /= extent;
  }
  return at;
}

// Does the TMA copy read the same boxes at program ids 2c and 2c + 1, for
// every c of the grid and every iteration of the loop (the loop var left
// symbolic)?
bool same_boxes_in_pairs(const CopyPlan& plan, const VarMap& lets, const std::vector<GridDim>& grid,
                         int64_t tiles) {
  std::vector<Expr> coords;
  for (const TmaBox& b : plan.boxes)
    for (const Expr& c : b.coords) coords.push_back(passes::simplify(substitute(c, lets)));
  for (int64_t p = 0; p < tiles; p += kClusterSize) {
    const VarMap first = grid_at(grid, p), second = grid_at(grid, p + 1);
    for (const Expr& c : coords)
      if (!structural_equal(passes::simplify(substitute(c, first)),
                            passes::simplify(substitute(c, second))))
        return false;
  }
  return true;
}

}  // namespace

Kernel form_clusters(const Kernel& kernel, const passes::PassContext& context) {
  if (!context.cuda.cluster_multicast) return kernel;
  const std::vector<const ForNode*> loops = pipelined_loops(kernel.body, true);
  if (loops.empty()) return kernel;
  Kernel out = kernel;
  std::string why;
  int64_t tiles = 1;
  bool constant = true;
  for (const GridDim& g : kernel.grid) {
    const int64_t* e = as_const_int(g.extent);
    if (e)
      tiles *= *e;
    else
      constant = false;
  }
  // A persistent kernel's blocks take tiles b, b + G, ... (G blocks, G
  // even: the runtime rounds it down to whole clusters), so the blocks 2c
  // and 2c + 1 of a cluster take the pairs (2c + jG, 2c + 1 + jG) in step,
  // as many of them each where the tiles are even: the pairs checked below.
  // Stream-K's pieces and ping-pong's teams do not pair up that way.
  if (kernel.launch.persistent && kernel.launch.stream_k_units > 0)
    why = "persistent stream-K (its blocks' pieces are not pairs of tiles)";
  else if (kernel.launch.persistent && kernel.launch.consumer_teams > 1)
    why = "ping-pong (each team takes every other tile of its block)";
  else if (!context.target.is_cuda() || context.target.sm < 90)
    why = "clusters need sm_90";
  else if (loops.size() != 1)
    why = "more than one warp-specialized loop";
  else if (!constant)
    why = "the grid is not a constant";
  else if (kernel.grid.empty() || tiles == 0)
    why = "no grid";
  else if (tiles % kClusterSize != 0)
    why = fmt::format("an odd grid ({} tiles)", tiles);
  else if (tiles > kMaxCheckedTiles)
    why = fmt::format("more than {} tiles to check in pairs", kMaxCheckedTiles);
  PlanEdits edits;
  if (why.empty()) {
    const VarMap lets = all_lets(kernel.body);
    const PipelinedBody body = split_pipelined_body(loops[0]);
    std::string names;
    for (const CopyNode* c : body.copies) {
      const CopyPlan& p = *c->plan;
      if (p.mechanism != CopyMechanism::Tma || p.row_gather || p.boxes.empty() ||
          p.boxes.size() % kClusterSize != 0 || p.boxes[0].coords.size() < 2 ||
          p.boxes[0].coords.size() > 3)
        continue;
      if (!same_boxes_in_pairs(p, lets, kernel.grid, tiles)) continue;
      CopyPlan q = p;
      q.multicast = true;
      edits.copies[c] = q;
      names += (names.empty() ? "" : ", ") + c->dst.name();
    }
    if (edits.copies.empty())
      why = "no TMA copy reads the same tiles in both blocks of every pair of program ids";
    else {
      out = with_plans(kernel, edits);
      out.launch.cluster_size = kClusterSize;
      out.launch.notes.push_back(fmt::format(
          "cluster of {} blocks (program ids 2c, 2c + 1): {} shared by TMA multicast, each block "
          "issuing half of its boxes",
          kClusterSize, names));
      return out;
    }
  }
  out.launch.notes.push_back("no cluster: " + why);
  return out;
}

}  // namespace tilefuse::codegen
