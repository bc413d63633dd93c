// Host tensors: shared aligned storage plus a strided view.
#include "core/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "core/error.h"
#include "core/memory.h"

namespace tilefuse {

namespace {

constexpr size_t kStorageAlignment = 64;  // a cache line; enough for any vector load

std::string dims_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

// PyTorch's maybe_wrap_dim: a dim in [-rank, rank) wraps once.
int64_t wrap_dim(int64_t d, int64_t rank, const char* op) {
  TF_CHECK(d >= -rank && d < rank, std::string(op) + ": dim " + std::to_string(d) +
                                       " out of range for rank " + std::to_string(rank));
  return d < 0 ? d + rank : d;
}

// Calls f(linear_element_offset) for every element of a view, in row-major
// order of its logical shape. Offsets are in elements relative to the view's
// first element. The innermost dim is a plain strided loop; the outer dims
// are an odometer, so the cost per element is one add.
template <typename F>
void for_each_offset(const Shape& shape, const std::vector<int64_t>& strides, F&& f) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  const size_t rank = shape.size();
  if (rank == 0) {
    f(int64_t{0});
    return;
  }
  const int64_t inner = shape[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t base = 0;
  for (int64_t done = 0; done < n; done += inner) {
    for (int64_t i = 0; i < inner; ++i) f(base + i * inner_stride);
    // Advance the odometer over dims [0, rank - 1).
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < shape[d]) {
        base += strides[d];
        break;
      }
      base -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace

std::optional<int64_t> checked_numel(const Shape& shape) {
  // A zero dim first: the other dims of an empty tensor may multiply past
  // int64 without making it any less empty.
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

int64_t shape_numel(const Shape& shape) {
  return checked_numel(shape).value_or(std::numeric_limits<int64_t>::max());
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    // Size-0/1 dims do not change later strides. A shape whose product
    // overflows (a graph's generic placeholder sizes, graph.h) saturates.
    if (__builtin_mul_overflow(s, std::max<int64_t>(shape[i], 1), &s))
      s = std::numeric_limits<int64_t>::max();
  }
  return strides;
}

std::string shape_to_string(const Shape& shape) {
  return dims_to_string(shape);
}

// ---------------------------------------------------------------------------

Storage::Storage(size_t nbytes) : nbytes_(nbytes) {
  // aligned_alloc wants a multiple of the alignment; allocate at least one
  // block so a zero-byte storage still has a unique, valid pointer.
  const size_t rounded = (nbytes + kStorageAlignment - 1) / kStorageAlignment * kStorageAlignment;
  void* p = std::aligned_alloc(kStorageAlignment, rounded == 0 ? kStorageAlignment : rounded);
  if (!p) throw_out_of_host_memory(static_cast<int64_t>(nbytes), "");
  data_.reset(static_cast<std::byte*>(p));
}

void Storage::Free::operator()(std::byte* p) const {
  if (owned) std::free(p);
}

std::shared_ptr<Storage> Storage::borrow(std::byte* data, size_t nbytes) {
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = std::unique_ptr<std::byte, Free>(data, Free{false});
  s->nbytes_ = nbytes;
  return s;
}

// ---------------------------------------------------------------------------

Tensor Tensor::from_blob(void* data, DType dtype, const Shape& shape,
                         const std::vector<int64_t>& strides) {
  TF_CHECK(shape.size() == strides.size(), "from_blob: a stride per dim expected");
  int64_t extent = 1;  // elements from data to one past the last element
  bool empty = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    TF_CHECK(shape[d] >= 0, "from_blob: negative size");
    empty = empty || shape[d] == 0;
  }
  if (!empty)
    for (size_t d = 0; d < shape.size(); ++d) {
      TF_CHECK(strides[d] >= 0 || shape[d] <= 1, "from_blob: negative stride");
      if (shape[d] > 1) extent += (shape[d] - 1) * strides[d];
    }
  Tensor t;
  t.storage_ = Storage::borrow(static_cast<std::byte*>(data),
                               static_cast<size_t>(empty ? 0 : extent) * dtype_size(dtype));
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = strides;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] <= 1) t.strides_[d] = std::max<int64_t>(strides[d], 0);
  t.offset_ = 0;
  return t;
}

Tensor Tensor::empty(DType dtype, const Shape& shape) {
  for (int64_t d : shape) TF_CHECK(d >= 0, "Tensor::empty: negative dim in " + shape_to_string(shape));
  // The bytes of every element fit in int64 (a zero dim: no bytes at all).
  const std::optional<int64_t> count = checked_numel(shape);
  TF_CHECK(count && *count <= std::numeric_limits<int64_t>::max() / 8,
           "Tensor::empty: shape too large: " + shape_to_string(shape));
  const int64_t n = *count;
  Tensor t;
  try {
    t.storage_ = std::make_shared<Storage>(static_cast<size_t>(n) * dtype_size(dtype));
  } catch (const OutOfHostMemory&) {  // say the type too
    throw_out_of_host_memory(n * dtype_size(dtype),
                             std::string(dtype_name(dtype)) + shape_to_string(shape));
  }
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.offset_ = 0;
  return t;
}

Tensor Tensor::full(DType dtype, const Shape& shape, double value) {
  Tensor t = empty(dtype, shape);
  t.fill(value);
  return t;
}

bool is_contiguous(const Shape& shape, const std::vector<int64_t>& strides) {
  if (shape_numel(shape) == 0) return true;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

bool Tensor::is_contiguous() const {
  return tilefuse::is_contiguous(shape_, strides_);
}

std::byte* Tensor::data_ptr() const {
  TF_CHECK(defined(), "data_ptr of an undefined tensor");
  return storage_->data() + offset_ * dtype_size(dtype_);
}

double Tensor::get(std::span<const int64_t> index) const {
  TF_CHECK(static_cast<int64_t>(index.size()) == dim(), "Tensor::get: index rank mismatch");
  int64_t off = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    TF_CHECK(index[d] >= 0 && index[d] < shape_[d], "Tensor::get: index out of range");
    off += index[d] * strides_[d];
  }
  return load_element(dtype_, data_ptr() + off * dtype_size(dtype_));
}

void Tensor::set(std::span<const int64_t> index, double value) const {
  TF_CHECK(static_cast<int64_t>(index.size()) == dim(), "Tensor::set: index rank mismatch");
  int64_t off = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    TF_CHECK(index[d] >= 0 && index[d] < shape_[d], "Tensor::set: index out of range");
    off += index[d] * strides_[d];
  }
  store_element(dtype_, data_ptr() + off * dtype_size(dtype_), value);
}

double Tensor::get_linear(int64_t i) const {
  TF_CHECK(i >= 0 && i < numel(), "Tensor::get_linear: index out of range");
  int64_t off = 0;
  for (size_t d = shape_.size(); d-- > 0;) {
    off += (i % shape_[d]) * strides_[d];
    i /= shape_[d];
  }
  return load_element(dtype_, data_ptr() + off * dtype_size(dtype_));
}

void Tensor::set_linear(int64_t i, double value) const {
  TF_CHECK(i >= 0 && i < numel(), "Tensor::set_linear: index out of range");
  int64_t off = 0;
  for (size_t d = shape_.size(); d-- > 0;) {
    off += (i % shape_[d]) * strides_[d];
    i /= shape_[d];
  }
  store_element(dtype_, data_ptr() + off * dtype_size(dtype_), value);
}

// ---------------------------------------------------------------------------
// Views.

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_dim(d, dim(), "slice");
  TF_CHECK(step >= 1, "slice: step must be >= 1, got " + std::to_string(step));
  // Python slice bounds, as torch.Tensor.__getitem__ resolves them.
  const int64_t n = shape_[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Tensor t = *this;
  t.offset_ = offset_ + start * strides_[d];
  t.shape_[d] = (end - start + step - 1) / step;
  t.strides_[d] = strides_[d] * step;
  return t;
}

Tensor Tensor::permute(const std::vector<int64_t>& perm) const {
  TF_CHECK(static_cast<int64_t>(perm.size()) == dim(),
           "permute: " + dims_to_string(perm) + " for rank " + std::to_string(dim()));
  std::vector<bool> seen(perm.size(), false);
  Tensor t = *this;
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = wrap_dim(perm[i], dim(), "permute");
    TF_CHECK(!seen[p], "permute: repeated dim in " + dims_to_string(perm));
    seen[p] = true;
    t.shape_[i] = shape_[p];
    t.strides_[i] = strides_[p];
  }
  return t;
}

Tensor Tensor::expand(const Shape& shape) const {
  TF_CHECK(shape.size() >= shape_.size(),
           "expand: " + shape_to_string(shape_) + " to " + shape_to_string(shape) + " drops dims");
  const size_t lead = shape.size() - shape_.size();
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_.assign(shape.size(), 0);
  for (size_t i = 0; i < shape_.size(); ++i) {
    const int64_t want = shape[lead + i];
    if (shape_[i] == want) {
      t.strides_[lead + i] = strides_[i];
    } else {
      TF_CHECK(shape_[i] == 1, "expand: " + shape_to_string(shape_) + " to " +
                                   shape_to_string(shape) + ": dim " + std::to_string(i) +
                                   " is not 1");
      TF_CHECK(want >= 0, "expand: negative size in " + shape_to_string(shape));
      t.strides_[lead + i] = 0;
    }
  }
  for (size_t i = 0; i < lead; ++i)
    TF_CHECK(shape[i] >= 0, "expand: negative size in " + shape_to_string(shape));
  return t;
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = wrap_dim(d, dim(), "select");
  const int64_t n = shape_[d];
  TF_CHECK(index >= -n && index < n, "select: index " + std::to_string(index) +
                                         " out of range for size " + std::to_string(n));
  if (index < 0) index += n;
  Tensor t = *this;
  t.offset_ = offset_ + index * strides_[d];
  t.shape_.erase(t.shape_.begin() + d);
  t.strides_.erase(t.strides_.begin() + d);
  return t;
}

Tensor Tensor::as_strided(const Shape& shape, const std::vector<int64_t>& strides,
                          int64_t offset) const {
  TF_CHECK(defined(), "as_strided of an undefined tensor");
  TF_CHECK(shape.size() == strides.size(), "as_strided: shape and strides differ in rank");
  // Every element of the view must lie inside the storage.
  int64_t lo = offset, hi = offset;
  if (shape_numel(shape) > 0) {
    for (size_t i = 0; i < shape.size(); ++i) {
      TF_CHECK(shape[i] >= 0, "as_strided: negative size");
      const int64_t span = (shape[i] - 1) * strides[i];
      (span < 0 ? lo : hi) += span;
    }
    const int64_t capacity = static_cast<int64_t>(storage_->nbytes()) / dtype_size(dtype_);
    TF_CHECK(lo >= 0 && hi < capacity, "as_strided: view " + shape_to_string(shape) + " strides " +
                                           dims_to_string(strides) + " offset " +
                                           std::to_string(offset) + " exceeds the storage");
  }
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = strides;
  t.offset_ = offset;
  return t;
}

// ---------------------------------------------------------------------------
// Copies.

Tensor Tensor::contiguous(bool force) const {
  TF_CHECK(defined(), "contiguous of an undefined tensor");
  if (!force && is_contiguous()) return *this;
  Tensor out = empty(dtype_, shape_);
  const size_t es = static_cast<size_t>(dtype_size(dtype_));
  const std::byte* src = data_ptr();
  std::byte* dst = out.data_ptr();
  // Same dtype: a byte copy per element (no rounding, NaN payloads kept).
  for_each_offset(shape_, strides_, [&](int64_t off) {
    std::memcpy(dst, src + off * static_cast<int64_t>(es), es);
    dst += es;
  });
  return out;
}

Tensor Tensor::to(DType dtype) const {
  TF_CHECK(defined(), "to() of an undefined tensor");
  if (dtype == dtype_) return contiguous(/*force=*/true);
  Tensor out = empty(dtype, shape_);
  const int64_t src_es = dtype_size(dtype_);
  const int64_t dst_es = dtype_size(dtype);
  const std::byte* src = data_ptr();
  std::byte* dst = out.data_ptr();
  for_each_offset(shape_, strides_, [&](int64_t off) {
    store_element(dtype, dst, load_element(dtype_, src + off * src_es));
    dst += dst_es;
  });
  return out;
}

std::vector<double> Tensor::to_vector() const {
  TF_CHECK(defined(), "to_vector of an undefined tensor");
  std::vector<double> out;
  out.reserve(static_cast<size_t>(numel()));
  const int64_t es = dtype_size(dtype_);
  const std::byte* src = data_ptr();
  for_each_offset(shape_, strides_,
                  [&](int64_t off) { out.push_back(load_element(dtype_, src + off * es)); });
  return out;
}

void Tensor::fill(double value) const {
  TF_CHECK(defined(), "fill of an undefined tensor");
  const int64_t es = dtype_size(dtype_);
  // Encode once, then copy the bytes: the same rounding for every element.
  std::byte encoded[8];
  store_element(dtype_, encoded, value);
  std::byte* dst = data_ptr();
  for_each_offset(shape_, strides_, [&](int64_t off) { std::memcpy(dst + off * es, encoded, es); });
}

}  // namespace tilefuse
