#include "driver/execute.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <new>
#include <vector>

#include "core/error.h"
#include "core/memory.h"
#include "driver/specialize.h"
#include "reference/eval.h"
#include "runtime/cpu/executor.h"

namespace tilefuse::driver {

void check_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
  bind_symbols(g, inputs);
}

bool indices_may_go_unread(const Graph& g, const Binding& binding) {
  bool has_index = false;
  for (ValueId v = 0; v < g.size() && !has_index; ++v) has_index = g.node(v).kind == OpKind::Index;
  if (!has_index) return false;
  // A gather no output depends on (a dead statement) runs in no kernel, but
  // PyTorch eager and the reference evaluate it and raise on a bad index.
  const std::vector<bool> live = live_values(g);
  for (ValueId v = 0; v < g.size(); ++v)
    if (!live[static_cast<size_t>(v)] && g.node(v).kind == OpKind::Index) return true;
  for (ValueId v = 0; v < g.size(); ++v) {
    const Node& n = g.node(v);
    if (n.kind == OpKind::Slice || n.kind == OpKind::Select ||
        (n.kind == OpKind::Index && g.node(n.inputs[0]).kind != OpKind::Parameter) ||
        shape_numel(bound_shape(n, binding)) == 0)
      return true;
  }
  return false;
}

namespace {

// Every gather's indices in program order, with the reference's check and
// error: the first index out of range of the first gather that has one. A
// computed index is evaluated alone (its ancestors), in the graph at these
// sizes: `g` itself when its symbols have them, else ExecuteOptions::bound_graph's.
void check_indices_in_order(const Graph& g, const Binding& binding,
                            const std::vector<Tensor>& inputs, const ExecuteOptions& options) {
  bool bound = true;
  for (size_t s = 0; s < g.symbols().size(); ++s)
    bound = bound && g.symbols()[s].value == binding[s];
  EvalOptions eo;
  eo.num_threads = options.num_threads;
  const std::vector<ValueId>& params = g.parameters();
  for (ValueId v = 0; v < g.size(); ++v) {
    const Node& n = g.node(v);
    if (n.kind != OpKind::Index) continue;
    const int64_t size = bound_shape(g.node(n.inputs[0]), binding).at(static_cast<size_t>(n.dim));
    const auto param = std::find(params.begin(), params.end(), n.inputs[1]);
    if (param != params.end()) {
      check_gather_indices(g, v, size, inputs[static_cast<size_t>(param - params.begin())],
                           options.num_threads);
    } else if (bound) {
      check_gather_indices(g, v, size, evaluate_values(g, inputs, {n.inputs[1]}, eo)[0],
                           options.num_threads);
    } else if (options.bound_graph) {
      // (Not the whole bound graph: that evaluated every value of the
      // program, on every call, even one the plan never materializes.)
      ExecuteOptions at_sizes;
      at_sizes.num_threads = options.num_threads;
      check_indices_in_order(options.bound_graph(binding), binding, inputs, at_sizes);
      return;
    }
  }
}

}  // namespace

// (See execute.h.)
void check_unread_indices(const Graph& g, const Binding& binding, const std::vector<Tensor>& inputs,
                          const ExecuteOptions& options) {
  if (indices_may_go_unread(g, binding)) check_indices_in_order(g, binding, inputs, options);
}

std::vector<int64_t> scalar_args(const CompiledProgram& program, const CompiledKernel& ck,
                                 const std::vector<int64_t>& binding,
                                 const std::vector<std::vector<int64_t>>& input_strides) {
  std::vector<int64_t> out;
  scalar_args_into(program, ck, binding, input_strides, &out);
  return out;
}

void scalar_args_into(const CompiledProgram& program, const CompiledKernel& ck,
                      const std::vector<int64_t>& binding,
                      const std::vector<std::vector<int64_t>>& input_strides,
                      std::vector<int64_t>* out) {
  const std::vector<ValueId>& params = program.graph.parameters();
  out->clear();
  for (const ScalarBinding& sb : ck.lowered.scalars) {
    if (sb.symbol != kFixedDim) {
      out->push_back(binding.at(static_cast<size_t>(sb.symbol)));
      continue;
    }
    const size_t pos = static_cast<size_t>(std::find(params.begin(), params.end(), sb.param) -
                                           params.begin());
    out->push_back(input_strides.at(pos).at(static_cast<size_t>(sb.dim)));
  }
}

std::vector<Tensor> execute(const CompiledProgram& program, const std::vector<Tensor>& inputs,
                            const ExecuteOptions& options) {
  const Graph& g = program.graph;
  TF_CHECK(!program.target.is_cuda(),
           "driver::execute runs CPU programs; this one is compiled for " + program.target.name());
  const Binding binding = bind_symbols(g, inputs);
  check_unread_indices(g, binding, inputs, options);
  const Specialization& spec = program.specialization;
  std::map<ValueId, Tensor> memory;
  std::vector<std::vector<int64_t>> input_strides;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Kernel params carry the specialization's layout: contiguous, or the
    // input's own strides (the executor ignores those of size-1 dims).
    const bool own = !spec.params.empty() && !spec.params[i].strides.empty();
    const Tensor t = own ? inputs[i] : inputs[i].contiguous();
    input_strides.push_back(t.strides());
    memory[g.parameters()[i]] = t;
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
      const Shape out_shape = bound_shape(out, binding);
      memory[lk.step.output] =
          options.poison_outputs
              ? Tensor::full(out.dtype, out_shape, is_floating(out.dtype) ? NAN : -77)
              : Tensor::empty(out.dtype, out_shape);
    }
    // Params: the bound buffers, the scratch buffers, then the scalars.
    TF_CHECK(lk.bindings.size() + lk.scratch.size() + lk.scalars.size() == ck.kernel.params.size(),
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
    const size_t first_scalar = lk.bindings.size() + lk.scratch.size();
    const std::vector<int64_t> scalars = scalar_args(program, ck, binding, input_strides);
    for (size_t i = 0; i < scalars.size(); ++i)
      args.emplace_back(ck.kernel.params[first_scalar + i].name(), scalars[i]);
    try {
      runtime::execute(ck.kernel, args, exec);
    } catch (const UserError& e) {
      // A kernel names the first bad index it reads, but the plan need not
      // run the gathers in program order (a GEMM whose epilogue adds another
      // GEMM's result runs second): where an earlier gather has a bad index
      // too, the error is that one's, as in PyTorch and the reference.
      // (Where that check itself fails otherwise, e.g. out of memory for an
      // index the reference cannot evaluate, the kernel's error stands.)
      if (e.kind() == ErrorKind::kIndex) {
        try {
          check_indices_in_order(g, binding, inputs, options);
        } catch (const UserError& earlier) {
          if (earlier.kind() == ErrorKind::kIndex) throw;
        } catch (const std::bad_alloc&) {
        }
      }
      throw;
    }
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
