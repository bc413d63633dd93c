// A test-only executor for plans: each step becomes a small Graph whose
// parameters are the step's reads and whose nodes are copies of the nodes the
// step computes; the reference evaluator runs it and the step's output is
// kept for later steps. Since every node rounds to its own dtype (plan.h,
// "Rounding"), a correct plan reproduces the whole graph's eager results bit
// for bit — which checks, beyond the validator's structure, that each step
// computes what the graph means.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"
#include "reference/eval.h"
#include "schedule/plan.h"

namespace tilefuse::testing {

// The nodes a step computes, increasing (lists may overlap: a value needed by
// two operands is recomputed by each).
inline std::vector<ValueId> step_nodes(const KernelStep& s) {
  std::vector<ValueId> all = s.pointwise;
  if (s.kind == StepKind::kGemm) {
    all.push_back(s.anchor);
    for (const std::vector<ValueId>* l : {&s.a.nodes, &s.b.nodes, &s.epilogue}) {
      all.insert(all.end(), l->begin(), l->end());
    }
    if (s.bias) all.insert(all.end(), s.bias->nodes.begin(), s.bias->nodes.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

// Copies node `v` of `g` into `sub`, its inputs already mapped by `map`.
inline ValueId copy_node(const Graph& g, ValueId v, Graph& sub, std::map<ValueId, ValueId>& map) {
  const Node& n = g.node(v);
  auto in = [&](size_t i) {
    const ValueId src = n.inputs[i];
    auto it = map.find(src);
    if (it != map.end()) return it->second;
    const Node& s = g.node(src);
    EXPECT_EQ(s.kind, OpKind::Scalar) << "%" << v << " needs %" << src << ", not in the step";
    const DType kind = s.dtype == DType::F32 ? DType::F64 : s.dtype;  // a float literal
    return map[src] = sub.scalar(s.scalar, kind, {});
  };
  ValueId out = -1;
  switch (n.kind) {
    case OpKind::Scalar:
      out = sub.scalar(n.scalar, n.dtype == DType::F32 ? DType::F64 : n.dtype, {});
      break;
    case OpKind::Unary:
      out = sub.unary(n.unary, in(0), {});
      break;
    case OpKind::Binary:
      out = sub.binary(n.binary, in(0), in(1), {});
      break;
    case OpKind::Where:
      out = sub.where(in(0), in(1), in(2), {});
      break;
    case OpKind::Clamp:
      out = sub.clamp(in(0), n.clamp_min, n.clamp_max, {});
      break;
    case OpKind::Cast:
      out = sub.cast(in(0), n.dtype, {});
      break;
    case OpKind::Slice:
      out = sub.slice(in(0), n.dim, n.start, n.end, n.step, {});
      break;
    case OpKind::Permute:
      out = sub.permute(in(0), n.perm, {});
      break;
    case OpKind::Expand:
      out = sub.expand(in(0), n.shape, {});
      break;
    case OpKind::Select:
      out = sub.select(in(0), n.dim, n.start, {});
      break;
    case OpKind::Index:
      out = sub.index(in(0), n.dim, in(1), {});
      break;
    case OpKind::Matmul:
      out = sub.matmul(in(0), in(1), {});
      break;
    case OpKind::Addmm:
      out = sub.addmm(in(0), in(1), in(2), n.beta, n.alpha, {});
      break;
    case OpKind::Parameter:
      ADD_FAILURE() << "a step computes parameter %" << v;
      return -1;
  }
  EXPECT_EQ(sub.node(out).dtype, n.dtype) << "copy of %" << v;
  EXPECT_EQ(sub.node(out).shape, n.shape) << "copy of %" << v;
  return map[v] = out;
}

// Runs `plan` step by step; returns one tensor per graph output.
inline std::vector<Tensor> run_plan(const Graph& g, const Plan& plan,
                                    const std::vector<Tensor>& params) {
  std::map<ValueId, Tensor> memory;
  for (size_t i = 0; i < params.size(); ++i) memory[g.parameters()[i]] = params[i];
  EvalOptions opts;
  opts.num_threads = 1;
  for (const KernelStep& s : plan.steps) {
    Graph sub;
    std::map<ValueId, ValueId> map;
    std::vector<Tensor> inputs;
    for (ValueId r : s.reads) {
      std::string name = "r";
      name += std::to_string(r);
      map[r] = sub.parameter(name, g.node(r).dtype, g.node(r).shape, std::nullopt, {});
      inputs.push_back(memory.at(r));
    }
    for (ValueId v : step_nodes(s)) copy_node(g, v, sub, map);
    sub.add_output(map.at(s.output));
    memory[s.output] = evaluate(sub, inputs, opts)[0];
  }
  std::vector<Tensor> outs;
  for (ValueId o : g.outputs()) outs.push_back(memory.at(o));
  return outs;
}

// Element-wise equality of values (NaN equals NaN), shapes and dtypes.
inline bool same_tensor(const Tensor& a, const Tensor& b, std::string* why) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    *why = "dtype or shape differs";
    return false;
  }
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.get_linear(i), y = b.get_linear(i);
    if (x != y && !(std::isnan(x) && std::isnan(y))) {
      *why = "element ";
      *why += std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y);
      return false;
    }
  }
  return true;
}

}  // namespace tilefuse::testing
