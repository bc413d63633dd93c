// The driver's run step: a CompiledProgram on the CPU executor.
//
// Memory follows the plan's contract (schedule/plan.h, "Memory" and
// "Outputs"): the parameters are the caller's tensors; every step's output
// is a fresh contiguous tensor of its node's shape and dtype, allocated
// before its kernel runs; kernels run in plan order, each bound to its
// values by LoweredKernel::bindings. A graph output that is a parameter is
// returned as a copy, so the caller's input is never handed back aliased.
#pragma once

#include <functional>
#include <vector>

#include "core/tensor.h"
#include "driver/compile.h"

namespace tilefuse::driver {

struct ExecuteOptions {
  int num_threads = 0;  // 0: hardware_concurrency()
  // Fill every step output with NaN (integers: -77) before its kernel runs,
  // so that an element a kernel fails to write shows up in a comparison.
  bool poison_outputs = false;
  // The program's graph at the run's sizes (a binding of its symbols), for a
  // program compiled with symbolic dims: where a value is empty at those
  // sizes and a gather's index is computed, the reference evaluates it to
  // check the indices the kernels do not read (execute.cpp). Unset, such a
  // program is checked only where its indices are parameters.
  std::function<Graph(const std::vector<int64_t>& binding)> bound_graph;
};

// Checks `inputs` against the graph's parameters (count, dtype, rank, fixed
// dims, one size per symbolic dim; any strides) and throws UserError naming
// the first that differs (driver/specialize.h, bind_symbols).
void check_inputs(const Graph& graph, const std::vector<Tensor>& inputs);

// The kernels check an index where they read it and read only the indices
// of the elements they compute, so `x[i] @ w` with K = 0 or N = 0, `x[i][0]
// @ w` or `x[i][j]` would leave an out-of-range index unread where PyTorch
// and the reference raise. Whether a gather's positions may go unread at
// `binding`: a value is empty at its sizes, a slice or select drops some, a
// gather picks from another value than a parameter, or a gather is dead (no
// output depends on it, so no kernel computes it: `b = x[i]` unused). The condition of
// check_unread_indices, and of CudaProgram::launch(DeviceCall)'s device-side
// check of the same indices.
bool indices_may_go_unread(const Graph& graph, const std::vector<int64_t>& binding);

// Where indices_may_go_unread(graph, binding), this checks each gather's indices
// in program order with the reference's check and error (UserError: the
// tensor, the index tensor, the position and the value); elsewhere it
// returns at once. `inputs` are host tensors, one per parameter. execute()
// calls it before the kernels, and CudaProgram::bind on the inputs it
// uploads (launch(DeviceCall) checks the device's inputs on the device).
void check_unread_indices(const Graph& graph, const std::vector<int64_t>& binding,
                          const std::vector<Tensor>& inputs, const ExecuteOptions& options = {});

// The kernel arguments of `ck` after its buffers: each scalar param's value
// (LoweredKernel::scalars) for a run at `binding` with `inputs`.
std::vector<int64_t> scalar_args(const CompiledProgram& program, const CompiledKernel& ck,
                                 const std::vector<int64_t>& binding,
                                 const std::vector<std::vector<int64_t>>& input_strides);
// The same into *out (its storage reused: no allocation once it has grown
// to the kernel's scalar count; the repeated-call path of the C API).
void scalar_args_into(const CompiledProgram& program, const CompiledKernel& ck,
                      const std::vector<int64_t>& binding,
                      const std::vector<std::vector<int64_t>>& input_strides,
                      std::vector<int64_t>* out);

// Runs every kernel of `program` (compiled for the CPU target) on `inputs`
// (one per graph parameter, in order, of its dtype and shape; any strides
// the program's specialization covers; symbolic dims bound from them) and
// returns one contiguous tensor per graph output. Throws UserError when
// a check fails (an index out of range: the message names the tensor, the
// index tensor, the position and the value, as the reference does; of
// several gathers with one, the first in program order, whatever order the
// plan runs its kernels in) or the
// inputs do not match the parameters; InternalError for a program compiled
// for another target or a kernel the executor cannot run.
std::vector<Tensor> execute(const CompiledProgram& program, const std::vector<Tensor>& inputs,
                            const ExecuteOptions& options = {});

}  // namespace tilefuse::driver
