#include "reference/gather.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "reference/element_access.h"
#include "reference/strided.h"

namespace tilefuse::reference {
namespace {

// "[17]" or "[2, 5]" for the row-major position `linear` in `shape`; empty
// for a 0-dim index.
std::string position_string(const Shape& shape, int64_t linear) {
  if (shape.empty()) return "";
  std::vector<int64_t> pos(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    pos[d] = linear % shape[d];
    linear /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < pos.size(); ++d) {
    if (d) s += ", ";
    s += std::to_string(pos[d]);
  }
  return s + "]";
}

// Reads idx (any strides, any integer dtype) into a row-major vector.
std::vector<int64_t> read_indices(const Tensor& idx, ThreadPool& pool) {
  std::vector<int64_t> values(static_cast<size_t>(idx.numel()));
  const StridedOperand op = broadcast_operand(idx, idx.shape());
  const ReadFn<int64_t> read = reader<int64_t>(idx.dtype());
  pool.parallel_for(idx.numel(), kElementGrain, [&](int64_t lo, int64_t hi) {
    for_each_element<1>(idx.shape(), {&op}, lo, hi,
                        [&](int64_t i, const auto& p) { values[i] = read(p[0]); });
  });
  return values;
}

// check_indices, returning the indices read (row-major).
std::vector<int64_t> read_and_check(int64_t size, int64_t dim, const Tensor& idx,
                                    const GatherNames& names, ThreadPool& pool,
                                    bool wrap_negative) {
  const int64_t lowest = wrap_negative ? -size : 0;
  std::vector<int64_t> indices = read_indices(idx, pool);
  const int64_t count = static_cast<int64_t>(indices.size());

  // Check everything first; report the first bad position whichever thread
  // finds it, so the message does not depend on scheduling.
  int64_t first_bad = std::numeric_limits<int64_t>::max();
  std::mutex bad_mu;
  pool.parallel_for(count, kElementGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t v = indices[i];
      if (v < lowest || v >= size) {
        std::lock_guard<std::mutex> lock(bad_mu);
        first_bad = std::min(first_bad, i);
        return;
      }
    }
  });
  if (first_bad != std::numeric_limits<int64_t>::max())
    throw UserError(
        index_error_message(size, dim, idx.shape(), first_bad, indices[first_bad], names));
  return indices;
}

}  // namespace

std::string index_error_message(int64_t size, int64_t dim, const Shape& idx_shape, int64_t position,
                                int64_t value, const GatherNames& names) {
  return "index " + std::to_string(value) + " is out of bounds for dim " + std::to_string(dim) +
         " of " + names.x + " (size " + (names.size.empty() ? std::to_string(size) : names.size) +
         "): " + names.idx + position_string(idx_shape, position) + " = " + std::to_string(value);
}

void check_indices(int64_t size, int64_t dim, const Tensor& idx, const GatherNames& names,
                   ThreadPool& pool, bool wrap_negative) {
  read_and_check(size, dim, idx, names, pool, wrap_negative);
}

void gather(const Tensor& x, int64_t dim, const Tensor& idx, const Tensor& out,
            const GatherNames& names, ThreadPool& pool, bool wrap_negative) {
  TF_CHECK(dim >= 0 && dim < x.dim(), "gather: dim out of range");
  const int64_t size = x.size(dim);
  std::vector<int64_t> indices = read_and_check(size, dim, idx, names, pool, wrap_negative);
  const int64_t count = static_cast<int64_t>(indices.size());
  for (int64_t& v : indices)
    if (v < 0) v += size;

  // out viewed as [pre, count, post]: each (p, q) row copies the `post`
  // elements of x at pre-position p and index indices[q].
  const Shape pre_shape(x.shape().begin(), x.shape().begin() + dim);
  const Shape post_shape(x.shape().begin() + dim + 1, x.shape().end());
  const std::vector<int64_t> pre_strides(x.strides().begin(), x.strides().begin() + dim);
  const int64_t pre = shape_numel(pre_shape);
  const int64_t post = shape_numel(post_shape);
  if (pre * count * post == 0) return;

  const int64_t x_esize = dtype_size(x.dtype()), out_esize = dtype_size(out.dtype());
  const bool same_dtype = x.dtype() == out.dtype();
  // A run of `post` elements is one memcpy when it is contiguous in x.
  bool post_contiguous = same_dtype;
  {
    int64_t expect = 1;
    for (int64_t d = x.dim() - 1; d > dim; --d) {
      if (x.size(d) != 1 && x.strides()[d] != expect) post_contiguous = false;
      expect *= x.size(d);
    }
  }
  StridedOperand post_src;
  post_src.byte_strides.resize(post_shape.size());
  for (size_t d = 0; d < post_shape.size(); ++d)
    post_src.byte_strides[d] = x.strides()[dim + 1 + d] * x_esize;
  StridedOperand post_dst;
  post_dst.byte_strides.resize(post_shape.size());
  {
    const std::vector<int64_t> cs = contiguous_strides(post_shape);
    for (size_t d = 0; d < post_shape.size(); ++d) post_dst.byte_strides[d] = cs[d] * out_esize;
  }
  const ReadFn<double> read = reader<double>(x.dtype());
  const WriteFn<double> write = writer<double>(out.dtype());
  const int64_t dim_stride = x.strides()[dim];
  std::byte* const x_base = x.data_ptr();
  std::byte* const out_base = out.data_ptr();

  const int64_t rows = pre * count;
  pool.parallel_for(rows, std::max<int64_t>(1, kElementGrain / post), [&](int64_t lo, int64_t hi) {
    StridedOperand s = post_src, t = post_dst;
    for (int64_t row = lo; row < hi; ++row) {
      int64_t p = row / count;
      const int64_t q = row % count;
      int64_t src_off = indices[q] * dim_stride;
      for (size_t d = pre_shape.size(); d-- > 0;) {
        src_off += (p % pre_shape[d]) * pre_strides[d];
        p /= pre_shape[d];
      }
      std::byte* src = x_base + src_off * x_esize;
      std::byte* dst = out_base + row * post * out_esize;
      if (post_contiguous) {
        std::memcpy(dst, src, static_cast<size_t>(post * x_esize));
        continue;
      }
      s.base = src;
      t.base = dst;
      for_each_element<2>(post_shape, {&s, &t}, 0, post, [&](int64_t, const auto& ptr) {
        if (same_dtype) {
          std::memcpy(ptr[1], ptr[0], static_cast<size_t>(x_esize));
        } else {
          write(ptr[1], read(ptr[0]));
        }
      });
    }
  });
}

}  // namespace tilefuse::reference
