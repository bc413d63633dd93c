// axis_info: per-dimension contiguity, divisibility and constancy of the
// integer expressions of a tile region (DESIGN.md, "Passes": axis_info) —
// Triton's AxisInfo for the Tile IR. lower_copies reads it to choose a copy
// width; `print_axis_info` prints it for tests, one line per expression.
//
// A region is the index space of a copy (its vars, each over [0, extent)).
// For an integer expression e and a region dim d (all other vars fixed):
//  - contiguity[d] = c: along d, e takes consecutive values (+1 per step) on
//    aligned runs of c points (runs start where the dim var is a multiple
//    of c);
//  - divisibility[d] = a power of two that divides e at the first point of
//    every such run (every point when c = 1); "max" (2^30) for 0;
//  - constancy[d] = k: e is constant on aligned runs of k points along d.
// Values loaded from memory are unknown (divisibility 1) but constant along
// every dim their own indices and mask are constant along, so
// `index[m]*K + k` stays contiguous along k with divisibility gcd(K, ...).
// Scalars outside the region (program ids, loop vars, params) are constant
// along every dim; a param's divisibility is 1 unless the kernel has an
// attribute `<param>_divisibility = N` (the specializer's promise).
// For an access, the element offset sum(index_d * stride_d) is analysed the
// same way and turned into byte divisibility: min(base alignment, offset
// divisibility * element size), both powers of two (the buffer's `align N`,
// else the element size).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tir/ir.h"

namespace tilefuse::analysis {

inline constexpr int64_t kMaxDivisibility = int64_t{1} << 30;

struct AxisFacts {
  std::vector<int64_t> contiguity, divisibility, constancy;
};

// The facts of one load in a region, by its address.
struct AccessFacts {
  tir::Expr offset;  // element offset sum(index_d * stride_d)
  AxisFacts offset_facts;
  std::vector<int64_t> byte_divisibility;  // of the address, per dim
  std::vector<int64_t> mask_constancy;     // all-true when there is no mask
  int elem_bytes = 1;
  int base_alignment = 1;  // bytes
};

class AxisInfo {
 public:
  // `vars` over constant `extents`; lets anywhere in `kernel` are looked
  // through.
  AxisInfo(const tir::Kernel& kernel, std::vector<tir::Var> vars, std::vector<int64_t> extents);
  AxisFacts facts(const tir::Expr& e);
  AccessFacts access(const tir::LoadNode* load);
  size_t rank() const { return vars_.size(); }

 private:
  AxisFacts compute(const tir::Expr& e);
  AxisFacts scalar(int64_t divisibility) const;

  std::vector<tir::Var> vars_;
  std::vector<int64_t> extents_;
  std::unordered_map<const tir::VarNode*, tir::Expr> lets_;
  std::unordered_map<const tir::VarNode*, int64_t> param_divisibility_;
  // Keyed by node; the Expr is kept so that a node's address is never
  // reused by another node while it is a key.
  std::unordered_map<const tir::ExprNode*, std::pair<tir::Expr, AxisFacts>> memo_;
};

// For every copy with constant extents and every nest of parallel loops
// over constant ranges (their stores): a header line, then one line per
// distinct integer subexpression of its value (post-order) and one per load
// (address facts), e.g.
//   copy A_s (i: 128, j: 32)
//     k*32 + j: contiguity=[1, 32] divisibility=[1, 32] constancy=[128, 1]
//     address x[...]: offset ... contiguity=[..] bytes=[..] mask_constancy=[..]
std::string print_axis_info(const tir::Kernel& kernel);

}  // namespace tilefuse::analysis
