#include "tir/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "tir/functor.h"
#include "tir/printer.h"
#include "tir/structural.h"

namespace tilefuse::tir {

namespace {

std::string dt(DType d) {
  return std::string(dtype_name(d));
}
bool is_index_type(DType d) {
  return d == DType::I32 || d == DType::I64;
}
bool is_int_type(DType d) {
  return is_integral(d);
}

int count_placeholders(const std::string& s) {
  int n = 0;
  for (size_t p = s.find("{}"); p != std::string::npos; p = s.find("{}", p + 2)) ++n;
  return n;
}

// Whether a constant fits its dtype.
bool fits(DType d, int64_t v) {
  switch (d) {
    case DType::Bool:
      return v == 0 || v == 1;
    case DType::U8:
      return v >= 0 && v <= 255;
    case DType::I8:
      return v >= -128 && v <= 127;
    case DType::I32:
      return v >= INT32_MIN && v <= INT32_MAX;
    default:
      return true;
  }
}

// A statement's first printed line, unindented: how errors name it.
// (Printed only on error: printing every statement up front would be
// quadratic.)
std::string first_line(const StmtNode* s) {
  std::string text = print(Stmt(s));
  std::string line = text.substr(0, text.find('\n'));
  size_t first = line.find_first_not_of(' ');
  return first == std::string::npos ? "" : line.substr(first);
}

// A visitor that knows the statement it is in (current_), for errors.
class StmtVisitor : public IRVisitor {
 public:
  void visit_stmt(const Stmt& s) override {
    const StmtNode* saved = current_;
    current_ = s.get();
    IRVisitor::visit_stmt(s);
    current_ = saved;
  }

 protected:
  const StmtNode* current_ = nullptr;
};

class Verifier final : public StmtVisitor {
 public:
  explicit Verifier(const VerifyOptions& options) : options_(options) {}
  std::vector<std::string> errors;

  void kernel(const Kernel& k) {
    where_ = "kernel " + k.name;
    // Scalar params first: buffer shapes and strides may use them (symbolic
    // dims, strides passed at run time), whatever the params' order.
    for (const KernelParam& p : k.params) {
      if (p.is_buffer()) continue;
      if (!p.var.defined())
        error("a parameter is neither a var nor a buffer");
      else
        bind(p.var);
    }
    for (const KernelParam& p : k.params) {
      if (!p.is_buffer()) continue;
      if (p.buffer.scope() != MemScope::Global)
        error("parameter " + p.buffer.name() + " must be a global buffer, not " +
              std::string(mem_scope_name(p.buffer.scope())));
      declare(p.buffer);
    }
    for (const GridDim& g : k.grid) {
      index_expr(g.extent, "grid extent");
      if (g.var.dtype() != g.extent.dtype())
        error("program id " + g.var.name() + " has dtype " + dt(g.var.dtype()) +
              " but its extent " + dt(g.extent.dtype()));
      bind(g.var);
    }
    if (!k.body.defined()) {
      error("the kernel has no body");
      return;
    }
    visit_stmt(k.body);
  }

 protected:
  // ---- expressions ----
  void visit(const IntImmNode* op) override {
    if (is_floating(op->dtype))
      error_in(op, "an integer constant has float dtype " + dt(op->dtype));
    if (!fits(op->dtype, op->value)) error_in(op, "constant does not fit " + dt(op->dtype));
  }
  void visit(const FloatImmNode* op) override {
    if (!is_floating(op->dtype)) error_in(op, "a float constant has dtype " + dt(op->dtype));
  }
  void visit(const VarNode* op) override {
    if (!bound_.count(op)) error("use of undefined var '" + op->name + "'");
  }
#define TF_TIR_BINARY(name, sym, prec)        \
  void visit(const name##Node* op) override { \
    binary(op, sym, op->a, op->b);            \
    IRVisitor::visit(op);                     \
  }
  TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_BINARY)
#undef TF_TIR_BINARY
  void visit(const NotNode* op) override {
    require_bool(op->a, "the operand of !");
    IRVisitor::visit(op);
  }
  void visit(const SelectNode* op) override {
    require_bool(op->cond, "a select condition");
    if (op->true_value.dtype() != op->false_value.dtype())
      error_in(op, "select branches have different dtypes " + dt(op->true_value.dtype()) + " and " +
                       dt(op->false_value.dtype()));
    IRVisitor::visit(op);
  }
  void visit(const CallNode* op) override {
    std::string name(intrinsic_name(op->op));
    if (static_cast<int>(op->args.size()) != intrinsic_arity(op->op))
      error_in(op, name + " takes " + std::to_string(intrinsic_arity(op->op)) + " arguments");
    for (const Expr& a : op->args) {
      if (a.dtype() != op->dtype) error_in(op, name + " arguments have different dtypes");
    }
    if (intrinsic_float_only(op->op) && !is_floating(op->dtype))
      error_in(op, name + " needs a float argument, got " + dt(op->dtype));
    if (op->dtype == DType::Bool) error_in(op, name + " of a bool");
    IRVisitor::visit(op);
  }
  void visit(const LoadNode* op) override {
    access(op->buffer, op->indices, "load");
    if (op->mask.defined()) require_bool(op->mask, "a load mask");
    if (op->other.defined() && op->other.dtype() != op->buffer.dtype())
      error_in(op, "load 'other' has dtype " + dt(op->other.dtype()) + " but buffer " +
                       op->buffer.name() + " holds " + dt(op->buffer.dtype()));
    IRVisitor::visit(op);
  }
  void visit(const HookLoadNode* op) override {
    if (!options_.allow_hooks) error_in(op, "load_input left after inline_hooks");
    if (op->name.empty()) error("load_input without an operand name");
    for (const Expr& i : op->indices) index_expr(i, "a load_input index");
    if (op->mask.defined()) require_bool(op->mask, "a load_input mask");
    IRVisitor::visit(op);
  }

  // ---- statements ----
  void visit(const ForNode* op) override {
    visit_expr(op->min);
    visit_expr(op->extent);
    if (!is_int_type(op->var.dtype()))
      error("loop var " + op->var.name() + " has non-integer dtype " + dt(op->var.dtype()));
    if (op->min.dtype() != op->var.dtype() || op->extent.dtype() != op->var.dtype())
      error("loop var, min and extent have dtypes " + dt(op->var.dtype()) + ", " +
            dt(op->min.dtype()) + ", " + dt(op->extent.dtype()));
    if (op->for_kind == ForKind::Pipelined && op->num_stages < 1)
      error("a pipelined loop needs num_stages >= 1");
    if (op->for_kind != ForKind::Pipelined && op->num_stages != 0)
      error("num_stages is only for pipelined loops");
    bind(op->var);
    if (op->for_kind == ForKind::Parallel) ++parallel_depth_;
    visit_stmt(op->body);
    if (op->for_kind == ForKind::Parallel) --parallel_depth_;
    unbind(op->var);
  }
  void visit(const IfThenElseNode* op) override {
    require_bool(op->cond, "an if condition");
    IRVisitor::visit(op);
  }
  void visit(const LetStmtNode* op) override {
    visit_expr(op->value);
    if (op->var.dtype() != op->value.dtype())
      error("let var " + op->var.name() + " has dtype " + dt(op->var.dtype()) + " but its value " +
            dt(op->value.dtype()));
    bind(op->var);
    visit_stmt(op->body);
    unbind(op->var);
  }
  void visit(const StoreNode* op) override {
    access(op->buffer, op->indices, "store");
    write(op->buffer);
    value_of(op->buffer, op->value);
    if (op->mask.defined()) require_bool(op->mask, "a store mask");
    IRVisitor::visit(op);
  }
  void visit(const HookStoreNode* op) override {
    if (!options_.allow_hooks) error("store_output left after inline_hooks");
    if (op->name.empty()) error("store_output without an output name");
    for (const Expr& i : op->indices) index_expr(i, "a store_output index");
    if (op->mask.defined()) require_bool(op->mask, "a store_output mask");
    IRVisitor::visit(op);
  }
  void visit(const CopyNode* op) override {
    for (const Expr& e : op->extents) index_expr(e, "a copy extent");
    for (const Var& v : op->vars) {
      if (!is_index_type(v.dtype())) error("copy var " + v.name() + " must be i32 or i64");
      bind(v);
    }
    // The points of a copy are spread over threads like a parallel loop's,
    // so fragments may be read and written element-wise inside it.
    ++parallel_depth_;
    tile_access(op->dst, op->dst_indices, "copy");
    write(op->dst);
    for (const Expr& i : op->dst_indices) visit_expr(i);
    value_of(op->dst, op->value);
    visit_expr(op->value);
    --parallel_depth_;
    for (const Var& v : op->vars) unbind(v);
  }
  void visit(const GemmNode* op) override {
    const TileRef* tiles[] = {&op->a, &op->b, &op->c};
    const char* names[] = {"A", "B", "C"};
    bool ok = true;
    for (int t = 0; t < 3; ++t) {
      const Buffer& b = tiles[t]->buffer;
      if (!in_scope(b)) {
        ok = false;
        continue;
      }
      if (b.scope() == MemScope::Global)
        error(std::string("gemm operand ") + names[t] + " (" + b.name() +
              ") must be shared, fragment or local, not global");
      if (b.rank() < 2) {
        error(std::string("gemm operand ") + names[t] + " (" + b.name() + ") has rank " +
              std::to_string(b.rank()) + "; a tile needs 2 dims");
        ok = false;
      } else if (static_cast<int>(tiles[t]->prefix.size()) != b.rank() - 2) {
        error(std::string("gemm operand ") + names[t] + " (" + b.name() + ", rank " +
              std::to_string(b.rank()) + ") needs " + std::to_string(b.rank() - 2) +
              " leading indices, got " + std::to_string(tiles[t]->prefix.size()));
        ok = false;
      }
      for (const Expr& i : tiles[t]->prefix) index_expr(i, "a gemm tile index");
    }
    if (!ok) return;
    write(op->c.buffer);
    DType a_dt = op->a.buffer.dtype(), b_dt = op->b.buffer.dtype(), c_dt = op->c.buffer.dtype();
    if (a_dt != b_dt) error("gemm A and B have different dtypes " + dt(a_dt) + " and " + dt(b_dt));
    if (is_floating(a_dt) != is_floating(c_dt))
      error("gemm accumulator " + op->c.buffer.name() + " is " + dt(c_dt) + " for " + dt(a_dt) +
            " operands");
    auto dim = [](const Buffer& b, int from_end) { return b->shape[b.rank() - from_end]; };
    Expr m_a = op->trans_a ? dim(op->a.buffer, 1) : dim(op->a.buffer, 2);
    Expr k_a = op->trans_a ? dim(op->a.buffer, 2) : dim(op->a.buffer, 1);
    Expr k_b = op->trans_b ? dim(op->b.buffer, 1) : dim(op->b.buffer, 2);
    Expr n_b = op->trans_b ? dim(op->b.buffer, 2) : dim(op->b.buffer, 1);
    Expr m_c = dim(op->c.buffer, 2), n_c = dim(op->c.buffer, 1);
    auto same = [&](const Expr& x, const Expr& y, const char* what) {
      if (!structural_equal(x, y))
        error(std::string("gemm ") + what + " mismatch: " + print(x) + " vs " + print(y));
    };
    same(k_a, k_b, "K (A vs B)");
    same(m_a, m_c, "M (A vs C)");
    same(n_b, n_c, "N (B vs C)");
  }
  void visit(const FillNode* op) override {
    if (in_scope(op->buffer)) {
      write(op->buffer);
      value_of(op->buffer, op->value);
    }
    IRVisitor::visit(op);
  }
  void visit(const CheckNode* op) override {
    require_bool(op->cond, "a check condition");
    int holes = count_placeholders(op->message);
    if (holes != static_cast<int>(op->args.size()))
      error("check message has " + std::to_string(holes) + " {} placeholders but " +
            std::to_string(op->args.size()) + " args");
    IRVisitor::visit(op);
  }
  void visit(const BarrierNode*) override {
    if (parallel_depth_ > 0) error("barrier inside a parallel loop (threads would diverge)");
  }
  void visit(const LastArrivalNode* op) override {
    if (parallel_depth_ > 0)
      error("if_last_arrival inside a parallel loop (it arrives once per program instance)");
    visit_expr(op->count);
    if (!is_int_type(op->count.dtype()))
      error("if_last_arrival needs an integer count, got " + dt(op->count.dtype()));
    if (op->counter.scope() != MemScope::Global || op->counter.dtype() != DType::I32) {
      error("if_last_arrival needs an i32 global counter, got " + op->counter.name());
    } else {
      access(op->counter, op->indices, "if_last_arrival");
      write(op->counter);
    }
    IRVisitor::visit(op);
  }
  void visit(const AllocateNode* op) override {
    const Buffer& b = op->buffer;
    if (b.scope() == MemScope::Global)
      error("alloc of global buffer " + b.name() + " (global buffers are kernel parameters)");
    declare(b);
    visit_stmt(op->body);
    buffers_.erase(b.get());
  }

 private:
  // Errors name the statement by its first printed line.
  void error(const std::string& what) {
    errors.push_back((current_ ? first_line(current_) : where_) + ": " + what);
  }
  void error_in(const ExprNode* e, const std::string& what) {
    error("in `" + print(Expr(e)) + "`: " + what);
  }

  void bind(const Var& v) {
    if (!bound_.insert(v.get()).second)
      error("var '" + v.name() + "' is defined twice (it is already in scope)");
  }
  void unbind(const Var& v) {
    bound_.erase(v.get());
  }

  void declare(const Buffer& b) {
    for (const Expr& e : b->shape) index_expr(e, "a shape of " + b.name());
    for (const Expr& e : b->strides) index_expr(e, "a stride of " + b.name());
    if (!b->strides.empty() && b->strides.size() != b->shape.size())
      error("buffer " + b.name() + " has " + std::to_string(b->shape.size()) + " dims but " +
            std::to_string(b->strides.size()) + " strides");
    if (b->alignment < 0) error("buffer " + b.name() + " has a negative alignment");
    if (!buffers_.insert(b.get()).second)
      error("buffer '" + b.name() + "' is declared twice (it is already in scope)");
  }
  bool in_scope(const Buffer& b) {
    if (buffers_.count(b.get())) return true;
    error(b.scope() == MemScope::Global
              ? "global buffer '" + b.name() + "' is not a kernel parameter"
              : "buffer '" + b.name() + "' is used outside its alloc");
    return false;
  }
  void tile_access(const Buffer& b, const std::vector<Expr>& indices, const char* what) {
    if (!in_scope(b)) return;
    if (static_cast<int>(indices.size()) != b.rank())
      error(std::string(what) + " of " + b.name() + " has " + std::to_string(indices.size()) +
            " indices but the buffer has rank " + std::to_string(b.rank()));
    for (const Expr& i : indices) {
      if (!is_index_type(i.dtype()))
        error(std::string(what) + " index `" + print(i) + "` of " + b.name() + " is " +
              dt(i.dtype()) + ", not i32 or i64");
    }
  }
  void access(const Buffer& b, const std::vector<Expr>& indices, const char* what) {
    tile_access(b, indices, what);
    if (b.scope() == MemScope::Fragment && parallel_depth_ == 0)
      error(std::string(what) + " of fragment " + b.name() +
            " outside a parallel loop (a fragment's elements live in different threads)");
  }
  void write(const Buffer& b) {
    if (b->read_only) error("write to read-only input " + b.name());
  }
  void value_of(const Buffer& b, const Expr& value) {
    if (value.dtype() != b.dtype())
      error("value of dtype " + dt(value.dtype()) + " written to " + b.name() + " of dtype " +
            dt(b.dtype()) + " (cast it first)");
  }
  void index_expr(const Expr& e, const std::string& what) {
    visit_expr(e);
    if (!is_index_type(e.dtype())) error(what + " is " + dt(e.dtype()) + ", not i32 or i64");
  }
  void require_bool(const Expr& e, const char* what) {
    if (e.dtype() != DType::Bool)
      error(std::string(what) + " `" + print(e) + "` is " + dt(e.dtype()) + ", not bool");
  }
  void binary(const ExprNode* op, const char* sym, const Expr& a, const Expr& b) {
    std::string s(sym);
    if (a.dtype() != b.dtype()) {
      error_in(op, "operands of " + s + " have different dtypes " + dt(a.dtype()) + " and " +
                       dt(b.dtype()));
      return;
    }
    bool logical = op->kind == ExprKind::And || op->kind == ExprKind::Or;
    bool compare = is_comparison(op->kind);
    if (logical && a.dtype() != DType::Bool)
      error_in(op, "operands of " + s + " must be bool, not " + dt(a.dtype()));
    if (!logical && !compare && a.dtype() == DType::Bool)
      error_in(op, "arithmetic " + s + " on bool");
  }

  VerifyOptions options_;
  std::string where_;  // for errors outside any statement
  std::unordered_set<const VarNode*> bound_;
  std::unordered_set<const BufferNode*> buffers_;
  int parallel_depth_ = 0;
};

// ---- the kernel plan (tir/plan.h) ------------------------------------------

// The plan's invariants, which the backend passes establish and the code
// generator relies on; each checked only where its plan part exists (a CPU
// kernel, or one before the backend passes, has none).
class PlanVerifier final : public StmtVisitor {
 public:
  explicit PlanVerifier(const Kernel& k) : kernel_(k), launch_(k.launch) {}
  std::vector<std::string> errors;

  void run() {
    scan();
    if (launch_.split_k_cluster) {
      // (split_k_cluster, LaunchPlan: the grid's last dim is the split)
      if (launch_.cluster_size < 2 || launch_.cluster_size > LaunchPlan::kMaxClusterBlocks)
        error(fmt::format("kernel plan: split_k_cluster with a cluster of {} blocks (2 to {})",
                          launch_.cluster_size, LaunchPlan::kMaxClusterBlocks));
      const int64_t* last =
          kernel_.grid.empty() ? nullptr : as_const_int(kernel_.grid.back().extent);
      if (!last || *last != launch_.cluster_size)
        error("kernel plan: split_k_cluster where the grid's last dim is not the cluster's split");
      if (launch_.workspace_fragment_order < 0)
        error("kernel plan: split_k_cluster without a fragment-order workspace");
    } else if (launch_.cluster_size != 1 && launch_.cluster_size != 2) {
      error(fmt::format("kernel plan: a cluster of {} blocks (1 or 2)", launch_.cluster_size));
    }
    if (launch_.split_k_cluster && launch_.persistent)
      error(
          "kernel plan: split_k_cluster in a persistent kernel (a tile's K splits meet in one "
          "cluster, not in turn)");
    if (launch_.cluster_size > 1 && !launch_.split_k_cluster &&
        (launch_.stream_k_units != 0 || launch_.consumer_teams != 1))
      error("kernel plan: a multicast cluster in a stream-K or ping-pong kernel (their blocks' "
            "work does not pair up)");
    if (launch_.stream_k_units != 0) {
      // (LaunchPlan::stream_k_units: the grid is the whole tiles, then the
      // pieces of each block, in one dim)
      const int64_t u = launch_.stream_k_units, dp = launch_.stream_k_dp_tiles,
                    s = launch_.stream_k_pieces;
      const int64_t* w =
          kernel_.grid.size() == 1 ? as_const_int(kernel_.grid[0].extent) : nullptr;
      if (!launch_.persistent || launch_.consumer_teams != 1)
        error("kernel plan: stream-K in a kernel that is not persistent with one consumer team");
      else if (u < 1 || s < 1 || dp < 0 || dp % u != 0 || !w || *w != dp + u * s)
        error(fmt::format(
            "kernel plan: stream-K over {} blocks with {} whole tiles and {} pieces a block does "
            "not cover a one-dim grid of as many work items",
            u, dp, s));
    }
    // (LaunchPlan::ring_fold_at: only a persistent kernel counts its ring
    // over tiles)
    if (launch_.ring_fold_at < 0)
      error(fmt::format("kernel plan: ring_fold_at {} (0: never)", launch_.ring_fold_at));
    else if (launch_.ring_fold_at > 0 && !launch_.persistent)
      error(fmt::format("kernel plan: ring_fold_at {} in a kernel that is not persistent",
                        launch_.ring_fold_at));
    if (launch_.consumer_teams != 1 && launch_.consumer_teams != 2)
      error(fmt::format("kernel plan: {} consumer teams (1 or 2)", launch_.consumer_teams));
    if (launch_.consumer_teams > 1 &&
        (!launch_.persistent || launch_.consumer_threads <= 0 ||
         launch_.num_threads <= launch_.consumer_teams * launch_.consumer_threads))
      error("kernel plan: consumer teams in a kernel that is not persistent and warp-specialized "
            "(with a producer after the teams)");
    const int ws = launch_.workspace_fragment_order;
    if (ws >= 0 && (static_cast<size_t>(ws) >= kernel_.params.size() ||
                    !kernel_.params[static_cast<size_t>(ws)].is_buffer()))
      error(fmt::format("kernel plan: workspace_fragment_order {} is not a buffer param", ws));
    if (const int v = launch_.workspace_vector; v != 1) {
      if (ws < 0 || static_cast<size_t>(ws) >= kernel_.params.size() ||
          !kernel_.params[static_cast<size_t>(ws)].is_buffer())
        error(fmt::format("kernel plan: workspace_vector {} without a fragment-order workspace", v));
      else if (const int64_t bytes =
                   dtype_size(kernel_.params[static_cast<size_t>(ws)].buffer.dtype());
               v * bytes != 16 || (bytes != 4 && bytes != 8))
        error(fmt::format("kernel plan: workspace_vector {} of {}-byte elements (a vector is 16 "
                          "bytes of 4- or 8-byte elements)",
                          v, bytes));
    }
    visit_stmt(kernel_.body);
  }

 protected:
  using IRVisitor::visit;
  void visit(const ForNode* op) override {
    const auto* pipe = std::get_if<PipelinePlan>(&op->plan);
    const bool ws = pipe && pipe->form == PipelineForm::WarpSpecialized;
    if (ws) warp_specialized(op, *pipe);
    if (pipe && !pipe->barrier_after && !ws)
      error("a pipelined loop without the barrier after it that is not a warp-specialized loop");
    if (pipe && pipe->single_issuer && !ws)
      error("a pipelined loop with a single issuer that is not a warp-specialized loop");
    if (const auto* e = std::get_if<EpiloguePlan>(&op->plan)) {
      if (e->form == EpilogueForm::Staged)
        staged(op, *e);
      else if (e->stmatrix || e->contiguous_chunks || e->chunk_mask_varies || e->pair_cast ||
               e->tma_store >= 0 || e->team_stride > 0 || e->per_warp || e->slab_buffers != 0)
        error(fmt::format("a {} epilogue with a staged epilogue's field (stmatrix, "
                          "contiguous_chunks, chunk_mask_varies, pair_cast, tma_store, "
                          "team_stride, per_warp, slab_buffers)",
                          epilogue_form_name(e->form)));
      if (e->form == EpilogueForm::FragmentOrder && launch_.workspace_fragment_order < 0)
        error("a fragment_order epilogue in a kernel without a fragment-order workspace");
    }
    if (pipe) loops_.push_back(op);
    IRVisitor::visit(op);
    if (pipe) loops_.pop_back();
    after_ws_ = after_ws_ || ws;
  }
  void visit(const CopyNode* op) override {
    if (op->plan) copy(op, *op->plan);
    IRVisitor::visit(op);
  }
  void visit(const AllocateNode* op) override {
    const SharedPlan* p = laid_out(op);
    if (p) shared(op, *p);
    if (p) live_.push_back(op);
    IRVisitor::visit(op);
    if (p) live_.pop_back();
  }
  void visit(const BarrierNode* op) override {
    if (op->barrier_kind == BarrierKind::Consumers && !after_ws_)
      error(
          "a consumers barrier before any warp-specialized loop (only after one do the "
          "consumer warpgroups run alone)");
  }

 private:
  void error(const std::string& what) { errors.push_back(first_line(current_) + ": " + what); }

  // A shared buffer's plan once layout placed it (offset set; before, the
  // plan holds only lower_gemm's swizzle).
  static const SharedPlan* laid_out(const AllocateNode* a) {
    const SharedPlan* p = a ? std::get_if<SharedPlan>(&a->plan) : nullptr;
    return p && p->offset >= 0 ? p : nullptr;
  }
  const AllocateNode* alloc_of(const Buffer& b) const {
    auto it = allocs_.find(b.get());
    return it == allocs_.end() ? nullptr : it->second;
  }
  static std::string range(int64_t offset, int64_t bytes) {
    return fmt::format("[{}, {})", offset, offset + bytes);
  }

  // What the walk needs ahead: the allocations, the tiles that must be
  // 1024-byte aligned, the loops at the top level, the first mbarriers.
  void scan() {
    struct Scan : IRVisitor {
      std::unordered_map<const BufferNode*, const AllocateNode*> allocs;
      std::vector<const GemmNode*> gemms;
      std::vector<const CopyNode*> tma;
      int64_t mbarriers = -1, mbarrier_end = 0;
      using IRVisitor::visit;
      void visit(const AllocateNode* op) override {
        allocs[op->buffer.get()] = op;
        IRVisitor::visit(op);
      }
      void visit(const GemmNode* op) override { gemms.push_back(op); }
      void visit(const CopyNode* op) override {
        if (op->plan && op->plan->mechanism == CopyMechanism::Tma) tma.push_back(op);
        IRVisitor::visit(op);
      }
      void visit(const ForNode* op) override {
        const auto* p = std::get_if<PipelinePlan>(&op->plan);
        if (p && p->form == PipelineForm::WarpSpecialized && p->mbarrier_offset >= 0) {
          if (mbarriers < 0 || p->mbarrier_offset < mbarriers) mbarriers = p->mbarrier_offset;
          // `full` and `empty` a stage (layout; consumer teams' `order` pair below).
          mbarrier_end = std::max(mbarrier_end, p->mbarrier_offset + 16 * int64_t{p->stages});
        }
        IRVisitor::visit(op);
      }
    } scan;
    scan.visit_stmt(kernel_.body);
    allocs_ = std::move(scan.allocs);
    mbarriers_ = scan.mbarriers;
    mbarrier_end_ = scan.mbarrier_end + (scan.mbarrier_end > 0 && launch_.consumer_teams > 1 ? 16 : 0);
    for (const GemmNode* g : scan.gemms) {
      const AllocateNode* c = alloc_of(g->c.buffer);
      const auto* f = c ? std::get_if<FragmentPlan>(&c->plan) : nullptr;
      if (f && f->family == MmaFamily::Wgmma) {
        aligned_[g->a.buffer.get()] = "a wgmma operand";
        aligned_[g->b.buffer.get()] = "a wgmma operand";
      }
      // (two chains: N halves of a 64-row warpgroup, WgmmaTile's CHAINS)
      if (f && f->chains != 1 &&
          (f->chains != 2 || f->family != MmaFamily::Wgmma || f->warps_m == 0 ||
           f->warps_n == 0 || f->block_m / f->warps_m != 64 || f->block_n / f->warps_n % 128 != 0))
        error(fmt::format("fragment {}: {} chains (1, or 2 on a wgmma tile of 64 rows a "
                          "warpgroup and N halves of 64 columns or more)",
                          g->c.buffer.name(), f->chains));
    }
    for (const CopyNode* c : scan.tma) {
      const int m = c->plan->tensor_map;
      if (m >= 0 && m < static_cast<int>(launch_.tensor_maps.size()) &&
          launch_.tensor_maps[m].swizzle_bytes != 0)
        aligned_.emplace(c->dst.get(), "a TMA-swizzled tile");
    }
    bool seen_ws = false;
    std::function<void(const Stmt&)> top = [&](const Stmt& s) {
      if (const SeqNode* q = s.as<SeqNode>()) {
        for (const Stmt& t : q->stmts) top(t);
      } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
        top(l->body);
      } else if (const AllocateNode* a = s.as<AllocateNode>()) {
        top(a->body);
      } else {
        const ForNode* f = s.as<ForNode>();
        if (f) top_level_.insert(f);
        const auto* pipe = f ? std::get_if<PipelinePlan>(&f->plan) : nullptr;
        if (pipe && pipe->form == PipelineForm::WarpSpecialized) seen_ws = true;
        if (seen_ws) return;
        // (before the warp-specialized loop: a copy or an index check here is
        // a persistent producer's prologue, which takes all its threads)
        struct Prologue : IRVisitor {
          bool found = false;
          using IRVisitor::visit;
          void visit(const CopyNode*) override { found = true; }
          void visit(const CheckNode*) override { found = true; }
        } p;
        p.visit_stmt(s);
        producer_prologue_ = producer_prologue_ || p.found;
      }
    };
    top(kernel_.body);
  }

  void copy(const CopyNode* op, const CopyPlan& p) {
    if (p.vector_load.defined()) {
      bool found = false;
      for (const LoadNode* l : loads_in(op->value)) found = found || l == p.vector_load.get();
      if (!found)
        error("copy plan: vector_load `" + print(p.vector_load) +
              "` is not a load node of the copy's value");
      const int64_t elem = dtype_size(p.vector_load.dtype());
      if (p.width % elem != 0 || p.width / elem < 2)
        error(fmt::format(
            "copy plan: a vector load of width {} reads {}-byte elements (its width must be two "
            "or more of them)",
            p.width, elem));
    }
    if (p.mechanism == CopyMechanism::GemmPack) {
      // The gemm reads the source rows: the copy must be one per row.
      const auto* load = op->value.as<LoadNode>();
      if (!load || load->other.defined() || load->dtype != op->dst.dtype() ||
          op->dst.rank() != 2 || op->vars.size() != 2)
        error("copy plan: the gemm_pack copy into " + op->dst.name() +
              " is not a 2-D copy of a plain load of its dtype (the gemm packs from the "
              "source rows)");
    }
    if (p.mechanism == CopyMechanism::CpAsync && p.width != 4 && p.width != 8 && p.width != 16)
      error(fmt::format("copy plan: cp_async of width {} (cp.async copies 4, 8 or 16 bytes)",
                        p.width));
    if (p.mechanism == CopyMechanism::Tma) {
      const auto* loop = loops_.empty() ? nullptr : &std::get<PipelinePlan>(loops_.back()->plan);
      if (!loop || loop->form != PipelineForm::WarpSpecialized)
        error(
            "copy plan: a tma copy outside a warp-specialized pipelined loop (only its producer "
            "warpgroup issues TMA)");
      const int maps = static_cast<int>(launch_.tensor_maps.size());
      if (p.tensor_map < 0 || p.tensor_map >= maps)
        error(fmt::format("copy plan: tma map {} is not one of the kernel's {} tensor maps",
                          p.tensor_map, maps));
    }
    if (p.multicast) {
      const int cluster = launch_.cluster_size;
      if (p.mechanism != CopyMechanism::Tma || p.row_gather)
        error("copy plan: multicast on a copy that is not a tile TMA copy");
      else if (cluster < 2 || launch_.split_k_cluster)
        error("copy plan: multicast in a kernel without a multicast cluster");
      else if (p.boxes.size() % static_cast<size_t>(cluster) != 0)
        error(fmt::format("copy plan: multicast of {} boxes over a cluster of {} blocks",
                          p.boxes.size(), cluster));
    }
    // The by-repeats policy compares the hoisted 16-byte sources of a warp's
    // lanes (match.any), so it needs them: a hoisted cp.async of 16 bytes
    // that may go through L1.
    if (p.cache_by_repeats &&
        (p.mechanism != CopyMechanism::CpAsync || !p.hoisted || !p.cache_all || p.width != 16))
      error("copy plan: l1_by_repeats on a copy that is not a hoisted 16-byte cp.async with "
            "cache_all");
    // (the printer gives the qualifier to the fragment loads alone)
    if (p.no_allocate && p.mechanism != CopyMechanism::Fragment)
      error("copy plan: no_allocate on a copy that is not a fragment copy");
    if (p.word_loads && p.mechanism != CopyMechanism::Fragment)
      error("copy plan: word_loads on a copy that is not a fragment copy");
    if (p.l2_prefetch != 0 && (p.mechanism != CopyMechanism::Fragment || p.l2_prefetch != 256))
      error(fmt::format("copy plan: l2_prefetch {} (0, or 256 on a fragment copy)", p.l2_prefetch));
    // (row checks run where the MMA threads compute a fragment copy's rows)
    if (!p.row_checks.empty()) {
      if (p.mechanism != CopyMechanism::Fragment)
        error("copy plan: row_checks on a copy that is not a fragment copy");
      for (const Stmt& k : p.row_checks)
        if (!k.as<CheckNode>()) error("copy plan: a row check that is not a check");
    }
    if (p.next_tile) {
      if (!launch_.persistent)
        error("copy plan: next_tile in a kernel that is not persistent (no next tile)");
      else if (p.mechanism != CopyMechanism::Register || p.register_slots < 1 ||
               p.vector_load.defined())
        error("copy plan: next_tile on a copy that is not register-staged in scalar slots");
      else if (!loops_.empty())
        error("copy plan: next_tile inside a pipelined loop (a prologue copy's plan)");
    }
    // The ring depth of the tile a pipelined loop's copy fills: its stages.
    if (!loops_.empty()) {
      const ForNode* loop = loops_.back();
      const PipelinePlan& lp = std::get<PipelinePlan>(loop->plan);
      const SharedPlan* sp = laid_out(alloc_of(op->dst));
      const bool in_registers = op->plan && op->plan->mechanism == CopyMechanism::Fragment;
      if (sp && sp->stages == 0 && !in_registers)
        error(fmt::format("shared buffer {} has no stages (a fragment copy's tile) but a {} "
                          "copy fills it",
                          op->dst.name(),
                          op->plan ? copy_mechanism_name(op->plan->mechanism) : "planless"));
      if (lp.form != PipelineForm::InOrder && sp && sp->stages != lp.stages && sp->stages != 0)
        error(fmt::format(
            "shared buffer {} has a ring depth of {} but the pipelined loop {} that fills it has "
            "{} stages",
            op->dst.name(), sp->stages, loop->var.name(), lp.stages));
    }
  }

  void shared(const AllocateNode* op, const SharedPlan& p) {
    const Buffer& b = op->buffer;
    int64_t tile = dtype_size(b.dtype());
    bool constant = true;
    for (const Expr& e : b->shape) {
      const int64_t* c = as_const_int(e);
      if (c) tile *= *c;
      constant = constant && c;
    }
    if (constant && p.bytes != tile * p.stages)
      error(fmt::format("shared buffer {} has {} bytes for {} stages of {} bytes", b.name(),
                        p.bytes, p.stages, tile));
    if (auto it = aligned_.find(b.get());
        it != aligned_.end() && (p.offset % 1024 != 0 || (constant && tile % 1024 != 0)))
      error(fmt::format(
          "shared buffer {} is {} but its stages are not 1024-byte aligned (offset {}, stages of "
          "{} bytes): the 128-byte swizzle is a function of address bits [4, 10)",
          b.name(), it->second, p.offset, tile));
    if (launch_.defined && p.offset + p.bytes > launch_.dynamic_shared_bytes)
      error(fmt::format("shared buffer {} at {} exceeds the kernel's {} shared bytes", b.name(),
                        range(p.offset, p.bytes), launch_.dynamic_shared_bytes));
    for (const AllocateNode* other : live_) {
      const SharedPlan& q = std::get<SharedPlan>(other->plan);
      if (p.offset < q.offset + q.bytes && q.offset < p.offset + p.bytes)
        error(fmt::format("shared buffer {} at {} overlaps {} at {}", b.name(),
                          range(p.offset, p.bytes), other->buffer.name(),
                          range(q.offset, q.bytes)));
    }
    if (overlaps_timeline_slot(p.offset, p.bytes))
      error(fmt::format("shared buffer {} at {} overlaps the block timeline's slot at {}", b.name(),
                        range(p.offset, p.bytes),
                        range(launch_.timeline_slot, LaunchPlan::kTimelineSlotBytes)));
  }

  // Whether [offset, offset + bytes) meets the block timeline's slot.
  bool overlaps_timeline_slot(int64_t offset, int64_t bytes) const {
    const int64_t slot = launch_.timeline_slot;
    return launch_.defined && launch_.block_timeline() && bytes > 0 &&
           offset < slot + LaunchPlan::kTimelineSlotBytes && slot < offset + bytes;
  }

  // The split tail (PipelinePlan::split_tail): the loop's one gemm into a
  // wgmma accumulator of two chains, 64 rows a warpgroup; fewer tail k-tiles
  // than the loop has (and, with register_a, no more than its loads lead).
  void split_tail(const ForNode* op, const PipelinePlan& p, const std::string& loop,
                  const int64_t* trip) {
    if (p.split_tail < 0) error(fmt::format("{}: split_tail {} (0: off)", loop, p.split_tail));
    if (p.split_tail <= 0) return;
    if (!trip || p.split_tail >= *trip)
      error(fmt::format("{}: split_tail {} needs a constant trip count above it", loop,
                        p.split_tail));
    if (p.split_tail >= p.stages)
      error(fmt::format("{}: split_tail {} in a ring of {} stages (the tail's last stage is "
                        "refilled only once the stage before the tail is released)",
                        loop, p.split_tail, p.stages));
    if (p.register_a_ahead > 0 && p.split_tail > p.register_a_ahead)
      error(fmt::format("{}: split_tail {} past register_a's lead of {} k-tiles", loop,
                        p.split_tail, p.register_a_ahead));
    if (launch_.consumer_teams > 1)
      error(fmt::format("{}: split_tail in a kernel of {} consumer teams", loop,
                        launch_.consumer_teams));
    struct Gemms : IRVisitor {
      std::vector<const GemmNode*> all;
      using IRVisitor::visit;
      void visit(const GemmNode* g) override { all.push_back(g); }
    } gemms;
    gemms.visit_stmt(op->body);
    const AllocateNode* c = gemms.all.size() == 1 ? alloc_of(gemms.all[0]->c.buffer) : nullptr;
    const auto* f = c ? std::get_if<FragmentPlan>(&c->plan) : nullptr;
    if (!f || f->family != MmaFamily::Wgmma || f->chains != 2 || f->warps_m == 0 ||
        f->warps_n == 0 || f->block_m / f->warps_m != 64 || f->block_n / f->warps_n % 128 != 0)
      error(fmt::format("{}: split_tail without one gemm into a wgmma accumulator of two chains "
                        "and 64 rows a warpgroup (N halves of 64 columns or more)",
                        loop));
  }

  void warp_specialized(const ForNode* op, const PipelinePlan& p) {
    const std::string loop = "warp-specialized loop " + op->var.name();
    const int teams = launch_.consumer_teams;
    if (launch_.defined && launch_.num_threads != p.producer_threads + teams * p.consumer_threads)
      error(fmt::format("{}: the launch has {} threads, not its producer's {} + consumers' {}{}",
                        loop, launch_.num_threads, p.producer_threads, p.consumer_threads,
                        teams > 1 ? fmt::format(" x {} teams", teams) : ""));
    if (launch_.defined && launch_.consumer_threads != p.consumer_threads)
      error(fmt::format("{}: the launch has {} consumer threads, the loop {}", loop,
                        launch_.consumer_threads, p.consumer_threads));
    if (!top_level_.count(op))
      error(loop +
            " is not at the kernel's top level (the producer/consumer split runs it once per "
            "block: only sequences, lets and allocations may enclose it)");
    if (p.register_a_ahead < 0 || p.register_a_ahead >= kRegisterASlots)
      error(fmt::format("{}: register_a {} (0, or 1 to {} k-tiles of A fragment loads in flight)",
                        loop, p.register_a_ahead, kRegisterASlots - 1));
    {
      // (register_a: the fragment copy is the A operand's, the trip count a
      // constant multiple of the ring; a fragment copy only with it)
      struct Copies : IRVisitor {
        int fragment = 0;
        using IRVisitor::visit;
        void visit(const CopyNode* c) override {
          if (c->plan && c->plan->mechanism == CopyMechanism::Fragment) {
            ++fragment;
            if (!c->plan->hoisted || c->plan->width != 16 || c->plan->iteration_mask.defined())
              bad = c->dst.name();
          }
        }
        std::string bad;
      } copies;
      copies.visit_stmt(op->body);
      if ((p.register_a_ahead > 0) != (copies.fragment == 1))
        error(fmt::format("{}: register_a {} with {} fragment copies (one with it, none without)",
                          loop, p.register_a_ahead, copies.fragment));
      if (!copies.bad.empty())
        error(fmt::format("{}: fragment copy into {} is not a hoisted 16-byte copy without a "
                          "per-iteration mask",
                          loop, copies.bad));
      // (B's TMA copies read K in the fragments' order: the 5-D view)
      struct Tma : IRVisitor {
        std::vector<const CopyNode*> all;
        using IRVisitor::visit;
        void visit(const CopyNode* c) override {
          if (c->plan && c->plan->mechanism == CopyMechanism::Tma) all.push_back(c);
        }
      } tma;
      if (p.register_a_ahead > 0) {
        tma.visit_stmt(op->body);
        for (const CopyNode* c : tma.all) {
          const int map = c->plan->tensor_map;
          const bool five = map >= 0 && map < static_cast<int>(launch_.tensor_maps.size()) &&
                            launch_.tensor_maps[map].box == std::vector<int>{64, 2, 4, 4, 2};
          if (launch_.defined && !five)
            error(fmt::format("{}: register_a, but the TMA copy into {} does not read K in the "
                              "fragments' order (a 5-D map of box [64, 2, 4, 4, 2])",
                              loop, c->dst.name()));
        }
      }
      const int64_t* trip = as_const_int(op->extent);
      if (p.register_a_ahead > 0 && (!trip || *trip % kRegisterASlots != 0))
        error(fmt::format("{}: register_a with a trip count that is not a constant multiple of {}",
                          loop, kRegisterASlots));
      split_tail(op, p, loop, trip);
    }
    struct Copies : IRVisitor {
      std::vector<const CopyNode*> all;
      using IRVisitor::visit;
      void visit(const CopyNode* c) override { all.push_back(c); }
    } copies;
    if (p.single_issuer || !p.consumer_fence) copies.visit_stmt(op->body);
    if (!p.consumer_fence) {
      // (no fence.proxy.async before wgmma: nothing writes the ring through
      // the generic proxy)
      for (const CopyNode* c : copies.all)
        if (!c->plan || (c->plan->mechanism != CopyMechanism::Fragment &&
                         c->plan->mechanism != CopyMechanism::Tma))
          error(fmt::format("{}: consumer_fence=0, but its copy into {} is not a TMA copy", loop,
                            c->dst.name()));
    }
    if (p.single_issuer) {
      // (producer thread 0 alone issues the ring's copies: TMA boxes of an
      // affine tile, no per-thread row gather, no cp.async)
      for (const CopyNode* c : copies.all)
        if (!c->plan || (c->plan->mechanism != CopyMechanism::Fragment &&
                         (c->plan->mechanism != CopyMechanism::Tma || c->plan->row_gather)))
          error(fmt::format("{}: single_issuer, but its copy into {} is not an affine TMA copy",
                            loop, c->dst.name()));
      if (copies.all.empty()) error(loop + ": single_issuer with no copies");
      if (launch_.defined && launch_.persistent && producer_prologue_)
        error(loop + ": single_issuer in a persistent kernel whose producer has a prologue (copies "
                     "or index checks before the loop, which every producer thread runs)");
    }
    if (p.mbarrier_offset < 0) return;
    const int64_t bytes = 16 * int64_t{p.stages};  // a full and an empty mbarrier per stage
    if (launch_.defined && p.mbarrier_offset + bytes > launch_.dynamic_shared_bytes)
      error(fmt::format("{}: its mbarriers at {} exceed the kernel's {} shared bytes", loop,
                        range(p.mbarrier_offset, bytes), launch_.dynamic_shared_bytes));
    for (const AllocateNode* other : live_) {
      const SharedPlan& q = std::get<SharedPlan>(other->plan);
      if (p.mbarrier_offset < q.offset + q.bytes && q.offset < p.mbarrier_offset + bytes)
        error(fmt::format("{}: its mbarriers at {} overlap shared buffer {} at {}", loop,
                          range(p.mbarrier_offset, bytes), other->buffer.name(),
                          range(q.offset, q.bytes)));
    }
    if (overlaps_timeline_slot(p.mbarrier_offset, bytes))
      error(fmt::format("{}: its mbarriers at {} overlap the block timeline's slot at {}", loop,
                        range(p.mbarrier_offset, bytes),
                        range(launch_.timeline_slot, LaunchPlan::kTimelineSlotBytes)));
  }

  // A staged epilogue's [BLOCK_M][pitch] tile sits at shared offset 0,
  // below the mbarriers (else within the kernel's shared bytes).
  void staged(const ForNode* op, const EpiloguePlan& e) {
    if (!launch_.defined) return;
    struct Store : IRVisitor {
      const StoreNode* global = nullptr;
      using IRVisitor::visit;
      void visit(const StoreNode* s) override {
        if (!global && s->buffer.scope() == MemScope::Global) global = s;
      }
    } store;
    store.visit_stmt(op->body);
    const int64_t* rows = as_const_int(op->extent);
    if (!store.global || !rows) {
      error("a staged epilogue without a global store or a constant extent");
      return;
    }
    const DType dt = store.global->buffer.dtype();
    // A TMA-stored tile: stmatrix'd into the map's swizzled boxes, in a
    // persistent kernel's own region (1024-byte aligned), unmasked.
    if (e.tma_store >= 0) {
      if (e.tma_store >= static_cast<int>(launch_.tensor_maps.size()) ||
          launch_.tensor_maps[e.tma_store].swizzle_bytes != 128)
        error(fmt::format("a staged epilogue stored by TMA through tensor map {}, which the "
                          "launch has not (with the 128-byte swizzle)",
                          e.tma_store));
      // (A whole tile only in a persistent kernel's own region; per-warp
      // slabs in any kernel, the box one slab.)
      // (Masked only by the output's bounds, which TMA clips at: each
      // term `x < dim`, the epilogue pass having proved x the index.)
      std::function<bool(const Expr&)> bounds = [&](const Expr& m) {
        if (const AndNode* a = m.as<AndNode>()) return bounds(a->a) && bounds(a->b);
        const LTNode* lt = m.as<LTNode>();
        const int64_t* c = lt ? as_const_int(lt->b) : nullptr;
        if (!c) return false;
        for (const Expr& d : store.global->buffer->shape)
          if (const int64_t* e = as_const_int(d); e && *e == *c) return true;
        return false;
      };
      if (!e.stmatrix || (!e.per_warp && !launch_.persistent) || e.offset % 1024 != 0 ||
          e.team_stride % 1024 != 0 ||
          (store.global->mask.defined() && !bounds(store.global->mask)))
        error("a staged epilogue stored by TMA that is not a stmatrix tile, masked at most by "
              "its output's bounds, in a persistent kernel's (or per-warp slabs in a) 1024-byte "
              "aligned region");
      if (e.per_warp && e.tma_store < static_cast<int>(launch_.tensor_maps.size()) &&
          launch_.tensor_maps[e.tma_store].box != std::vector<int>{64, 16})
        error(fmt::format("a per-warp staged epilogue stored by TMA through tensor map {}, whose "
                          "box is not one slab (64 columns x 16 rows)",
                          e.tma_store));
    }
    if (e.team_stride > 0 && launch_.consumer_teams < 2)
      error("a staged epilogue with a team stride in a kernel of one consumer team");
    if (e.chunk_mask_varies && !e.contiguous_chunks)
      error("a staged epilogue with chunk_mask_varies but not contiguous_chunks");
    // A pair cast converts f32 values to the 16-bit float output.
    if (e.pair_cast) {
      const CastNode* c = store.global->value.as<CastNode>();
      if (!c || c->value.dtype() != DType::F32 || (dt != DType::F16 && dt != DType::BF16))
        error(fmt::format("a staged epilogue with pair_cast whose store into {} is not a cast of "
                          "an f32 value to f16 or bf16",
                          store.global->buffer.name()));
    }
    if (!e.per_warp && e.slab_buffers != 0)
      error("a staged epilogue that is not per warp with slab_buffers");
    if (e.per_warp) {
      // Per-warp slabs: stmatrix'd 16-bit values, a buffer a MMA warp after
      // every other shared byte (mbarriers included), within the launch's.
      const int64_t mma_threads = launch_.consumer_threads > 0
                                      ? int64_t{launch_.consumer_threads} * launch_.consumer_teams
                                      : launch_.num_threads;
      const int64_t bytes = mma_threads / 32 * e.slab_buffers * kWarpSlabBytes;
      int64_t end = 0;  // of the laid-out buffers and the mbarriers
      for (const auto& [b, a] : allocs_)
        if (const auto* q = std::get_if<SharedPlan>(&a->plan)) end = std::max(end, q->offset + q->bytes);
      if (mbarrier_end_ > end) end = mbarrier_end_;
      if (!e.stmatrix || e.team_stride > 0 || e.pitch != 0 || dtype_size(dt) != 2)
        error("a per-warp staged epilogue that is not a stmatrix tile of 16-bit values (without "
              "a team stride or a pitch)");
      if (e.slab_buffers != 1 &&
          !(e.slab_buffers >= 2 && e.slab_buffers <= kMaxWarpSlabBuffers && e.tma_store >= 0))
        error(fmt::format("a per-warp staged epilogue with {} buffers a warp (1, or 2 to {} with "
                          "TMA stores)",
                          e.slab_buffers, kMaxWarpSlabBuffers));
      if (e.offset % 128 != 0 || e.offset < end ||
          e.offset + bytes > launch_.dynamic_shared_bytes)
        error(fmt::format("a per-warp staged epilogue's buffers at {} are not 128-byte aligned "
                          "after the kernel's other {} shared bytes and within its {}",
                          range(e.offset, bytes), end, launch_.dynamic_shared_bytes));
      return;
    }
    const int64_t bytes = *rows * e.pitch * dtype_size(dt);
    const int64_t room = mbarriers_ >= 0 ? mbarriers_ : launch_.dynamic_shared_bytes;
    if (bytes > room)
      error(fmt::format(
          "a staged epilogue's tile of {} bytes ({} rows of {} {}) exceeds the {} bytes below {}",
          bytes, *rows, e.pitch, dtype_name(dt), room,
          mbarriers_ >= 0 ? "the mbarriers" : "the kernel's shared bytes"));
  }

  const Kernel& kernel_;
  const LaunchPlan& launch_;
  std::unordered_map<const BufferNode*, const AllocateNode*> allocs_;
  std::unordered_map<const BufferNode*, const char*> aligned_;  // tiles 1024-byte aligned, and why
  std::unordered_set<const ForNode*> top_level_;
  bool producer_prologue_ = false;  // a copy or check before the first top-level loop
  int64_t mbarriers_ = -1;                 // the lowest mbarrier offset; -1: none
  int64_t mbarrier_end_ = 0;               // past the last mbarrier (order pair included)
  std::vector<const ForNode*> loops_;      // enclosing loops with a PipelinePlan
  std::vector<const AllocateNode*> live_;  // enclosing laid-out shared buffers
  bool after_ws_ = false;                  // a warp-specialized loop came before
};

}  // namespace

std::vector<std::string> verify_errors(const Kernel& kernel, const VerifyOptions& options) {
  Verifier v(options);
  v.kernel(kernel);
  if (kernel.body.defined()) {
    PlanVerifier p(kernel);
    p.run();
    for (std::string& e : p.errors) v.errors.push_back(std::move(e));
  }
  return std::move(v.errors);
}

void verify(const Kernel& kernel, std::string_view context, const VerifyOptions& options) {
  std::vector<std::string> errors = verify_errors(kernel, options);
  if (errors.empty()) return;
  std::string msg = "malformed Tile IR";
  if (!context.empty()) {
    msg += ' ';  // (appended piecewise: GCC 12 warns falsely on " " + s)
    msg += context;
  }
  msg += ":\n";
  for (const std::string& e : errors) {
    msg += "  ";
    msg += e;
    msg += "\n";
  }
  msg += print(kernel);
  throw InternalError(msg);
}

}  // namespace tilefuse::tir
