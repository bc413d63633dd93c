// The Tile IR well-formedness check. Tests, and debug builds of the pass
// pipeline, run it on every kernel a template builds and after every pass.
//
// It rejects: uses of vars that are not in scope and vars bound again while
// in scope; buffers used outside their declaration (a global buffer that is
// not a parameter, a shared/fragment/local one outside its alloc) and global
// allocs; index counts that differ from the buffer's rank and non-integer
// indices; non-bool conditions and masks; operands of one operator with
// different dtypes, arithmetic on bool, float-only intrinsics on integers,
// wrong call arities; constants that do not fit their dtype; a store, copy,
// fill or gemm result of a dtype other than the buffer's; writes to
// read-only inputs; fragment elements accessed outside a parallel loop;
// barriers inside a parallel loop; gemm operands that are global, of
// different dtypes or whose shapes do not line up; loops whose var, min and
// extent dtypes differ; checks whose message placeholders do not match
// their args; hooks once they should be gone. It does not judge performance or legality of fusion.
//
// The kernel plan (tir/plan.h), each invariant only where its plan part
// exists (a CPU kernel, or one before the backend passes, has none; a
// shared buffer's ring depth, offset and bytes once layout placed it,
// offset >= 0):
//  - a copy's vector_load is a Load node of the copy's value (by identity)
//    read two or more elements at a time (width = k * element size, k >= 2);
//    a cp_async copy is 4, 8 or 16 bytes wide; a tma copy sits in a
//    warp-specialized pipelined loop and its map indexes the kernel's
//    tensor_maps;
//  - a shared buffer a pipelined loop's copy fills has a ring depth of the
//    loop's stages (unless the loop runs in order); its bytes are its stages
//    of its tile; wgmma operand tiles and TMA tiles with a swizzled tensor
//    map are 1024-byte aligned (offset and stage size); shared buffers live
//    at once and the mbarriers do not overlap, and fit the kernel's shared
//    bytes;
//  - a warp-specialized loop: launch threads = producer + consumer threads
//    (and the launch's consumer threads the loop's); it sits at the
//    kernel's top level (through sequences, lets and allocations only); a
//    `consumers` barrier comes only after such a loop;
//  - a staged epilogue's tile (BLOCK_M * pitch * element bytes, at offset
//    0) fits below the mbarriers, else within the kernel's shared bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tir/ir.h"

namespace tilefuse::tir {

struct VerifyOptions {
  // Hooks (load_input / store_output) are legal until inline_hooks has run.
  bool allow_hooks = true;
};

// Every problem found, each one line: "<where>: <what>", where <where> is
// the offending statement's first printed line. Empty when well formed.
std::vector<std::string> verify_errors(const Kernel& kernel, const VerifyOptions& options = {});

// Throws InternalError listing the problems and the printed kernel;
// `context` names the stage ("after licm").
void verify(const Kernel& kernel, std::string_view context = "", const VerifyOptions& options = {});

}  // namespace tilefuse::tir
