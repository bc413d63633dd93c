#include "codegen/cuda/passes/persistent.h"

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

Kernel make_persistent(const Kernel& kernel, const passes::PassContext& context) {
  // Asked for by the option (every kernel) or by the GEMM config (the
  // kernel attr PERSISTENT, which the tuner searches).
  const auto attr = kernel.attrs.find("PERSISTENT");
  const bool asked = context.cuda.persistent ||
                     (attr != kernel.attrs.end() && attr->second == tir::AttrValue(int64_t{1}));
  if (!asked || pipelined_loops(kernel.body, true).empty()) return kernel;
  Kernel out = kernel;
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
  // (A split-K tile's blocks meet at its counter; a persistent block would
  // take the tiles of one split in turn. Stream-K's territory.)
  if (why.empty() && arrival.found) why = "split-K (the K splits of a tile meet at a counter)";
  if (why.empty()) persistent_roles(kernel, &why);
  if (!why.empty()) {
    out.launch.notes.push_back("not persistent: " + why);
    return out;
  }
  out.launch.persistent = true;
  out.launch.notes.push_back(
      "persistent: each block takes tiles block, block + blocks, ...; the producer fills the next "
      "tile's stages while the MMA warpgroups store the last");
  return out;
}

}  // namespace tilefuse::codegen
