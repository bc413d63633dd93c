// Host tensors: a dtype, a shape, strides and a storage offset over shared
// storage. Views (slice, permute, expand, select) share the storage and never
// copy. Strides and offsets are in elements. Used by the reference evaluator,
// the CPU executor, .npy I/O and the device runtimes for host staging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/dtype.h"

namespace tilefuse {

using Shape = std::vector<int64_t>;

// The number of elements: the product of the dims, 1 for a 0-dim shape, 0
// when any dim is 0 (whatever the others: [INT64_MAX, 0] has 0 elements).
// checked_numel is nullopt when the product of the dims overflows int64;
// shape_numel saturates there at INT64_MAX.
std::optional<int64_t> checked_numel(const Shape& shape);
int64_t shape_numel(const Shape& shape);
// Row-major (C order) strides, in elements, a size-0 dim counted as 1; a
// stride past int64 saturates at INT64_MAX (a graph's generic placeholder
// sizes can multiply that far, graph.h; a tensor's shape cannot).
Shape contiguous_strides(const Shape& shape);
// Whether `strides` (elements) lay out `shape` row-major with no gaps.
// PyTorch's rule: dims of size 1 may have any stride; an empty tensor is
// contiguous.
bool is_contiguous(const Shape& shape, const std::vector<int64_t>& strides);
std::string shape_to_string(const Shape& shape);  // "[2048, 2048]"

// Byte storage, 64-byte aligned. Contents are uninitialised after creation.
class Storage {
 public:
  explicit Storage(size_t nbytes);
  // `nbytes` of memory owned by someone else (a caller's array): never freed
  // here; it must outlive every Tensor over it.
  static std::shared_ptr<Storage> borrow(std::byte* data, size_t nbytes);
  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  size_t nbytes() const { return nbytes_; }

 private:
  Storage() = default;
  struct Free {
    Free() : owned(true) {}
    explicit Free(bool o) : owned(o) {}
    bool owned;
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t nbytes_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  // A new contiguous tensor; contents uninitialised.
  static Tensor empty(DType dtype, const Shape& shape);
  // A new contiguous tensor with every element set to `value` (rounded).
  static Tensor full(DType dtype, const Shape& shape, double value);
  // A view of memory someone else owns: the element at multi-index i is at
  // data + sum(i_d * strides_d) elements. Strides must be non-negative (a
  // size-0 or size-1 dim's stride is not used). The memory must outlive the
  // tensor and its views; it is never freed here.
  static Tensor from_blob(void* data, DType dtype, const Shape& shape,
                          const std::vector<int64_t>& strides);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t d) const { return shape_[d]; }
  int64_t numel() const { return shape_numel(shape_); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Address of the element at offset() (the first element of the view).
  std::byte* data_ptr() const;

  // Element access by multi-index (size dim()) or by row-major linear index
  // into the view's logical shape. Values are converted to/from double with
  // load_element / store_element (store rounds to dtype()).
  double get(std::span<const int64_t> index) const;
  void set(std::span<const int64_t> index, double value) const;
  double get_linear(int64_t i) const;
  void set_linear(int64_t i, double value) const;

  // Views. Indices follow PyTorch (negative dims wrap); these check their
  // arguments and throw InternalError on misuse (the graph validates user
  // programs before they reach here).
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step) const;
  Tensor permute(const std::vector<int64_t>& perm) const;
  Tensor expand(const Shape& shape) const;  // sizes already resolved (no -1)
  Tensor select(int64_t dim, int64_t index) const;
  // A view with explicit geometry over the same storage.
  Tensor as_strided(const Shape& shape, const std::vector<int64_t>& strides,
                    int64_t offset) const;

  // A contiguous copy (or *this when already contiguous and `force` is false).
  Tensor contiguous(bool force = false) const;
  // A contiguous copy converted to `dtype` (rounding with round_to).
  Tensor to(DType dtype) const;
  // Every element as double, row-major.
  std::vector<double> to_vector() const;
  // Fills every element of the view (the storage outside the view is untouched).
  void fill(double value) const;

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::F32;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
};

}  // namespace tilefuse
