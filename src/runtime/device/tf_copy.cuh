// tilefuse device helpers: shared-memory layouts and cp.async (PTX ISA
// 9.7.9.25). A shared tile feeding MmaTile or Tf32MmaTile (tf_gemm.cuh) is
// stored `swizzled`, every other shared buffer `row_major`; copies write
// through the same offset function the GEMM reads through.
#pragma once

namespace tf {

// ---- shared memory ---------------------------------------------------------

// The shared-window address of a generic pointer to shared memory
// (PTX ISA, "cvta"): what cp.async and ldmatrix take.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  unsigned long long a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return static_cast<unsigned>(a);
}

// Element offset of (r, c) in a row-major [*][COLS] tile.
template <int COLS>
__device__ __forceinline__ int row_major(int r, int c) {
  return r * COLS + c;
}

// Element offset of (r, c) in a [*][COLS] tile of ELEM-byte elements whose
// UNIT-byte units (16 or 32 bytes) are XOR-swizzled so that the 128 / UNIT
// rows one access phase reads at the same column land in distinct UNIT-byte
// bank groups: unit' = unit ^ ((r / rows_per_128B) % min(128 / UNIT,
// units_per_row)). UNIT 16 is what ldmatrix reads per row (8 rows) and what
// Tf32MmaTile's A loads read (8 rows x 4 f32); UNIT 32 is what its B loads
// read (4 rows x 8 f32). Units stay whole (so do their 16-byte chunks), so
// cp.async of 4/8/16 bytes stays legal. Rows shorter than two units are not
// swizzled (the rows of one phase then already cover 128 distinct bytes...
// or fewer, and nothing better is possible).
template <int COLS, int ELEM, int UNIT = 16>
__device__ __forceinline__ int swizzled(int r, int c) {
  static_assert(UNIT == 16 || UNIT == 32, "swizzled: 16- or 32-byte units");
  constexpr int kRowBytes = COLS * ELEM;
  if constexpr (kRowBytes < 2 * UNIT || kRowBytes % (2 * UNIT) != 0) {
    return r * COLS + c;
  } else {
    constexpr int kUnits = kRowBytes / UNIT;
    constexpr int kLineUnits = 128 / UNIT;
    constexpr int kRowsPerLine = kRowBytes >= 128 ? 1 : 128 / kRowBytes;
    constexpr int kMask = (kUnits >= kLineUnits ? kLineUnits : kUnits) - 1;
    const int byte = c * ELEM;
    const int unit = (byte / UNIT) ^ ((r / kRowsPerLine) & kMask);
    return r * COLS + (unit * UNIT + byte % UNIT) / ELEM;
  }
}

// Element offset of (r, c) in a [ROWS][COLS] tile stored for wgmma as an
// MN-major operand with the 128-byte swizzle (PTX ISA 9.7.15.5.1, "Shared
// Memory Matrix Layout"; CUTLASS's canonical B128 MN-major layout
// ((8T, m), (8, k)) : ((1, LBO), (8T, SBO))): the columns are cut into
// strips of 128 bytes (64 16-bit elements); each strip is stored whole,
// ROWS rows of 128 bytes, before the next, and within a row the 16-byte
// chunk index is XORed with r % 8. With the tile 1024-byte aligned, the
// descriptor's LBO is one strip (ROWS * 128 bytes) and its SBO 8 rows (1024).
template <int ROWS, int COLS, int ELEM>
__device__ __forceinline__ int mn_swizzled(int r, int c) {
  constexpr int kAtom = 128 / ELEM;  // elements per strip row
  static_assert(COLS % kAtom == 0, "mn_swizzled: COLS must be whole 128-byte strips");
  const int byte = (c % kAtom) * ELEM;
  const int chunk = (byte >> 4) ^ (r & 7);
  return (c / kAtom) * (ROWS * kAtom) + r * kAtom + ((chunk << 4) | (byte & 15)) / ELEM;
}

// ---- cp.async (PTX ISA 9.7.9.25) -------------------------------------------
// `pred` false: zero-fill (src-size 0, nothing is read); pass a valid
// address anyway (the emitter passes the tensor's base).

__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(pred ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_8(void* dst, const void* src, bool pred) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(pred ? 8 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_4(void* dst, const void* src, bool pred) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(pred ? 4 : 0)
               : "memory");
}
// The hoisted form (a warp-specialized producer's per-thread row
// addresses, CopyPlan::hoist): the shared destination as a 32-bit shared
// address, the source size in bytes (0: zero-fill, nothing read), and the
// cache level: `.ca` (CACHE_ALL, L1: duplicate rows of a gather are served
// there instead of queueing at one L2 slice) or `.cg` (L2 only; PTX ISA
// 9.7.9.25: .cg only with 16 bytes).
template <int BYTES, bool CACHE_ALL>
__device__ __forceinline__ void cp_async_sized(unsigned dst, const void* src, unsigned src_size) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  if constexpr (CACHE_ALL || BYTES != 16) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src),
                 "n"(BYTES), "r"(src_size)
                 : "memory");
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(src_size)
                 : "memory");
  }
}
// The hoisted 16-byte form with the cache level chosen at run time
// (CopyPlan::cache_by_repeats): `l1` is warp-uniform (l1_by_repeated_rows), so
// the branch does not diverge.
__device__ __forceinline__ void cp_async_16_l1_if(unsigned dst, const void* src, unsigned src_size,
                                                  bool l1) {
  if (l1)
    cp_async_sized<16, true>(dst, src, src_size);
  else
    cp_async_sized<16, false>(dst, src, src_size);
}
// The warp's cache level for a tile's hoisted gathered copy
// (CopyPlan::cache_by_repeats): through L1 (true) when 16 or more of its 32
// lanes read the same source in their first two slots, else not. A lane's
// slots 0 and 1 read the same column chunk of two rows `producer threads /
// chunks a row` apart (the pass checks the layout), so equal sources mean a
// tile of repeated rows, where L1 merges the reads (the H200 took 3x as long
// by .cg on a tile of one repeated row); distinct rows go by .cg, 1-5%
// faster. A zero-filled slot (src_size 0) reads nothing and never counts.
// One compare and one ballot: the form by match.any over every slot cost
// 1.5-5 us a kernel (bench/RESULTS.md, session 20). Every lane of the warp
// must call it (vote.sync with the full mask, PTX ISA 9.7.13.5).
__device__ __forceinline__ bool l1_by_repeated_rows(const void* src0, unsigned size0,
                                                    const void* src1, unsigned size1) {
  const bool same = size0 != 0 && size1 != 0 && src0 == src1;
  return __popc(__ballot_sync(0xffffffffu, same)) >= 16;
}
// The per-access forms with the cache level of a plan (cp_async_16 is .cg).
__device__ __forceinline__ void cp_async_16_ca(void* dst, const void* src, bool pred) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(pred ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- paired stores (the epilogue of an MmaTile: a thread owns column pairs) ----

template <class T>
struct alignas(2 * sizeof(T)) Pair {
  T a, b;
};
// p is aligned for one store of two T.
template <class T>
__device__ __forceinline__ bool aligned_pair(const T* p) {
  return reinterpret_cast<unsigned long long>(p) % (2 * sizeof(T)) == 0;
}
// The unsigned integer of `B` bytes (B = 1, 2, 4, 8).
template <int B>
struct UIntOf;
template <>
struct UIntOf<1> {
  using type = unsigned char;
};
template <>
struct UIntOf<2> {
  using type = unsigned short;
};
template <>
struct UIntOf<4> {
  using type = unsigned int;
};
template <>
struct UIntOf<8> {
  using type = unsigned long long;
};
// p[0] = a, p[1] = b with one access (p must be aligned_pair). Through an
// integer of twice the width: a store of the Pair struct itself compiled to
// two 16-bit STG for f16 (seen in the SASS of the sm_90a epilogue).
template <class T>
__device__ __forceinline__ void store_pair(T* p, T a, T b) {
  if constexpr (sizeof(T) <= 4) {
    using U = typename UIntOf<sizeof(T)>::type;
    using W = typename UIntOf<2 * sizeof(T)>::type;
    union Bits {
      T t;
      U u;
    } ua, ub;  // (NVRTC has no memcpy without headers; nvcc defines union punning)
    ua.t = a;
    ub.t = b;
    *reinterpret_cast<W*>(p) = static_cast<W>(ua.u) | (static_cast<W>(ub.u) << (8 * sizeof(T)));
  } else {
    *reinterpret_cast<Pair<T>*>(p) = Pair<T>{a, b};
  }
}

// Two 16-bit values as one 32-bit register, `a` in the low half (the
// order of stmatrix's and mma's b16 pairs).
template <class T>
__device__ __forceinline__ unsigned pack_pair(T a, T b) {
  static_assert(sizeof(T) == 2, "pack_pair packs 16-bit values");
  union Bits {
    T t;
    unsigned short u;
  } ua, ub;
  ua.t = a;
  ub.t = b;
  return static_cast<unsigned>(ua.u) | (static_cast<unsigned>(ub.u) << 16);
}
// stmatrix.sync.aligned.m8n8.x4.shared.b16 (PTX ISA 9.7.9.17): four 8x8
// matrices of b16 from the warp's registers (thread t holds row t / 4,
// columns 2 (t % 4) and + 1 of each: the mma.m16n8 C fragment) to the rows
// whose addresses threads 8i .. 8i + 7 give for matrix i (16-byte aligned).
__device__ __forceinline__ void stmatrix_x4(unsigned addr, unsigned r0, unsigned r1, unsigned r2,
                                            unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// 16 bytes from shared `src` to global `dst`, one access each (both
// 16-byte aligned: the staged epilogue's row chunks).
__device__ __forceinline__ bool aligned16(const void* p) {
  return reinterpret_cast<unsigned long long>(p) % 16 == 0;
}
template <class T>
__device__ __forceinline__ void store16(T* dst, const T* src) {
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
}

// ---- vector loads (register-staged copies) ------------------------------------

template <class T, int N>
struct alignas(N * sizeof(T)) Vector {
  T v[N];
};
// dst[0..N) = p[0..N) with one N * sizeof(T)-byte load (p must be aligned
// for it: lower_copies proved so for the addresses it is used at).
template <int N, class T>
__device__ __forceinline__ void load_vector(T (&dst)[N], const T* p) {
  const Vector<T, N> x = *reinterpret_cast<const Vector<T, N>*>(p);
#pragma unroll
  for (int i = 0; i < N; ++i) dst[i] = x.v[i];
}

}  // namespace tf
