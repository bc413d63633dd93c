#include "driver/execute.h"

#include <fmt/format.h>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/memory.h"
#include "runtime/cpu/executor.h"

namespace tilefuse::driver {

void check_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
  if (inputs.size() != g.parameters().size())
    throw UserError(
        fmt::format("the program takes {} inputs, got {}", g.parameters().size(), inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node& p = g.node(g.parameters()[i]);
    if (inputs[i].dtype() != p.dtype || inputs[i].shape() != p.shape)
      throw UserError(fmt::format("input `{}` must be {}{}, got {}{}", p.name, dtype_name(p.dtype),
                                  shape_to_string(p.shape), dtype_name(inputs[i].dtype()),
                                  shape_to_string(inputs[i].shape())));
  }
}

std::vector<Tensor> execute(const CompiledProgram& program, const std::vector<Tensor>& inputs,
                            const ExecuteOptions& options) {
  const Graph& g = program.graph;
  TF_CHECK(!program.target.is_cuda(),
           "driver::execute runs CPU programs; this one is compiled for " + program.target.name());
  check_inputs(g, inputs);
  std::map<ValueId, Tensor> memory;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Kernel params carry the parameter's declared (contiguous) layout.
    memory[g.parameters()[i]] = inputs[i].contiguous();
  }

  runtime::ExecOptions exec;
  exec.num_threads = options.num_threads;
  // A step's output is freed after the last step that reads it (unless it
  // is a graph output): a long chain of kernels holds a few values, not all.
  std::map<ValueId, size_t> last_read;
  for (size_t k = 0; k < program.kernels.size(); ++k)
    for (ValueId v : program.kernels[k].lowered.bindings) last_read[v] = k;
  for (ValueId o : g.outputs()) last_read[o] = program.kernels.size();
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const CompiledKernel& ck = program.kernels[k];
    const LoweredKernel& lk = ck.lowered;
    const Node& out = g.node(lk.step.output);
    {
      const AllocationPurpose purpose("the output of kernel " + ck.kernel.name);
      memory[lk.step.output] =
          options.poison_outputs
              ? Tensor::full(out.dtype, out.shape, is_floating(out.dtype) ? NAN : -77)
              : Tensor::empty(out.dtype, out.shape);
    }
    TF_CHECK(lk.bindings.size() + lk.scratch.size() == ck.kernel.params.size(),
             "kernel " + ck.kernel.name + ": bindings do not match its params");
    std::vector<runtime::KernelArg> args;
    args.reserve(lk.bindings.size());
    for (size_t i = 0; i < lk.bindings.size(); ++i) {
      auto it = memory.find(lk.bindings[i]);
      TF_CHECK(it != memory.end(), fmt::format("kernel {} reads %{} before any step wrote it",
                                               ck.kernel.name, lk.bindings[i]));
      args.emplace_back(ck.kernel.params[i].name(), it->second);
    }
    // Scratch (a split-K workspace and tile counters): fresh each run here.
    for (const ScratchBuffer& s : lk.scratch)
      args.emplace_back(s.name, s.zeroed                 ? Tensor::full(s.dtype, s.shape, 0)
                                : options.poison_outputs ? Tensor::full(s.dtype, s.shape, NAN)
                                                         : Tensor::empty(s.dtype, s.shape));
    runtime::execute(ck.kernel, args, exec);
    args.clear();
    for (ValueId v : lk.bindings)
      if (last_read[v] == k && g.node(v).kind != OpKind::Parameter) memory.erase(v);
  }

  std::vector<Tensor> outputs;
  for (ValueId o : g.outputs()) {
    auto it = memory.find(o);
    TF_CHECK(it != memory.end(), fmt::format("no step writes output %{}", o));
    const bool is_param = g.node(o).kind == OpKind::Parameter;
    outputs.push_back(is_param ? it->second.contiguous(/*force=*/true) : it->second);
  }
  return outputs;
}

}  // namespace tilefuse::driver
