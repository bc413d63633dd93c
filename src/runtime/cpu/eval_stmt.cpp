// Compiled Tile IR statements of the CPU executor (see eval.h). The kind
// switch is generated from TILEFUSE_FOR_EACH_TIR_STMT.
//
// Parallel loops and copies run batched: the points of a perfect nest of
// parallel loops (or of a copy region) are enumerated kMaxLanes at a time
// and the body runs once per batch with its loop vars as lane arrays. That
// is legal because the iterations of a parallel loop are independent (a
// copy's value may not read its destination), so running statement 1 for a
// whole batch before statement 2 gives the same result. Bodies that contain
// statements with their own control flow (serial loops, allocs, tile ops)
// run one iteration at a time instead.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "reference/matmul.h"
#include "runtime/cpu/eval.h"
#include "tir/functor.h"

namespace tilefuse::runtime::cpu {

using tir::StmtKind;

namespace {

void check_stop(const Frame& f) {
  if (f.stop && f.stop->load(std::memory_order_relaxed)) throw Stopped();
}

// Evaluates `indices` for lanes where `on` holds into offsets (checked).
void offsets_of(Frame& f, const BufferView& view, const std::vector<ExprPtr>& indices, int n,
                const Lane* on, int64_t* offsets) {
  Lane idx[kMaxRank][kMaxLanes];
  const Lane* ptrs[kMaxRank];
  bool uniform[kMaxRank];
  for (size_t d = 0; d < indices.size(); ++d) {
    uniform[d] = indices[d]->eval_u(f, n, on, idx[d]);
    ptrs[d] = idx[d];
  }
  element_offsets(view, ptrs, uniform, n, on, offsets);
}

// ---- loops --------------------------------------------------------------

// A serial / unrolled / pipelined loop, or a parallel one whose body cannot
// be batched. Pipelined loops run serially: stages only overlap copies with
// compute on a GPU, which changes nothing observable.
struct ForCode final : StmtCode {
  int slot;
  DType dtype;
  ExprPtr min, extent;
  StmtPtr body;
  void run(Frame& f, int, const Lane*) const override {
    const int64_t lo = min->eval1(f).i, ext = extent->eval1(f).i;
    for (int64_t i = 0; i < ext; ++i) {
      check_stop(f);
      f.set_uniform_int(slot, wrap_int(dtype, lo + i));
      body->run(f, 1, nullptr);
    }
  }
};

// The points of a box of vars [min_d, min_d + extent_d), enumerated in
// row-major order (last var fastest) kMaxLanes at a time.
//
// When the last dim is long enough (kRowBatch), a batch never crosses a row:
// the outer vars are then uniform in the batch, so everything computed from
// them alone (a row index, a gathered row, its check and mask) is evaluated
// once per row instead of once per element.
constexpr int64_t kRowBatch = 16;

struct Nest {
  std::vector<int> slots;
  std::vector<DType> dtypes;
  std::vector<ExprPtr> mins;  // null: 0
  std::vector<ExprPtr> extents;

  template <class Body>
  void run(Frame& f, const Body& body) const {
    const size_t rank = slots.size();
    int64_t lo[kMaxRank], ext[kMaxRank], idx[kMaxRank] = {};
    int64_t total = 1;
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = mins[d] ? mins[d]->eval1(f).i : 0;
      ext[d] = extents[d]->eval1(f).i;
      if (ext[d] <= 0) return;
      total *= ext[d];
    }
    const size_t last = rank - 1;
    Lane* inner = f.lanes(slots[last]);
    f.uniform[slots[last]] = 0;
    if (ext[last] >= kRowBatch || rank == 1) {
      const int64_t rows = total / ext[last];
      for (int64_t r = 0; r < rows; ++r) {
        for (size_t d = 0; d < last; ++d) f.set_uniform_int(slots[d], lo[d] + idx[d]);
        for (int64_t c = 0; c < ext[last]; c += kMaxLanes) {
          check_stop(f);
          const int n = static_cast<int>(std::min<int64_t>(kMaxLanes, ext[last] - c));
          for (int l = 0; l < n; ++l) inner[l].i = lo[last] + c + l;
          body(n);
        }
        for (size_t d = last; d-- > 0;) {
          if (++idx[d] < ext[d]) break;
          idx[d] = 0;
        }
      }
      return;
    }
    for (size_t d = 0; d < rank; ++d) f.uniform[slots[d]] = 0;
    for (int64_t base = 0; base < total; base += kMaxLanes) {
      check_stop(f);
      const int n = static_cast<int>(std::min<int64_t>(kMaxLanes, total - base));
      for (int l = 0; l < n; ++l) {
        for (size_t d = 0; d < rank; ++d) f.lanes(slots[d])[l].i = lo[d] + idx[d];
        for (size_t d = rank; d-- > 0;) {
          if (++idx[d] < ext[d]) break;
          idx[d] = 0;
        }
      }
      body(n);
    }
  }
};

struct ParallelNestCode final : StmtCode {
  Nest nest;
  StmtPtr body;
  void run(Frame& f, int, const Lane*) const override {
    nest.run(f, [&](int n) { body->run(f, n, nullptr); });
  }
};

// ---- data movement ------------------------------------------------------

struct StoreCode final : StmtCode {
  int slot;
  std::vector<ExprPtr> indices;
  ExprPtr value, mask;
  void run(Frame& f, int n, const Lane* active) const override {
    Lane m[kMaxLanes];
    const Lane* on = active;
    if (mask) {
      mask->eval(f, n, active, m);
      if (active)
        for (int l = 0; l < n; ++l) m[l].i &= active[l].i;
      on = m;
    }
    const BufferView& view = f.buffers[slot];
    int64_t offsets[kMaxLanes];
    offsets_of(f, view, indices, n, on, offsets);
    Lane v[kMaxLanes];
    value->eval(f, n, on, v);
    write_elements(view, offsets, n, on, v);
  }
};

struct CopyCode final : StmtCode {
  Nest nest;
  int slot;
  std::vector<ExprPtr> indices;
  ExprPtr value;
  bool direct = false;  // value is a load of dst's dtype without `other`
  void run(Frame& f, int, const Lane*) const override {
    nest.run(f, [&](int n) {
      const BufferView& view = f.buffers[slot];
      int64_t offsets[kMaxLanes];
      offsets_of(f, view, indices, n, nullptr, offsets);
      if (direct) {  // the common tile copy: move bytes, no conversions
        Lane m[kMaxLanes];
        const Lane* on = nullptr;
        int64_t src_offsets[kMaxLanes];
        const BufferView* src = value->plain_load(f, n, m, &on, src_offsets);
        move_elements(view, offsets, *src, src_offsets, n, on);
        return;
      }
      Lane v[kMaxLanes];
      value->eval(f, n, nullptr, v);
      write_elements(view, offsets, n, nullptr, v);
    });
  }
};

struct FillCode final : StmtCode {
  int slot;
  ExprPtr value;
  void run(Frame& f, int, const Lane*) const override {
    const Lane v = value->eval1(f);
    const BufferView& view = f.buffers[slot];
    int64_t total = 1;
    for (int d = 0; d < view.rank; ++d) total *= view.shape[d];
    if (total <= 0) return;
    // Every point of the shape, kMaxLanes at a time.
    Lane vals[kMaxLanes];
    for (int l = 0; l < kMaxLanes; ++l) vals[l] = v;
    int64_t idx[kMaxRank] = {};
    int64_t offsets[kMaxLanes];
    for (int64_t base = 0; base < total; base += kMaxLanes) {
      const int n = static_cast<int>(std::min<int64_t>(kMaxLanes, total - base));
      for (int l = 0; l < n; ++l) {
        int64_t off = 0;
        for (int d = 0; d < view.rank; ++d) off += idx[d] * view.strides[d];
        offsets[l] = off;
        for (int d = view.rank; d-- > 0;) {
          if (++idx[d] < view.shape[d]) break;
          idx[d] = 0;
        }
        if (off < view.lo || off >= view.hi)
          throw InternalError("cpu executor: fill of `" + *view.name + "` out of bounds");
      }
      write_elements(view, offsets, n, nullptr, vals);
    }
  }
};

struct GemmCode final : StmtCode {
  int a, b, c;
  std::vector<ExprPtr> a_prefix, b_prefix, c_prefix;
  bool trans_a = false, trans_b = false;

  // The 2-D tile (last two dims at `prefix`), transposed when asked, with
  // its corners bounds-checked.
  static reference::MatrixRef tile(Frame& f, int slot, const std::vector<ExprPtr>& prefix,
                                   bool trans) {
    const BufferView& v = f.buffers[slot];
    int64_t off = 0;
    for (size_t d = 0; d < prefix.size(); ++d) off += prefix[d]->eval1(f).i * v.strides[d];
    const int r = v.rank;
    reference::MatrixRef m{v.base + off * dtype_size(v.dtype),
                           v.dtype,
                           v.shape[r - 2],
                           v.shape[r - 1],
                           v.strides[r - 2],
                           v.strides[r - 1]};
    if (m.rows > 0 && m.cols > 0) {
      const int64_t last = off + (m.rows - 1) * m.row_stride + (m.cols - 1) * m.col_stride;
      if (off < v.lo || off >= v.hi || last < v.lo || last >= v.hi)
        throw InternalError("cpu executor: gemm tile of `" + *v.name + "` out of bounds");
    }
    if (trans) {
      std::swap(m.rows, m.cols);
      std::swap(m.row_stride, m.col_stride);
    }
    return m;
  }

  void run(Frame& f, int, const Lane*) const override {
    const reference::MatrixRef A = tile(f, a, a_prefix, trans_a);
    const reference::MatrixRef B = tile(f, b, b_prefix, trans_b);
    const reference::MatrixRef C = tile(f, c, c_prefix, false);
    TF_CHECK(A.cols == B.rows && A.rows == C.rows && B.cols == C.cols,
             "cpu executor: gemm shapes do not line up");
    std::byte* cdata = const_cast<std::byte*>(C.data);
    if (C.dtype == DType::F32 && C.col_stride == 1) {
      reference::gemm_accumulate(A, B, reinterpret_cast<float*>(cdata), C.row_stride);
      return;
    }
    if (C.dtype == DType::F64 && C.col_stride == 1) {
      reference::gemm_accumulate(A, B, reinterpret_cast<double*>(cdata), C.row_stride);
      return;
    }
    // Any other C: the naive loop, each product and sum rounded to C's dtype.
    const int cs = dtype_size(C.dtype), as = dtype_size(A.dtype), bs = dtype_size(B.dtype);
    for (int64_t i = 0; i < C.rows; ++i) {
      for (int64_t j = 0; j < C.cols; ++j) {
        std::byte* pc = cdata + (i * C.row_stride + j * C.col_stride) * cs;
        double acc = load_element(C.dtype, pc);
        for (int64_t k = 0; k < A.cols; ++k) {
          const double x =
              load_element(A.dtype, A.data + (i * A.row_stride + k * A.col_stride) * as);
          const double y =
              load_element(B.dtype, B.data + (k * B.row_stride + j * B.col_stride) * bs);
          acc = round_float(C.dtype, acc + round_float(C.dtype, x * y));
        }
        store_element(C.dtype, pc, acc);
      }
    }
  }
};

// ---- the rest -------------------------------------------------------------

struct IfCode final : StmtCode {
  ExprPtr cond;
  StmtPtr then_case, else_case;
  void run(Frame& f, int n, const Lane* active) const override {
    if (n == 1 && !active) {  // scalar: branch
      const bool c = cond->eval1(f).i != 0;
      if (c)
        then_case->run(f, 1, nullptr);
      else if (else_case)
        else_case->run(f, 1, nullptr);
      return;
    }
    Lane c[kMaxLanes], m[kMaxLanes];
    cond->eval(f, n, active, c);
    for (int l = 0; l < n; ++l) m[l].i = (c[l].i != 0) & (!active || active[l].i != 0);
    then_case->run(f, n, m);
    if (else_case) {
      for (int l = 0; l < n; ++l) m[l].i = (c[l].i == 0) & (!active || active[l].i != 0);
      else_case->run(f, n, m);
    }
  }
};

struct LetCode final : StmtCode {
  int slot;
  ExprPtr value;
  StmtPtr body;
  void run(Frame& f, int n, const Lane* active) const override {
    // A let of a uniform value stays uniform, so the expressions over it
    // are evaluated once per batch.
    f.uniform[slot] = value->eval_u(f, n, active, f.lanes(slot)) || n == 1;
    body->run(f, n, active);
  }
};

struct CheckCode final : StmtCode {
  ExprPtr cond;
  int64_t code;
  std::string message;
  std::vector<ExprPtr> args;
  void run(Frame& f, int n, const Lane* active) const override {
    Lane c[kMaxLanes];
    cond->eval(f, n, active, c);
    for (int l = 0; l < n; ++l) {
      if (c[l].i || (active && !active[l].i)) continue;
      Lane v[kMaxLanes];
      std::vector<std::string> values;
      for (const ExprPtr& a : args) {
        a->eval(f, n, active, v);
        values.push_back(is_floating(a->dtype) ? fmt_double(v[l].f) : std::to_string(v[l].i));
      }
      throw UserError(format_check_message(message, values));
    }
  }
};

struct SeqCode final : StmtCode {
  std::vector<StmtPtr> stmts;
  void run(Frame& f, int n, const Lane* active) const override {
    for (const StmtPtr& s : stmts) s->run(f, n, active);
  }
};

struct NopCode final : StmtCode {
  void run(Frame&, int, const Lane*) const override {}
};

struct EvaluateCode final : StmtCode {
  ExprPtr value;
  void run(Frame& f, int n, const Lane* active) const override {
    Lane v[kMaxLanes];
    value->eval(f, n, active, v);
  }
};

// Shared / fragment / local buffers live in the thread's frame; a program
// instance is one sequential run on one thread, so one frame slot per alloc
// serves every instance of that thread in turn.
struct AllocCode final : StmtCode {
  int slot;
  tir::Buffer buffer;
  std::vector<ExprPtr> shape, strides;
  StmtPtr body;
  void run(Frame& f, int, const Lane*) const override {
    BufferView& v = f.buffers[slot];
    v.rank = static_cast<int>(shape.size());
    v.dtype = buffer.dtype();
    v.name = &buffer->name;
    int64_t extent = 1, running = 1;
    for (int d = v.rank; d-- > 0;) {
      v.shape[d] = shape[d]->eval1(f).i;
      v.strides[d] = strides.empty() ? running : strides[d]->eval1(f).i;
      running *= v.shape[d];
    }
    for (int d = 0; d < v.rank; ++d) {
      if (v.shape[d] <= 0)
        extent = 0;
      else if (extent > 0)
        extent += (v.shape[d] - 1) * v.strides[d];
    }
    std::vector<std::byte>& mem = f.alloc_memory[slot];
    const size_t bytes = static_cast<size_t>(extent) * dtype_size(v.dtype);
    if (mem.size() < bytes) mem.resize(bytes);
    v.base = mem.data();
    v.lo = 0;
    v.hi = extent;
    body->run(f, 1, nullptr);
  }
};

// True when expression `e` reads one of `vars`.
bool uses_any(const tir::Expr& e, const std::vector<const tir::VarNode*>& vars) {
  struct Finder : tir::IRVisitor {
    const std::vector<const tir::VarNode*>* vars;
    bool found = false;
    using tir::IRVisitor::visit;
    void visit(const tir::VarNode* op) override {
      if (std::find(vars->begin(), vars->end(), op) != vars->end()) found = true;
    }
  } finder;
  finder.vars = &vars;
  finder.visit_expr(e);
  return finder.found;
}

struct StmtCompiler {
  SlotMap& slots;

  ExprPtr expr(const tir::Expr& e) { return compile_expr(e, slots); }
  std::vector<ExprPtr> exprs(const std::vector<tir::Expr>& es) {
    std::vector<ExprPtr> out;
    for (const tir::Expr& e : es) out.push_back(expr(e));
    return out;
  }
  int buffer(const tir::Buffer& b) {
    auto it = slots.buffers.find(b.get());
    TF_CHECK(it != slots.buffers.end(), "cpu executor: buffer `" + b.name() + "` undeclared");
    return it->second;
  }

  StmtPtr compile(const tir::ForNode* op) {
    if (op->for_kind == tir::ForKind::Parallel) {
      // Flatten a perfect nest of parallel loops whose bounds do not depend
      // on the nest's own vars.
      auto code = std::make_unique<ParallelNestCode>();
      std::vector<const tir::VarNode*> nest_vars;
      const tir::ForNode* loop = op;
      tir::Stmt body;
      while (true) {
        code->nest.mins.push_back(expr(loop->min));
        code->nest.extents.push_back(expr(loop->extent));
        code->nest.slots.push_back(slots.var_slot(loop->var));
        code->nest.dtypes.push_back(loop->var.dtype());
        nest_vars.push_back(loop->var.get());
        body = loop->body;
        const tir::ForNode* inner = body.as<tir::ForNode>();
        if (!inner || inner->for_kind != tir::ForKind::Parallel ||
            nest_vars.size() == static_cast<size_t>(kMaxRank) || uses_any(inner->min, nest_vars) ||
            uses_any(inner->extent, nest_vars))
          break;
        loop = inner;
      }
      code->body = compile_stmt(body, slots);
      if (code->body->vectorizable) {
        code->vectorizable = false;  // it batches itself; it cannot run inside a batch
        return code;
      }
      // Not batchable: one iteration at a time (var slot already assigned).
    }
    auto code = std::make_unique<ForCode>();
    code->slot = slots.var_slot(op->var);
    code->dtype = op->var.dtype();
    code->min = expr(op->min);
    code->extent = expr(op->extent);
    code->body = compile_stmt(op->body, slots);
    code->vectorizable = false;
    return code;
  }
  StmtPtr compile(const tir::IfThenElseNode* op) {
    auto code = std::make_unique<IfCode>();
    code->cond = expr(op->cond);
    code->then_case = compile_stmt(op->then_case, slots);
    code->vectorizable = code->then_case->vectorizable;
    if (op->else_case.defined()) {
      code->else_case = compile_stmt(op->else_case, slots);
      code->vectorizable = code->vectorizable && code->else_case->vectorizable;
    }
    return code;
  }
  StmtPtr compile(const tir::LetStmtNode* op) {
    auto code = std::make_unique<LetCode>();
    code->value = expr(op->value);
    code->slot = slots.var_slot(op->var);
    code->body = compile_stmt(op->body, slots);
    code->vectorizable = code->body->vectorizable;
    return code;
  }
  StmtPtr compile(const tir::StoreNode* op) {
    auto code = std::make_unique<StoreCode>();
    code->slot = buffer(op->buffer);
    code->indices = exprs(op->indices);
    code->value = expr(op->value);
    if (op->mask.defined()) code->mask = expr(op->mask);
    return code;
  }
  StmtPtr compile(const tir::HookStoreNode* op) {
    throw InternalError("cpu executor: store_output(\"" + op->name +
                        "\") left in the kernel; run inline_hooks first");
  }
  StmtPtr compile(const tir::CopyNode* op) {
    auto code = std::make_unique<CopyCode>();
    for (size_t d = 0; d < op->vars.size(); ++d) {
      code->nest.slots.push_back(slots.var_slot(op->vars[d]));
      code->nest.dtypes.push_back(op->vars[d].dtype());
      code->nest.mins.push_back(nullptr);
      code->nest.extents.push_back(expr(op->extents[d]));
    }
    code->slot = buffer(op->dst);
    code->indices = exprs(op->dst_indices);
    code->value = expr(op->value);
    const tir::LoadNode* load = op->value.as<tir::LoadNode>();
    code->direct = load && !load->other.defined() && load->dtype == op->dst.dtype();
    code->vectorizable = false;
    return code;
  }
  StmtPtr compile(const tir::GemmNode* op) {
    auto code = std::make_unique<GemmCode>();
    code->a = buffer(op->a.buffer);
    code->b = buffer(op->b.buffer);
    code->c = buffer(op->c.buffer);
    code->a_prefix = exprs(op->a.prefix);
    code->b_prefix = exprs(op->b.prefix);
    code->c_prefix = exprs(op->c.prefix);
    code->trans_a = op->trans_a;
    code->trans_b = op->trans_b;
    code->vectorizable = false;
    return code;
  }
  StmtPtr compile(const tir::FillNode* op) {
    auto code = std::make_unique<FillCode>();
    code->slot = buffer(op->buffer);
    code->value = expr(op->value);
    code->vectorizable = false;
    return code;
  }
  StmtPtr compile(const tir::CheckNode* op) {
    auto code = std::make_unique<CheckCode>();
    code->cond = expr(op->cond);
    code->code = op->code;
    code->message = op->message;
    code->args = exprs(op->args);
    return code;
  }
  // Instances run one after another on a thread, each sequentially, so the
  // threads of one instance never interleave: a barrier has nothing to wait
  // for.
  StmtPtr compile(const tir::BarrierNode*) { return std::make_unique<NopCode>(); }
  StmtPtr compile(const tir::SeqNode* op) {
    auto code = std::make_unique<SeqCode>();
    for (const tir::Stmt& s : op->stmts) {
      code->stmts.push_back(compile_stmt(s, slots));
      code->vectorizable = code->vectorizable && code->stmts.back()->vectorizable;
    }
    return code;
  }
  StmtPtr compile(const tir::AllocateNode* op) {
    auto code = std::make_unique<AllocCode>();
    code->buffer = op->buffer;
    code->shape = exprs(op->buffer->shape);
    code->strides = exprs(op->buffer->strides);
    TF_CHECK(op->buffer.rank() <= kMaxRank, "cpu executor: rank > 8");
    code->slot = slots.buffer_slot(op->buffer);
    code->body = compile_stmt(op->body, slots);
    code->vectorizable = false;
    return code;
  }
  StmtPtr compile(const tir::EvaluateNode* op) {
    auto code = std::make_unique<EvaluateCode>();
    code->value = expr(op->value);
    return code;
  }
};

}  // namespace

StmtPtr compile_stmt(const tir::Stmt& s, SlotMap& slots) {
  TF_CHECK(s.defined(), "cpu executor: undefined statement");
  StmtCompiler c{slots};
  switch (s.kind()) {
#define TF_CASE(name, ...) \
  case StmtKind::name:     \
    return c.compile(static_cast<const tir::name##Node*>(s.get()));
    TILEFUSE_FOR_EACH_TIR_STMT(TF_CASE)
#undef TF_CASE
  }
  throw InternalError("cpu executor: unknown statement kind");
}

}  // namespace tilefuse::runtime::cpu
