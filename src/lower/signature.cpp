// Buffer declarations shared by the templates (see signature.h).
#include "lower/signature.h"

#include <algorithm>

#include "lower/expr_lowering.h"

namespace tilefuse {

tir::Expr index_const(int64_t value, int64_t max_value) {
  return tir::make_int(index_dtype(std::max(value, max_value)), value);
}

namespace {

constexpr int kBaseAlignment = 16;

std::vector<tir::Expr> consts(const std::vector<int64_t>& v) {
  std::vector<tir::Expr> out;
  for (int64_t x : v) out.push_back(index_const(x, x));
  return out;
}

}  // namespace

std::vector<tir::Buffer> declare_buffers(tir::KernelBuilder& b, const KernelSignature& sig) {
  std::vector<tir::Buffer> out;
  for (const BufferSpec& s : sig.inputs)
    out.push_back(b.input(s.name, s.dtype, consts(s.shape), consts(s.strides), kBaseAlignment));
  const BufferSpec& o = sig.output;
  out.push_back(b.output(o.name, o.dtype, consts(o.shape), consts(o.strides), kBaseAlignment));
  return out;
}

}  // namespace tilefuse
