// Reads the text form of printer.h back into IR, so pass tests can be
// written as text in -> pass -> text out.
//
// Names are resolved lexically: a name must be defined (as a param, grid
// var, loop var, let, copy var or alloc) before its use and may not be
// defined again while visible; vars and buffers share one namespace. Each
// definition makes a new Var / Buffer node. A var's dtype comes from what
// defines it: a loop var takes its min's dtype, a let var its value's, a grid
// var its extent's, a copy var is i32. Literals are never coerced: in
// `x + 1` with x: i64 the 1 is an i32 and the verifier will say so (write
// `1_i64`).
//
// Errors throw UserError whose what() starts with "line:col: " (the text is
// a developer's, not a .tfs program) and whose loc() is that position.
// The parser checks syntax and names only; run verify() for types.
#pragma once

#include <string_view>
#include <vector>

#include "tir/ir.h"

namespace tilefuse::tir {

Kernel parse_kernel(std::string_view text);

// An expression over the given free vars and buffers (looked up by name).
Expr parse_expr(std::string_view text, const std::vector<Var>& vars = {},
                const std::vector<Buffer>& buffers = {});

}  // namespace tilefuse::tir
