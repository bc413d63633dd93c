// The params of a lowered kernel, declared by every template in one order
// (the global buffers: inputs, then the output; then the scalar params), so
// a kernel's params line up with the graph values and symbols they bind
// (lower.h, LoweredKernel::bindings and ::scalars).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "tir/builder.h"

namespace tilefuse {

struct BufferSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<tir::Expr> shape;    // elements per dim (constants, or symbol vars)
  std::vector<tir::Expr> strides;  // elements (constants, products of sizes, run-time stride vars)
  int alignment = 16;              // bytes the base address is a multiple of
};

struct KernelSignature {
  std::vector<BufferSpec> inputs;  // read-only
  BufferSpec output;
  // Scalar params after the buffers: the symbols, then run-time strides.
  std::vector<tir::Var> scalars;
};

// Declares the signature's params on `b`: the buffers (inputs, then the
// output; 16-byte aligned unless the spec says less, which the runtime
// guarantees for every tensor it passes), then the scalars. Returns the
// buffers in that order.
std::vector<tir::Buffer> declare_buffers(tir::KernelBuilder& b, const KernelSignature& sig);

// `(a + b - 1) / b` for b > 0.
inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
// The same over an index expression (a >= 0): a constant folds.
tir::Expr ceil_div(const tir::Expr& a, int64_t b);

// A constant index of the narrowest index dtype that holds `max_value`.
tir::Expr index_const(int64_t value, int64_t max_value);

}  // namespace tilefuse
