// epilogue: how each parallel nest over an accumulator (the GEMM epilogue)
// stores it (EpiloguePlan, tir/plan.h).
//
//  - `per_element` for a SIMT tile, or a nest that is not one global store
//    per element (plus lets and checks);
//  - `staged` for a tensor-core tile (CudaOptions::staged_epilogue): the
//    thread's column pairs go to a padded [BLOCK_M][BLOCK_N + 16 B] tile of
//    the output dtype at shared offset 0 (rows 4 banks apart: the 8 rows of
//    a fragment store hit 32 banks), then every thread stores whole 16-byte
//    row chunks, coalesced, where the chunk's addresses are contiguous,
//    aligned and unmasked (else element by element). Only where the store's
//    address and mask read no memory, no value of the nest (its lets and the
//    stored value) loads memory other than the accumulator (a bias: at
//    128x256 under a warp-specialized kernel's 168 registers such epilogues
//    spilled 40-296 bytes), and the tile fits the shared memory
//    below the mbarriers (the operand stages are dead by then: nothing
//    reads them after the main loop; in a persistent kernel a region of
//    its own after them, where it fits). A 16-bit stmatrix tile not stored
//    whole by TMA is staged per warp where its buffers fit
//    (CudaOptions::warp_staged_epilogue; EpiloguePlan::per_warp), also
//    where only they fit beside a persistent kernel's rings: each MMA warp
//    stages the 16-row slabs it holds, 64 columns at a time, in a 2 KiB
//    buffer of its own after every other shared byte, and stores them
//    itself, ordered by __syncwarp alone; into an unmasked 2-D row-major
//    output by one TMA box a slab from its lane 0, two buffers a warp
//    (CudaOptions::warp_tma_store);
//  - `paired` otherwise for a tensor-core tile: each thread's column pairs
//    (e, e + 1) computed together and stored with one access of twice the
//    width where the addresses are adjacent, aligned and both unmasked.
// A note says which and why not staged.
#pragma once

#include <vector>

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel plan_epilogues(const tir::Kernel& kernel, const passes::PassContext& context);

// The dynamic shared memory a block may have on sm_90 (227 KiB).
inline constexpr int64_t kMaxDynamicSharedBytes = 232448;
// An sm_90 SM's shared memory (228 KiB) and what the hardware reserves of
// it for each resident block (1 KiB): blocks an SM by shared memory are
// kSharedBytesPerSm / (dynamic bytes + kReservedSharedBytesPerBlock)
// (CUDA C++ Programming Guide, "Shared Memory" of compute capability 9.0).
inline constexpr int64_t kSharedBytesPerSm = 233472;
inline constexpr int64_t kReservedSharedBytesPerBlock = 1024;

// The parts of an epilogue nest `for i in parallel { lets; for j in
// parallel { body } }` over an accumulator: the inner loop, and the nest's
// one global store when its statements are lets, checks and that store
// (null otherwise). InternalError when the nest does not cover the
// accumulator in 2-D.
struct EpilogueNest {
  const tir::ForNode* inner = nullptr;
  const tir::StoreNode* store = nullptr;
  // The nest's lets, in order, and which of them the store's address and
  // mask read (directly or through other lets): what a staged epilogue's
  // copy-out recomputes. Empty without a store.
  std::vector<const tir::LetStmtNode*> lets;
  std::vector<bool> address_let;
};
EpilogueNest epilogue_nest(const tir::ForNode* outer, const tir::BufferNode* fragment);

}  // namespace tilefuse::codegen
