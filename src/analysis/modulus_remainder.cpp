// Transfer rules of the modulus-remainder lattice. Notation: a = ma*k + ra,
// b = mb*l + rb for unknown integers k, l; m == 0 means "exactly r".
// Arithmetic is done in 128 bits, then cut back to the dtype (see reduce()).
#include "analysis/modulus_remainder.h"

#include <numeric>

namespace tilefuse::analysis {

namespace {

using tir::Expr;
using i128 = __int128;

i128 abs128(i128 v) {
  return v < 0 ? -v : v;
}

i128 gcd128(i128 a, i128 b) {
  a = abs128(a);
  b = abs128(b);
  while (b != 0) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// Floor modulo for m > 0.
i128 floor_mod(i128 v, i128 m) {
  i128 r = v % m;
  return r < 0 ? r + m : r;
}

int bits_of(DType dt) {
  return dt == DType::Bool ? 1 : dtype_size(dt) * 8;
}

// The value v as the dtype holds it (two's-complement wrap).
int64_t wrap(DType dt, i128 v) {
  int bits = bits_of(dt);
  unsigned __int128 u = static_cast<unsigned __int128>(v);
  if (bits < 128) u &= (static_cast<unsigned __int128>(1) << bits) - 1;
  bool is_signed = dt != DType::U8 && dt != DType::Bool;
  if (is_signed && bits < 128 && (u >> (bits - 1)) & 1) {
    return static_cast<int64_t>(static_cast<i128>(u) - (static_cast<i128>(1) << bits));
  }
  return static_cast<int64_t>(u);
}

// Normal form of an exact fact (m, r) about the mathematical result of + - *,
// made sound for the wrapped value the dtype holds. The wrapped value is
// v - j*2^bits for some integer j, so it is (gcd(m, 2^bits), r) too: the cut
// modulus is m's largest power-of-two factor, capped at 2^bits. An exact
// value (m == 0) just wraps.
ModulusRemainder reduce(DType dt, i128 m, i128 r) {
  int bits = bits_of(dt);
  if (m == 0) return ModulusRemainder::constant(wrap(dt, r));
  m = abs128(m);
  i128 pow2 = m & -m;  // largest power of two dividing m
  i128 cap = static_cast<i128>(1) << (bits < 63 ? bits : 62);
  i128 cut = pow2 < cap ? pow2 : cap;
  if (cut == 1) return ModulusRemainder::unknown();
  return {static_cast<int64_t>(cut), static_cast<int64_t>(floor_mod(r, cut))};
}

// A fact about a value that did not wrap (a quotient, a remainder, a choice
// between two values): only normalized.
ModulusRemainder exact(i128 m, i128 r) {
  if (m == 0) return ModulusRemainder::constant(static_cast<int64_t>(r));
  m = abs128(m);
  if (m > INT64_MAX) return ModulusRemainder::unknown();
  return {static_cast<int64_t>(m), static_cast<int64_t>(floor_mod(r, m))};
}

class Analyzer {
 public:
  explicit Analyzer(const ModulusRemainderScope& scope) : scope_(scope) {}

  ModulusRemainder get(const Expr& e) {
    DType dt = e.dtype();
    if (is_floating(dt)) return ModulusRemainder::unknown();
    if (const auto* imm = e.as<tir::IntImmNode>()) return ModulusRemainder::constant(imm->value);
    if (const auto* v = e.as<tir::VarNode>()) {
      auto it = scope_.find(v);
      return it == scope_.end() ? ModulusRemainder::unknown() : it->second;
    }
    switch (e.kind()) {
      case tir::ExprKind::Add: {
        // a + b = (ma*k + mb*l) + (ra + rb); any common divisor of ma and mb
        // divides the first part, the largest being gcd(ma, mb).
        const auto* op = e.as<tir::AddNode>();
        ModulusRemainder a = get(op->a), b = get(op->b);
        return reduce(dt, gcd128(a.modulus, b.modulus), i128(a.remainder) + b.remainder);
      }
      case tir::ExprKind::Sub: {
        // a - b = (ma*k - mb*l) + (ra - rb), as for +.
        const auto* op = e.as<tir::SubNode>();
        ModulusRemainder a = get(op->a), b = get(op->b);
        return reduce(dt, gcd128(a.modulus, b.modulus), i128(a.remainder) - b.remainder);
      }
      case tir::ExprKind::Mul: {
        // a * b = ma*mb*k*l + ma*rb*k + mb*ra*l + ra*rb: every term but the
        // last is a multiple of g = gcd(ma*mb, ma*rb, mb*ra). With b exact
        // (mb = 0) this is (ma*rb, ra*rb): `x*8` is (8, 0).
        const auto* op = e.as<tir::MulNode>();
        ModulusRemainder a = get(op->a), b = get(op->b);
        i128 ma = a.modulus, mb = b.modulus, ra = a.remainder, rb = b.remainder;
        i128 g = gcd128(gcd128(ma * mb, ma * rb), mb * ra);
        return reduce(dt, g, ra * rb);
      }
      case tir::ExprKind::Div: {
        // Floor division by a constant c > 0 when c | ma: a = c*(ma/c)*k + ra,
        // so floor(a/c) = (ma/c)*k + floor(ra/c) exactly (the first part is a
        // multiple of c and leaves the floor alone). The quotient cannot
        // wrap: |a/c| <= |a|.
        const auto* op = e.as<tir::DivNode>();
        const int64_t* c = tir::as_const_int(op->b);
        if (!c || *c <= 0) return ModulusRemainder::unknown();
        ModulusRemainder a = get(op->a);
        if (a.modulus == 0) {
          i128 q = i128(a.remainder) / *c;
          if (q * *c > a.remainder) --q;
          return ModulusRemainder::constant(static_cast<int64_t>(q));
        }
        if (a.modulus % *c != 0) return ModulusRemainder::unknown();
        i128 q = i128(a.remainder) / *c;  // ra >= 0, so truncation is floor
        return exact(a.modulus / *c, q);
      }
      case tir::ExprKind::Mod: {
        // Floor modulo by a constant c > 0: a % c = a - c*floor(a/c) is
        // congruent to a modulo gcd(ma, c), so it is (gcd(ma, c), ra). When
        // c | ma that gcd is c and the value is the constant ra mod c:
        // `(x*8 + 3) % 8` is 3.
        const auto* op = e.as<tir::ModNode>();
        const int64_t* c = tir::as_const_int(op->b);
        if (!c || *c <= 0) return ModulusRemainder::unknown();
        ModulusRemainder a = get(op->a);
        i128 g = gcd128(a.modulus, *c);
        if (g == *c)
          return ModulusRemainder::constant(static_cast<int64_t>(floor_mod(a.remainder, g)));
        return exact(g, a.remainder);
      }
      case tir::ExprKind::Min:
      case tir::ExprKind::Max:
      case tir::ExprKind::Select: {
        // The value is one of two values a or b: v = a or v = b. Both are
        // congruent to ra modulo gcd(ma, mb, ra - rb), the union of the
        // two facts in the lattice.
        Expr x, y;
        if (const auto* op = e.as<tir::MinNode>()) x = op->a, y = op->b;
        if (const auto* op = e.as<tir::MaxNode>()) x = op->a, y = op->b;
        if (const auto* op = e.as<tir::SelectNode>()) x = op->true_value, y = op->false_value;
        ModulusRemainder a = get(x), b = get(y);
        i128 g = gcd128(gcd128(a.modulus, b.modulus), i128(a.remainder) - b.remainder);
        return exact(g, a.remainder);
      }
      case tir::ExprKind::Cast: {
        // Int -> int: a widening cast keeps the value. A narrowing one wraps
        // it modulo 2^bits of the target, so reduce() applies; bool and
        // float sources say nothing.
        const auto* op = e.as<tir::CastNode>();
        DType from = op->value.dtype();
        if (!is_integral(from) || !is_integral(dt)) return ModulusRemainder::unknown();
        ModulusRemainder a = get(op->value);
        return reduce(dt, a.modulus, a.remainder);
      }
      default:
        return ModulusRemainder::unknown();
    }
  }

 private:
  const ModulusRemainderScope& scope_;
};

}  // namespace

ModulusRemainder modulus_remainder(const tir::Expr& e, const ModulusRemainderScope& scope) {
  return Analyzer(scope).get(e);
}

}  // namespace tilefuse::analysis
