// Loop-invariant code motion (DESIGN.md, "Passes": licm).
//
// Moves out of every loop each let, bounds check and expression that is
// invariant in it, to the outermost loop level where it stays invariant
// (loops are processed inside out, so what leaves a loop is a candidate for
// leaving the next one). This is what makes a gathered GEMM cost a plain
// GEMM: the row-index load, its negative wrap and its bounds check leave the
// K loop, so the K loop only streams tiles.
//
// Rules (each one a consequence of ir.h's "Hoisting" and "Masks" contract):
//  - An expression is invariant in a loop when it mentions no var bound in
//    the loop (the loop var, its lets that stay, inner loop / copy vars)
//    and every load in it reads a buffer that nothing inside the loop writes
//    (store, copy destination, fill, gemm accumulator) and that is not
//    allocated inside it, and that cannot alias a buffer written there.
//    Aliasing rule: a read-only global input never aliases a written buffer
//    (the verifier rejects writes to it, and an input passed twice is
//    read-only in both); shared / fragment / local allocations are distinct
//    memory; a writable global (an output) is taken to possibly alias any
//    other writable global, so it is never read out of a loop that writes a
//    global. (ir.h promises more - distinct Buffer nodes never alias - but
//    reading an output back is rare and not worth trusting the caller for.)
//    Hooks are never moved (they run before inline_hooks, whose output licm
//    sees).
//  - A hoisted load keeps its own mask ANDed with the loop-entry condition
//    `extent > 0` (lo < hi), so a zero-trip loop never executes it; loops of
//    constant positive extent need no guard and loops of constant extent <= 0
//    are left alone.
//  - Mask conjuncts that mention a var of the loop only guard other accesses
//    (the K-tail conjunct `k*32 + j < K` on a row-index load `index[m]`).
//    The address of such a load stays valid without them when either
//    (a) every index is invariant, provably >= 0 (constants, grid / loop /
//        copy vars over non-negative ranges, shape params, sums, products
//        and constant floor divisions of those) and provably < its dim (a
//        kept conjunct `idx < dim` with dim equal to the buffer's shape, or
//        constants): the conjunct is dropped; or
//    (b) the conjunct is replaced by its value at a witness lane: the loop
//        var at its min and every inner loop / copy var the address does not
//        use at its first value (`k*32 + j < K` becomes `0 < K`; constant
//        true is dropped). The loop's first iteration evaluated the load at
//        that lane (top-level statements of the body run every iteration;
//        inner loops of constant positive extent run their first value;
//        loads under an `if` get no witness), so the hoisted load only reads
//        addresses the loop read, and never faults where it did not.
//        The body is read modulo its own lets: a let of the loop that the
//        conjunct names (cse's `let cse = k*32` in `cse + j < K`) is replaced
//        by its value, transitively, before the witness values are put in
//        (it was evaluated in the same iteration, before the load); and an
//        inner var the address reads through a let (`row = f(i)`) counts as
//        used by the address, so it is not fixed at its first value. A let
//        whose value reads a buffer the loop writes leaves the conjunct
//        variant: the load stays.
//    Lanes where a dropped conjunct is false then read the real element
//    instead of `other`. This relies on the producers' contract (lower/'s
//    hooks): the consumers of such a value are themselves masked by the
//    same conjunct (the tile load it addresses), or are bounds checks that
//    the witness lane makes fail exactly when the loop's would.
//  - Integer division / modulo is hoisted only by a nonzero constant, so a
//    hoisted expression cannot fault where the loop would not have run.
//  - A `check` (or a statement made only of lets, loops, ifs and checks) that
//    is invariant is hoisted with the same guard (`if extent > 0 { check }`)
//    and to the same level as the lets it reads. Behaviour is kept because:
//    the check's condition only reads values that do not change in the loop,
//    so if it passes in the loop it passes hoisted; if it fails in the loop,
//    it fails in the first iteration, where (being a top-level statement of
//    the body) it is reached unconditionally. Only checks that no unhoisted
//    check precedes in the body are hoisted, so the first failing check -
//    the error the user sees - is the same. Stores it now precedes are not
//    observable: a failed program's outputs are unspecified (ir.h "Checks").
//  - Expressions inside statements that stay in the loop are hoisted into
//    lets when they are invariant and contain a load or an intrinsic call;
//    cheap index arithmetic is left to the code generator.
//  - Inside a copy, an integer or bool value that is invariant in the loop
//    except for the copy's own vars (the wrapped row index of a gather,
//    `select(index[m0 + i] < 0, ...)`, or its in-bounds flag) is
//    materialized: a shared buffer over those copy dims (constant extents)
//    is filled by a copy before the loop, followed by a barrier (and
//    preceded by one when an outer loop runs it again: the last iteration's
//    readers must be done), and the copy reads it back. Only where a barrier is legal (not inside a
//    parallel loop or a copy).
//  - A loop left with no statements (all of it hoisted) is dropped.
#pragma once

#include <string>
#include <vector>

#include "tir/ir.h"

namespace tilefuse::passes {

// One hoisted item, for `tilefuse explain`.
struct LicmHoist {
  std::string kind;       // "let", "expr" or "check"
  std::string what;       // printed let var / check condition
  std::string from_loop;  // var of the loop it was in
  std::string to_loop;    // var of the outermost loop it left (it now sits before it)
  int levels = 1;         // how many loops it left
};
struct LicmReport {
  std::vector<LicmHoist> hoisted;
};

// The kernel with loop invariants hoisted; `report` (optional) lists them.
tir::Kernel hoist_loop_invariants(const tir::Kernel& kernel, LicmReport* report = nullptr);

}  // namespace tilefuse::passes
