// Element-wise kernels of the reference evaluator.
//
// Each kernel reads its operands (any strides, broadcast to `out`'s shape)
// converted to the compute type, applies the op in that type and stores the
// result into `out` (a fresh contiguous tensor) with the writer of out's
// dtype, which is the node's single rounding. The evaluator decides the
// compute type (float for f8/f16/bf16/f32 in eager mode, double for f64 and
// in oracle mode, int64 for integers and bools) and converts operands to the
// op's dtype beforehand where PyTorch would.
//
// The op definitions follow PyTorch's CPU kernels:
//   gelu(x)    = x * 0.5 * (1 + erf(x * M_SQRT1_2))      (exact gelu)
//   silu(x)    = x / (1 + exp(-x)),  sigmoid(x) = 1 / (1 + exp(-x))
//   relu(x)    = x < 0 ? 0 : x        (NaN stays NaN, -0 stays -0)
//   maximum / minimum: NaN if either operand is NaN, else std::max / std::min
//   clamp(x)   = min(max(x, lo), hi)  (NaN stays NaN; lo > hi gives hi)
//   integer add/sub/mul/neg/abs wrap modulo 2^64, then to the dtype.
#pragma once

#include <optional>

#include "core/tensor.h"
#include "graph/graph.h"
#include "reference/thread_pool.h"

namespace tilefuse::reference {

enum class Compute { kFloat, kDouble, kInt64 };

void unary_kernel(UnaryOp op, Compute compute, const Tensor& x, const Tensor& out,
                  ThreadPool& pool);
// Comparisons store bools; the other ops store the compute type.
void binary_kernel(BinaryOp op, Compute compute, const Tensor& a, const Tensor& b,
                   const Tensor& out, ThreadPool& pool);
// out = cond != 0 ? a : b.
void where_kernel(Compute compute, const Tensor& cond, const Tensor& a, const Tensor& b,
                  const Tensor& out, ThreadPool& pool);
void clamp_kernel(Compute compute, const Tensor& x, std::optional<double> lo,
                  std::optional<double> hi, const Tensor& out, ThreadPool& pool);
// out = static_cast<out dtype>(in) element by element, `in` broadcast to
// out's shape: floating sources go through double (exact), integer sources
// through int64 (see element_access.h for the conversions).
void convert_kernel(const Tensor& in, const Tensor& out, ThreadPool& pool);

}  // namespace tilefuse::reference
