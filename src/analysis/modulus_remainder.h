// The modulus-remainder lattice (Halide's ModulusRemainder): what is known
// about an integer expression's value modulo some number.
//
// A fact (m, r) says "the value is m*k + r for some integer k". m == 0 means
// the value is exactly r; m == 1 (r == 0) means nothing is known. With m > 0
// the remainder is kept in [0, m). Facts are sound for the values the IR
// really computes: ir.h says integer arithmetic wraps modulo 2^bits, and a
// wrapped value differs from the exact one by a multiple of 2^bits, so after
// every + - * the modulus is cut to gcd(m, 2^bits) (a power of two). So
// `x*8 + 3` (i32) is (8, 3) whatever x is, but `x*3` is only (1, 0): with
// wrapping, 3 does not divide it. Each transfer rule is derived in
// modulus_remainder.cpp.
//
// simplify uses it for `%` and `/` by constants; axis_info for divisibility.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "tir/ir.h"

namespace tilefuse::analysis {

struct ModulusRemainder {
  int64_t modulus = 1;
  int64_t remainder = 0;

  static ModulusRemainder unknown() { return {1, 0}; }
  static ModulusRemainder constant(int64_t v) { return {0, v}; }
  bool operator==(const ModulusRemainder&) const = default;
};

// Facts about vars the expression reads (let-bound values); a var not in the
// map is unknown (loop vars step by 1, so nothing better holds for them).
using ModulusRemainderScope = std::unordered_map<const tir::VarNode*, ModulusRemainder>;

// The fact for an integer (or bool) expression; unknown for anything else.
ModulusRemainder modulus_remainder(const tir::Expr& e, const ModulusRemainderScope& scope = {});

}  // namespace tilefuse::analysis
