// pack_gemm_operands: on the CPU, a gemm reads its A and B operands straight
// from the tensors the template's copies stage them from, instead of from
// the shared tiles (CPU pass table, after lower_copies).
//
// The GEMM template stages every K step's operand tiles in shared memory,
// which is what a GPU needs (cp.async / TMA into shared, then MMA). On the
// CPU the executor's gemm packs its operands into MR-row / NR-column panels
// (reference/matmul.h) anyway, so the staging is a second copy of every
// element (on the 2048^3 seed, 64 MB of copies against the reference
// engine's one 8 MB gather). This pass marks such a copy `gemm_pack`
// (tir::CopyMechanism::GemmPack): the executor then records, per row of
// the tile, where the row starts in the source and how many of its
// elements are in bounds, and the gemm packs its panels from there (a
// gathered operand through its row index, read once per row); nothing is
// written to the shared tile.
//
// A copy is marked when all of these hold (otherwise it stays `direct`):
//  - its destination is a 2-D shared buffer whose whole shape the copy
//    writes (constant extents equal to the shape, destination indices
//    exactly the copy vars in order), written by this copy only, and read
//    only as the A or B operand (untransposed) of gemms in the same
//    statement list, after the copy, with no other statement between that
//    touches the buffer;
//  - its value is a plain load (no `other`) of the destination's dtype;
//  - along the copy's inner var the source is contiguous and masked as a
//    prefix: the inner var appears only in the last source index, which
//    is `e + j` or `j` (e free of j), the source's last stride is 1, and
//    each term of the mask's conjunction is free of j or `e + j < b` /
//    `j < b` with e and b free of j (a K or N tail).
// Before those checks, a load nested in the source's row indices or mask
// (the gathered row, `index[m]`) loses each mask conjunct over the inner
// var that the copy's own mask has too: without a K loop the template
// masks it by `k*BLOCK_K + j < K` as well, which holds wherever the copy
// reads, and without it the row is the same for the whole row (printed in
// the copy's value; the copy reads the same elements).
// The index bounds check of a gather is a `check` statement of its own
// (the template's), untouched here: an out-of-range index still stops the
// program with the message naming the tensor, position and value.
#pragma once

#include <string>
#include <vector>

#include "passes/lower_copies.h"
#include "tir/ir.h"

namespace tilefuse::passes {

// The kernel with each qualifying copy's plan set to gemm_pack (see
// above); every other node is unchanged. Copies must already be planned
// (lower_copies); a kernel without qualifying copies is returned as is.
// `report` (lower_copies' report of this kernel, when not null) gets the
// new mode and reason for each copy re-planned.
tir::Kernel pack_gemm_operands(const tir::Kernel& kernel, CopyReport* report = nullptr);

}  // namespace tilefuse::passes
