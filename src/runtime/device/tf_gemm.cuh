// tilefuse device helpers: the two GEMM tile families the CUDA emitter instantiates:
//   MmaTile  ldmatrix + mma.sync.m16n8k16 (f16 / bf16 operands, f32 accumulators)
//   SimtTile one FFMA per product (f32 / f64: exact, no TF32)
// Sources: PTX ISA 9.7.9.25 (cp.async), 9.7.14.5.15 (ldmatrix), 9.7.14.5.14
// (mma.sync m16n8k16 fragment layouts), 9.7.13.5 (atom.cas).
//
// Conventions shared with the emitter (src/codegen/cuda_emitter.cpp):
//  - a shared tile [ROWS][COLS] feeding MmaTile is stored with `swizzled`,
//    every other shared buffer row-major (`row_major`); copies write through
//    the same offset function the GEMM reads through;
//  - a tile object owns one thread's share of the accumulator tile
//    [BM][BN]: element e (0 <= e < kElems) of this thread is at row(e),
//    col(e) of the block tile; c[e] is its value.
#pragma once

#include "tf_copy.cuh"
#include "tf_numeric.cuh"

namespace tf {

// ---- MmaTile: ldmatrix + mma.sync.m16n8k16 ------------------------------------

template <class T>
struct MmaOp;  // the mma.sync instruction for operand type T
template <>
struct MmaOp<f16> {
  __device__ __forceinline__ static void run(float* d, const unsigned* a, const unsigned* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct MmaOp<bf16> {
  __device__ __forceinline__ static void run(float* d, const unsigned* a, const unsigned* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// C[BM][BN] += A[BM][BK] @ B[BK][BN] over WARPS_M x WARPS_N warps; A is
// K-major (row-major [BM][BK]), B is N-major (row-major [BK][BN]), both
// `swizzled`. Warp w owns rows (w / WARPS_N) * WM.. and columns
// (w % WARPS_N) * WN.. of C, as MT x NT m16n8 tiles.
template <class T, int BM, int BN, int BK, int WARPS_M, int WARPS_N>
struct MmaTile {
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  static constexpr int MT = WM / 16, NT = WN / 8;
  static constexpr int kElems = MT * NT * 4;
  static_assert(sizeof(T) == 2, "MmaTile takes 16-bit operands");
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "MmaTile: tile shape");
  float c[kElems];

  __device__ __forceinline__ void fill(float v) {
#pragma unroll
    for (int e = 0; e < kElems; ++e) c[e] = v;
  }
  // Fragment layout of m16n8 C (PTX ISA 9.7.14.5.14, "Matrix fragments for
  // mma.m16n8k16"): c0,c1 at (lane/4, 2*(lane%4) + {0,1}), c2,c3 eight rows
  // lower. e = (mt * NT + nt) * 4 + q.
  __device__ __forceinline__ static int row(int e) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int mt = e / 4 / NT, q = e % 4;
    return (warp / WARPS_N) * WM + mt * 16 + lane / 4 + (q >= 2 ? 8 : 0);
  }
  __device__ __forceinline__ static int col(int e) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int nt = e / 4 % NT, q = e % 4;
    return (warp % WARPS_N) * WN + nt * 8 + (lane % 4) * 2 + (q & 1);
  }

  // One k16 step's operand fragments (registers).
  struct Frags {
    unsigned a[MT][4];
    unsigned b[NT][2];
  };
  static constexpr int kSteps = BK / 16;

  // Loads the fragments of k16 step `step` (0 <= step < kSteps) of the
  // tiles As [BM][BK] and Bs [BK][BN].
  __device__ __forceinline__ void load_frags(const T* As, const T* Bs, int step, Frags& f) const {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int m0 = (warp / WARPS_N) * WM, n0 = (warp % WARPS_N) * WN;
    const int kk = step * 16;
    const unsigned a_base = smem_addr(As), b_base = smem_addr(Bs);
    // A: lanes 0-15 address rows 0-15 at k 0..7, lanes 16-31 at k 8..15;
    // the four 8x8 matrices are a0..a3 of the m16n8k16 A fragment.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int r = m0 + mt * 16 + lane % 16, k = kk + (lane / 16) * 8;
      ldmatrix_x4(f.a[mt], a_base + 2 * swizzled<BK, 2>(r, k));
    }
    // B (stored k-rows, n contiguous) through .trans: lanes 0-7 k 0..7,
    // 8-15 k 8..15 of n-tile 0; lanes 16-31 the same for n-tile 1.
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      const int k = kk + lane % 8 + ((lane / 8) % 2) * 8, n = n0 + np * 16 + (lane / 16) * 8;
      unsigned r[4];
      ldmatrix_x4_trans(r, b_base + 2 * swizzled<BN, 2>(k, n));
      f.b[2 * np][0] = r[0];
      f.b[2 * np][1] = r[1];
      f.b[2 * np + 1][0] = r[2];
      f.b[2 * np + 1][1] = r[3];
    }
  }
  // C += the product of one step's fragments.
  __device__ __forceinline__ void mma_frags(const Frags& f) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) MmaOp<T>::run(&c[(mt * NT + nt) * 4], f.a[mt], f.b[nt]);
  }
  // C += As @ Bs, all k16 steps.
  __device__ __forceinline__ void mma(const T* As, const T* Bs) {
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      Frags f;
      load_frags(As, Bs, step, f);
      mma_frags(f);
    }
  }
};

// ---- SimtTile: exact FMA path ---------------------------------------------------

// C[BM][BN] += A[BM][BK] @ B[BK][BN] with one fma per product in Acc, over
// NUM_THREADS threads laid out TY x TX; thread (ty, tx) owns rows
// ty + i * TY and columns tx + j * TX (strided, so a warp reads B's row
// without bank conflicts). A and B are `row_major`.
template <class T, class Acc, int BM, int BN, int BK, int NUM_THREADS>
struct SimtTile {
  static constexpr int TX = BN >= 16 ? 16 : BN;
  static constexpr int TY = NUM_THREADS / TX;
  static_assert(NUM_THREADS % TX == 0 && BM % TY == 0 && BN % TX == 0, "SimtTile: tile shape");
  static constexpr int TM = BM / TY, TN = BN / TX;
  static constexpr int kElems = TM * TN;
  Acc c[kElems];

  __device__ __forceinline__ void fill(Acc v) {
#pragma unroll
    for (int e = 0; e < kElems; ++e) c[e] = v;
  }
  __device__ __forceinline__ static int row(int e) {
    return static_cast<int>(threadIdx.x) / TX + (e / TN) * TY;
  }
  __device__ __forceinline__ static int col(int e) {
    return static_cast<int>(threadIdx.x) % TX + (e % TN) * TX;
  }
  __device__ __forceinline__ void mma(const T* As, const T* Bs) {
    const int ty = static_cast<int>(threadIdx.x) / TX, tx = static_cast<int>(threadIdx.x) % TX;
#pragma unroll 4
    for (int k = 0; k < BK; ++k) {
      Acc a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = static_cast<Acc>(As[(ty + i * TY) * BK + k]);
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = static_cast<Acc>(Bs[k * BN + tx + j * TX]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) c[i * TN + j] = fma(a[i], b[j], c[i * TN + j]);
    }
  }
};

}  // namespace tf
