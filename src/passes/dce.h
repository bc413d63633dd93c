// dce: dead code elimination.
//
// Removes, until nothing more goes:
// - lets whose var the body never reads (values have no effects, ir.h);
// - stores, copies, fills and gemms into a local, shared or fragment buffer
//   that nothing reads (no load of it, not a gemm A/B operand), then its
//   alloc once nothing mentions the buffer. Global buffers are the kernel's
//   results: their writes always stay.
// - `if` with a constant condition (the taken branch stays), branches and
//   ifs left empty (an empty then-branch: `if !c` with the else), loops with an empty body or a
//   constant extent <= 0, empty sequences;
// - `evaluate(e)`: no expression has an effect, so none is needed.
// Checks, barriers and store_output hooks always stay.
//
// The result is the input itself (same_as) when nothing was dead.
#pragma once

#include "tir/ir.h"

namespace tilefuse::passes {

tir::Kernel eliminate_dead_code(const tir::Kernel& kernel);

}  // namespace tilefuse::passes
