// tilefuse device helpers: the GEMM tile families the CUDA emitter instantiates:
//   MmaTile     ldmatrix + mma.sync.m16n8k16 (f16 / bf16 operands, f32 accumulators)
//   Tf32MmaTile mma.sync.m16n8k8 on TF32 (f32 operands rounded to TF32, f32
//               accumulators; only under --allow-tf32)
//   SimtTile    one FFMA per product (f32 / f64: exact)
// Sources: PTX ISA 9.7.9.25 (cp.async), 9.7.14.5.15 (ldmatrix), 9.7.14.5.14
// (mma.sync m16n8k16 / m16n8k8 fragment layouts), 9.7.9.21 (cvt .tf32),
// 9.7.13.5 (atom.cas).
//
// Conventions shared with the emitter (src/codegen/cuda_emitter.cpp):
//  - a shared tile [ROWS][COLS] feeding MmaTile is stored with `swizzled`
//    (16-byte units), feeding Tf32MmaTile A with `swizzled` and B with
//    `swizzled<COLS, 4, 32>` (32-byte units), every other shared buffer
//    row-major (`row_major`); copies write through the same offset function
//    the GEMM reads through;
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

// One thread's share of an mma.sync C tile [BM][BN] (f32) over WARPS_M x
// WARPS_N warps, MT x NT m16n8 tiles per warp: what MmaTile and Tf32MmaTile
// share (m16n8k16 and m16n8k8 have the same C fragment).
template <int BM, int BN, int WARPS_M, int WARPS_N>
struct MmaAccumulators {
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  static constexpr int MT = WM / 16, NT = WN / 8;
  static constexpr int kElems = MT * NT * 4;
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
};

// C[BM][BN] += A[BM][BK] @ B[BK][BN] over WARPS_M x WARPS_N warps; A is
// K-major (row-major [BM][BK]), B is N-major (row-major [BK][BN]), both
// `swizzled`. Warp w owns rows (w / WARPS_N) * WM.. and columns
// (w % WARPS_N) * WN.. of C, as MT x NT m16n8 tiles.
template <class T, int BM, int BN, int BK, int WARPS_M, int WARPS_N>
struct MmaTile : MmaAccumulators<BM, BN, WARPS_M, WARPS_N> {
  using Acc = MmaAccumulators<BM, BN, WARPS_M, WARPS_N>;
  using Acc::c, Acc::MT, Acc::NT, Acc::WM, Acc::WN;
  static_assert(sizeof(T) == 2, "MmaTile takes 16-bit operands");
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "MmaTile: tile shape");

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

// ---- Tf32MmaTile: mma.sync.m16n8k8 with .tf32 operands ----------------------------

// f32 -> tf32, round to nearest with ties away from zero (PTX ISA 9.7.9.21,
// "cvt": cvt.rna.tf32.f32). The result is an f32 bit pattern with the low
// 13 mantissa bits zero. (Raw f32 bits given to the mma would be truncated
// instead, a bias towards zero.)
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ void mma_tf32(float* d, const unsigned* a, const unsigned* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// C[BM][BN] += A[BM][BK] @ B[BK][BN] on TF32 tensor cores over WARPS_M x
// WARPS_N warps, f32 operands rounded to TF32 (10 mantissa bits) as they are
// loaded, products accumulated in f32. The interface and the warp/C layout
// are MmaTile's (the same m16n8 C fragment), so the epilogue code is the
// same. A is `swizzled<BK, 4>` (16-byte units), B `swizzled<BN, 4, 32>`
// (32-byte units). ldmatrix moves 16-bit elements, so the fragments are
// read with one 32-bit shared load per element, per the m16n8k8 .tf32
// fragment layout (PTX ISA 9.7.14.5.14, "Matrix fragments for
// mma.m16n8k8"): with g = lane / 4, t = lane % 4,
//   A (16x8): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4);
//   B (8x8):  b0 (k t, n g), b1 (k t + 4, n g).
// One A load reads 8 rows x 16 bytes and one B load 4 rows x 32 bytes; the
// two swizzles put those in distinct bank groups (no bank conflicts).
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N>
struct Tf32MmaTile : MmaAccumulators<BM, BN, WARPS_M, WARPS_N> {
  // The C fragment of m16n8k8 is that of m16n8k16 (MmaAccumulators).
  using Acc = MmaAccumulators<BM, BN, WARPS_M, WARPS_N>;
  using Acc::c, Acc::MT, Acc::NT, Acc::WM, Acc::WN;
  static_assert(WM % 16 == 0 && WN % 8 == 0 && BK % 8 == 0, "Tf32MmaTile: tile shape");

  // One k8 step's operand fragments (TF32 bit patterns).
  struct Frags {
    unsigned a[MT][4];
    unsigned b[NT][2];
  };
  static constexpr int kSteps = BK / 8;

  // Loads (and rounds to TF32) the fragments of k8 step `step`
  // (0 <= step < kSteps) of the tiles As [BM][BK] and Bs [BK][BN].
  // The swizzles repeat every 8 rows (A, 16-byte units) and every 4 rows
  // (B, 32-byte units), and the rows a thread reads are g or t plus
  // multiples of those (m0 and mt * 16 + 8: multiples of 16 and 8; kk and 4:
  // of 4), so each address is the swizzled offset within the first period
  // plus a constant: NT + 2 * kSteps offsets per thread, not one per load
  // (measured with the fragments double-buffered at 128 accumulators: 200-340
  // bytes of ptxas spills with one offset per load, 52-112 with these).
  __device__ __forceinline__ void load_frags(const float* As, const float* Bs, int step,
                                             Frags& f) const {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int m0 = (warp / WARPS_N) * WM, n0 = (warp % WARPS_N) * WN;
    const int kk = step * 8;
    const float* a = As + m0 * BK;
    const int a_lo = swizzled<BK, 4>(g, kk + t), a_hi = swizzled<BK, 4>(g, kk + t + 4);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      f.a[mt][0] = to_tf32(a[mt * 16 * BK + a_lo]);
      f.a[mt][1] = to_tf32(a[(mt * 16 + 8) * BK + a_lo]);
      f.a[mt][2] = to_tf32(a[mt * 16 * BK + a_hi]);
      f.a[mt][3] = to_tf32(a[(mt * 16 + 8) * BK + a_hi]);
    }
    const float* b = Bs + kk * BN;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int off = swizzled<BN, 4, 32>(t, n0 + nt * 8 + g);
      f.b[nt][0] = to_tf32(b[off]);
      f.b[nt][1] = to_tf32(b[4 * BN + off]);
    }
  }
  // C += the product of one step's fragments.
  __device__ __forceinline__ void mma_frags(const Frags& f) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) mma_tf32(&c[(mt * NT + nt) * 4], f.a[mt], f.b[nt]);
  }
  // C += As @ Bs, all k8 steps.
  __device__ __forceinline__ void mma(const float* As, const float* Bs) {
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
      for (int i = 0; i < TM; ++i) a[i] = cast<Acc>(As[(ty + i * TY) * BK + k]);
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = cast<Acc>(Bs[k * BN + tx + j * TX]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) c[i * TN + j] = fma(a[i], b[j], c[i * TN + j]);
    }
  }
};

}  // namespace tf
