// Structural equality and hashing (for CSE, tests and caches), and
// substitution.
//
// Two trees are structurally equal when they have the same node kinds,
// dtypes, constants and fields, and their variables correspond: a var or
// buffer bound inside the compared tree (by a For, LetStmt, Copy, Allocate,
// or a kernel's params and grid) matches the var bound at the same place in
// the other tree, whatever its name; a free var matches only itself (the same
// node). So `i + 1` built twice from the same `i` is equal, and a kernel
// equals its print/parse round trip. Names are hints and never compared,
// except the kernel's name and hook names, which are data.
//
// structural_hash(a) == structural_hash(b) whenever the trees are equal.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "tir/ir.h"

namespace tilefuse::tir {

bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const Kernel& a, const Kernel& b);
uint64_t structural_hash(const Expr& e);
uint64_t structural_hash(const Stmt& s);
uint64_t structural_hash(const Kernel& k);

// For unordered containers keyed by expression structure (CSE).
struct ExprStructuralHash {
  size_t operator()(const Expr& e) const { return static_cast<size_t>(structural_hash(e)); }
};
struct ExprStructuralEqual {
  bool operator()(const Expr& a, const Expr& b) const { return structural_equal(a, b); }
};

// Replaces free uses of the mapped vars. A var re-bound inside (which the
// verifier forbids anyway) shadows the mapping there. The replacement is not
// re-scanned. Returns the input itself when nothing was replaced.
using VarMap = std::unordered_map<const VarNode*, Expr>;
Expr substitute(const Expr& e, const VarMap& map);
Stmt substitute(const Stmt& s, const VarMap& map);
Expr substitute(const Expr& e, const Var& var, const Expr& value);
Stmt substitute(const Stmt& s, const Var& var, const Expr& value);

// The terms of a conjunction: `a && b && c` appends a, b, c (a term that is
// not an And is appended whole).
void conjuncts(const Expr& e, std::vector<Expr>* out);

// Is `term` a bounds check of `load` on its own tensor (`index_k < shape_k`
// for one of its dims), which a TMA tensor map's out-of-bounds fill does?
bool is_own_bounds_check(const Expr& term, const LoadNode* load);

// Every Allocate of `body`, by the buffer it declares.
std::unordered_map<const BufferNode*, const AllocateNode*> allocations(const Stmt& body);

// Does `e` read memory (a Load, or a HookLoad before inline_hooks)?
bool has_load(const Expr& e);

// Does `e` use the var `v`?
bool uses_var(const Expr& e, const Var& v);

// Does `s` (or `e`) mention the buffer `b` at all: a load, store, fill or
// gemm operand of it, or a copy into it?
bool mentions_buffer(const Stmt& s, const BufferNode* b);
bool mentions_buffer(const Expr& e, const BufferNode* b);

// a and b are the same value up to casts between integer types (an i32
// index bound by an i32 shape and used as i64): equal constants, or
// structurally equal once the casts are stripped.
bool same_value(Expr a, Expr b);

}  // namespace tilefuse::tir
