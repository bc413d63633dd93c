// The pointwise template (see pointwise_template.h).
#include "lower/pointwise_template.h"
#include "core/text.h"

#include <algorithm>

#include "lower/expr_lowering.h"
#include "tir/builder.h"

namespace tilefuse {
namespace {

using tir::Expr;
using tir::Var;


// pid * block + i in dtype `dt` (widened before the product when i64).
Expr tile_index(const Var& pid, int64_t block, const Var& i, DType dt) {
  if (dt == DType::I64) return tir::cast(dt, pid) * block + tir::cast(dt, i);
  return pid * static_cast<int>(block) + i;
}

// The coordinates of flat (row-major) position `flat` in `shape`; the first
// needs no `%` (flat < numel), the last no `/`.
std::vector<Expr> unflatten(tir::KernelBuilder& b, const Expr& flat, const Shape& shape) {
  std::vector<Expr> coords(shape.size());
  int64_t inner = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    Expr c = flat;
    if (inner != 1) c = c / inner;
    if (d != 0) c = c % shape[d];
    coords[d] = shape.size() == 1 ? c : Expr(b.let("i" + std::to_string(d), c));
    inner *= shape[d];
  }
  return coords;
}

}  // namespace

bool can_use_pointwise(const KernelStep& step) {
  return step.kind == StepKind::kPointwise;
}

PointwiseConfig default_pointwise_config(const Shape& shape) {
  PointwiseConfig c;
  const int64_t numel = shape_numel(shape);
  if (shape.size() >= 2 && shape.back() >= 32) {
    c.tile_2d = true;
    c.block_n = static_cast<int>(std::min<int64_t>(128, next_pow2(shape.back())));
    c.block_m = std::max(1, 2048 / c.block_n);
    return c;
  }
  c.block_size = static_cast<int>(std::clamp<int64_t>(next_pow2(numel), 32, 1024));
  c.num_warps = c.block_size >= 512 ? 4 : 1;
  return c;
}

tir::Kernel build_pointwise(const std::string& name, const KernelSignature& sig, DType dtype,
                            const Shape& shape, const PointwiseConfig& config) {
  tir::KernelBuilder b(name);
  declare_buffers(b, sig);
  b.set_attr("num_warps", int64_t{config.num_warps});
  const int64_t numel = shape_numel(shape);
  if (config.tile_2d && shape.size() >= 2) {
    const Shape rows_shape(shape.begin(), shape.end() - 1);
    const int64_t rows = shape_numel(rows_shape), cols = shape.back();
    const int64_t bm = config.block_m, bn = config.block_n;
    b.set_attr("BLOCK_M", bm);
    b.set_attr("BLOCK_N", bn);
    const DType row_dt = index_dtype(rows), col_dt = index_dtype(cols);
    Var pid_m = b.program_id("pid_m", index_const(ceil_div(rows, bm), rows));
    Var pid_n = b.program_id("pid_n", index_const(ceil_div(cols, bn), cols));
    b.parallel("i", static_cast<int>(bm), [&](Var i) {
      b.parallel("j", static_cast<int>(bn), [&](Var j) {
        Var row = b.let("row", tile_index(pid_m, bm, i, row_dt));
        Var col = b.let("col", tile_index(pid_n, bn, j, col_dt));
        std::vector<Expr> coords;
        if (rows_shape.size() == 1) {
          coords.push_back(row);
        } else {
          coords = unflatten(b, row, rows_shape);
        }
        coords.push_back(col);
        Expr mask = row < rows && col < cols;
        b.store_output("out", coords, b.load_input("in", coords, dtype, mask), mask);
      });
    });
    return b.build();
  }
  const int64_t block = config.block_size;
  b.set_attr("BLOCK", block);
  const DType dt = index_dtype(numel);
  Var pid = b.program_id("pid", index_const(ceil_div(numel, block), numel));
  b.parallel("i", static_cast<int>(block), [&](Var i) {
    Var flat = b.let("flat", tile_index(pid, block, i, dt));
    std::vector<Expr> coords = unflatten(b, flat, shape);
    Expr mask = flat < numel;
    b.store_output("out", coords, b.load_input("in", coords, dtype, mask), mask);
  });
  return b.build();
}

}  // namespace tilefuse
