// The reference gather: out = x.index_select(dim, idx) for an integer index
// tensor of any shape (out.shape = x.shape[:dim] + idx.shape +
// x.shape[dim+1:]).
#pragma once

#include <string>

#include "core/tensor.h"
#include "reference/thread_pool.h"

namespace tilefuse::reference {

// How an error message names the gathered tensor and the index tensor:
// "`x`" for a named value, "the result of matmul" otherwise.
struct GatherNames {
  std::string x;
  std::string idx;
  // How the message names the size of x's dim: "" for the number; a symbol's
  // name ("T") where the compiled kernels name it so (a symbolic dim indexed
  // by an index of 2 dims or more: lower/expr_lowering.cpp).
  std::string size;
};

// Every index is read and checked before any element of `x` is: a value v
// outside [-size, size) (with `wrap_negative`, x[idx]) or outside [0, size)
// (without, index_select; the evaluator adds Graph::kNoWrapNote) throws
// UserError for the first such position in row-major order, e.g.
//   index 64 is out of bounds for dim 0 of `x` (size 64): `idx`[17] = 64
// With `wrap_negative`, negative values wrap once (v + size). Elements are
// converted from x's dtype to out's exactly (the same dtype in eager mode,
// f64 in oracle mode).
void gather(const Tensor& x, int64_t dim, const Tensor& idx, const Tensor& out,
            const GatherNames& names, ThreadPool& pool, bool wrap_negative = true);

// gather's check alone: every index of `idx` against a dim `dim` of `size`
// elements, the same UserError for the first one out of range.
void check_indices(int64_t size, int64_t dim, const Tensor& idx, const GatherNames& names,
                   ThreadPool& pool, bool wrap_negative = true);

// The message of that error for `value` at the row-major position `position`
// of an index tensor of shape `idx_shape` (printed as "[2, 5]"; nothing for
// a 0-dim index), e.g. "index 64 is out of bounds for dim 0 of `x` (size
// 64): `idx`[17] = 64" (the GPU's device-side check of an unread index
// reports the position and value, the host words them with this).
std::string index_error_message(int64_t size, int64_t dim, const Shape& idx_shape, int64_t position,
                                int64_t value, const GatherNames& names);

}  // namespace tilefuse::reference
