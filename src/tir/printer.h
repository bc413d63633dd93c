// The stable text form of the Tile IR (`tilefuse emit --stage=tir`, pass
// tests). parser.h reads it back: print(parse(text)) == text for any printed
// kernel, and parse(print(k)) is structurally equal to k.
//
//   kernel gemm(
//     M: i32,
//     N: i32,
//     K: i32,
//     A: global readonly f16[M, K] strides [K, 1] align 16,
//     B: global readonly f16[K, N] strides [N, 1],
//     C: global f32[M, N] strides [N, 1],
//   ) grid(pid_m: (M + 127)/128, pid_n: (N + 63)/64) attrs(BLOCK_K = 32, num_stages = 3) {
//     alloc A_s: shared f16[128, 32]
//     alloc B_s: shared f16[32, 64]
//     alloc C_f: fragment f32[128, 64]
//     fill(C_f, 0.0)
//     for k in pipelined(0, (K + 31)/32, stages=3) {
//       copy (i: 128, j: 32) A_s[i, j] = load_input<f16>("A", [pid_m*128 + i, k*32 + j],
//       mask=(...)) copy (i_1: 32, j_1: 64) B_s[i_1, j_1] = load(B, [k*32 + i_1, pid_n*64 + j_1],
//       mask=(...)) gemm(A_s, B_s, C_f)
//     }
//     for i_2 in parallel(0, 128) {
//       for j_2 in parallel(0, 64) {
//         let m = pid_m*128 + i_2
//         store_output("C", [m, pid_n*64 + j_2], C_f[i_2, j_2], mask=(m < M))
//       }
//     }
//   }
//
// Layout. One statement per line, blocks indented by 2 spaces, `}` on its
// own line (`} else {` for else branches). `let` and `alloc` print no braces:
// they scope over the rest of their block. Nested sequences print flat.
//
// Names. Every var and buffer gets one name, unique in the whole text (vars
// and buffers share the namespace): its own name when free, else with `_1`,
// `_2`, ... appended in order of first appearance. Characters outside
// [A-Za-z0-9_] become `_`; keywords, dtype and intrinsic names get a `_`.
//
// Statements.
//   for V in KIND(MIN, EXTENT) {        KIND: serial unrolled parallel;
//   for V in pipelined(MIN, EXTENT, stages=N) {    (MIN, EXTENT), not an end
//   if COND {  ...  } else {  ...  }
//   let V = VALUE                       V takes VALUE's dtype
//   alloc NAME: SCOPE DTYPE[SHAPE] [strides [..]] [align N]
//   B[I, J] = VALUE [, mask=M]
//   store_output("C", [I, J], VALUE [, mask=M])
//   copy (V: EXTENT, ...) B[I, ...] = VALUE [attrs(key = value, ...)]
//                                       copy vars are i32
//   gemm(A, B[S], C [, trans_a] [, trans_b])   B[S]: 2-D tile at prefix S
//   fill(B, VALUE)
//   check(COND, code=N, msg="... {} ...", args=[X, ...])
//   barrier()
//   evaluate(VALUE)
//
// Expressions. Binary operators by precedence, loosest first: `||`, `&&`,
// comparisons (non-associative), `+ -`, `* / %` (printed without spaces),
// then `!`. Integer `/` and `%` are floor division and modulo. Parentheses
// appear exactly where the tree needs them (so `a - (b - c)`). Calls:
// `min(a, b)`, `max`, `select(c, t, f)`, casts `f32(x)`, intrinsics
// `exp(x)`, `fma(a, b, c)`, loads `B[I, J]` (unmasked) or
// `load(B, [I, J], mask=M, other=O)`, hooks `load_input<f16>("A", [I, J],
// mask=M)`. A mask or other that is not an atom is parenthesized.
//
// Constants. i32: `42`, `-1`; other integers with a suffix: `42_i64`, `3_u8`;
// bool: `true`, `false`. f32: shortest round-trip decimal with a `.` or an
// exponent (`1.0`, `0.1`, `1e+20`), `inf`, `-inf`, `nan`; other floats add a
// suffix: `0.5_f16`, `inf_f64`. `-` is only a literal's sign (the IR has no
// negation node: `0 - x`, `neg(x)`). Attribute values are i64 (`3`), f64
// (`0.5`, always with a `.` or exponent) or strings.
//
// Kernel header: params one per line with a trailing comma; scalar params
// `NAME: DTYPE`, buffers `NAME: global [readonly] DTYPE[SHAPE] [strides
// [..]] [align N]`; then `grid(V: EXTENT, ...)` (V takes EXTENT's dtype),
// then `attrs(...)` when there are any, sorted by key. `#` starts a comment
// (the printer writes none).
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "tir/ir.h"

namespace tilefuse::tir {

std::string print(const Kernel& kernel);
// A statement or expression alone; its free vars are named as they appear.
std::string print(const Stmt& stmt);
std::string print(const Expr& expr);

std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);
std::ostream& operator<<(std::ostream& os, const Kernel& k);

// Shortest decimal that reads back to exactly `value` as a `dtype` (for f64
// as a double, otherwise as a float), always with a '.' or an exponent;
// "inf", "-inf", "nan" for non-finite values. No suffix.
std::string format_float(double value, DType dtype);

// True when `word` is reserved in the text form (keywords, dtype names,
// intrinsic names, literal words), so it cannot name a var or buffer.
bool is_reserved_word(std::string_view word);

// The dtype spelled exactly by its canonical name ("f16", "i64"; no aliases).
std::optional<DType> dtype_from_text(std::string_view word);

}  // namespace tilefuse::tir
