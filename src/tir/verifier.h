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
