// The lower module's entry point: a Plan's steps as Tile IR kernels.
//
// Each step becomes one kernel: the GEMM template (gemm_template.h) for a
// GEMM step, the pointwise template (pointwise_template.h) otherwise, built
// for the step's config, then inline_hooks (passes/inline_hooks.h) with the
// hook callbacks made from the step by expr_lowering.h:
//   GEMM  "A" / "B"  the operand's prologue at the operand's coordinates
//                    (batch dims broadcast, a vector operand indexed by k
//                    alone), loads masked by the tile mask;
//         "C"        the accumulator, as the anchor: addmm's
//                    beta * bias + alpha * acc in the accumulator type, then
//                    cast to the anchor's dtype; the epilogue nodes on top;
//                    the bounds checks of any gathered side input; the store.
//   pointwise "in"   the step's output value, computed from its reads;
//             "out"  the store.
// Kernel params: one global buffer per value the step reads (increasing
// ValueId: parameters with their layout, earlier steps' outputs contiguous),
// then the output (contiguous); `bindings` names the value of each. Then,
// in a graph with symbolic dims or run-time strides, the scalar params
// (specialization.h): every symbol of the graph, then the run-time strides
// of the parameters the step reads; `scalars` says what each binds.
// The kernels are verified (no hooks left) unless options say otherwise.
#pragma once

#include <optional>
#include <vector>

#include "graph/graph.h"
#include "lower/gemm_template.h"
#include "lower/pointwise_template.h"
#include "lower/specialization.h"
#include "schedule/plan.h"
#include "tir/ir.h"

namespace tilefuse {

struct LowerOptions {
  // Override the heuristic configs (a tuner's choice); applied to every step
  // of that kind.
  std::optional<GemmConfig> gemm_config;
  std::optional<PointwiseConfig> pointwise_config;
  // The target has wgmma (sm_90a): the heuristic GEMM config takes BLOCK_K
  // of 128 bytes for 16-bit operands (what WgmmaTile needs).
  bool wgmma = false;
  // The target is the CPU executor: the heuristic GEMM config is
  // default_cpu_gemm_config's (large tiles, long K steps).
  bool cpu = false;
  bool verify = true;
  // What the kernels are specialized on (symbols' divisibility, the index
  // width, parameter layouts, size hints); the default: contiguous 16-byte
  // aligned parameters and i32 index math over symbols.
  Specialization specialization;
};

// What a kernel's scalar param binds.
struct ScalarBinding {
  SymbolId symbol = kFixedDim;  // the value of this symbol, or else:
  ValueId param = -1;           // the stride (elements) of dim `dim` of this parameter
  int dim = -1;
};

// A kernel param past the graph's values (after the output): memory the
// runtime allocates for the kernel alone, once per loaded program, sized
// from the kernel's config. `zeroed`: filled with zeros once at allocation
// (a split-K tile counter; the kernel leaves it at 0 again); otherwise its
// contents are undefined at launch (a split-K workspace).
struct ScratchBuffer {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  bool zeroed = false;
};

struct LoweredKernel {
  tir::Kernel kernel;  // after inline_hooks
  int step_index = -1;
  KernelStep step;
  std::vector<ValueId> bindings;  // the graph value of each bound buffer param, in order
  // The buffer params after the bound ones (kernel.params[bindings.size() + i]).
  std::vector<ScratchBuffer> scratch;
  // What each scalar param (after the buffers, scratch included) binds.
  std::vector<ScalarBinding> scalars;
  std::optional<GemmConfig> gemm_config;            // a GEMM step's config
  std::optional<PointwiseConfig> pointwise_config;  // a pointwise step's config
};

// One kernel per step of `plan`, in step order. Throws InternalError for a
// step the templates cannot build or a kernel that fails tir::verify.
std::vector<LoweredKernel> lower_plan(const Graph& graph, const Plan& plan,
                                      const LowerOptions& options = {});

// One step alone (what lower_plan does for each).
LoweredKernel lower_step(const Graph& graph, const KernelStep& step,
                         const LowerOptions& options = {});

}  // namespace tilefuse
