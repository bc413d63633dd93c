// Fusion legality. The rules, each with its reason; decide_fusion applies
// them in this order.
//
// R1 Leaves. Parameters are in memory (loaded). Scalar nodes are constants
//    that any kernel emits inline; they are never loaded, listed or written.
//
// R2 GEMMs. Every live Matmul/Addmm is the anchor of its own GEMM step, and
//    the value that step stores is loaded by its consumers: a GEMM is never
//    recomputed and never fused into another GEMM's prologue. Recomputing it
//    would repeat O(M·N·K) work per use, and a prologue runs per loaded
//    element, where a reduction over K has no place.
//
// R3 Epilogue (fuse_epilogues). From the anchor, the accumulator chain
//    extends from its current last node c to c's consumer u while
//    (a) c is not a graph output and has exactly one consumer: any other use
//        needs c itself in memory, so c is stored and the chain stops there;
//    (b) u is elementwise (Unary, Binary, Where, Clamp, Cast): a view, a
//        gather or a GEMM of the accumulator would read it at other indices
//        than the one the thread holds;
//    (c) u has exactly the anchor's shape: then u reads c at the index it
//        writes (c is not broadcast) and the store covers exactly the
//        GEMM's output tile; a larger u would need each accumulator element
//        at several output positions;
//    (d) u is not in the chain of an earlier anchor (anchors are taken in
//        topological order; a node is computed by one kernel);
//    (e) the epilogue stays within max_fused_ops non-view ops, counting each
//        chain node and the ops of the side inputs it adds (see R9).
//    u's other inputs ("side inputs": bias[n], scales, other tensors)
//    broadcast into the result by (c); they are loaded, or computed at the
//    output index under R5's limit. They cannot depend on the chain: by (a)
//    every path from a chain node passes through the next chain node.
//    The chain's last node is what the GEMM step stores (R2).
//
// R4 Gather index. The index tensor of a gather is a loaded value or an
//    expression with no gather of its own (views, casts, elementwise ops of
//    loaded values); otherwise it is materialized (the first non-view node
//    below it). This keeps every gather one data-dependent load deep: the
//    row index is one load plus arithmetic, which LICM hoists and axis_info
//    models (a loaded value: unknown, but constant along the dims it is
//    broadcast over). The materialized index is index-sized, so the extra
//    pointwise kernel is cheap. Applied to every gather, fused or not.
//
// R5 Prologue (fuse_prologues). A GEMM operand that is not loaded is computed
//    while its tile is loaded: its whole expression down to loaded values —
//    views (slices, transposes, selects, expands), gathers (A's rows, B's
//    rows along K, B's columns, per batch), casts, elementwise chains with
//    Scalar or broadcast tensor operands, so int8/fp8 dequantization (a cast
//    then a scale) too. Each of these maps one operand element to a bounded
//    amount of work on loaded elements, which is what load_input may do; the
//    operand never goes through memory. The work is repeated per loaded
//    element and per tile that reloads it (A once per N-tile), so an
//    expression with more than max_prologue_ops non-view ops is
//    materialized by a pointwise step instead. The same limit applies to an
//    epilogue's side inputs. A prologue is a copy's value: one expression
//    per element that cannot bind a value for reuse, so an input read twice
//    (relu, `y * y`, a gather's index) is computed twice, and nested such
//    reads multiply. An operand whose work counted that way
//    (prologue_work) exceeds max_prologue_work is materialized too: its
//    pointwise step binds every shared value once (lower/let_binding.h).
//
// R6 Shared producers. A non-GEMM node with several uses (distinct consumer
//    nodes, plus one if it is a graph output) is recomputed by each consumer
//    when its expression (down to loaded values) has at most
//    max_recompute_ops non-view ops — views, gathers, casts and short
//    elementwise chains cost less to recompute than a store and a reload —
//    and materialized (loaded) otherwise. A view is free to recompute; when
//    a shared view's expression is expensive, the value it views (the first
//    non-view node below it) is materialized instead, so a loaded value is
//    never a view and always has a contiguous layout.
//
// R7 Unfused operands (fuse_prologues off). A GEMM operand must be a loaded
//    value or a chain of views over one (the GEMM template addresses any
//    strided view); the first non-view node below the views is materialized.
//    With fuse_epilogues off the chain is the anchor alone.
//
// R8 Outputs and the rest. Every graph output that is not a Parameter is
//    written by exactly one step; that does not make it loaded (R6 decides by
//    cost), so a cheap output such as a gathered operand that is also
//    returned stays fused into the GEMM and the two kernels stay independent.
//    Every written value that is not a GEMM result is computed by a pointwise
//    step from loaded values, with everything between them inlined
//    (Inductor-style). Views are never written unless they are an output
//    (then a pointwise copy writes them contiguously).
//
// R9 Kernel size. A pointwise step computes at most max_fused_ops non-view
//    ops. Nodes are taken in topological order; where a node's expression
//    (down to loaded values) grows past the limit, its largest inputs are
//    materialized until it fits, so a chain of 100,000 statements becomes
//    kernels of at most that many ops. The kernel's source, its compile
//    time and the nesting of its IR stay bounded; the cost is one store and
//    reload per cut, for chains far longer than any real prologue or
//    epilogue.
//
// Costs are counted with a bounded walk (at most a limit's worth of nodes),
// so deciding is linear in the graph at any size.
#include "schedule/fusion.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "schedule/internal.h"

namespace tilefuse {

using schedule_internal::id_ref;
using schedule_internal::is_elementwise;
using schedule_internal::is_gemm;
using schedule_internal::op_name;
using schedule_internal::op_ref;
using schedule_internal::ref_list;
using schedule_internal::value_ref;

namespace {

// The kinds R5/R6 may compute anywhere: views, gathers, casts, elementwise.
bool is_recomputable(const Node& n) {
  return n.is_view() || n.kind == OpKind::Index || is_elementwise(n);
}

// The name of input slot `i` of a GEMM anchor.
std::string slot_name(const Node& anchor, size_t i) {
  if (anchor.kind == OpKind::Addmm) return i == 0 ? "bias" : i == 1 ? "A" : "B";
  return i == 0 ? "A" : "B";
}

class FusionAnalysis {
 public:
  FusionAnalysis(const Graph& g, const FusionOptions& options) : g_(g), opt_(options) {
    const auto n = static_cast<size_t>(g.size());
    d_.live.assign(n, false);
    d_.loaded.assign(n, false);
    d_.written.assign(n, false);
    d_.gemm_of.assign(n, -1);
    consumers_.assign(n, {});
    is_output_.assign(n, false);
    mark_.assign(n, 0);
    cost_cap_ = 1 + std::max({opt_.max_recompute_ops, opt_.max_prologue_ops, opt_.max_fused_ops});
  }

  FusionDecisions run() {
    find_uses();
    build_epilogue_chains();
    for (ValueId v = 0; v < g_.size(); ++v) {
      if (d_.live[v]) visit(v);
    }
    for (ValueId v : g_.outputs()) {
      if (g_.node(v).kind != OpKind::Parameter) d_.written[v] = true;
    }
    describe_prologues();
    return std::move(d_);
  }

 private:
  int uses(ValueId v) const {
    return static_cast<int>(consumers_[v].size()) + (is_output_[v] ? 1 : 0);
  }

  // The non-view ops of inline_expr(v), counted up to cost_cap_ (a value
  // past every limit costs cost_cap_). A bounded depth-first walk.
  int cost(ValueId v) {
    const Node& root = g_.node(v);
    if (d_.loaded[v] || root.kind == OpKind::Parameter || root.kind == OpKind::Scalar) return 0;
    if (++stamp_ == 0) {  // the stamps wrapped: forget every mark
      std::fill(mark_.begin(), mark_.end(), 0);
      stamp_ = 1;
    }
    int ops = 0;
    walk_.assign(1, v);
    mark_[v] = stamp_;
    while (!walk_.empty() && ops < cost_cap_) {
      const ValueId u = walk_.back();
      walk_.pop_back();
      const Node& n = g_.node(u);
      if (!n.is_view()) ++ops;
      for (ValueId in : n.inputs) {
        if (mark_[in] == stamp_) continue;
        mark_[in] = stamp_;
        const Node& inn = g_.node(in);
        if (d_.loaded[in] || inn.kind == OpKind::Parameter || inn.kind == OpKind::Scalar) continue;
        walk_.push_back(in);
      }
    }
    return std::min(ops, cost_cap_);
  }
  // "17 ops" or, at the cap, "more than 256 ops".
  std::string ops_text(int c) const {
    return c >= cost_cap_ ? "more than " + std::to_string(cost_cap_ - 1) + " ops"
                          : std::to_string(c) + " ops";
  }

  void note(std::string line) { d_.reasons.push_back(std::move(line)); }

  void find_uses() {
    d_.live = live_values(g_);
    for (ValueId v : g_.outputs()) is_output_[v] = true;
    for (ValueId v = 0; v < g_.size(); ++v) {
      if (!d_.live[v]) continue;
      for (ValueId in : g_.node(v).inputs) {
        auto& c = consumers_[in];
        if (c.empty() || c.back() != v) c.push_back(v);  // distinct consumers (x * x is one)
      }
    }
  }

  // R2 + R3: claims each anchor's accumulator chain; its last node is stored.
  void build_epilogue_chains() {
    for (ValueId a = 0; a < g_.size(); ++a) {
      if (!d_.live[a] || !is_gemm(g_.node(a))) continue;
      d_.gemm_of[a] = a;
      std::vector<ValueId> chain;
      ValueId c = a;
      std::string stop;
      int ops = 0;  // the chain's ops and its side inputs' (R3 e)
      while (opt_.fuse_epilogues) {
        if (is_output_[c]) {
          stop = value_ref(g_, c) + " is a graph output";
          break;
        }
        if (consumers_[c].size() != 1) {
          stop = value_ref(g_, c) + " has " + std::to_string(uses(c)) + " uses";
          break;
        }
        const ValueId u = consumers_[c][0];
        const Node& un = g_.node(u);
        if (!is_elementwise(un)) {
          stop = "its consumer " + op_ref(g_, u) + " is not elementwise";
          break;
        }
        if (!same_shape(un, g_.node(a))) {
          stop = "its consumer " + op_ref(g_, u) + " has shape " + symbolic_shape_string(g_, un) +
                 ", not the result's " + symbolic_shape_string(g_, g_.node(a));
          break;
        }
        if (d_.gemm_of[u] != -1) {
          stop = "its consumer " + op_ref(g_, u) + " is in the epilogue of " +
                 op_ref(g_, d_.gemm_of[u]);
          break;
        }
        int add = 1;
        for (ValueId j : un.inputs)
          if (j != c) add += std::min(cost(j), opt_.max_prologue_ops);
        if (ops + add > opt_.max_fused_ops) {
          stop = "the epilogue has reached max_fused_ops " + std::to_string(opt_.max_fused_ops);
          break;
        }
        ops += add;
        d_.gemm_of[u] = a;
        chain.push_back(u);
        c = u;
      }
      d_.loaded[c] = d_.written[c] = true;
      if (!opt_.fuse_epilogues) {
        note(op_ref(g_, a) + ": epilogue fusion off: the GEMM stores its result " +
             value_ref(g_, a));
      } else if (chain.empty()) {
        note(op_ref(g_, a) + ": no epilogue: " + stop);
      } else {
        note(op_ref(g_, a) + ": epilogue " + ref_list(g_, chain, true) + "; stops at " +
             value_ref(g_, c) + ": " + stop);
      }
    }
  }

  // Makes `v` loaded, or, for a view, the first non-view node below it (R6).
  void materialize(ValueId v, const std::string& reason) {
    ValueId r = v;
    while (g_.node(r).is_view() && !d_.loaded[r]) r = g_.node(r).inputs[0];
    const Node& n = g_.node(r);
    if (d_.loaded[r] || n.kind == OpKind::Scalar) return;
    TF_CHECK(d_.gemm_of[r] == -1 && is_recomputable(n),
             "materialize: " + id_ref(r) + " is not a recomputable node");
    d_.loaded[r] = d_.written[r] = true;
    note("materialize " + op_ref(g_, r) + ": " + reason);
  }

  void visit(ValueId v) {
    const Node& n = g_.node(v);
    if (n.kind == OpKind::Parameter) {
      d_.loaded[v] = true;  // R1
      return;
    }
    if (n.kind == OpKind::Scalar) return;
    if (is_gemm(n)) {
      visit_operands(v);
      return;
    }
    if (d_.gemm_of[v] != -1) {
      visit_side_inputs(v);
      return;
    }
    if (n.kind == OpKind::Index) visit_gather_index(v);
    visit_shared(v);
    visit_kernel_size(v);
  }

  // R9.
  void visit_kernel_size(ValueId v) {
    if (d_.loaded[v] || g_.node(v).is_view()) return;
    int c = cost(v);
    while (c > opt_.max_fused_ops) {
      // The costliest input not yet in memory.
      ValueId pick = -1;
      int pick_cost = 0;
      for (ValueId in : g_.node(v).inputs) {
        const int ic = cost(in);
        if (ic > pick_cost) pick = in, pick_cost = ic;
      }
      if (pick < 0) break;
      materialize(pick, "a kernel computing " + value_ref(g_, v) + " would have " + ops_text(c) +
                            " > max_fused_ops " + std::to_string(opt_.max_fused_ops));
      c = cost(v);
    }
  }

  // R5 (fused) or R7 (unfused) for each input of a GEMM anchor.
  void visit_operands(ValueId a) {
    const Node& an = g_.node(a);
    for (size_t i = 0; i < an.inputs.size(); ++i) {
      const ValueId o = an.inputs[i];
      if (d_.loaded[o] || g_.node(o).kind == OpKind::Scalar) continue;
      const std::string what = op_ref(g_, a) + " " + slot_name(an, i) + " " + value_ref(g_, o);
      if (!opt_.fuse_prologues) {
        materialize(
            o, "prologue fusion off: " + what + " must be a materialized value or a view of one");
        continue;
      }
      const int c = cost(o);
      if (c > opt_.max_prologue_ops) {
        materialize(o, what + " has " + ops_text(c) + " > max_prologue_ops " +
                           std::to_string(opt_.max_prologue_ops));
        continue;
      }
      const int64_t work = prologue_work(g_, d_.loaded, o, opt_.max_prologue_work + 1);
      if (work > opt_.max_prologue_work) {
        materialize(o, what + " evaluates more than " + std::to_string(opt_.max_prologue_work) +
                           " ops and loads per element (values read several times) > "
                           "max_prologue_work " +
                           std::to_string(opt_.max_prologue_work));
      }
    }
  }

  // R3's side inputs under R5's limit.
  void visit_side_inputs(ValueId u) {
    const ValueId a = d_.gemm_of[u];
    for (ValueId j : g_.node(u).inputs) {
      if (d_.gemm_of[j] == a || d_.loaded[j] || g_.node(j).kind == OpKind::Scalar) continue;
      const int c = cost(j);
      if (c > opt_.max_prologue_ops) {
        materialize(j, "epilogue input " + value_ref(g_, j) + " of " + op_ref(g_, u) + " has " +
                           ops_text(c) + " > max_prologue_ops " +
                           std::to_string(opt_.max_prologue_ops));
      }
    }
  }

  // R4.
  void visit_gather_index(ValueId v) {
    const ValueId idx = g_.node(v).inputs[1];
    if (d_.loaded[idx]) return;
    const InlineExpr e = inline_expr(g_, d_.loaded, idx);
    const bool nested = std::any_of(e.nodes.begin(), e.nodes.end(),
                                    [&](ValueId w) { return g_.node(w).kind == OpKind::Index; });
    if (nested) {
      materialize(idx, "the index " + value_ref(g_, idx) + " of gather " + op_ref(g_, v) +
                           " is itself gathered");
    }
  }

  // R6.
  void visit_shared(ValueId v) {
    const Node& n = g_.node(v);
    TF_CHECK(is_recomputable(n), "unexpected op kind " + op_name(n));
    const int u = uses(v);
    if (u < 2 || d_.loaded[v]) return;
    const int c = cost(v);
    if (c > opt_.max_recompute_ops) {
      materialize(v, value_ref(g_, v) + " has " + std::to_string(u) + " uses and " + ops_text(c) +
                         " > max_recompute_ops " + std::to_string(opt_.max_recompute_ops));
    } else if (!n.is_view()) {
      note(op_ref(g_, v) + ": recomputed by each of its " + std::to_string(u) + " uses (" +
           std::to_string(c) + (c == 1 ? " op)" : " ops)"));
    }
  }

  // The final content of every fused prologue, once all decisions are made.
  void describe_prologues() {
    if (!opt_.fuse_prologues) return;
    for (ValueId a = 0; a < g_.size(); ++a) {
      if (!d_.live[a] || !is_gemm(g_.node(a))) continue;
      const Node& an = g_.node(a);
      for (size_t i = 0; i < an.inputs.size(); ++i) {
        const ValueId o = an.inputs[i];
        const std::string what = op_ref(g_, a) + " " + slot_name(an, i) + ": ";
        if (g_.node(o).kind == OpKind::Scalar) continue;
        if (d_.loaded[o]) {
          note(what + "loads " + value_ref(g_, o) +
               (d_.gemm_of[o] != -1 ? " (a GEMM result: never fused into a prologue)" : ""));
          continue;
        }
        const InlineExpr e = inline_expr(g_, d_.loaded, o);
        note(what + "prologue " + ref_list(g_, e.nodes, true) + "; reads " +
             ref_list(g_, e.reads, false));
      }
    }
  }

  const Graph& g_;
  const FusionOptions& opt_;
  FusionDecisions d_;
  std::vector<std::vector<ValueId>> consumers_;  // distinct live consumers, increasing
  std::vector<bool> is_output_;
  // cost(): the walk's stack and visit marks (a node is marked when
  // mark_[node] == stamp_), reused across calls.
  std::vector<ValueId> walk_;
  std::vector<uint32_t> mark_;
  uint32_t stamp_ = 0;
  int cost_cap_ = 0;
};

}  // namespace

FusionOptions fusion_options(PlanKind kind) {
  FusionOptions o;
  if (kind == PlanKind::kUnfused) o.fuse_prologues = o.fuse_epilogues = false;
  return o;
}

FusionDecisions decide_fusion(const Graph& graph, const FusionOptions& options) {
  return FusionAnalysis(graph, options).run();
}

InlineExpr inline_expr(const Graph& graph, const std::vector<bool>& loaded, ValueId root) {
  InlineExpr e;
  if (graph.node(root).kind == OpKind::Parameter) {
    e.reads.push_back(root);
    return e;
  }
  std::vector<bool> seen(static_cast<size_t>(graph.size()), false);
  std::vector<ValueId> stack = {root};
  seen[root] = true;
  while (!stack.empty()) {
    const ValueId v = stack.back();
    stack.pop_back();
    const Node& n = graph.node(v);
    TF_CHECK(!is_gemm(n), "inline_expr: GEMM " + id_ref(v) + " must be loaded");
    e.nodes.push_back(v);
    for (ValueId in : n.inputs) {
      if (seen[in]) continue;
      seen[in] = true;
      const Node& inn = graph.node(in);
      if (inn.kind == OpKind::Scalar) continue;
      if (loaded[in] || inn.kind == OpKind::Parameter) {
        e.reads.push_back(in);
      } else {
        stack.push_back(in);
      }
    }
  }
  std::sort(e.nodes.begin(), e.nodes.end());
  std::sort(e.reads.begin(), e.reads.end());
  return e;
}

int input_evaluations(const Node& n, size_t slot) {
  if (n.kind == OpKind::Unary && slot == 0) {
    switch (n.unary) {
      case UnaryOp::Relu:  // select(x < 0, 0, x)
      case UnaryOp::Gelu:  // x * 0.5 * (1 + erf(x * M_SQRT1_2))
      case UnaryOp::Silu:  // x / (1 + exp(-x))
        return 2;
      default:
        return 1;
    }
  }
  if (n.kind == OpKind::Clamp && slot == 0)  // select(x < lo, lo, x), then the same for hi
    return (n.clamp_min ? 2 : 1) * (n.clamp_max ? 2 : 1);
  return 1;
}

int64_t prologue_work(const Graph& graph, const std::vector<bool>& loaded, ValueId root,
                      int64_t cap) {
  auto leaf = [&](ValueId v) {
    const Node& n = graph.node(v);
    return loaded[v] || n.kind == OpKind::Parameter || n.kind == OpKind::Scalar;
  };
  auto sat = [cap](int64_t a) { return std::min(a, cap); };
  auto mul = [cap](int64_t a, int64_t b) {
    return static_cast<int64_t>(std::min<__int128>(static_cast<__int128>(a) * b, cap));
  };
  // Per node: ops evaluated, and loads made, computing it once inline.
  struct Work {
    int64_t ops = 0, loads = 0;
  };
  auto leaf_work = [&](ValueId v) { return Work{0, graph.node(v).kind == OpKind::Scalar ? 0 : 1}; };
  if (leaf(root)) return sat(leaf_work(root).loads);
  std::unordered_map<ValueId, Work> work;
  for (ValueId v : inline_expr(graph, loaded, root).nodes) {  // topological
    const Node& n = graph.node(v);
    auto of = [&](ValueId in) { return leaf(in) ? leaf_work(in) : work.at(in); };
    Work w;
    if (n.is_view()) {
      w = of(n.inputs[0]);
    } else if (n.kind == OpKind::Index) {
      // The index is read for the address (3 times: the negative wrap) and
      // the mask (twice: the bounds) of every load of the gathered value,
      // and 4 times by the bounds check.
      const Work x = of(n.inputs[0]), idx = of(n.inputs[1]);
      const int64_t reads = sat(mul(5, std::max<int64_t>(1, x.loads)) + 4);
      w.ops = sat(1 + x.ops + mul(reads, idx.ops));
      w.loads = sat(x.loads + mul(reads, idx.loads));
    } else {
      w.ops = 1;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const Work in = of(n.inputs[i]);
        const int64_t k = input_evaluations(n, i);
        w.ops = sat(w.ops + mul(k, in.ops));
        w.loads = sat(w.loads + mul(k, in.loads));
      }
    }
    work[v] = w;
  }
  const Work& r = work.at(root);
  return sat(r.ops + r.loads);
}

}  // namespace tilefuse
