// The batched enumeration of a parallel loop nest or copy region, shared by
// eval_stmt.cpp and eval_tile.cpp.
#pragma once

#include <algorithm>
#include <vector>

#include "runtime/cpu/eval.h"

namespace tilefuse::runtime::cpu {

// The points of a box of vars [min_d, min_d + extent_d), enumerated in
// row-major order (last var fastest) kMaxLanes at a time.
//
// When the last dim is long enough (kRowBatch), a batch never crosses a row:
// the outer vars are then uniform in the batch, so everything computed from
// them alone (a row index, a gathered row, its check and mask) is evaluated
// once per row instead of once per element.
constexpr int64_t kRowBatch = 16;

struct Nest {
  std::vector<int> slots;
  std::vector<DType> dtypes;
  std::vector<ExprPtr> mins;  // null: 0
  std::vector<ExprPtr> extents;

  template <class Body>
  void run(Frame& f, const Body& body) const {
    const size_t rank = slots.size();
    int64_t lo[kMaxRank] = {}, ext[kMaxRank] = {}, idx[kMaxRank] = {};
    if (rank == 0) {  // a 0-d region: one point
      check_stop(f);
      body(1);
      return;
    }
    int64_t total = 1;
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = mins[d] ? mins[d]->eval1(f).i : 0;
      ext[d] = extents[d]->eval1(f).i;
      if (ext[d] <= 0) return;
      total *= ext[d];
    }
    const size_t last = rank - 1;
    Lane* inner = f.lanes(slots[last]);
    f.uniform[slots[last]] = 0;
    f.affine[slots[last]] = 0;
    if (ext[last] >= kRowBatch || rank == 1) {
      const int64_t rows = total / ext[last];
      for (int64_t r = 0; r < rows; ++r) {
        for (size_t d = 0; d < last; ++d) f.set_uniform_int(slots[d], lo[d] + idx[d]);
        for (int64_t c = 0; c < ext[last]; c += kMaxLanes) {
          check_stop(f);
          const int n = static_cast<int>(std::min<int64_t>(kMaxLanes, ext[last] - c));
          for (int l = 0; l < n; ++l) inner[l].i = lo[last] + c + l;
          f.affine[slots[last]] = 1;
          body(n);
        }
        for (size_t d = last; d-- > 0;) {
          if (++idx[d] < ext[d]) break;
          idx[d] = 0;
        }
      }
      return;
    }
    for (size_t d = 0; d < rank; ++d) f.uniform[slots[d]] = f.affine[slots[d]] = 0;
    for (int64_t base = 0; base < total; base += kMaxLanes) {
      check_stop(f);
      const int n = static_cast<int>(std::min<int64_t>(kMaxLanes, total - base));
      for (int l = 0; l < n; ++l) {
        for (size_t d = 0; d < rank; ++d) f.lanes(slots[d])[l].i = lo[d] + idx[d];
        for (size_t d = rank; d-- > 0;) {
          if (++idx[d] < ext[d]) break;
          idx[d] = 0;
        }
      }
      body(n);
    }
  }
};

}  // namespace tilefuse::runtime::cpu
