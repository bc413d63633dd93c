// cse: common subexpression elimination.
//
// Within a block (a sequence of statements, or a single statement body), a
// non-trivial expression that occurs twice or more in the statements' own
// expressions (store indices/values/masks, check conditions, let values,
// loop bounds, if conditions, copy values) is computed once into a new
// `let cse = ...` placed just before the first statement that uses it, and
// every occurrence in that statement and the ones after it reads the var.
// The largest repeated expression of the earliest statement goes first;
// lets may then nest (a repeated part of a hoisted value is hoisted too).
// A nested block (a loop or branch body) is a block of its own: a repeat of
// a loop bound inside the loop body is left to licm. A block of more than
// kMaxCseBlock statements is taken kMaxCseBlock at a time (a repeat across
// two such runs stays): the search starts again after each binding, so a
// block costs its length times its bindings, and the runs keep that linear
// in the length (a chain of 256 gathers puts 256 checks in one block).
//
// Legal because expressions have no effects (ir.h): every operand is
// evaluated, nothing writes memory. A load is merged only when no
// statement between its first and last use writes its buffer (a store,
// copy, fill or gemm into it; a barrier or store_output counts as writing
// everything), and load_input hooks are never merged (inline_hooks expands
// them). Constants and vars are never bound, nor are conditions and masks
// (bool values: one compare each, and licm / lower_copies read their
// conjuncts). An expression that uses a
// copy's own vars stays in the copy.
//
// The result is the input itself (same_as) when nothing was found.
#pragma once

#include <cstddef>

#include "tir/ir.h"

namespace tilefuse::passes {

inline constexpr size_t kMaxCseBlock = 64;

tir::Kernel eliminate_common_subexpressions(const tir::Kernel& kernel);

}  // namespace tilefuse::passes
