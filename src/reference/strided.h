// Strided iteration over a tensor's logical elements, shared by the
// reference kernels. An operand is a base address plus one byte stride per
// dim of the iteration shape (0 where the operand is broadcast), so views
// (slices, transposes, expands) are read in place without copies.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace tilefuse::reference {

struct StridedOperand {
  std::byte* base = nullptr;          // the element at index [0, ..., 0]
  std::vector<int64_t> byte_strides;  // one per dim of the iteration shape
};

// `t` broadcast (NumPy rules, leading dims added) to `shape`.
inline StridedOperand broadcast_operand(const Tensor& t, const Shape& shape) {
  const int64_t lead = static_cast<int64_t>(shape.size()) - t.dim();
  TF_CHECK(lead >= 0, "broadcast_operand: operand has more dims than the result");
  StridedOperand op;
  op.base = t.data_ptr();
  op.byte_strides.assign(shape.size(), 0);
  const int64_t esize = dtype_size(t.dtype());
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t size = t.size(d);
    TF_CHECK(size == shape[lead + d] || size == 1, "broadcast_operand: shapes do not broadcast");
    if (size != 1) op.byte_strides[lead + d] = t.strides()[d] * esize;
  }
  return op;
}

// Calls f(linear_index, pointers) for the row-major linear indices
// [begin, end) of `shape`, with one element pointer per operand. The
// innermost dim advances by adding strides; outer dims are recomputed once
// per row.
template <size_t N, typename F>
void for_each_element(const Shape& shape, const std::array<const StridedOperand*, N>& ops,
                      int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;
  const size_t rank = shape.size();
  std::array<std::byte*, N> ptr;
  if (rank == 0) {
    for (size_t n = 0; n < N; ++n) ptr[n] = ops[n]->base;
    f(int64_t{0}, ptr);
    return;
  }
  std::vector<int64_t> idx(rank);
  int64_t rest = begin;
  for (size_t d = rank; d-- > 0;) {
    idx[d] = rest % shape[d];
    rest /= shape[d];
  }
  std::array<int64_t, N> inner_stride;
  for (size_t n = 0; n < N; ++n) inner_stride[n] = ops[n]->byte_strides[rank - 1];
  int64_t i = begin;
  while (i < end) {
    for (size_t n = 0; n < N; ++n) {
      std::byte* p = ops[n]->base;
      for (size_t d = 0; d < rank; ++d) p += idx[d] * ops[n]->byte_strides[d];
      ptr[n] = p;
    }
    const int64_t count = std::min(end - i, shape[rank - 1] - idx[rank - 1]);
    for (int64_t t = 0; t < count; ++t, ++i) {
      f(i, ptr);
      for (size_t n = 0; n < N; ++n) ptr[n] += inner_stride[n];
    }
    idx[rank - 1] += count;
    for (size_t d = rank - 1; d > 0 && idx[d] == shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

// Elements per task of the element-wise loops: large enough that the
// scheduling cost is noise, small enough to spread a 1M-element op.
constexpr int64_t kElementGrain = 32768;

}  // namespace tilefuse::reference
