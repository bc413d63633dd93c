// lower_copies, the decision half: how each global -> shared copy is done
// on the target (DESIGN.md, "Passes": lower_copies). The choice is recorded
// in the Copy's annotations (`mode`, `width` in bytes, `reason`), which the
// code generator and `tilefuse explain` read; no code is generated here.
//
// Modes, in the order they are tried:
//  - "tma" (sm_90+, and only for a target whose code generator lowers TMA:
//    Target::tma_copies; the mma.sync path does not, so there an eligible
//    tile is issued as cp.async and the reason says so): the source is a plain load of the
//    destination dtype at an affine tile (indices are program ids / loop vars plus at most one copy
//    var each, no loaded value in an address, the innermost copy var on the unit-stride dim), the
//    global base is 16-byte aligned and every other stride is a multiple of 16 bytes (CUDA driver
//    API, cuTensorMapEncodeTiled: globalAddress and globalStrides alignment), the mask only bounds
//    indices by the tensor's shape (TMA zero-fills out of bounds boxes itself), the box's inner
//    extent is a multiple of 16 bytes and no box dim exceeds 256 elements. width = 16.
//  - "cp_async" (sm_80+): the source is a plain load of the destination
//    dtype (no conversion or math; `other` 0 or absent: the masked lanes use
//    the zero-fill form, src-size 0) and, along the innermost copy dim, the
//    address is contiguous, aligned and uniformly masked for the vector.
//    width = the largest of 16, 8, 4 bytes that fits (PTX ISA, "cp.async":
//    cp-size is 4, 8 or 16; `.cg` only with 16, so 4 and 8 use `.ca`).
//    Never fewer than 4 bytes: a 2-byte element needs two of them.
//  - "register": vector ld.global of the widest legal width (1..16 bytes,
//    a multiple of the element size, contiguous, aligned and uniformly
//    masked) of the main source load (`vector_load`), prologue math and
//    conversion in registers, st.shared. Always available.
//  - "direct" on the CPU: the executor reads element by element.
// Shared destinations are assumed 16-byte aligned at their base (the
// emitter aligns every shared buffer to at least 16 bytes).
#pragma once

#include <string>
#include <vector>

#include "tir/ir.h"
#include "tir/target.h"

namespace tilefuse::passes {

// What lower_copies decided for one copy, for explain (the decision itself
// is the copy's CopyPlan).
struct CopyDecision {
  std::string dst;     // destination buffer name
  std::string mode;    // copy_mechanism_name: "tma", "cp_async", "register", "direct"
  int64_t width = 0;   // bytes per vector access
  std::string reason;  // human-readable, for `explain`
};
struct CopyReport {
  std::vector<CopyDecision> copies;  // in program order
};

// The kernel with every Copy annotated with its decision for `target`.
tir::Kernel decide_copies(const tir::Kernel& kernel, const tir::Target& target,
                          CopyReport* report = nullptr);

}  // namespace tilefuse::passes
