#include "reference/matmul.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "reference/element_access.h"

namespace tilefuse::reference {
namespace {

// Cache blocking: a BLOCK_M x BLOCK_K panel of A (96 KB in f32) stays in L2,
// a BLOCK_K x NR sliver of B (16 KB) in L1, the BLOCK_M x BLOCK_N tile of C
// in L2. BLOCK_M is a multiple of every MR and BLOCK_N of every NR below.
constexpr int64_t kBlockM = 96;
constexpr int64_t kBlockN = 512;
constexpr int64_t kBlockK = 256;
// Below this many multiply-adds an item runs as a plain loop (packing would
// cost more than it saves); the sums are the same either way.
constexpr int64_t kSmallWork = int64_t{1} << 16;
// gemm_accumulate's tiles of at most this many multiply-adds run as a plain
// loop (gemm_accumulate_small), e.g. a batched GEMM's 4 x 4 x 4 or 8 x 16 x
// 8 tiles on the CPU executor; the sums are the same either way.
constexpr int64_t kSmallAccumulate = 1024;

template <typename T, int kBytes>
struct VecOf {
  typedef T type __attribute__((vector_size(kBytes)));
};

template <typename T>
struct MacroArgs {
  int64_t m_panels;  // MR-row panels of the C tile
  int64_t n_panels;  // NR-column panels of the C tile
  int64_t kc;        // depth of this K block
  const T* a;        // first A panel, at this K block
  int64_t a_panel_stride;
  const T* b;  // first B panel, at this K block
  int64_t b_panel_stride;
  T* c;  // the C tile (row-major, ldc columns)
  int64_t ldc;
};

// Keeps a product opaque to the optimizer so that `acc += p` is never fused
// into an FMA, whatever the target (AVX-512 has FMA, and -march=native would
// enable it elsewhere): every sum must round like the naive loop's. A macro
// rather than a function: a vector-typed function, even an inlined one,
// draws GCC's -Wpsabi warnings. Clang (the fuzzing build) rejects a 32- or
// 64-byte vector in that constraint outside an AVX function, and needs
// none: it contracts only within one expression, and contraction is off
// here anyway.
#if defined(__clang__)
#pragma clang fp contract(off)
#define TF_OPAQUE(p) ((void)(p))
#else
#define TF_OPAQUE(p) asm("" : "+v"(p))
#endif

template <typename T>
T opaque_product(T a, T b) {
  T p = a * b;
  TF_OPAQUE(p);
  return p;
}

// C[MR, NR] += A panel (kc x MR) * B panel (kc x NR). The accumulators are
// MR x NV vector registers; each k adds a broadcast A element times a row of
// B. Explicit vectors because GCC does not keep an auto-vectorized
// accumulator array in registers (it spills it every iteration).
template <typename T, int MR, int NV, int kBytes>
[[gnu::always_inline]] inline void micro_kernel(int64_t kc, const T* __restrict a,
                                                const T* __restrict b, T* __restrict c,
                                                int64_t ldc) {
  using V = typename VecOf<T, kBytes>::type;
  constexpr int kLanes = kBytes / static_cast<int>(sizeof(T));
  constexpr int NR = NV * kLanes;
  V acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) std::memcpy(&acc[i][v], c + i * ldc + v * kLanes, kBytes);
  for (int64_t k = 0; k < kc; ++k) {
    V bv[NV];
    for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], b + k * NR + v * kLanes, kBytes);
    for (int i = 0; i < MR; ++i) {
      const T ai = a[k * MR + i];  // broadcast by the vector extension
      for (int v = 0; v < NV; ++v) {
        V p = ai * bv[v];
        TF_OPAQUE(p);
        acc[i][v] += p;
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) std::memcpy(c + i * ldc + v * kLanes, &acc[i][v], kBytes);
}

template <typename T, int MR, int NV, int kBytes>
[[gnu::always_inline]] inline void macro_kernel(const MacroArgs<T>& x) {
  constexpr int NR = NV * kBytes / static_cast<int>(sizeof(T));
  for (int64_t jr = 0; jr < x.n_panels; ++jr)
    for (int64_t ir = 0; ir < x.m_panels; ++ir)
      micro_kernel<T, MR, NV, kBytes>(x.kc, x.a + ir * x.a_panel_stride,
                                      x.b + jr * x.b_panel_stride, x.c + ir * MR * x.ldc + jr * NR,
                                      x.ldc);
}

// Register budgets (MR x NR): AVX-512 has 32 zmm (24 accumulators + 2 B rows
// + broadcast + temporaries); AVX2 and the SSE2 baseline have 16 registers
// (12 accumulators). BLOCK_M = 96 and BLOCK_N = 512 are multiples of all.
__attribute__((target("avx512f"))) void macro_f32_avx512(const MacroArgs<float>& x) {
  macro_kernel<float, 12, 2, 64>(x);  // 12 x 32
}
__attribute__((target("avx2"))) void macro_f32_avx2(const MacroArgs<float>& x) {
  macro_kernel<float, 6, 2, 32>(x);  // 6 x 16
}
void macro_f32_generic(const MacroArgs<float>& x) {
  macro_kernel<float, 6, 2, 16>(x);
}  // 6 x 8
__attribute__((target("avx512f"))) void macro_f64_avx512(const MacroArgs<double>& x) {
  macro_kernel<double, 12, 2, 64>(x);  // 12 x 16
}
__attribute__((target("avx2"))) void macro_f64_avx2(const MacroArgs<double>& x) {
  macro_kernel<double, 6, 2, 32>(x);  // 6 x 8
}
void macro_f64_generic(const MacroArgs<double>& x) {
  macro_kernel<double, 6, 2, 16>(x);
}  // 6x4

template <typename T>
struct Kernel {
  int mr;
  int nr;
  void (*macro)(const MacroArgs<T>&);
};

GemmKernel best_kernel() {
  static const GemmKernel best = __builtin_cpu_supports("avx512f") ? GemmKernel::kAvx512
                                 : __builtin_cpu_supports("avx2")  ? GemmKernel::kAvx2
                                                                   : GemmKernel::kGeneric;
  return best;
}

template <typename T>
Kernel<T> select_kernel(GemmKernel which) {
  if (which == GemmKernel::kAuto) which = best_kernel();
  TF_CHECK(gemm_kernel_supported(which), "gemm: microkernel not supported on this CPU");
  if constexpr (std::is_same_v<T, float>) {
    switch (which) {
      case GemmKernel::kAvx512:
        return {12, 32, macro_f32_avx512};
      case GemmKernel::kAvx2:
        return {6, 16, macro_f32_avx2};
      default:
        return {6, 8, macro_f32_generic};
    }
  } else {
    switch (which) {
      case GemmKernel::kAvx512:
        return {12, 16, macro_f64_avx512};
      case GemmKernel::kAvx2:
        return {6, 8, macro_f64_avx2};
      default:
        return {6, 4, macro_f64_generic};
    }
  }
}

// The CPU converts f16 in hardware (CPUID.1:ECX.F16C[bit 29]) and the OS
// saves AVX state (what __builtin_cpu_supports("avx") checks; clang 14 has
// no "f16c" string for it).
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & (1u << 29)) != 0 && __builtin_cpu_supports("avx");
}

// n contiguous f16 values to f32 with the F16C conversion (vcvtph2ps,
// exact), 8 at a time; the caller checks the CPU has F16C.
__attribute__((target("avx,f16c"))) void f16_run_to_f32(const uint16_t* src, float* dst,
                                                        int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

// Every f16 encoding as an f32 (exact), indexed by its bits.
const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t b = 0; b < 65536; ++b) t[b] = f16_bits_to_f32(static_cast<uint16_t>(b));
    return t;
  }();
  return table.data();
}

const std::byte* element(const MatrixRef& m, int64_t r, int64_t c) {
  return m.data + (r * m.row_stride + c * m.col_stride) * dtype_size(m.dtype);
}

// Copies rows [r0, r0 + R) x cols [0, cols) of `m` into a panel laid out
// [cols][R] (R = panel width), zero-filling rows past m.rows. Used for A
// panels (rows of A) and, on the transposed view, for B panels.
template <typename T>
void pack_panel(const MatrixRef& m, int64_t r0, int width, T* out) {
  const ReadFn<T> read = reader<T>(m.dtype);
  const int64_t esize = dtype_size(m.dtype);
  const int64_t valid = std::min<int64_t>(width, m.rows - r0);
  if (m.dtype == (std::is_same_v<T, float> ? DType::F32 : DType::F64)) {
    // Same type: plain strided loads, no per-element conversion call (the
    // CPU executor packs every tile of every K step).
    for (int64_t k = 0; k < m.cols; ++k) {
      T* dst = out + k * width;
      const T* src = reinterpret_cast<const T*>(element(m, r0, k));
      for (int64_t i = 0; i < valid; ++i) dst[i] = src[i * m.row_stride];
      for (int64_t i = valid; i < width; ++i) dst[i] = T(0);
    }
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    // f16 and bf16 (the common GEMM operands) convert inline: bf16 is the
    // high half of an f32, f16 goes through a table of all 65536 values
    // (exact, built once). A call per element cost as much as the GEMM.
    if (m.dtype == DType::F16 || m.dtype == DType::BF16) {
      const float* f16 = m.dtype == DType::F16 ? f16_table() : nullptr;
      static const bool f16c = has_f16c();
      for (int64_t k = 0; k < m.cols; ++k) {
        T* dst = out + k * width;
        const auto* src = reinterpret_cast<const uint16_t*>(element(m, r0, k));
        if (f16 && f16c && m.row_stride == 1) {  // a contiguous run: 8 at a time
          f16_run_to_f32(src, dst, valid);
        } else if (f16) {
          for (int64_t i = 0; i < valid; ++i) dst[i] = f16[src[i * m.row_stride]];
        } else {
          for (int64_t i = 0; i < valid; ++i)
            dst[i] = std::bit_cast<float>(static_cast<uint32_t>(src[i * m.row_stride]) << 16);
        }
        for (int64_t i = valid; i < width; ++i) dst[i] = T(0);
      }
      return;
    }
  }
  for (int64_t k = 0; k < m.cols; ++k) {
    T* dst = out + k * width;
    const std::byte* src = element(m, r0, k);
    for (int64_t i = 0; i < valid; ++i) dst[i] = read(src + i * m.row_stride * esize);
    for (int64_t i = valid; i < width; ++i) dst[i] = T(0);
  }
}

// n elements of dtype `dt` from contiguous `src` to T (exact; as
// pack_panel converts them).
template <typename T>
void convert_run(DType dt, const std::byte* src, T* dst, int64_t n) {
  if (n <= 0) return;
  if (dt == (std::is_same_v<T, float> ? DType::F32 : DType::F64)) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (dt == DType::F16 || dt == DType::BF16) {
      const auto* h = reinterpret_cast<const uint16_t*>(src);
      static const bool f16c = has_f16c();
      if (dt == DType::F16 && f16c) {
        f16_run_to_f32(h, dst, n);
      } else if (dt == DType::F16) {
        const float* f16 = f16_table();
        for (int64_t i = 0; i < n; ++i) dst[i] = f16[h[i]];
      } else {
        for (int64_t i = 0; i < n; ++i)
          dst[i] = std::bit_cast<float>(static_cast<uint32_t>(h[i]) << 16);
      }
      return;
    }
  }
  const ReadFn<T> read = reader<T>(dt);
  const int64_t esize = dtype_size(dt);
  for (int64_t i = 0; i < n; ++i) dst[i] = read(src + i * esize);
}

// Row r of `m`, columns [c0, c0 + len), converted to T into out[0 .. len),
// zeros past the row's valid count.
template <typename T>
void convert_row(const RowsRef& m, int64_t r, int64_t c0, int64_t len, T* out) {
  const int64_t v = std::clamp<int64_t>(std::min(m.valid[r], m.cols) - c0, 0, len);
  if (v > 0) convert_run<T>(m.dtype, m.rows[r] + c0 * dtype_size(m.dtype), out, v);
  std::fill(out + v, out + len, T(0));
}

// The A panel of rows [r0, r0 + width), columns [c0, c0 + k_depth) of `m`
// (laid out [k_depth][width], rows past m.n_rows and elements past a row's
// valid count 0): what pack_panel makes of a tile holding these rows.
template <typename T>
void pack_rows_a(const RowsRef& m, int64_t r0, int width, T* out, int64_t c0, int64_t k_depth) {
  const int64_t valid_rows = std::clamp<int64_t>(m.n_rows - r0, 0, width);
  // Each row converted into `rows` (row i at i * k_depth, zero past its
  // valid count), then interleaved into the panel front to back.
  thread_local std::vector<T> rows;
  rows.resize(static_cast<size_t>(width * k_depth));
  for (int64_t i = 0; i < width; ++i) {
    T* row = rows.data() + i * k_depth;
    if (i < valid_rows)
      convert_row(m, r0 + i, c0, k_depth, row);
    else
      std::fill(row, row + k_depth, T(0));
  }
  for (int64_t k = 0; k < k_depth; ++k) {
    T* dst = out + k * width;
    for (int64_t i = 0; i < width; ++i) dst[i] = rows[i * k_depth + k];
  }
}

// The B panels of `m` (its rows are K): panel p holds columns
// [p * width, (p + 1) * width), laid out [rows][width] at out + p *
// panel_stride, columns past a row's valid count 0: what pack_panel makes
// of the transposed view of a tile holding these rows. Row by row, so that
// each source row is read once, front to back.
template <typename T>
void pack_rows_b(const RowsRef& m, int64_t panels, int width, T* out, int64_t panel_stride) {
  const int64_t esize = dtype_size(m.dtype);
  thread_local std::vector<std::byte> line;
  for (int64_t k = 0; k < m.n_rows; ++k) {
    const int64_t valid = std::clamp<int64_t>(m.valid[k], 0, m.cols);
    // The row's bytes first, in one copy (wide loads stream a row far from
    // the last one faster than the conversion's 16-byte loads do).
    line.resize(static_cast<size_t>(valid * esize));
    if (valid > 0) std::memcpy(line.data(), m.rows[k], static_cast<size_t>(valid * esize));
    for (int64_t p = 0; p < panels; ++p) {
      T* dst = out + p * panel_stride + k * width;
      const int64_t c0 = p * width;
      const int64_t v = std::clamp<int64_t>(valid - c0, 0, width);
      if (v > 0) convert_run<T>(m.dtype, line.data() + c0 * esize, dst, v);
      for (int64_t j = v; j < width; ++j) dst[j] = T(0);
    }
  }
}

MatrixRef transposed(const MatrixRef& m) {
  return {m.data, m.dtype, m.cols, m.rows, m.col_stride, m.row_stride};
}

template <typename T>
struct Epilogue {
  WriteFn<T> write;
  int64_t c_esize;
  T alpha;
  T beta;
  bool use_bias;

  // Stores C[i, j] = alpha * acc + beta * bias[i, j] (or acc without bias).
  void store(const GemmItem& item, int64_t n, int64_t i, int64_t j, T acc) const {
    T v = acc;
    if (item.bias && use_bias) {
      const T bias = reader<T>(item.bias->dtype)(element(*item.bias, i, j));
      v = opaque_product(alpha, acc) + opaque_product(beta, bias);
    } else if (item.bias) {
      v = alpha * acc;  // beta == 0: the bias is ignored, NaN and inf included
    }
    write(item.c + (i * n + j) * c_esize, v);
  }
};

// The plain loop, for small items: the same sums in the same order.
template <typename T>
void gemm_small(const GemmItem& item, const Epilogue<T>& epi) {
  const int64_t m = item.a.rows, k_depth = item.a.cols, n = item.b.cols;
  const ReadFn<T> read_a = reader<T>(item.a.dtype);
  const ReadFn<T> read_b = reader<T>(item.b.dtype);
  std::vector<T> a_row(static_cast<size_t>(k_depth));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = 0; k < k_depth; ++k) a_row[k] = read_a(element(item.a, i, k));
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t k = 0; k < k_depth; ++k)
        acc += opaque_product(a_row[k], read_b(element(item.b, k, j)));
      epi.store(item, n, i, j, acc);
    }
  }
}

// The packed panels cover K in chunks (multiples of kBlockK, so each C
// element still sums its k-th products in k order, slab after slab). One
// chunk, the whole K, unless the panels of the whole K would take more than
// `pack_budget_bytes` and a C accumulator of the whole output (where the sums
// wait, exact in T, between chunks) is under a quarter of them: M or N
// small against K, where padding each row to MR (each column to NR) made the
// packed copy of a 1 x 2^24 x 1 product 3 GB.
template <typename T>
int64_t k_chunk_of(int64_t m_pad, int64_t n_pad, int64_t k_depth, int64_t pack_budget_bytes) {
  const int64_t per_k = m_pad + n_pad;  // packed elements per k
  const auto bytes = [](int64_t elems) { return static_cast<double>(elems) * sizeof(T); };
  if (bytes(per_k) * static_cast<double>(k_depth) <= static_cast<double>(pack_budget_bytes) ||
      4 * static_cast<double>(m_pad) * static_cast<double>(n_pad) >=
          static_cast<double>(per_k) * static_cast<double>(k_depth))
    return k_depth;
  const int64_t fit = pack_budget_bytes / static_cast<int64_t>(sizeof(T)) / per_k;
  return std::min(k_depth, std::max<int64_t>(1, fit / kBlockK) * kBlockK);
}

template <typename T>
void gemm_blocked(const GemmItem& item, const Epilogue<T>& epi, const Kernel<T>& kernel,
                  int64_t pack_budget_bytes, ThreadPool& pool) {
  const int64_t m = item.a.rows, k_depth = item.a.cols, n = item.b.cols;
  const int mr = kernel.mr, nr = kernel.nr;
  const int64_t m_panels = (m + mr - 1) / mr;
  const int64_t n_panels = (n + nr - 1) / nr;
  const int64_t m_pad = m_panels * mr, n_pad = n_panels * nr;
  const int64_t k_chunk = k_chunk_of<T>(m_pad, n_pad, k_depth, pack_budget_bytes);
  const bool chunked = k_chunk < k_depth;
  // Between chunks: the whole output's accumulators (m_pad x n_pad).
  std::vector<T> c_all(chunked ? static_cast<size_t>(m_pad * n_pad) : 0);
  std::vector<T> a_pack, b_pack;
  const int64_t tiles_m = (m + kBlockM - 1) / kBlockM;
  const int64_t tiles_n = (n + kBlockN - 1) / kBlockN;
  // Until the last chunk (k_depth == 0 still runs one, empty: its epilogue
  // stores zeros).
  for (int64_t k_lo = 0;; k_lo += k_chunk) {
    const int64_t kc_chunk = std::min(k_chunk, k_depth - k_lo);
    const bool last = k_lo + kc_chunk >= k_depth;
    const int64_t a_panel_stride = kc_chunk * mr;
    const int64_t b_panel_stride = kc_chunk * nr;
    a_pack.resize(static_cast<size_t>(m_panels * a_panel_stride));
    b_pack.resize(static_cast<size_t>(n_panels * b_panel_stride));
    const MatrixRef& av = item.a;
    const MatrixRef a_slab{element(av, 0, k_lo), av.dtype,     m, kc_chunk,
                           av.row_stride,        av.col_stride};
    const MatrixRef& bv = item.b;
    const MatrixRef b_t =
        transposed({element(bv, k_lo, 0), bv.dtype, kc_chunk, n, bv.row_stride, bv.col_stride});
    const int64_t pack_grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, kc_chunk * mr));
    pool.parallel_for(m_panels, pack_grain, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) pack_panel(a_slab, p * mr, mr, &a_pack[p * a_panel_stride]);
    });
    pool.parallel_for(n_panels, pack_grain, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) pack_panel(b_t, p * nr, nr, &b_pack[p * b_panel_stride]);
    });

    pool.parallel_for(tiles_m * tiles_n, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> c_tile;
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t i0 = (t / tiles_n) * kBlockM, j0 = (t % tiles_n) * kBlockN;
        const int64_t mc = std::min(kBlockM, m - i0), nc = std::min(kBlockN, n - j0);
        const int64_t tile_m_panels = (mc + mr - 1) / mr, tile_n_panels = (nc + nr - 1) / nr;
        // The tile's accumulators: its block of c_all (i0 and j0 are
        // multiples of MR and NR), or a scratch tile when K is one chunk.
        T* c = nullptr;
        int64_t ldc = 0;
        if (chunked) {
          c = c_all.data() + i0 * n_pad + j0;
          ldc = n_pad;
        } else {
          ldc = tile_n_panels * nr;
          c_tile.assign(static_cast<size_t>(tile_m_panels * mr * ldc), T(0));
          c = c_tile.data();
        }
        for (int64_t k0 = 0; k0 < kc_chunk; k0 += kBlockK) {
          MacroArgs<T> args{tile_m_panels,
                            tile_n_panels,
                            std::min(kBlockK, kc_chunk - k0),
                            a_pack.data() + (i0 / mr) * a_panel_stride + k0 * mr,
                            a_panel_stride,
                            b_pack.data() + (j0 / nr) * b_panel_stride + k0 * nr,
                            b_panel_stride,
                            c,
                            ldc};
          kernel.macro(args);
        }
        if (last)
          for (int64_t i = 0; i < mc; ++i)
            for (int64_t j = 0; j < nc; ++j) epi.store(item, n, i0 + i, j0 + j, c[i * ldc + j]);
      }
    });
    if (last) break;
  }
}

template <typename T>
void gemm_typed(const std::vector<GemmItem>& items, const GemmOptions& options, ThreadPool& pool) {
  const Epilogue<T> epi{writer<T>(options.c_dtype), dtype_size(options.c_dtype),
                        static_cast<T>(options.alpha), static_cast<T>(options.beta),
                        options.beta != 0};
  std::vector<const GemmItem*> small, big;
  for (const GemmItem& item : items) {
    TF_CHECK(item.a.cols == item.b.rows, "gemm: inner dims differ");
    TF_CHECK(!item.bias || (item.bias->rows == item.a.rows && item.bias->cols == item.b.cols),
             "gemm: bias shape");
    const int64_t m = item.a.rows, k = item.a.cols, n = item.b.cols;
    if (m == 0 || n == 0) continue;
    (m * n * std::max<int64_t>(k, 1) <= kSmallWork ? small : big).push_back(&item);
  }
  // Many small items: one task each.
  pool.parallel_for(static_cast<int64_t>(small.size()), 4, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) gemm_small(*small[i], epi);
  });
  const Kernel<T> kernel = select_kernel<T>(options.kernel);
  for (const GemmItem* item : big)
    gemm_blocked(*item, epi, kernel, options.pack_budget_bytes, pool);
}

// Row r of `op` (`cols` elements from column 0) converted to T, zeros past
// a row's valid count: what the packed panels hold for that row.
template <typename T>
void operand_row(const GemmOperand& op, int64_t r, T* out) {
  const int64_t cols = op.cols();
  if (op.by_rows) {
    convert_row(*op.by_rows, r, 0, cols, out);
    return;
  }
  const MatrixRef& m = op.strided;
  if (m.col_stride == 1) {
    convert_run<T>(m.dtype, element(m, r, 0), out, cols);
    return;
  }
  const ReadFn<T> read = reader<T>(m.dtype);
  for (int64_t c = 0; c < cols; ++c) out[c] = read(element(m, r, c));
}

// The plain loop of gemm_accumulate for tiny tiles (kSmallAccumulate): the
// operands converted into dense row-major scratch, then each C element's
// k-order sum continued in place, the same operations on the same values
// as the packed microkernels, so the same bits. Packing MR x NR panels
// (and the ragged-panel scratch of a tile smaller than one panel) cost
// several times the arithmetic of a 4 x 4 x 4 tile: the CPU executor runs
// one such tile per batch item of a batched GEMM of many tiny matrices.
template <typename T>
void gemm_accumulate_small(const GemmOperand& a, const GemmOperand& b, T* c, int64_t ldc) {
  const int64_t m = a.rows(), k_depth = a.cols(), n = b.cols();
  thread_local std::vector<T> a_dense, b_dense;
  a_dense.resize(static_cast<size_t>(m * k_depth));
  b_dense.resize(static_cast<size_t>(k_depth * n));
  for (int64_t i = 0; i < m; ++i) operand_row<T>(a, i, a_dense.data() + i * k_depth);
  for (int64_t p = 0; p < k_depth; ++p) operand_row<T>(b, p, b_dense.data() + p * n);
  for (int64_t i = 0; i < m; ++i) {
    const T* ai = a_dense.data() + i * k_depth;
    for (int64_t j = 0; j < n; ++j) {
      T acc = c[i * ldc + j];
      for (int64_t p = 0; p < k_depth; ++p) acc += opaque_product(ai[p], b_dense[p * n + j]);
      c[i * ldc + j] = acc;
    }
  }
}

// C += A @ B on this thread: full MR x NR panels run on C in place, the
// ragged right / bottom panels through a padded scratch tile; a tile of at
// most kSmallAccumulate multiply-adds by the plain loop.
template <typename T>
void gemm_accumulate_typed(const GemmOperand& a, const GemmOperand& b, T* c, int64_t ldc,
                           GemmKernel which) {
  TF_CHECK(a.cols() == b.rows(), "gemm_accumulate: inner dims differ");
  const int64_t m = a.rows(), k_depth = a.cols(), n = b.cols();
  if (m == 0 || n == 0 || k_depth == 0) return;
  if (m * n * k_depth <= kSmallAccumulate) {
    gemm_accumulate_small(a, b, c, ldc);
    return;
  }
  const Kernel<T> kernel = select_kernel<T>(which);
  const int mr = kernel.mr, nr = kernel.nr;
  const int64_t m_panels = (m + mr - 1) / mr, n_panels = (n + nr - 1) / nr;
  const int64_t m_full = m / mr, n_full = n / nr;
  thread_local std::vector<T> a_pack, b_pack, edge;
  // Blocked as GotoBLAS is (Goto & van de Geijn, "Anatomy of
  // high-performance matrix multiplication", ACM TOMS 34(3), 2008): K in
  // kBlockK slabs; a slab of B (kBlockK x the tile's N) is packed once and
  // stays in L2 while each kBlockM-row block of A is packed (in L1 / L2) and
  // multiplied with it, so packed panels are read from cache right after
  // they are written. Each C element still sums in k order, the slabs one
  // after another (its accumulator goes through C, exactly, between them).
  const int64_t m_block = std::max<int64_t>(1, kBlockM / mr);
  const int64_t n_block = std::max<int64_t>(1, kBlockN / nr);
  edge.resize(static_cast<size_t>(mr * nr));
  for (int64_t k0 = 0; k0 < k_depth; k0 += kBlockK) {
    const int64_t kc = std::min(kBlockK, k_depth - k0);
    b_pack.resize(static_cast<size_t>(n_panels * kc * nr));
    if (b.by_rows) {
      const RowsRef& r = *b.by_rows;
      const RowsRef slab{r.rows + k0, r.valid + k0, r.dtype, kc, r.cols};
      pack_rows_b(slab, n_panels, nr, b_pack.data(), kc * nr);
    } else {
      const MatrixRef& v = b.strided;
      const MatrixRef b_t =
          transposed({element(v, k0, 0), v.dtype, kc, v.cols, v.row_stride, v.col_stride});
      for (int64_t p = 0; p < n_panels; ++p) pack_panel(b_t, p * nr, nr, &b_pack[p * kc * nr]);
    }
    for (int64_t p0 = 0; p0 < m_panels; p0 += m_block) {
      const int64_t mb = std::min(m_block, m_panels - p0);
      a_pack.resize(static_cast<size_t>(mb * kc * mr));
      for (int64_t p = 0; p < mb; ++p) {
        T* out = &a_pack[p * kc * mr];
        if (a.by_rows) {
          pack_rows_a(*a.by_rows, (p0 + p) * mr, mr, out, k0, kc);
        } else {
          const MatrixRef& v = a.strided;
          const MatrixRef slab{element(v, 0, k0), v.dtype, v.rows, kc, v.row_stride, v.col_stride};
          pack_panel(slab, (p0 + p) * mr, mr, out);
        }
      }
      // Full MR x NR panels on C in place.
      const int64_t full = std::clamp<int64_t>(m_full - p0, 0, mb);
      for (int64_t q0 = 0; q0 < n_full && full > 0; q0 += n_block) {
        kernel.macro({full, std::min(n_block, n_full - q0), kc, a_pack.data(), kc * mr,
                      b_pack.data() + q0 * kc * nr, kc * nr, c + p0 * mr * ldc + q0 * nr, ldc});
      }
      // The ragged right / bottom panels through a padded scratch tile.
      for (int64_t ir = p0; ir < p0 + mb; ++ir) {
        for (int64_t jr = ir < m_full ? n_full : 0; jr < n_panels; ++jr) {
          const int64_t rows = std::min<int64_t>(mr, m - ir * mr);
          const int64_t cols = std::min<int64_t>(nr, n - jr * nr);
          T* ct = c + ir * mr * ldc + jr * nr;
          std::fill(edge.begin(), edge.end(), T(0));
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) edge[i * nr + j] = ct[i * ldc + j];
          kernel.macro({1, 1, kc, a_pack.data() + (ir - p0) * kc * mr, 0,
                        b_pack.data() + jr * kc * nr, 0, edge.data(), nr});
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) ct[i * ldc + j] = edge[i * nr + j];
        }
      }
    }
  }
}

}  // namespace

void gemm_accumulate(const GemmOperand& a, const GemmOperand& b, float* c, int64_t ldc,
                     GemmKernel kernel) {
  gemm_accumulate_typed<float>(a, b, c, ldc, kernel);
}

void gemm_accumulate(const GemmOperand& a, const GemmOperand& b, double* c, int64_t ldc,
                     GemmKernel kernel) {
  gemm_accumulate_typed<double>(a, b, c, ldc, kernel);
}

void gemm(const std::vector<GemmItem>& items, const GemmOptions& options, ThreadPool& pool) {
  if (options.accumulator == GemmAccumulator::kF32) {
    gemm_typed<float>(items, options, pool);
  } else {
    gemm_typed<double>(items, options, pool);
  }
}

bool gemm_kernel_supported(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kAuto:
    case GemmKernel::kGeneric:
      return true;
    case GemmKernel::kAvx2:
      return __builtin_cpu_supports("avx2");
    case GemmKernel::kAvx512:
      return __builtin_cpu_supports("avx512f");
  }
  return false;
}

const char* gemm_kernel_name(GemmKernel kernel) {
  switch (kernel == GemmKernel::kAuto ? best_kernel() : kernel) {
    case GemmKernel::kAvx512:
      return "avx512";
    case GemmKernel::kAvx2:
      return "avx2";
    default:
      return "generic";
  }
}

}  // namespace tilefuse::reference
