// lower_copies: how each copy into shared memory is done on the target
// (DESIGN.md, "Passes": lower_copies). The decision is the copy's CopyPlan
// (tir/plan.h: mechanism, width, vector load, TMA boxes, reason), which the
// code generator prints and `tilefuse explain` reports; no code is
// generated here. It runs once per kernel: on the CPU in the CPU pass
// table, on CUDA after warp_specialize (docs/architecture.md), so that TMA
// is decided once, where it is issued.
//
// Mechanisms, in the order they are tried:
//  - `tma`: only inside a warp-specialized pipelined loop (its producer
//    warpgroup issues TMA; CudaOptions::tma): the source is a plain load of
//    the destination dtype at an affine tile (indices are program ids / loop
//    vars plus at most one copy var each, no loaded value in an address, the
//    innermost copy var on the unit-stride dim), the global base is 16-byte
//    aligned and every other stride a multiple of 16 bytes (CUDA driver API,
//    cuTensorMapEncodeTiled: globalAddress and globalStrides alignment), the
//    mask only bounds indices by the tensor's shape (TMA zero-fills out of
//    bounds boxes itself), the box's inner extent is a multiple of 16 bytes,
//    no box dim exceeds 256 elements, and the destination's layout is one a
//    tensor map writes (row-major; `swizzled` with 128-byte rows; or
//    `mn_swizzled`, one box per 128-byte strip). The boxes and the tensor
//    map (LaunchPlan::tensor_maps) are planned here. Under
//    CudaOptions::tma_row_gather a cp.async-able row gather goes by TMA too,
//    one 1-row box per row. A TMA-eligible tile elsewhere is cp.async and
//    the reason says why.
//  - `cp_async` (sm_80+): the source is a plain load of the destination
//    dtype (no conversion or math; `other` 0 or absent: the masked lanes use
//    the zero-fill form, src-size 0) and, along the innermost copy dim, the
//    address is contiguous, aligned and uniformly masked for the vector.
//    width = the largest of 16, 8, 4 bytes that fits (PTX ISA, "cp.async":
//    cp-size is 4, 8 or 16; `.cg` only with 16, so 4 and 8 use `.ca`).
//    Never fewer than 4 bytes: a 2-byte element needs two of them.
//  - `register`: vector ld.global of the widest legal width (1..16 bytes,
//    a multiple of the element size, contiguous, aligned and uniformly
//    masked) of the main source load (CopyPlan::vector_load, when a vector
//    holds two or more elements, the inner extent whole vectors and
//    CudaOptions::vector_loads is on), prologue math and conversion in
//    registers, st.shared. Always available.
//  - `direct` on the CPU: the executor reads element by element.
// Shared destinations are assumed 16-byte aligned at their base (layout
// aligns every shared buffer to at least 128 bytes).
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
  // The GEMM operand ("A" or "B") the copy feeds, "" in a kernel without a
  // gemm: role "tile" for a copy into a shared tile gemm() reads, "hoisted"
  // for one into a buffer such a copy reads (the row indices and in-bounds
  // flags licm materializes before the K loop). Decided here, on the kernel
  // as lower_copies sees it: later passes may drop or forward a copy
  // (producer_start forwards the index copies into registers).
  std::string operand;
  std::string role;
};
struct CopyReport {
  std::vector<CopyDecision> copies;  // in program order
};

// The kernel with every Copy planned for `target`; TMA tensor maps and
// notes are added to the kernel's LaunchPlan. `report` (when not null)
// gets one entry per copy, in program order.
tir::Kernel decide_copies(const tir::Kernel& kernel, const tir::Target& target,
                          const tir::CudaOptions& options = {}, CopyReport* report = nullptr);

// Would `copy` be issued asynchronously (cp.async or TMA) by a
// warp-specialized producer? The same decision as decide_copies, for
// warp_specialize, which runs before it.
bool copy_can_be_async(const tir::Kernel& kernel, const tir::CopyNode* copy,
                       const tir::Target& target, const tir::CudaOptions& options);

}  // namespace tilefuse::passes
