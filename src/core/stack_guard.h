// The stack budget of recursive walks.
//
// Walks over a program's IR (the lowering of graph values, the Tile IR
// visitor, mutator, printer, verifier and structural helpers, the CPU
// executor's compiled expressions, the CUDA emitter) recurse once per level
// of nesting. The planner keeps that nesting small (a fused region has at
// most FusionOptions::max_fused_ops ops and the lowering let-binds deep or
// shared values, lower/expr_lowering.h), so a walk is a few hundred frames
// deep at most. This is the safety net behind those bounds: each level calls
// check_stack(), which throws ProgramTooLarge while there is still plenty of
// stack left, instead of letting an unforeseen nesting overflow it (SIGSEGV,
// no message). The budget is measured on the running thread's own stack, so
// it holds for any `ulimit -s` and any thread (clang's
// `isStackNearlyExhausted` works the same way).
#pragma once

#include <cstddef>
#include <string>

#include "core/error.h"

namespace tilefuse {

// A program whose nesting would exhaust the stack: a user error (exit 1)
// that names what was too deep and, where known, where in the program.
class ProgramTooLarge : public UserError {
 public:
  explicit ProgramTooLarge(const std::string& message, SourceLoc loc = {})
      : UserError(message, loc) {}
};

// Bytes of stack a walk keeps in reserve: check_stack() throws when fewer
// than this many (or a quarter of the thread's stack, if smaller) are left.
inline constexpr size_t kStackReserve = size_t{512} << 10;

// Bytes of stack left below the caller on the running thread (SIZE_MAX when
// the thread's stack bounds cannot be read).
size_t stack_left();

// Throws ProgramTooLarge("program too large: <what> is nested too deeply
// ...") when less than the reserve is left. `what` names the walk ("the
// Tile IR printer", "the lowering of %12"). Costs one compare when there
// is room.
void check_stack(const char* what, SourceLoc loc = {});

}  // namespace tilefuse
