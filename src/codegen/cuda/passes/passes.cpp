// The CUDA pass table. Order matters; each entry says why it is where it is.
#include "codegen/cuda/passes/passes.h"

#include "codegen/cuda/passes/cluster.h"
#include "codegen/cuda/passes/epilogue.h"
#include "codegen/cuda/passes/hoist_copy_addresses.h"
#include "codegen/cuda/passes/layout.h"
#include "codegen/cuda/passes/lower_gemm.h"
#include "codegen/cuda/passes/persistent.h"
#include "codegen/cuda/passes/prefetch_prologue.h"
#include "codegen/cuda/passes/producer_start.h"
#include "codegen/cuda/passes/register_a.h"
#include "codegen/cuda/passes/register_budgets.h"
#include "codegen/cuda/passes/software_pipeline.h"
#include "codegen/cuda/passes/split_k_cluster.h"
#include "codegen/cuda/passes/split_tail.h"
#include "codegen/cuda/passes/sync.h"
#include "codegen/cuda/passes/timeline.h"
#include "codegen/cuda/passes/warp_specialize.h"

namespace tilefuse::codegen {

const std::vector<passes::PassEntry>& cuda_passes() {
  static const std::vector<passes::PassEntry> kPasses = {
      {"lower_gemm", lower_gemm,
       "first: the MMA family decides the block size, the operand swizzles and whether the "
       "kernel has wgmma tiles, which every later pass reads"},
      {"warp_specialize", warp_specialize,
       "after lower_gemm (it needs the wgmma main loop) and before lower_copies: TMA is issued "
       "only by a warp-specialized producer, so the copies are decided once that is known"},
      {"lower_copies", passes::lower_copies_pass,
       "after warp_specialize: TMA (with its boxes, against the swizzles lower_gemm chose), "
       "cp.async or register-staged, decided once, where the copy is issued"},
      {"pipeline", software_pipeline,
       "after lower_copies: the loop forms depend on which copies are asynchronous and which "
       "are register-staged (register double-buffering)"},
      {"hoist_copy_addresses", hoist_copy_addresses,
       "after pipeline: it needs the warp-specialized loops' producers and their fixed-slot "
       "cp.async copies; the hoisted addresses are the producer's loop-invariant code"},
      {"persistent", make_persistent,
       "after the warp-specialized loop's copies and hoisting are known: it only changes who "
       "runs the statements around that loop; before register_budgets (its producer needs more) "
       "and epilogue (whose tile then needs a region of its own)"},
      {"prefetch_prologue", prefetch_prologue,
       "after persistent (only a persistent producer runs the next tile's prologue) and before "
       "layout (its index tile needs a place in shared memory) and register_budgets"},
      {"cluster", form_clusters,
       "after persistent (a persistent kernel takes its tiles in turn, not in pairs) and after "
       "lower_copies (only TMA copies multicast; their boxes say what each block reads); the "
       "printer then splits each multicast copy's boxes between the cluster's blocks"},
      {"producer_start", producer_start,
       "after hoist_copy_addresses (it forwards staged rows into the hoisted addresses only), "
       "persistent (a persistent producer prefetches its index instead) and cluster (no affine "
       "lead in a cluster); before register_budgets, whose producer budget reads the hoisted "
       "copies, and layout, which then places no shared buffer for the forwarded rows"},
      {"register_a", register_a,
       "after producer_start and prefetch_prologue (the hoisted addresses it forwards to global "
       "memory are final there) and before register_budgets (this form's budgets differ) and "
       "sync (whose single-issuer producer then has only B's TMA copy to issue)"},
      {"register_budgets", register_budgets,
       "after hoist_copy_addresses and persistent: a producer's budget depends on whether its "
       "copies compute addresses (TMA and hoisted copies do not) and whether it runs a tile "
       "loop"},
      {"layout", layout,
       "after pipeline: the ring depths are the loops' stages; offsets and the mbarriers of a "
       "warp-specialized loop follow"},
      {"epilogue", plan_epilogues,
       "after layout: a staged epilogue must fit the shared memory below the mbarriers"},
      {"split_tail", split_tail,
       "after epilogue (it needs the accumulator's per-warp staged epilogue, whose slab loop the "
       "printer cuts between the N halves) and register_a (its tail stays within the fragment "
       "loads' lead); it changes no shared memory, barrier or budget"},
      {"split_k_cluster", form_split_k_cluster,
       "after epilogue: it needs the workspace in fragment order and the epilogues' forms (only "
       "barrier-free ones run in a share of the warps) and offsets (the partial tile goes below "
       "them); before sync, which then sees the kernel's final shape"},
      {"sync", place_barriers,
       "after every form: barriers depend on every form and on which epilogues reuse shared "
       "memory"},
      {"timeline", mark_timeline,
       "last: a measuring aid that only marks the launch plan (the printer records the "
       "phases); it changes no decision of the passes before it"},
  };
  return kPasses;
}

}  // namespace tilefuse::codegen
