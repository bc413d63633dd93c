// The reference evaluator's GEMM: C = A @ B (optionally alpha * C + beta *
// bias) over strided operands of any dtype, blocked and multithreaded.
//
// Numerics (the contract every backend is compared to):
// - operands are converted exactly to the accumulator type (f32 for
//   f8/f16/bf16/f32 in eager mode, f64 for f64 and in oracle mode);
// - each C element is one sequential sum in k order, acc = 0; acc += a*b
//   with every product and sum rounded to the accumulator type (no FMA), so
//   the result is bit-identical to the naive triple loop on every x86-64
//   machine whichever microkernel runs;
// - the epilogue computes alpha * acc + beta * bias in the accumulator type
//   (bias is ignored when beta == 0, as torch.addmm does) and rounds once to
//   the output dtype. K = 0 gives 0 (plus the bias).
//
// Performance: A and B are packed into MR-row / NR-column panels converted to
// the accumulator type; each task owns a BLOCK_M x BLOCK_N tile of C and
// walks K in BLOCK_K steps with a register-blocked microkernel written with
// GCC vector extensions. AVX-512 and AVX2 builds of the microkernel are
// chosen at run time when the CPU has them (the binary itself targets plain
// x86-64); products are kept out of FMAs, so every build rounds alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/dtype.h"
#include "reference/thread_pool.h"

namespace tilefuse::reference {

// A strided 2-D view; strides are in elements and may be 0 (broadcast).
struct MatrixRef {
  const std::byte* data = nullptr;  // the element at [0, 0]
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

// One C[M, N] = A[M, K] @ B[K, N] problem; C is contiguous row-major.
struct GemmItem {
  MatrixRef a;
  MatrixRef b;
  std::byte* c = nullptr;
  std::optional<MatrixRef> bias;  // [M, N] (broadcast strides allowed)
};

enum class GemmAccumulator { kF32, kF64 };

// Which microkernel build runs; kAuto picks the widest the CPU supports.
// The results are bit-identical whichever runs (tests check this).
enum class GemmKernel { kAuto, kGeneric, kAvx2, kAvx512 };

struct GemmOptions {
  GemmAccumulator accumulator = GemmAccumulator::kF32;
  DType c_dtype = DType::F32;  // rounding target of every C element
  double alpha = 1;            // applied only when a bias is present
  double beta = 1;
  GemmKernel kernel = GemmKernel::kAuto;
  // Bytes of packed operand panels held at once, past which an item whose M
  // or N is small against K packs K in chunks (its sums in the same order:
  // the results are the same bits). Memory then stays about this plus the
  // inputs, where a 1 x 2^24 x 1 product packed 3 GB at once.
  int64_t pack_budget_bytes = int64_t{64} << 20;
};

// Runs every item (they share the options). Throws InternalError on
// inconsistent shapes.
void gemm(const std::vector<GemmItem>& items, const GemmOptions& options, ThreadPool& pool);

// A 2-D operand given row by row (the CPU executor's `gemm_pack` tiles, a
// gathered operand among them): row r's elements are contiguous from
// rows[r]; its first valid[r] of `cols` are read and the rest are 0 (a
// masked-off row, a K or N tail). rows[r] is not read where valid[r] <= 0.
struct RowsRef {
  const std::byte* const* rows = nullptr;  // n_rows pointers
  const int64_t* valid = nullptr;          // n_rows counts, clamped to [0, cols]
  DType dtype = DType::F32;
  int64_t n_rows = 0;
  int64_t cols = 0;
};

// A gemm_accumulate operand: a strided view, or (by_rows not null) rows.
struct GemmOperand {
  MatrixRef strided;
  const RowsRef* by_rows = nullptr;
  GemmOperand(const MatrixRef& m) : strided(m) {}  // NOLINT: a view is an operand
  explicit GemmOperand(const RowsRef* r) : by_rows(r) {}
  int64_t rows() const { return by_rows ? by_rows->n_rows : strided.rows; }
  int64_t cols() const { return by_rows ? by_rows->cols : strided.cols; }
};

// C[M, N] += A[M, K] @ B[K, N] on the calling thread, for callers that own
// a C tile already (the CPU executor's gemm of a program instance). C is
// row-major with row stride `ldc`; each C element continues its sequential
// k-order sum (acc += a*b, products and sums rounded to the accumulator, no
// FMA), so the result equals the naive loop bit for bit. Operands are packed
// (converted) first; tiles of any size are legal. A tile of at most 1024
// multiply-adds (M * N * K) runs as a plain loop over dense converted
// copies of its operands instead, whatever `kernel` says (packing would cost
// more than the arithmetic; the bits are the same).
// An operand given by rows packs into the same panels, with the same
// values, as the strided view of a tile holding those rows would, so the
// result is the same bits either way.
void gemm_accumulate(const GemmOperand& a, const GemmOperand& b, float* c, int64_t ldc,
                     GemmKernel kernel = GemmKernel::kAuto);
void gemm_accumulate(const GemmOperand& a, const GemmOperand& b, double* c, int64_t ldc,
                     GemmKernel kernel = GemmKernel::kAuto);

bool gemm_kernel_supported(GemmKernel kernel);
// "avx512", "avx2" or "generic"; for kAuto, the one chosen on this machine.
const char* gemm_kernel_name(GemmKernel kernel = GemmKernel::kAuto);

}  // namespace tilefuse::reference
