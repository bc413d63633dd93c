// Kernel params shared by the templates (see signature.h).
#include "lower/signature.h"

#include <algorithm>

#include "lower/expr_lowering.h"

namespace tilefuse {

tir::Expr index_const(int64_t value, int64_t max_value) {
  return tir::make_int(index_dtype(std::max(value, max_value)), value);
}

tir::Expr ceil_div(const tir::Expr& a, int64_t b) {
  if (const int64_t* c = tir::as_const_int(a)) return index_const(ceil_div(*c, b), *c);
  if (b == 1) return a;
  return (a + (b - 1)) / b;
}

std::vector<tir::Buffer> declare_buffers(tir::KernelBuilder& b, const KernelSignature& sig) {
  std::vector<tir::Buffer> out;
  for (const BufferSpec& s : sig.inputs)
    out.push_back(b.input(s.name, s.dtype, s.shape, s.strides, s.alignment));
  const BufferSpec& o = sig.output;
  out.push_back(b.output(o.name, o.dtype, o.shape, o.strides, o.alignment));
  for (const tir::Var& v : sig.scalars) b.scalar_param(v);
  return out;
}

}  // namespace tilefuse
