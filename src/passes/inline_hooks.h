// inline_hooks: replaces the template hooks (load_input / store_output) by
// the code that produces and consumes each operand — the first pass of the
// pipeline (DESIGN.md, "Passes"); every later pass sees no hooks.
//
// The table maps hook names to callbacks, so this pass knows nothing of the
// graph (lower/ builds the callbacks from a plan step with expr_lowering):
// - an input hook gets the HookLoad's indices and mask and returns the
//   operand's value there (the fused prologue, or a plain load) plus the
//   checks (gather bounds checks) that must run before it;
// - an output hook gets the HookStore's indices, value and mask and returns
//   the statement that replaces it (epilogue math, checks and the store).
// A masked-off hook yields 0 for its whole prologue, so a masked input hook
// becomes `select(mask, value, 0)` unless the value is already a plain
// (cast of a) load masked by the hook's mask. Checks collected from the expressions of a statement
// are placed right before it, and the statement goes inside the lets its hooks bind. Inside a Copy,
// whose value is evaluated per element of its region, they go in a `parallel` loop nest over that
// region placed before the copy (a Check is a statement and cannot sit in the copy's value). The
// template never hoists them: LICM moves them, with their loads, out of the K loop.
//
// A hook with no table entry, or whose replacement has another dtype than
// the hook, is an InternalError.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tir/ir.h"

namespace tilefuse::passes {

struct HookExpansion {
  tir::Expr value;
  std::vector<tir::Stmt> checks;  // to run before the statement using `value`
  // Values bound (let) around the statement using `value`, in order; `value`
  // and the checks may read them. Not allowed for a hook in a Copy's value
  // (an InternalError): a copy's value is one expression per element.
  std::vector<std::pair<tir::Var, tir::Expr>> lets;
};

struct HookTable {
  using InputHook =
      std::function<HookExpansion(const std::vector<tir::Expr>& indices, const tir::Expr& mask)>;
  using OutputHook = std::function<tir::Stmt(const std::vector<tir::Expr>& indices,
                                             const tir::Expr& value, const tir::Expr& mask)>;
  std::map<std::string, InputHook> inputs;
  std::map<std::string, OutputHook> outputs;
};

tir::Kernel inline_hooks(const tir::Kernel& kernel, const HookTable& table);

}  // namespace tilefuse::passes
