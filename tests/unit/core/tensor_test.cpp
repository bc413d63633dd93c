// Host tensors: shape helpers, element access, views and copies.
#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.h"

namespace tilefuse {
namespace {

// A contiguous tensor holding 0, 1, 2, ... (row-major).
Tensor iota(DType dt, const Shape& shape) {
  Tensor t = Tensor::empty(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_linear(i, static_cast<double>(i));
  return t;
}

TEST(Shape, Helpers) {
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(shape_numel({2, 0, 4}), 0);
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({}), (std::vector<int64_t>{}));
  EXPECT_EQ(contiguous_strides({3, 0, 2}), (std::vector<int64_t>{2, 2, 1}));  // as PyTorch
  // Past int64 a stride saturates (a generic graph's placeholder sizes), never wraps.
  const int64_t max = std::numeric_limits<int64_t>::max(), big = int64_t{1} << 32;
  EXPECT_EQ(contiguous_strides({2, big, big, 3}), (std::vector<int64_t>{max, 3 * big, 3, 1}));
  EXPECT_EQ(shape_to_string({2048, 2048}), "[2048, 2048]");
  EXPECT_EQ(shape_to_string({}), "[]");
  EXPECT_EQ(shape_to_string({5}), "[5]");
}

// A zero dim makes a tensor empty whatever its other dims are: the count is
// 0, not an overflow, in any dim order; without one, an overflowing product
// is no count (checked_numel) or INT64_MAX (shape_numel), never a wrap.
TEST(Shape, NumelOfEmptyShapesWithHugeDims) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  for (const Shape& s : {Shape{max, 0}, Shape{0, max}, Shape{max, 2, 0}, Shape{max, max, 0, max}}) {
    EXPECT_EQ(checked_numel(s), std::optional<int64_t>(0)) << shape_to_string(s);
    EXPECT_EQ(shape_numel(s), 0) << shape_to_string(s);
  }
  EXPECT_EQ(checked_numel({max, 2}), std::nullopt);
  EXPECT_EQ(shape_numel({max, 2}), max);
  EXPECT_EQ(checked_numel({int64_t{1} << 31, int64_t{1} << 31}), int64_t{1} << 62);
  EXPECT_EQ(checked_numel({}), std::optional<int64_t>(1));
  // An empty tensor of such a shape is allocated (no bytes) and reads as empty.
  const Tensor t = Tensor::empty(DType::F32, {max, 0});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.shape(), (Shape{max, 0}));
}

TEST(Storage, AlignedAndSized) {
  for (size_t n : {0, 1, 63, 64, 65, 1000}) {
    Storage s(n);
    EXPECT_EQ(s.nbytes(), n);
    EXPECT_NE(s.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data()) % 64, 0u);
  }
}

TEST(Tensor, EmptyFullAndAccess) {
  Tensor u;
  EXPECT_FALSE(u.defined());
  Tensor t = Tensor::full(DType::F16, {2, 3}, 0.1);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.dim(), 2);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  for (double v : t.to_vector()) EXPECT_EQ(v, round_to(DType::F16, 0.1));
  const int64_t idx[] = {1, 2};
  t.set(idx, 3.0);
  EXPECT_EQ(t.get(idx), 3.0);
  EXPECT_EQ(t.get_linear(5), 3.0);
  EXPECT_THROW(t.get_linear(6), InternalError);
  const int64_t bad[] = {2, 0};
  EXPECT_THROW(t.get(bad), InternalError);

  Tensor s = Tensor::full(DType::I32, {}, 7.9);  // 0-dim
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.get({}), 7.0);
  EXPECT_EQ(s.to_vector(), std::vector<double>{7.0});

  Tensor e = Tensor::empty(DType::F32, {3, 0});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.to_vector().empty());
  EXPECT_EQ(e.contiguous(true).numel(), 0);
  e.fill(1.0);  // no elements: nothing to do
}

TEST(TensorView, SliceWithStep) {
  Tensor t = iota(DType::F32, {4, 10});
  Tensor s = t.slice(1, 1, 9, 3);  // columns 1, 4, 7
  EXPECT_EQ(s.shape(), (Shape{4, 3}));
  EXPECT_EQ(s.strides(), (std::vector<int64_t>{10, 3}));
  EXPECT_EQ(s.offset(), 1);
  EXPECT_EQ(s.storage(), t.storage());
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(s.to_vector(), (std::vector<double>{1, 4, 7, 11, 14, 17, 21, 24, 27, 31, 34, 37}));
  // Python bounds: negative wrap, clamping, empty.
  EXPECT_EQ(t.slice(0, -2, 100, 1).to_vector().front(), 20);
  EXPECT_EQ(t.slice(-1, 5, 2, 1).shape(), (Shape{4, 0}));
  EXPECT_EQ(t.slice(1, 0, 10, 4).shape(), (Shape{4, 3}));  // 0, 4, 8
  // Writes through a view land in the base.
  s.fill(-1);
  EXPECT_EQ(t.get_linear(4), -1);
  EXPECT_EQ(t.get_linear(5), 5);
  EXPECT_THROW(t.slice(2, 0, 1, 1), InternalError);
  EXPECT_THROW(t.slice(0, 0, 1, 0), InternalError);
}

TEST(TensorView, PermuteAndContiguousOfTranspose) {
  Tensor t = iota(DType::I64, {2, 3});
  Tensor tt = t.permute({1, 0});
  EXPECT_EQ(tt.shape(), (Shape{3, 2}));
  EXPECT_EQ(tt.strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(tt.is_contiguous());
  const int64_t i21[] = {2, 1};
  EXPECT_EQ(tt.get(i21), 5);
  Tensor c = tt.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.storage(), t.storage());
  EXPECT_EQ(c.to_vector(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(t.contiguous().storage(), t.storage());      // already contiguous: no copy
  EXPECT_NE(t.contiguous(true).storage(), t.storage());  // forced copy

  Tensor b = iota(DType::F32, {2, 3, 4});
  Tensor p = b.permute({2, 0, -2});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  const int64_t i[] = {3, 1, 2};
  EXPECT_EQ(p.get(i), 1 * 12 + 2 * 4 + 3);
  EXPECT_THROW(b.permute({0, 0, 1}), InternalError);
  EXPECT_THROW(b.permute({0, 1}), InternalError);
}

TEST(TensorView, ExpandStrideZero) {
  Tensor t = iota(DType::F32, {3, 1});
  Tensor e = t.expand({2, 3, 4});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_FALSE(e.is_contiguous());
  const std::vector<double> v = e.to_vector();
  ASSERT_EQ(v.size(), 24u);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(v[b * 12 + r * 4 + c], r);
  Tensor c = e.contiguous();
  EXPECT_EQ(c.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(c.to_vector(), v);
  EXPECT_THROW(t.expand({3, 2, 1}), InternalError);  // 3 vs 2: not a size-1 dim
  EXPECT_THROW(t.expand({4, 4}), InternalError);
  EXPECT_THROW(t.expand({4}), InternalError);
}

TEST(TensorView, Select) {
  Tensor t = iota(DType::I32, {2, 3, 4});
  Tensor s = t.select(1, -1);  // [2, 4], rows with j = 2
  EXPECT_EQ(s.shape(), (Shape{2, 4}));
  EXPECT_EQ(s.strides(), (std::vector<int64_t>{12, 1}));
  EXPECT_EQ(s.offset(), 8);
  EXPECT_EQ(s.to_vector(), (std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23}));
  Tensor s0 = s.select(0, 1).select(0, 3);  // 0-dim
  EXPECT_EQ(s0.dim(), 0);
  EXPECT_EQ(s0.get({}), 23);
  EXPECT_THROW(t.select(1, 3), InternalError);
  EXPECT_THROW(t.select(1, -4), InternalError);
}

TEST(TensorView, AsStrided) {
  Tensor t = iota(DType::F64, {12});
  Tensor v = t.as_strided({3, 2}, {4, 1}, 1);
  EXPECT_EQ(v.to_vector(), (std::vector<double>{1, 2, 5, 6, 9, 10}));
  EXPECT_THROW(t.as_strided({3, 2}, {4, 1}, 3), InternalError);  // reaches element 12
  EXPECT_THROW(t.as_strided({3}, {4, 1}, 0), InternalError);
}

TEST(Tensor, ToConvertsAndRounds) {
  Tensor t = Tensor::empty(DType::F64, {2, 2});
  t.set_linear(0, 1.0 + 0x1p-11 + 0x1p-40);
  t.set_linear(1, 70000.0);
  t.set_linear(2, -2.5);
  t.set_linear(3, 0.1);
  Tensor h = t.permute({1, 0}).to(DType::F16);
  EXPECT_TRUE(h.is_contiguous());
  EXPECT_EQ(h.dtype(), DType::F16);
  // PyTorch's rule: 1 + 2^-11 + 2^-40 reaches f16 through f32 as the tie,
  // which goes to even (1.0).
  EXPECT_EQ(h.to_vector(), (std::vector<double>{1.0, -2.5, std::numeric_limits<double>::infinity(),
                                                round_to(DType::F16, 0.1)}));
  Tensor i = t.to(DType::I8);
  EXPECT_EQ(i.to_vector(), (std::vector<double>{1, round_to(DType::I8, 70000.0), -2, 0}));
  Tensor same = t.to(DType::F64);
  EXPECT_NE(same.storage(), t.storage());
  EXPECT_EQ(same.to_vector(), t.to_vector());
}

TEST(Tensor, FillRespectsView) {
  Tensor t = Tensor::full(DType::BF16, {3, 3}, 0);
  t.slice(0, 1, 3, 1).slice(1, 0, 3, 2).fill(2.5);
  EXPECT_EQ(t.to_vector(), (std::vector<double>{0, 0, 0, 2.5, 0, 2.5, 2.5, 0, 2.5}));
  t.select(0, 0).expand({2, 3}).fill(1);  // writes through stride 0 are fine
  EXPECT_EQ(t.get_linear(1), 1);
}

}  // namespace
}  // namespace tilefuse
