// Lowering of plan steps to kernels (see lower.h).
#include "lower/lower.h"

#include <fmt/format.h>

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

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t inner = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = inner;
    inner *= std::max<int64_t>(shape[d], 1);
  }
  return s;
}

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

KernelSignature signature(const Graph& g, const KernelStep& step, std::vector<ValueId>* bindings) {
  KernelSignature sig;
  for (ValueId r : step.reads) {
    const Node& n = g.node(r);
    // A read is a parameter (the caller's layout) or an earlier step's
    // output, written contiguous (plan.h, "Memory").
    const std::vector<int64_t> strides =
        n.kind == OpKind::Parameter ? n.strides : contiguous_strides(n.shape);
    sig.inputs.push_back({buffer_name(g, r), n.dtype, n.shape, strides});
    bindings->push_back(r);
  }
  const Node& o = g.node(step.output);
  sig.output = {buffer_name(g, step.output), o.dtype, o.shape, contiguous_strides(o.shape)};
  bindings->push_back(step.output);
  make_unique_names(&sig, *bindings);
  return sig;
}

// The input buffers of `kernel` by value (its params line up with bindings).
std::map<ValueId, tir::Buffer> input_buffers(const tir::Kernel& kernel,
                                             const std::vector<ValueId>& bindings) {
  std::map<ValueId, tir::Buffer> out;
  for (size_t i = 0; i + 1 < bindings.size(); ++i) out[bindings[i]] = kernel.params[i].buffer;
  return out;
}

// Widens coordinates that index a dim of 2^31 elements or more.
std::vector<Expr> store_indices(const std::vector<Expr>& coords, const Shape& shape) {
  std::vector<Expr> idx;
  for (size_t d = 0; d < coords.size(); ++d) {
    Expr c = coords[d];
    if (c.dtype() == DType::I32 && index_dtype(shape_numel(shape)) == DType::I64)
      c = tir::cast(DType::I64, c);
    idx.push_back(c);
  }
  return idx;
}

// The most nodes a GEMM operand's prologue (a copy's value, which cannot
// bind values) may hold as a tree, with its checks. The planner keeps
// prologues far below this (FusionOptions::max_prologue_work); this only
// turns a planner bug into an error instead of an exponential compile.
constexpr uint64_t kMaxPrologueTreeNodes = uint64_t{1} << 16;

// The batch coordinates of flat batch index `b` in `batch`, right-aligned to
// an operand's `op_batch` dims (size-1 dims broadcast: index 0).
std::vector<Expr> batch_coords(const Expr& b, const Shape& batch, const Shape& op_batch) {
  std::vector<Expr> full(batch.size());
  int64_t inner = 1;
  for (size_t d = batch.size(); d-- > 0;) {
    Expr c = b;
    if (inner != 1) c = c / inner;
    if (d != 0) c = c % batch[d];
    full[d] = c;
    inner *= batch[d];
  }
  std::vector<Expr> out;
  const size_t lead = batch.size() - op_batch.size();
  for (size_t d = 0; d < op_batch.size(); ++d)
    out.push_back(op_batch[d] == 1 ? tir::make_int(b.dtype(), 0) : full[lead + d]);
  return out;
}

// The hook for GEMM operand `p` (A when is_a): GEMM coordinates
// [b?, row, col] to the operand's own.
HookTable::InputHook operand_hook(const Graph& g, const KernelStep& step, const OperandPrologue& p,
                                  bool is_a, const ExprLowering& lowering) {
  return [&g, &step, &p, is_a, &lowering](const std::vector<Expr>& idx, const Expr& mask) {
    const Node& n = g.node(p.operand);
    const bool batched = !step.gemm.batch.empty();
    const Expr row = idx[batched ? 1 : 0], col = idx[batched ? 2 : 1];
    std::vector<Expr> coords;
    const bool vector = is_a ? step.gemm.a_is_vector : step.gemm.b_is_vector;
    if (vector) {
      coords = {is_a ? col : row};  // the K coordinate
    } else {
      const Shape op_batch(n.shape.begin(), n.shape.end() - 2);
      if (batched) coords = batch_coords(idx[0], step.gemm.batch, op_batch);
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
                         describe_value(g.node(p.operand)), kMaxPrologueTreeNodes));
    return HookExpansion{e.value, std::move(e.checks), {}};
  };
}

LoweredKernel lower_gemm_step(const Graph& g, const KernelStep& step, const LowerOptions& opts) {
  LoweredKernel lk;
  lk.step = step;
  const KernelSignature sig = signature(g, step, &lk.bindings);
  TF_CHECK(can_use_gemm(g, step), "the GEMM template cannot build step " + step.name);
  const GemmConfig config = opts.gemm_config.value_or(
      opts.cpu ? default_cpu_gemm_config(g, step) : default_gemm_config(g, step, opts.wgmma));
  lk.gemm_config = config;
  const tir::Kernel templ = build_gemm(g, step, sig, config);
  // Split-K's params after the output: the workspace, then the counters
  // (gemm_template.h).
  for (size_t i = lk.bindings.size(); i < templ.params.size(); ++i) {
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

  ExprLowering lowering(g, input_buffers(templ, lk.bindings));
  const tir::Buffer out = templ.params[lk.bindings.size() - 1].buffer;
  const Node& anchor = g.node(step.anchor);
  const Node& out_node = g.node(step.output);
  const GemmGeometry& geo = step.gemm;

  HookTable table;
  table.inputs["A"] = operand_hook(g, step, step.a, true, lowering);
  table.inputs["B"] = operand_hook(g, step, step.b, false, lowering);
  table.outputs["C"] = [&](const std::vector<Expr>& idx, const Expr& acc, const Expr& mask) {
    const bool batched = !geo.batch.empty();
    const Expr m = idx[batched ? 1 : 0], n = idx[batched ? 2 : 1];
    std::vector<Stmt> checks;
    Expr value = acc;
    if (step.bias) {
      // addmm: beta * bias + alpha * acc in the accumulator type, the bias
      // converted to the anchor's dtype first (reference/eval.cpp).
      const Node& bn = g.node(step.bias->operand);
      const Shape mn = {geo.m, geo.n};
      std::vector<Expr> bc;
      const size_t lead = mn.size() - bn.shape.size();
      for (size_t d = 0; d < bn.shape.size(); ++d)
        bc.push_back(bn.shape[d] == 1 ? tir::make_int(m.dtype(), 0) : (lead + d == 0 ? m : n));
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
      const std::vector<Expr> bcs = batch_coords(idx[0], geo.batch, geo.batch);
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
        e, tir::StoreNode::make(out, store_indices(coords, out_node.shape), e.value, mask));
  };
  lk.kernel = passes::inline_hooks(templ, table);
  return lk;
}

LoweredKernel lower_pointwise_step(const Graph& g, const KernelStep& step,
                                   const LowerOptions& opts) {
  LoweredKernel lk;
  lk.step = step;
  const KernelSignature sig = signature(g, step, &lk.bindings);
  const Node& out_node = g.node(step.output);
  const PointwiseConfig config =
      opts.pointwise_config.value_or(default_pointwise_config(out_node.shape));
  lk.pointwise_config = config;
  const tir::Kernel templ = build_pointwise(step.name, sig, out_node.dtype, out_node.shape, config);

  const ExprLowering lowering(g, input_buffers(templ, lk.bindings));
  const tir::Buffer out = templ.params.back().buffer;
  HookTable table;
  table.inputs["in"] = [&](const std::vector<Expr>& coords, const Expr& mask) {
    LoweredExpr e = bind_values(lowering.lower(step.output, coords, mask));
    return HookExpansion{e.value, std::move(e.checks), std::move(e.lets)};
  };
  table.outputs["out"] = [&](const std::vector<Expr>& coords, const Expr& value, const Expr& mask) {
    return tir::StoreNode::make(out, store_indices(coords, out_node.shape), value, mask);
  };
  lk.kernel = passes::inline_hooks(templ, table);
  return lk;
}

}  // namespace

LoweredKernel lower_step(const Graph& graph, const KernelStep& step, const LowerOptions& options) {
  LoweredKernel lk = step.kind == StepKind::kGemm ? lower_gemm_step(graph, step, options)
                                                  : lower_pointwise_step(graph, step, options);
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
