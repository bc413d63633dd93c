// The pointwise template: one kernel that produces every element of a value
// (standalone elementwise work, gathers, copies of views, and the prologue /
// epilogue kernels of the unfused plan).
//
// The kernel reads the value through the hook `load_input("in", coords)` and
// writes it with `store_output("out", coords, v)`, both masked where the
// tile overhangs the tensor; coords are the value's logical coordinates
// (i32, or i64 for a tensor of 2^31 elements or more). inline_hooks puts the
// computation in (lower.h). Two shapes of grid:
// - 1-D: the value flattened, BLOCK elements per program; coordinates come
//   from the flat index by `/` and `%`;
// - 2-D: rows (all leading dims flattened) x the last dim, BLOCK_M x BLOCK_N
//   tiles, for values whose last dim is long enough that a row of a tile
//   stays contiguous.
#pragma once

#include <string>

#include "lower/signature.h"
#include "lower/specialization.h"
#include "schedule/plan.h"
#include "tir/ir.h"

namespace tilefuse {

struct PointwiseConfig {
  bool tile_2d = false;
  int block_size = 1024;  // 1-D: elements per program
  int block_m = 16;       // 2-D: rows per program
  int block_n = 64;       // 2-D: columns per program
  int num_warps = 4;
};

// True for a pointwise step (any shape, any dtype, rank 0 included).
bool can_use_pointwise(const KernelStep& step);

// The heuristic config for a value of `shape`: 2-D tiles when there are at
// least two dims and the last has 32 elements or more, else 1-D blocks no
// larger than the value (rounded up to a power of two, at least 32).
PointwiseConfig default_pointwise_config(const Shape& shape);
// The same for node `value`, a symbolic dim counting as its size hint.
PointwiseConfig default_pointwise_config(const DimEnv& env, const Node& value);

// Builds the kernel `name` over the elements of `value` (its shape, symbolic
// dims included; the hooks' dtype is its dtype), with `sig`'s params.
tir::Kernel build_pointwise(const DimEnv& env, const std::string& name, const KernelSignature& sig,
                            const Node& value, const PointwiseConfig& config);

}  // namespace tilefuse
