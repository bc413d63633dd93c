// The CPU executor: runs a Tile IR kernel (after inline_hooks and the
// target-independent passes) on host tensors, program instances spread over
// a thread pool. It is the default backend without a GPU and the oracle the
// passes are tested against, so it follows the contract of tir/ir.h exactly:
// integer ops wrap, `/` and `%` floor, f32 math in float and f64 in double,
// narrower floats rounded at every node of their dtype, masked-off loads and
// stores touch no memory, every access is bounds-checked against the bound
// storage (an out-of-bounds access is an InternalError: the IR must never
// make one), a failed `check` is a UserError with its formatted message.
//
// Choices the contract leaves open: integer `x / 0` and `x % 0` give 0 (no
// trap; a masked-off lane may divide by anything); a barrier is a no-op
// (an instance runs sequentially on one thread, so there is nothing to wait
// for); pipelined loops run serially (stages only overlap copies with math
// on a GPU); a failed check stops the later grid instances at their next
// loop iteration while the earlier ones run on, and the error of the lowest
// failing instance is rethrown (the same error whatever the thread count or
// the threads' timing).
//
// Design (executor.cpp, eval.h): the kernel is compiled once into a tree of
// closures; every expression is evaluated over a batch of lanes (the points
// of a parallel loop nest or copy region, up to kMaxLanes at a time), so the
// cost of dispatch is paid per batch, not per element. A batch is one row of
// the region when rows are long enough: values that depend only on the outer
// vars are then uniform (computed once), the inner var is affine, and a copy
// of a contiguous source row under a tail mask becomes a memcpy plus zeros.
// Gemm runs the reference GEMM microkernel (reference/matmul.h), so its sums
// equal the naive k-order loop bit for bit. A copy planned `gemm_pack`
// (passes/pack_gemm_operands.h) copies nothing: it records where each row
// of its tile starts in the source and how much of it is in bounds
// (bounds-checked as the copy's reads), and the gemm reading the tile packs
// its panels from those rows.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/tensor.h"
#include "tir/ir.h"

namespace tilefuse::runtime {

// A value for one kernel parameter, matched by name: a tensor for a global
// buffer (its shape, strides and offset are honoured; shape and strides must
// equal the buffer's shape / stride expressions), an integer or a double for
// a scalar var.
struct KernelArg {
  std::string name;
  std::variant<Tensor, int64_t, double> value;

  KernelArg(std::string n, Tensor t) : name(std::move(n)), value(std::move(t)) {}
  KernelArg(std::string n, int64_t v) : name(std::move(n)), value(v) {}
  KernelArg(std::string n, int v) : name(std::move(n)), value(int64_t{v}) {}
  KernelArg(std::string n, double v) : name(std::move(n)), value(v) {}
};

struct ExecOptions {
  int num_threads = 0;  // 0: hardware_concurrency()
};

// Runs `kernel` once over its grid. Throws UserError for bad bindings (a
// missing or unknown name, a wrong dtype, rank, shape or stride; the message
// names the parameter) and for failed checks; InternalError for IR the
// executor cannot run (hooks left in it) or an out-of-bounds access.
// Outputs are written in place through the bound tensors.
void execute(const tir::Kernel& kernel, const std::vector<KernelArg>& args,
             const ExecOptions& options = {});

// How many times, since the process started, a `gemm_pack` copy found a row
// batch that is not a contiguous, prefix-masked run of its source after all
// and copied its tile instead (the result is the same; the pass should not
// have planned it): the tests check the packed path is the one that ran.
int64_t gemm_pack_fallbacks();

}  // namespace tilefuse::runtime
