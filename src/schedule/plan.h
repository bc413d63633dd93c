// A Plan: a Graph partitioned into kernels ("steps"), the schedule's output.
//
// Contract (what the TIR lowering may rely on; validate_plan checks it):
// - Memory. A step reads only *materialized* values — parameters, and outputs
//   of earlier steps — and writes exactly one value, its `output`, as a fresh
//   contiguous tensor of that node's shape and dtype (an output that is a view
//   node is written as a contiguous copy; it never aliases its input).
//   Every value a step reads is a Parameter or a non-view node, so a read's
//   layout is either the caller's (a parameter) or contiguous.
// - Recomputation. Every other node a step needs is computed inside the step
//   at the element being produced: a view is an index map (compose the view
//   ops; Node::strides are only usable directly when the view's storage_root
//   is itself a read), an Index is a gather (index load, negative wrap, bounds
//   check), Cast and the elementwise kinds are math with PyTorch broadcasting.
//   A node that several steps need is recomputed in each of them (fusion.h
//   says when that is allowed).
// - Constants. Scalar nodes are compile-time constants: never listed, never
//   read; a kernel emits the literal (Node::scalar converted to the consuming
//   op's compute dtype) wherever a listed node uses one. The one exception is
//   a graph output that is a Scalar: a pointwise step fills it and lists it.
// - Order. Every node list is in topological (increasing ValueId) order, and
//   each listed node's inputs are earlier entries of the same list, reads of
//   the same list, Scalars, or (epilogue only) the anchor, which stands for
//   the accumulator. Steps are in execution order.
// - Rounding. Every listed node rounds its result to its own dtype exactly
//   once, and an anchor rounds once at its output (graph.h's contract), in
//   every plan. So the fused and unfused plans round at the same points and
//   differ only in the order a GEMM accumulates over K (tile shapes).
// - Outputs. Every graph output is written by exactly one step, except a
//   Parameter returned as an output: it is already in memory, no step writes
//   it, and the runtime returns a copy of the input.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"

namespace tilefuse {

enum class PlanKind {
  kFused,    // GEMM kernels carry every legal prologue and epilogue
  kUnfused,  // plain GEMM kernels; every prologue/epilogue op is in a pointwise kernel
};
std::string_view plan_kind_name(PlanKind kind);  // "fused", "unfused"

// The problem a GEMM step solves, in torch.matmul's terms. Operand A is
// logically [batch_a..., M, K] and B [batch_b..., K, N], where batch_a and
// batch_b broadcast (right-aligned) to `batch`; the result is
// batch + [M] (unless A is a vector) + [N] (unless B is a vector).
struct GemmGeometry {
  Shape batch;  // the result's batch dims; empty for a 2-D GEMM and for addmm
  int64_t m = 0, n = 0, k = 0;
  // Symbolic dims (graph.h): which symbol each size is, or kFixedDim. The
  // sizes above are then the symbols' values in the graph planned.
  std::vector<SymbolId> batch_symbols;  // empty when no batch dim is symbolic
  SymbolId m_symbol = kFixedDim, n_symbol = kFixedDim, k_symbol = kFixedDim;
  bool a_is_vector = false;  // A is 1-D [K]: a single row (M = 1), dim absent from the result
  bool b_is_vector = false;  // B is 1-D [K]: a single column (N = 1), dim absent from the result
};

// How one input of a GEMM (A, B, or addmm's bias) is produced while its tile
// is loaded. Its logical shape is the graph node `operand`'s.
struct OperandPrologue {
  ValueId operand = -1;  // the anchor's input this describes
  // Graph nodes computed at load time, topological; when non-empty the last is
  // `operand`. Empty: `operand` itself is read from memory (then reads ==
  // {operand}). Views, gathers (Index), casts, elementwise ops; never a GEMM.
  std::vector<ValueId> nodes;
  // Materialized values the prologue loads (parameters or earlier steps'
  // outputs, index tensors included), increasing ValueId.
  std::vector<ValueId> reads;
};

enum class StepKind {
  kGemm,       // a GEMM template kernel (2-D or batched) with fused prologues and epilogue
  kPointwise,  // a pointwise template kernel over `output`'s elements
};
std::string_view step_kind_name(StepKind kind);  // "gemm", "pointwise"

struct KernelStep {
  StepKind kind = StepKind::kPointwise;
  std::string name;  // unique in the plan: "gemm<i>" / "pointwise<i>", i the step's position

  // kGemm only.
  ValueId anchor = -1;  // the Matmul or Addmm node; stands for the accumulator in `epilogue`
  GemmGeometry gemm;
  OperandPrologue a, b;
  std::optional<OperandPrologue> bias;  // Addmm: beta * bias + alpha * acc, before the epilogue
  // Nodes applied to the accumulator before the store, topological; when
  // non-empty the last is `output`. It holds the accumulator chain (elementwise
  // nodes of the result's shape, each reading the previous one at the index it
  // writes) and, interleaved, the nodes computing their other inputs ("side
  // inputs": broadcast into the result, evaluated at the same output index).
  std::vector<ValueId> epilogue;
  std::vector<ValueId> epilogue_reads;  // materialized values the epilogue loads, increasing

  // kPointwise only: the nodes computed, topological; the last is `output`.
  // Empty never: a copy of a view lists the view.
  std::vector<ValueId> pointwise;

  // The value written to memory: the anchor, the epilogue's last node, or the
  // last pointwise node.
  ValueId output = -1;
  // Every materialized value the step loads (union of the lists above), increasing.
  std::vector<ValueId> reads;
};

struct Plan {
  PlanKind kind = PlanKind::kFused;
  std::vector<KernelStep> steps;  // in execution order
  // Values that live in memory: every parameter (declaration order), then each
  // step's output (step order).
  std::vector<ValueId> materialized;
  // One line per fusion decision with its reason, in the order they were made
  // (for `explain`); the wording is for people, not parsers.
  std::vector<std::string> decisions;
};

// The plan's stable text form (`explain`, tests). Values print as `%ID`, with
// the .tfs name when the node has one: `%0(x)`. A node computed by a step
// prints as `%ID=OP` (OP as in Graph::to_string: "index", "add", "cast").
// Lists are ", "-separated; an empty list prints as "-".
//
//   plan fused: 2 steps
//   step 0 gemm0: gemm %4=matmul batch=[] M=96 N=80 K=64 -> %6 f32[96, 80]
//     A %3: %3=index; reads %0(x), %2(idx)
//     B %1(w): reads %1(w)
//     bias %9: ...                                   (addmm only)
//     epilogue: %5=add, %6=relu; reads %7(b)
//   step 1 pointwise1: pointwise -> %8 f32[96, 80]
//     compute: %8=sigmoid; reads %6
//   materialized: %0(x), %1(w), %2(idx), %7(b), %6, %8
//   decision: <one line per Plan::decisions entry>
std::string to_string(const Graph& graph, const Plan& plan);

}  // namespace tilefuse
