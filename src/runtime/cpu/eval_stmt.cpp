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
#include <atomic>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/stack_guard.h"
#include "runtime/cpu/eval.h"
#include "runtime/cpu/nest.h"
#include "tir/functor.h"

namespace tilefuse::runtime::cpu {

using tir::StmtKind;

namespace {

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
    if (n > 1 && !active && store_contiguous(f, n)) return;
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

  // A row of an epilogue, `t[m, n] = acc[i, j]` (a cast to t's float dtype
  // is the store's rounding, see compile): the mask a prefix of the batch,
  // both sides contiguous there. The same reads and writes as the general
  // path, without evaluating and checking every lane's offsets. False when
  // the batch is not of that form.
  bool store_contiguous(Frame& f, int n) const {
    int count = n;
    if (mask && !mask->prefix_mask(f, n, &count)) return false;
    if (count == 0) return true;  // every lane masked off: nothing is stored
    const BufferView& view = f.buffers[slot];
    int64_t dst_base, src_base;
    int src_count;
    if (!contiguous_offset(f, view, indices, count, &dst_base)) return false;
    const BufferView* src = value->contiguous_load(f, count, &src_base, &src_count);
    if (!src || src_count != count) return false;
    check_range(view, dst_base, count);
    check_range(*src, src_base, count);
    if (src->dtype == DType::F32 && view.dtype == DType::F16) {
      // write_elements' f16 rounding of an f32 value, without the lanes.
      const float* from = reinterpret_cast<const float*>(src->base) + src_base;
      std::byte* to = view.base + dst_base * 2;
      for (int l = 0; l < count; ++l) {
        const uint16_t h = f32_to_f16_bits(from[l]);
        std::memcpy(to + l * 2, &h, 2);
      }
      return true;
    }
    int64_t src_offsets[kMaxLanes], dst_offsets[kMaxLanes];
    for (int l = 0; l < count; ++l) src_offsets[l] = src_base + l, dst_offsets[l] = dst_base + l;
    Lane v[kMaxLanes];
    read_elements(*src, src_offsets, count, nullptr, v);
    write_elements(view, dst_offsets, count, nullptr, v);
    return true;
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

// if_last_arrival: instances run concurrently on the pool's threads, so the
// arrival is a sequentially consistent fetch-add (release for the stores
// before it, acquire for the body's loads).
struct LastArrivalCode final : StmtCode {
  int slot;
  std::vector<ExprPtr> indices;
  ExprPtr count;
  StmtPtr body;
  void run(Frame& f, int n, const Lane* active) const override {
    TF_CHECK(n == 1 && !active, "cpu executor: if_last_arrival inside a parallel loop");
    Lane c;
    count->eval(f, 1, nullptr, &c);
    // (tir/ir.h: one arrival runs the body without the counter; none, nothing)
    if (c.i <= 0) return;
    if (c.i == 1) return body->run(f, 1, nullptr);
    const BufferView& view = f.buffers[slot];
    int64_t offset = 0;
    offsets_of(f, view, indices, 1, nullptr, &offset);
    std::atomic_ref<int32_t> counter(*reinterpret_cast<int32_t*>(view.base + offset * 4));
    if (counter.fetch_add(1) != c.i - 1) return;
    counter.store(0);
    body->run(f, 1, nullptr);
  }
};

struct LetCode final : StmtCode {
  int slot;
  ExprPtr value;
  StmtPtr body;
  void run(Frame& f, int n, const Lane* active) const override {
    // A let of a uniform value stays uniform, so the expressions over it
    // are evaluated once per batch.
    const bool uniform = value->eval_u(f, n, active, f.lanes(slot)) || n == 1;
    f.uniform[slot] = uniform;
    // A let of an affine value (`n = pid_n*512 + j` in a row batch over j)
    // stays affine, so a store or load indexed by it can be contiguous.
    int64_t base;
    f.affine[slot] = !uniform && !active && value->affine(f, n, &base);
    body->run(f, n, active);
  }
};

struct CheckCode final : StmtCode {
  ExprPtr cond;
  int64_t code;
  std::string message;
  std::vector<ExprPtr> args;
  SourceLoc loc;
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
      throw UserError(ErrorKind::kIndex, format_check_message(message, values), loc);
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
    // A store of a float cast to the buffer's own float dtype (the epilogue's
    // `t[m, n] = f16(acc)`) stores the uncast value: write_elements rounds a
    // float through f32 into the encoding, which is the cast's rounding
    // (core/dtype.h round_to), so the cast's decode and re-encode are skipped.
    const tir::CastNode* cast = op->value.as<tir::CastNode>();
    const bool store_rounds = cast && cast->dtype == op->buffer.dtype() &&
                              is_floating(cast->dtype) && is_floating(cast->value.dtype());
    code->value = expr(store_rounds ? cast->value : op->value);
    if (op->mask.defined()) code->mask = expr(op->mask);
    return code;
  }
  StmtPtr compile(const tir::HookStoreNode* op) {
    throw InternalError("cpu executor: store_output(\"" + op->name +
                        "\") left in the kernel; run inline_hooks first");
  }
  StmtPtr compile(const tir::CopyNode* op) { return make_copy_code(op, slots); }
  StmtPtr compile(const tir::GemmNode* op) { return make_gemm_code(op, slots); }
  StmtPtr compile(const tir::FillNode* op) { return make_fill_code(op, slots); }
  StmtPtr compile(const tir::CheckNode* op) {
    auto code = std::make_unique<CheckCode>();
    code->cond = expr(op->cond);
    code->code = op->code;
    code->message = op->message;
    code->args = exprs(op->args);
    code->loc = op->loc;
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
  StmtPtr compile(const tir::LastArrivalNode* op) {
    auto code = std::make_unique<LastArrivalCode>();
    code->slot = buffer(op->counter);
    code->indices = exprs(op->indices);
    code->count = expr(op->count);
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
  check_stack("a Tile IR statement (CPU executor)");
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
