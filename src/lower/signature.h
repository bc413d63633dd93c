// The global buffers of a lowered kernel, declared by every template in one
// order (inputs, then the output), so a kernel's params line up with the
// graph values they bind (lower.h, LoweredKernel::bindings).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "tir/builder.h"

namespace tilefuse {

struct BufferSpec {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  std::vector<int64_t> strides;  // elements
};

struct KernelSignature {
  std::vector<BufferSpec> inputs;  // read-only
  BufferSpec output;
};

// Declares the signature's buffers on `b` (inputs, then the output) with
// constant shapes and strides (i64 constants where a value passes 2^31 - 1)
// and a 16-byte base alignment, which the runtime guarantees for every
// tensor it passes. Returns them in that order.
std::vector<tir::Buffer> declare_buffers(tir::KernelBuilder& b, const KernelSignature& sig);

// `(a + b - 1) / b` for b > 0.
inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// A constant index of the narrowest index dtype that holds `max_value`.
tir::Expr index_const(int64_t value, int64_t max_value);

}  // namespace tilefuse
