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

// The coordinates of flat (row-major) position `flat` over dims [0, rank)
// of `value`; the first needs no `%` (flat < numel), the last no `/`.
std::vector<Expr> unflatten(const DimEnv& env, tir::KernelBuilder& b, const Expr& flat,
                            const Node& value, size_t rank) {
  std::vector<Expr> coords(rank);
  for (size_t d = rank; d-- > 0;) {
    Expr c = flat;
    const Expr inner = env.product(value, d + 1, rank);
    const int64_t* one = tir::as_const_int(inner);
    if (!one || *one != 1) c = c / DimEnv::as(flat.dtype(), inner);
    if (d != 0) c = c % DimEnv::as(flat.dtype(), env.size(value, d));
    coords[d] = rank == 1 ? c : Expr(b.let("i" + std::to_string(d), c));
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

PointwiseConfig default_pointwise_config(const DimEnv& env, const Node& value) {
  Shape hinted = value.shape;
  for (size_t d = 0; d < hinted.size(); ++d) hinted[d] = env.hint(hinted[d], value.symbol(d));
  return default_pointwise_config(hinted);
}

// The number of tiles of `block` over `size`, in index dtype `dt` (a
// constant in the narrowest dtype holding `size`, as the grid always had).
static Expr tiles(const Expr& size, int64_t block, DType dt) {
  if (const int64_t* c = tir::as_const_int(size)) return index_const(ceil_div(*c, block), *c);
  return DimEnv::as(dt, ceil_div(size, block));
}

tir::Kernel build_pointwise(const DimEnv& env, const std::string& name, const KernelSignature& sig,
                            const Node& value, const PointwiseConfig& config) {
  const Shape& shape = value.shape;
  const DType dtype = value.dtype;
  tir::KernelBuilder b(name);
  declare_buffers(b, sig);
  b.set_attr("num_warps", int64_t{config.num_warps});
  const Expr numel = env.product(value, 0, shape.size());
  if (config.tile_2d && shape.size() >= 2) {
    const Expr rows = env.product(value, 0, shape.size() - 1),
               cols = env.size(value, shape.size() - 1);
    const int64_t bm = config.block_m, bn = config.block_n;
    b.set_attr("BLOCK_M", bm);
    b.set_attr("BLOCK_N", bn);
    const DType row_dt = env.index_dtype_of(rows), col_dt = env.index_dtype_of(cols);
    Var pid_m = b.program_id("pid_m", tiles(rows, bm, row_dt));
    Var pid_n = b.program_id("pid_n", tiles(cols, bn, col_dt));
    b.parallel("i", static_cast<int>(bm), [&](Var i) {
      b.parallel("j", static_cast<int>(bn), [&](Var j) {
        Var row = b.let("row", tile_index(pid_m, bm, i, row_dt));
        Var col = b.let("col", tile_index(pid_n, bn, j, col_dt));
        std::vector<Expr> coords;
        if (shape.size() == 2) {
          coords.push_back(row);
        } else {
          coords = unflatten(env, b, row, value, shape.size() - 1);
        }
        coords.push_back(col);
        Expr mask = row < DimEnv::as(row_dt, rows) && col < DimEnv::as(col_dt, cols);
        b.store_output("out", coords, b.load_input("in", coords, dtype, mask), mask);
      });
    });
    return b.build();
  }
  const int64_t block = config.block_size;
  b.set_attr("BLOCK", block);
  const DType dt = env.index_dtype_of(numel);
  Var pid = b.program_id("pid", tiles(numel, block, dt));
  b.parallel("i", static_cast<int>(block), [&](Var i) {
    Var flat = b.let("flat", tile_index(pid, block, i, dt));
    std::vector<Expr> coords = unflatten(env, b, flat, value, shape.size());
    Expr mask = flat < DimEnv::as(dt, numel);
    b.store_output("out", coords, b.load_input("in", coords, dtype, mask), mask);
  });
  return b.build();
}

}  // namespace tilefuse
