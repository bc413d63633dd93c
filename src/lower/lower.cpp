// Lowering of plan steps to kernels (see lower.h).
#include "lower/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "lower/expr_lowering.h"
#include "lower/let_binding.h"
#include "passes/inline_hooks.h"
#include "tir/builder.h"
#include "tir/dag.h"
#include "tir/verifier.h"

namespace tilefuse {
namespace {

using passes::HookExpansion;
using passes::HookTable;
using tir::Expr;
using tir::Stmt;

std::string buffer_name(const Graph& g, ValueId v) {
  const Node& n = g.node(v);
  return n.name.empty() ? fmt::format("t{}", v) : n.name;
}

// Buffer names are unique in a kernel (executors bind arguments by name):
// a .tfs name bound to two values gets the value id appended.
void make_unique_names(KernelSignature* sig, const std::vector<ValueId>& bindings) {
  std::vector<BufferSpec*> all;
  for (BufferSpec& s : sig->inputs) all.push_back(&s);
  all.push_back(&sig->output);
  for (size_t i = 0; i < all.size(); ++i) {
    auto taken = [&] {
      for (size_t j = 0; j < i; ++j)
        if (all[j]->name == all[i]->name) return true;
      return false;
    };
    while (taken()) all[i]->name += "_" + std::to_string(bindings[i]);
  }
}

std::vector<tir::Expr> shape_exprs(const DimEnv& env, const Node& n) {
  std::vector<tir::Expr> out;
  for (size_t d = 0; d < n.shape.size(); ++d) out.push_back(env.size(n, d));
  return out;
}

KernelSignature signature(const DimEnv& env, const KernelStep& step, LoweredKernel* lk) {
  const Graph& g = env.graph();
  KernelSignature sig;
  std::vector<std::pair<ValueId, size_t>> runtime_strides;
  for (ValueId r : step.reads) {
    const Node& n = g.node(r);
    // A read is a parameter (the caller's layout) or an earlier step's
    // output, written contiguous (plan.h, "Memory").
    BufferSpec spec{buffer_name(g, r), n.dtype, shape_exprs(env, n), {}, 16};
    if (n.kind == OpKind::Parameter) {
      spec.strides = env.param_strides(r);
      spec.alignment = env.param_alignment(r);
      for (size_t d = 0; d < spec.strides.size(); ++d)
        if (const auto* v = spec.strides[d].as<tir::VarNode>(); v && v == env.stride_var(r, d).get())
          runtime_strides.emplace_back(r, d);
    } else {
      spec.strides = env.contiguous_strides(n);
    }
    sig.inputs.push_back(std::move(spec));
    lk->bindings.push_back(r);
  }
  const Node& o = g.node(step.output);
  sig.output = {buffer_name(g, step.output), o.dtype, shape_exprs(env, o), env.contiguous_strides(o),
                16};
  lk->bindings.push_back(step.output);
  make_unique_names(&sig, lk->bindings);
  // Every symbol (a kernel need not use all; the runtime passes all), then
  // the run-time strides of the parameters read.
  for (size_t s = 0; s < env.symbol_vars().size(); ++s) {
    sig.scalars.push_back(env.symbol_var(static_cast<SymbolId>(s)));
    lk->scalars.push_back({static_cast<SymbolId>(s), -1, -1});
  }
  for (const auto& [param, d] : runtime_strides) {
    sig.scalars.push_back(env.stride_var(param, d));
    lk->scalars.push_back({kFixedDim, param, static_cast<int>(d)});
  }
  return sig;
}

// The input buffers of `kernel` by value (its params line up with bindings).
std::map<ValueId, tir::Buffer> input_buffers(const tir::Kernel& kernel,
                                             const std::vector<ValueId>& bindings) {
  std::map<ValueId, tir::Buffer> out;
  for (size_t i = 0; i + 1 < bindings.size(); ++i) out[bindings[i]] = kernel.params[i].buffer;
  return out;
}

// Widens the coordinates of a store into a tensor of 2^31 elements or more.
std::vector<Expr> store_indices(const DimEnv& env, const std::vector<Expr>& coords,
                                const Node& out) {
  const bool wide = env.index_dtype_of(env.product(out, 0, out.shape.size())) == DType::I64;
  std::vector<Expr> idx;
  for (const Expr& c : coords) idx.push_back(c.dtype() == DType::I32 && wide ? tir::cast(DType::I64, c) : c);
  return idx;
}

// The most nodes a GEMM operand's prologue (a copy's value, which cannot
// bind values) may hold as a tree, with its checks. The planner keeps
// prologues far below this (FusionOptions::max_prologue_work); this only
// turns a planner bug into an error instead of an exponential compile.
constexpr uint64_t kMaxPrologueTreeNodes = uint64_t{1} << 16;

// The batch coordinates of flat batch index `b` in the GEMM's batch dims,
// right-aligned to the first `op_rank` dims of operand `op` (fixed size-1
// dims broadcast: index 0; a symbolic dim never broadcasts, graph.h).
std::vector<Expr> batch_coords(const DimEnv& env, const Expr& b, const GemmGeometry& geo,
                               const Node* op, size_t op_rank) {
  const Shape& batch = geo.batch;
  auto sym = [&](size_t d) {
    return d < geo.batch_symbols.size() ? geo.batch_symbols[d] : kFixedDim;
  };
  std::vector<Expr> full(batch.size());
  Expr inner;  // the product of the dims after d; undefined for 1
  for (size_t d = batch.size(); d-- > 0;) {
    Expr c = b;
    if (inner.defined()) c = c / DimEnv::as(b.dtype(), inner);
    if (d != 0) c = c % DimEnv::as(b.dtype(), env.size(batch[d], sym(d)));
    full[d] = c;
    const Expr size = env.size(batch[d], sym(d));
    if (sym(d) != kFixedDim || batch[d] != 1)
      inner = inner.defined() ? DimEnv::as(b.dtype(), inner) * DimEnv::as(b.dtype(), size)
                              : DimEnv::as(b.dtype(), size);
  }
  if (!op) return full;
  std::vector<Expr> out;
  const size_t lead = batch.size() - op_rank;
  for (size_t d = 0; d < op_rank; ++d)
    out.push_back(op->symbol(d) == kFixedDim && op->shape[d] == 1 ? tir::make_int(b.dtype(), 0)
                                                                  : full[lead + d]);
  return out;
}

// The hook for GEMM operand `p` (A when is_a): GEMM coordinates
// [b?, row, col] to the operand's own.
HookTable::InputHook operand_hook(const DimEnv& env, const KernelStep& step,
                                  const OperandPrologue& p, bool is_a,
                                  const ExprLowering& lowering) {
  return [&env, &step, &p, is_a, &lowering](const std::vector<Expr>& idx, const Expr& mask) {
    const Node& n = env.graph().node(p.operand);
    const bool batched = !step.gemm.batch.empty();
    const Expr row = idx[batched ? 1 : 0], col = idx[batched ? 2 : 1];
    std::vector<Expr> coords;
    const bool vector = is_a ? step.gemm.a_is_vector : step.gemm.b_is_vector;
    if (vector) {
      coords = {is_a ? col : row};  // the K coordinate
    } else {
      if (batched) coords = batch_coords(env, idx[0], step.gemm, &n, n.shape.size() - 2);
      coords.push_back(row);
      coords.push_back(col);
    }
    LoweredExpr e = lowering.lower(p.operand, coords, mask);
    uint64_t nodes = tir::tree_size(e.value, kMaxPrologueTreeNodes + 1);
    for (const Stmt& c : e.checks)
      for (const Expr& x : tir::expr_children(c.as<tir::CheckNode>()->cond))
        nodes += tir::tree_size(x, kMaxPrologueTreeNodes + 1);
    TF_CHECK(nodes <= kMaxPrologueTreeNodes,
             fmt::format("the prologue of {} expands to more than {} nodes per element",
                         describe_value(n), kMaxPrologueTreeNodes));
    return HookExpansion{e.value, std::move(e.checks), {}};
  };
}

LoweredKernel lower_gemm_step(const DimEnv& env, const KernelStep& step, const LowerOptions& opts) {
  const Graph& g = env.graph();
  LoweredKernel lk;
  lk.step = step;
  const KernelSignature sig = signature(env, step, &lk);
  TF_CHECK(can_use_gemm(g, step), "the GEMM template cannot build step " + step.name);
  const GemmConfig config = opts.gemm_config.value_or(
      opts.cpu ? default_cpu_gemm_config(env, step) : default_gemm_config(env, step, opts.wgmma));
  lk.gemm_config = config;
  if (config.split_k > 1 || config.stream_k > 0) {
    // A user's config (--gemm-config .../splitkS or .../streamkU): the tuner
    // proposes neither where a size is symbolic.
    const std::string sym = gemm_symbolic_dim(g, step);
    const bool split = config.split_k > 1;
    if (!sym.empty())
      throw UserError(fmt::format(
          "GEMM step {}: {} needs constant sizes, but {} is a symbolic dim; use a config without "
          "/{}{}",
          step.name,
          split ? fmt::format("split-K (split_k {})", config.split_k)
                : fmt::format("stream-K (over {} blocks)", config.stream_k),
          sym, split ? "splitk" : "streamk", split ? config.split_k : config.stream_k));
  }
  const tir::Kernel templ = build_gemm(env, step, sig, config);
  // Split-K's buffer params after the output: the workspace, then the
  // counters (gemm_template.h); the scalar params come after them.
  for (size_t i = lk.bindings.size(); i < templ.params.size() && templ.params[i].is_buffer(); ++i) {
    const tir::Buffer& b = templ.params[i].buffer;
    ScratchBuffer s;
    s.name = b.name();
    s.dtype = b.dtype();
    for (const Expr& e : b->shape) {
      const int64_t* v = tir::as_const_int(e);
      TF_CHECK(v != nullptr, "a scratch buffer of non-constant shape");
      s.shape.push_back(*v);
    }
    s.zeroed = s.dtype == DType::I32;  // the tile counters start at 0
    lk.scratch.push_back(std::move(s));
  }

  ExprLowering lowering(env, input_buffers(templ, lk.bindings));
  const tir::Buffer out = templ.params[lk.bindings.size() - 1].buffer;
  const Node& anchor = g.node(step.anchor);
  const Node& out_node = g.node(step.output);
  const GemmGeometry& geo = step.gemm;

  HookTable table;
  table.inputs["A"] = operand_hook(env, step, step.a, true, lowering);
  table.inputs["B"] = operand_hook(env, step, step.b, false, lowering);
  table.outputs["C"] = [&](const std::vector<Expr>& idx, const Expr& acc, const Expr& mask) {
    const bool batched = !geo.batch.empty();
    const Expr m = idx[batched ? 1 : 0], n = idx[batched ? 2 : 1];
    std::vector<Stmt> checks;
    Expr value = acc;
    if (step.bias) {
      // addmm: beta * bias + alpha * acc in the accumulator type, the bias
      // converted to the anchor's dtype first (reference/eval.cpp).
      const Node& bn = g.node(step.bias->operand);
      std::vector<Expr> bc;
      const size_t lead = 2 - bn.shape.size();
      for (size_t d = 0; d < bn.shape.size(); ++d)
        bc.push_back(bn.symbol(d) == kFixedDim && bn.shape[d] == 1
                         ? tir::make_int(lead + d == 0 ? m.dtype() : n.dtype(), 0)
                         : (lead + d == 0 ? m : n));
      LoweredExpr bias = lowering.lower_as(step.bias->operand, bc, anchor.dtype, mask);
      checks = std::move(bias.checks);
      const Expr bias_acc =
          bias.value.dtype() == acc.dtype() ? bias.value : tir::cast(acc.dtype(), bias.value);
      value = anchor.beta == 0 ? anchor.alpha * acc : anchor.alpha * acc + anchor.beta * bias_acc;
    }
    const Expr anchor_value =
        value.dtype() == anchor.dtype ? value : tir::cast(anchor.dtype, value);
    // The epilogue reads the anchor only at the element it writes.
    ExprLowering epilogue = lowering;
    epilogue.bind(step.anchor, [anchor_value](const std::vector<Expr>&) { return anchor_value; });
    std::vector<Expr> coords;
    if (batched) {
      const std::vector<Expr> bcs = batch_coords(env, idx[0], geo, nullptr, 0);
      coords.insert(coords.end(), bcs.begin(), bcs.end());
    }
    if (!geo.a_is_vector) coords.push_back(m);
    if (!geo.b_is_vector) coords.push_back(n);
    LoweredExpr e = epilogue.lower(step.output, coords, mask);
    checks.insert(checks.end(), e.checks.begin(), e.checks.end());
    // The bias and the epilogue may share values: bound together.
    e.checks = std::move(checks);
    e = bind_values(e);
    return wrap_in_lets(
        e, tir::StoreNode::make(out, store_indices(env, coords, out_node), e.value, mask));
  };
  lk.kernel = passes::inline_hooks(templ, table);
  return lk;
}

LoweredKernel lower_pointwise_step(const DimEnv& env, const KernelStep& step,
                                   const LowerOptions& opts) {
  const Graph& g = env.graph();
  LoweredKernel lk;
  lk.step = step;
  const KernelSignature sig = signature(env, step, &lk);
  const Node& out_node = g.node(step.output);
  const PointwiseConfig config =
      opts.pointwise_config.value_or(default_pointwise_config(env, out_node));
  lk.pointwise_config = config;
  const tir::Kernel templ = build_pointwise(env, step.name, sig, out_node, config);

  const ExprLowering lowering(env, input_buffers(templ, lk.bindings));
  const tir::Buffer out = templ.params[lk.bindings.size() - 1].buffer;
  HookTable table;
  table.inputs["in"] = [&](const std::vector<Expr>& coords, const Expr& mask) {
    LoweredExpr e = bind_values(lowering.lower(step.output, coords, mask));
    return HookExpansion{e.value, std::move(e.checks), std::move(e.lets)};
  };
  table.outputs["out"] = [&](const std::vector<Expr>& coords, const Expr& value, const Expr& mask) {
    return tir::StoreNode::make(out, store_indices(env, coords, out_node), value, mask);
  };
  lk.kernel = passes::inline_hooks(templ, table);
  return lk;
}

}  // namespace

LoweredKernel lower_step(const Graph& graph, const KernelStep& step, const LowerOptions& options) {
  const DimEnv env(graph, options.specialization);
  LoweredKernel lk = step.kind == StepKind::kGemm ? lower_gemm_step(env, step, options)
                                                  : lower_pointwise_step(env, step, options);
  // The symbols a kernel's indexing may rely on being multiples of 16
  // (axis_info reads `<param>_divisibility`); run-time strides likewise.
  for (size_t s = 0; s < graph.symbols().size(); ++s)
    if (env.divisible_by_16(0, static_cast<SymbolId>(s)))
      lk.kernel.attrs[graph.symbols()[s].name + "_divisibility"] = int64_t{16};
  for (const ScalarBinding& sb : lk.scalars) {
    if (sb.param < 0) continue;
    const std::vector<ValueId>& ps = graph.parameters();
    const size_t pos = static_cast<size_t>(std::find(ps.begin(), ps.end(), sb.param) - ps.begin());
    const ParamLayout& layout = options.specialization.params.at(pos);
    if (static_cast<size_t>(sb.dim) < layout.stride_divisible_by_16.size() &&
        layout.stride_divisible_by_16[sb.dim])
      lk.kernel.attrs[env.stride_var(sb.param, sb.dim).name() + "_divisibility"] = int64_t{16};
  }
  if (env.has_symbols() || !lk.scalars.empty())
    lk.kernel.attrs["index_bits"] = int64_t{options.specialization.index64 ? 64 : 32};
  if (options.verify) {
    tir::VerifyOptions vo;
    vo.allow_hooks = false;
    tir::verify(lk.kernel, "after lowering " + step.name, vo);
  }
  return lk;
}

std::vector<LoweredKernel> lower_plan(const Graph& graph, const Plan& plan,
                                      const LowerOptions& options) {
  std::vector<LoweredKernel> out;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    out.push_back(lower_step(graph, plan.steps[i], options));
    out.back().step_index = static_cast<int>(i);
  }
  return out;
}

}  // namespace tilefuse
