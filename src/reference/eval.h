// The reference evaluator: runs any Graph on the CPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"

namespace tilefuse {

enum class EvalMode {
  // PyTorch eager rounding: every node rounds to its dtype (see graph.h's
  // rounding contract); outputs have the nodes' dtypes.
  kEager,
  // The f64 oracle: every floating op is computed in f64 with no
  // intermediate rounding (float→float casts are exact); casts to integer or
  // bool types still apply. Outputs are f64 tensors (bool/integer outputs
  // keep their dtype). Tests measure error against it.
  kOracle,
};

struct EvalOptions {
  EvalMode mode = EvalMode::kEager;
  int num_threads = 0;  // 0: std::thread::hardware_concurrency()
};

// Evaluates `g` on `params` (one per g.parameters(), matching dtype and
// shape; any strides). Returns one contiguous tensor per g.outputs().
// Throws UserError for an index outside [-size, size), naming the indexed
// tensor, the index tensor, the position and the value, e.g.
//   "index 64 is out of bounds for dim 0 of `x` (size 64): idx[17] = 64"
std::vector<Tensor> evaluate(const Graph& g, const std::vector<Tensor>& params,
                             const EvalOptions& options = {});

// Evaluates only what `values` (at least one) need, their ancestors in `g`,
// and returns their values (a scalar's as a 0-dim tensor), with evaluate's
// checks on the way.
std::vector<Tensor> evaluate_values(const Graph& g, const std::vector<Tensor>& params,
                                    const std::vector<ValueId>& values,
                                    const EvalOptions& options = {});

// The check evaluate makes at the gather `index` (an OpKind::Index node of
// `g`) alone: each value of `idx` (its index operand's value) against the
// indexed dim's `size`, the same UserError (ErrorKind::kIndex, at the node's
// location, naming the tensors, the position and the value) for the first
// one out of range. The executor's kernels check an index where they read
// it; one over an empty tensor reads nothing (driver/execute.cpp).
void check_gather_indices(const Graph& g, ValueId index, int64_t size, const Tensor& idx,
                          int num_threads = 1);

// The error check_gather_indices throws where the first index out of range
// is `value`, at the row-major position `position` of an index operand of
// shape `idx_shape` (at the run's sizes): thrown here from those numbers
// alone. The GPU's device-side check of the indices no kernel reads reports
// them (driver/cuda_program.cpp); the message is the CPU executor's.
[[noreturn]] void throw_gather_index_error(const Graph& g, ValueId index, int64_t size,
                                           const Shape& idx_shape, int64_t position, int64_t value);

// ‖out − ref‖₂ / ‖ref‖₂ in f64 (0 when both are zero; +inf when only ref is
// zero or when out has a NaN where ref has none). Shapes must match.
double relative_error(const Tensor& out, const Tensor& ref);

// The error `run --check` and bench's rel_err report for an output: its
// relative_error against the f64 oracle's output rounded once to the
// output's dtype (what the output can be at best), so that the figure is
// what the program adds on the way, not its dtype's own rounding (alone ~2e-4
// in norm for f16, 3-5% for f8); a correct f16 result that overflows to inf
// matches an oracle that overflows too. Shapes must match.
double oracle_error(const Tensor& out, const Tensor& oracle);

// The largest relative_error against the f64 oracle that `run --check` and
// the tests accept for an output of `dt` (DESIGN.md, "Testing"): 1e-2 for
// f16/bf16 (~2^-9 rounding per element), 0.15 for f8 (unit roundoff 2^-4 /
// 2^-3; DESIGN.md's 1e-2 cannot hold for f8, where one rounding alone costs
// 3-5% in norm: the property tests' 0.15), 1e-5 for f32 (~2^-24 times the
// reduction depth), 1e-12 for f64, 0 (exact) for integers and bool.
double check_tolerance(DType dt);

// What the program's own dtypes allow where check_tolerance is too tight:
// `own` is oracle_error of the program evaluated op by op at its dtypes
// (EvalMode::kEager, PyTorch's rounding: each op's result rounded to its
// dtype) on the same inputs. check_tolerance assumes every intermediate is
// about the output's size and normal in its dtype; a program that cancels
// large intermediates ((x @ w + 1000) - 1000 in f16) or whose products fall
// below its dtype's normal range ((x * 1e-20) @ (w * 1e-20) in f32) is that
// far from the oracle however it is computed. An output within
// kFaithfulFactor times `own` of the oracle is then as close as its dtypes
// allow; an error beyond both bounds (a miscompile's garbage) still fails.
// The factor leaves room for a kernel that rounds at other places than
// eager does (a fused epilogue keeps f32 between ops), each place adding at
// most about one eager's worth of rounding.
inline constexpr double kFaithfulFactor = 2.0;
// (None where `own` is not finite: where the program op by op leaves the
// oracle's range, to inf or NaN, no finite bound follows from it.)
inline double faithful_tolerance(double tol, double own) {
  return std::isfinite(own) ? std::max(tol, kFaithfulFactor * own) : tol;
}

// The tolerance of an f32 GEMM run on TF32 tensor cores (`--allow-tf32`):
// its operands are rounded to 10 mantissa bits (cvt.rna: unit roundoff
// 2^-11, that of f16), so it is held to f16's tolerance, 1e-2. On uniform
// random inputs a TF32 GEMM is ~2.7e-4 from the oracle (a host emulation of
// the rounding; independent of K: the operand roundings are independent and
// the products add up like the values); an epilogue such as exp multiplies
// the absolute error by the magnitude of its argument, hence f16's headroom
// rather than a tighter bound.
inline constexpr double kTf32Tolerance = 1e-2;

// The tolerance for `output` of `graph`: check_tolerance of the least
// precise dtype a value is rounded to on the way to it (the output and every
// computed, non-view node it depends on; parameters and views round
// nothing). The oracle rounds nowhere, so a program that rounds an
// intermediate to f16 carries f16's error into an f32 output, as PyTorch
// eager does too. With `allow_tf32` an f32 matmul / addmm on the way counts
// as kTf32Tolerance (its operands are rounded to TF32). An f32 or f64
// matmul / addmm of reduction depth K on the way counts as u * sqrt(K) (u =
// 2^-24 for f32, 2^-53 for f64) where that is larger: its K products are
// added one after another (the reference and the CPU executor add in k
// order), and on random inputs the K roundings add up like a random walk
// (Higham and Mary, "A New Approach to Probabilistic Rounding Error
// Analysis", SIAM J. Sci. Comput. 41(5), 2019: error ~ sqrt(K) u). f32 at
// K = 2^20 then allows 6.1e-5 (measured 2.2e-5 on uniform random inputs);
// below K ~ 28,000 the dtype's tolerance stands.
double check_tolerance(const Graph& graph, ValueId output, bool allow_tf32 = false);

}  // namespace tilefuse
