// tilefuse device helpers: the copy of a strided tensor into contiguous
// memory, for a parameter a program returns as is (no kernel writes such an
// output: driver/cuda_program.cpp copies it, and a byte copy is right only
// for a contiguous input). Needs tf_index_check.cuh (tf::IndexView).
#pragma once

namespace tf {

constexpr int kViewCopyThreads = 256;

// dst[i] = the element of `src` at row-major position i of `view` (`rank`
// dims, `count` elements), every i in [0, count).
template <class T>
__device__ __forceinline__ void copy_view(const T* src, T* dst, const IndexView& view, int rank,
                                          long long count) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    long long linear = i, off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const long long extent = view.shape[d];
      off += (linear % extent) * view.strides[d];
      linear /= extent;
    }
    dst[i] = src[off];
  }
}

}  // namespace tf

// The entry points, one per element size (the copy moves bytes).
#define TF_VIEW_COPY_ENTRY(NAME, T)                                                    \
  extern "C" __global__ void __launch_bounds__(tf::kViewCopyThreads)                   \
      NAME(const T* src, T* dst, const __grid_constant__ tf::IndexView view, int rank, \
           long long count) {                                                          \
    tf::copy_view<T>(src, dst, view, rank, count);                                     \
  }
