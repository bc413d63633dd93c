// Non-negativity of integer expressions: the one analysis licm (in-bounds
// proofs of hoisted loads) and the CUDA printer (C++ `/` and `%` where the
// IR's floor division agrees with them) use. A range analysis (simplify's
// bounds) proves more; this one needs no ranges, only which vars are >= 0.
#pragma once

#include <unordered_set>

#include "tir/ir.h"

namespace tilefuse::analysis {

class NonNegative {
 public:
  // Vars known to be >= 0.
  std::unordered_set<const tir::VarNode*> vars;

  // Does `e` hold a value >= 0 whatever the free vars not in `vars` are?
  // The rules (each a derivation):
  //  - a constant c >= 0; a var in `vars`;
  //  - a + b, a * b, min(a, b): both >= 0; max(a, b): either;
  //  - floor(a / c) with c > 0 a constant and a >= 0: >= 0;
  //  - a % c with c > 0 a constant: floor modulo takes the divisor's sign;
  //  - a widening integer cast of a value >= 0 keeps it;
  //  - select(p, a, b): both arms >= 0.
  bool holds(const tir::Expr& e) const;

  // Adds what the kernel says is >= 0: grid vars, vars that are buffer
  // extents, copy vars, loop vars whose min is, and lets whose value is
  // (outer scopes first, so a let of a loop var is known).
  void add_kernel(const tir::Kernel& k);
};

}  // namespace tilefuse::analysis
