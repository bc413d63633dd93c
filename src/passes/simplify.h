// simplify: the target-independent clean-up every later pass relies on.
//
// Rewrites, each exact under ir.h's contract (integers wrap, `/` and `%` are
// floor division/modulo, floats round once per node, NaN propagates):
// - constant folding: integers wrap to their dtype, floats round to theirs
//   (round_to); float casts fold only where one rounding is the whole story;
//   transcendental calls are never folded (the device libm decides those).
// - identities: x+0, x*1, x-0 (floats: only those exact for -0.0 and NaN);
//   x*0 and x-x only for integers; constants reassociated to the right
//   (c1 + (x + c2) -> x + (c1+c2)), x - c -> x + (-c).
// - comparisons: x < x, and any comparison decided by ranges known from
//   loop bounds, grid extents, copy extents and lets (`i < 128` is true in
//   `for i in serial(0, 128)`), and inside an `if` its condition (`i < 64`
//   narrows i; a repeat of a conjunct is true); !(a < b) -> a >= b for ints.
// - `/` and `%` by constants from the modulus-remainder lattice and ranges:
//   (x*8 + 3) % 8 -> 3, (i*32 + j) / 32 -> i when 0 <= j < 32 and nothing
//   wraps.
// - select / mask: select(true, a, b) -> a; a load, store or hook whose
//   mask is provably true loses it; provably false, the load is its `other`
//   and the store disappears; `m && true` -> m.
// - casts: of constants, to the same dtype, and through a lossless cast.
// - statements: `if` with a known condition, loops of extent <= 0 removed,
//   extent 1 (but parallel) replaced by their body at `min`, lets of constants and vars
//   inlined, checks known to pass removed.
//
// The result is the input node itself (same_as) wherever nothing changed.
#pragma once

#include "tir/ir.h"

namespace tilefuse::passes {

tir::Kernel simplify(const tir::Kernel& kernel);
// Without a kernel around them, free vars are unknown (any value of their dtype).
tir::Stmt simplify(const tir::Stmt& stmt);
tir::Expr simplify(const tir::Expr& expr);

}  // namespace tilefuse::passes
