// tilefuse device helpers: the device-side check of a gather's index tensor,
// for the indices no kernel reads (driver/cuda_program.cpp; the host's check
// is driver::check_unread_indices). Needs tf_status.cuh.
#pragma once

namespace tf {

// An index tensor as the check reads it: its logical shape and strides (in
// elements), row-major positions over the shape (the reference's order).
// A kernel param (__grid_constant__: indexed by a run-time dim in param
// space, not copied to local memory).
constexpr int kIndexCheckMaxRank = 8;  // graph.h's kMaxRank
struct IndexView {
  long long shape[kIndexCheckMaxRank];
  long long strides[kIndexCheckMaxRank];
};

constexpr int kIndexCheckThreads = 256;

// Every element of `idx` (`count` of them, `rank` dims of `view`) against
// [lowest, size): lowest is -size where x[idx] wraps a negative index once,
// 0 for index_select. Each block finds its lowest failing row-major
// position and takes the minimum into *first_bad (ULLONG_MAX when none);
// the last block to arrive at *arrived (tf::last_arrival) reports that
// position's value into the status word (code id; value, position, size),
// with the index tensor's shape at this launch in shape_out[0 .. rank),
// written under the word's claim and published with it: the host words the
// error from the report alone, whichever launch made it (a graph replayed
// long after its capture, at other sizes than the calls since). It leaves
// *first_bad and *arrived as it found them (ULLONG_MAX and 0) for the next
// launch or graph replay. So the report is the lowest failing position
// whatever the blocks' order, as the CPU executor's.
template <class T>
__device__ __forceinline__ void check_indices(const T* idx, const IndexView& view, int rank,
                                              long long count, long long size, long long lowest,
                                              unsigned long long* first_bad, int* arrived,
                                              Status* status, int id, long long* shape_out) {
  auto offset_of = [&](long long linear) {
    long long off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const long long extent = view.shape[d];
      off += (linear % extent) * view.strides[d];
      linear /= extent;
    }
    return off;
  };
  __shared__ unsigned long long block_bad;
  if (threadIdx.x == 0) block_bad = ~0ull;
  __syncthreads();
  // A thread's positions ascend, so its first failure is its lowest.
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const long long v = static_cast<long long>(idx[offset_of(i)]);
    if (v < lowest || v >= size) {
      atomicMin(&block_bad, static_cast<unsigned long long>(i));
      break;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && block_bad != ~0ull) atomicMin(first_bad, block_bad);
  if (!last_arrival<0>(arrived, static_cast<int>(gridDim.x), threadIdx.x)) return;
  if (threadIdx.x != 0) return;
  const unsigned long long bad = *reinterpret_cast<volatile unsigned long long*>(first_bad);
  if (bad == ~0ull) return;
  *first_bad = ~0ull;
  const long long position = static_cast<long long>(bad);
  if (!claim_report(status)) return;  // an earlier report, not yet read, holds the word
  for (int d = 0; d < rank; ++d) shape_out[d] = view.shape[d];
  publish_report(status, id, static_cast<long long>(idx[offset_of(position)]), position, size, 0);
}

}  // namespace tf

// The entry points, one per index dtype (i32, i64; graph/linalg.cpp allows
// no other).
#define TF_INDEX_CHECK_ENTRY(NAME, T)                                                           \
  extern "C" __global__ void __launch_bounds__(tf::kIndexCheckThreads)                          \
      NAME(const T* idx, const __grid_constant__ tf::IndexView view, int rank, long long count, \
           long long size, long long lowest, unsigned long long* first_bad, int* arrived,       \
           tf::Status* status, int id, long long* shape_out) {                                  \
    tf::check_indices<T>(idx, view, rank, count, size, lowest, first_bad, arrived, status, id,  \
                         shape_out);                                                            \
  }
