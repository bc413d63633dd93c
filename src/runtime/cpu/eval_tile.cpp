// Tile statements of the CPU executor: copy (batched like a parallel nest,
// pure loads moved as bytes), fill, and gemm through the reference GEMM
// microkernel (reference/matmul.h: k-order sums, no FMA, so the result
// equals the naive loop bit for bit).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "core/error.h"
#include "reference/matmul.h"
#include "runtime/cpu/eval.h"
#include "runtime/cpu/nest.h"

namespace tilefuse::runtime::cpu {
namespace {

std::atomic<int64_t> g_gemm_pack_fallbacks{0};

ExprPtr compile_expr_in(SlotMap& slots, const tir::Expr& e) {
  return compile_expr(e, slots);
}
std::vector<ExprPtr> compile_exprs(SlotMap& slots, const std::vector<tir::Expr>& es) {
  std::vector<ExprPtr> out;
  for (const tir::Expr& e : es) out.push_back(compile_expr(e, slots));
  return out;
}
int bound_buffer(SlotMap& slots, const tir::Buffer& b) {
  auto it = slots.buffers.find(b.get());
  TF_CHECK(it != slots.buffers.end(), "cpu executor: buffer `" + b.name() + "` undeclared");
  return it->second;
}

struct CopyCode final : StmtCode {
  Nest nest;
  int slot;
  std::vector<ExprPtr> indices;
  ExprPtr value;
  bool direct = false;  // value is a load of dst's dtype without `other`
  // Planned gemm_pack (passes/pack_gemm_operands.h): a 2-D copy dst[i, j]
  // whose source rows the gemm reading dst packs from.
  bool gemm_pack = false;

  void run(Frame& f, int, const Lane*) const override {
    if (gemm_pack) {
      if (describe_rows(f)) return;
      g_gemm_pack_fallbacks.fetch_add(1, std::memory_order_relaxed);
    }
    copy_all(f);
  }

  // Fills f.packed[slot] with where each row of the tile starts in the
  // source and how long its in-bounds prefix is, bounds-checking that
  // prefix as the copy would. False (and the tile inactive) when a row
  // batch is not a contiguous, prefix-masked run after all: the tile is
  // then copied.
  bool describe_rows(Frame& f) const {
    PackedTile& t = f.packed[slot];
    t.active = false;
    const int64_t rows = nest.extents[0]->eval1(f).i, cols = nest.extents[1]->eval1(f).i;
    if (rows < 0 || cols < 0) return false;
    t.rows.assign(static_cast<size_t>(rows), nullptr);
    t.valid.assign(static_cast<size_t>(rows), 0);
    t.cols = cols;
    t.dtype = f.buffers[slot].dtype;
    const int row_slot = nest.slots[0], col_slot = nest.slots[1];
    Lane* inner = f.lanes(col_slot);
    f.uniform[col_slot] = 0;
    const int64_t es = dtype_size(t.dtype);
    for (int64_t r = 0; r < rows; ++r) {
      check_stop(f);
      f.set_uniform_int(row_slot, r);
      const std::byte* row = nullptr;
      int64_t valid = 0;
      for (int64_t c = 0; c < cols; c += kMaxLanes) {
        const int n = static_cast<int>(std::min<int64_t>(kMaxLanes, cols - c));
        for (int l = 0; l < n; ++l) inner[l].i = c + l;
        f.affine[col_slot] = 1;
        int64_t base = 0;
        int count = 0;
        const BufferView* src = value->contiguous_load(f, n, &base, &count);
        if (!src || src->dtype != t.dtype) return false;
        if (count == 0) continue;
        if (valid != c) return false;  // in bounds after a gap: not a prefix
        check_range(*src, base, count);
        const std::byte* p = src->base + base * es;
        if (c == 0) {
          row = p;
        } else if (p != row + c * es) {
          return false;
        }
        valid += count;
      }
      t.rows[r] = row;
      t.valid[r] = valid;
    }
    t.active = true;
    return true;
  }

  void copy_all(Frame& f) const {
    nest.run(f, [&](int n) {
      const BufferView& view = f.buffers[slot];
      if (direct) {
        // A contiguous row moving a prefix of contiguous source elements
        // (a K / N tail mask) is one memcpy plus zeros.
        int64_t dst_base, src_base = 0;
        int count;
        if (contiguous_offset(f, view, indices, n, &dst_base)) {
          if (const BufferView* src = value->contiguous_load(f, n, &src_base, &count)) {
            check_range(view, dst_base, n);
            check_range(*src, src_base, count);
            const int es = dtype_size(view.dtype);
            std::byte* d = view.base + dst_base * es;
            if (count > 0)
              std::memcpy(d, src->base + src_base * es, static_cast<size_t>(count) * es);
            if (count < n) std::memset(d + count * es, 0, static_cast<size_t>(n - count) * es);
            return;
          }
        }
      }
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
    // A dense row-major view (the usual accumulator tile): the first element
    // written once, then its bytes copied over the rest.
    bool dense = true;
    int64_t running = 1;
    for (int d = view.rank; d-- > 0;) {
      if (view.shape[d] != 1 && view.strides[d] != running) dense = false;
      running *= view.shape[d];
    }
    if (dense && view.lo <= 0 && total <= view.hi) {
      const int64_t zero = 0;
      write_elements(view, &zero, 1, nullptr, &v);
      const size_t es = static_cast<size_t>(dtype_size(view.dtype));
      const size_t bytes = static_cast<size_t>(total) * es;
      for (size_t done = es; done < bytes;) {
        const size_t chunk = std::min(done, bytes - done);
        std::memcpy(view.base + done, view.base, chunk);
        done += chunk;
      }
      return;
    }
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

  // A gemm_pack tile as rows of its source (CopyCode::describe_rows), when
  // its copy left it so; shaped as the buffer's (untransposed) tile.
  static const PackedTile* packed(Frame& f, int slot, const std::vector<ExprPtr>& prefix,
                                  bool trans) {
    const PackedTile& t = f.packed[slot];
    if (!t.active) return nullptr;
    const BufferView& v = f.buffers[slot];
    TF_CHECK(prefix.empty() && !trans && v.rank == 2 &&
                 static_cast<int64_t>(t.rows.size()) == v.shape[0] && t.cols == v.shape[1],
             "cpu executor: a gemm_pack tile of `" + *v.name + "` is not the gemm's operand");
    return &t;
  }

  void run(Frame& f, int, const Lane*) const override {
    const reference::MatrixRef C = tile(f, c, c_prefix, false);
    const PackedTile* pa = packed(f, a, a_prefix, trans_a);
    const PackedTile* pb = packed(f, b, b_prefix, trans_b);
    if (pa || pb) {
      // The operand rows straight from their source: no staged tile read.
      reference::RowsRef ra, rb;
      const auto operand = [&](int slot, const std::vector<ExprPtr>& prefix, bool trans,
                               const PackedTile* p, reference::RowsRef& r) {
        if (!p) return reference::GemmOperand(tile(f, slot, prefix, trans));
        r = {p->rows.data(), p->valid.data(), p->dtype, static_cast<int64_t>(p->rows.size()),
             p->cols};
        return reference::GemmOperand(&r);
      };
      const reference::GemmOperand A = operand(a, a_prefix, trans_a, pa, ra);
      const reference::GemmOperand B = operand(b, b_prefix, trans_b, pb, rb);
      TF_CHECK(A.cols() == B.rows() && A.rows() == C.rows && B.cols() == C.cols,
               "cpu executor: gemm shapes do not line up");
      TF_CHECK((C.dtype == DType::F32 || C.dtype == DType::F64) && C.col_stride == 1,
               "cpu executor: a gemm_pack operand needs an f32 or f64 accumulator");
      std::byte* cdata = const_cast<std::byte*>(C.data);
      if (C.dtype == DType::F32) {
        reference::gemm_accumulate(A, B, reinterpret_cast<float*>(cdata), C.row_stride);
      } else {
        reference::gemm_accumulate(A, B, reinterpret_cast<double*>(cdata), C.row_stride);
      }
      return;
    }
    const reference::MatrixRef A = tile(f, a, a_prefix, trans_a);
    const reference::MatrixRef B = tile(f, b, b_prefix, trans_b);
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

}  // namespace

StmtPtr make_copy_code(const tir::CopyNode* op, SlotMap& slots) {
  auto code = std::make_unique<CopyCode>();
  for (size_t d = 0; d < op->vars.size(); ++d) {
    code->nest.slots.push_back(slots.var_slot(op->vars[d]));
    code->nest.dtypes.push_back(op->vars[d].dtype());
    code->nest.mins.push_back(nullptr);
    code->nest.extents.push_back(compile_expr_in(slots, op->extents[d]));
  }
  code->slot = bound_buffer(slots, op->dst);
  code->indices = compile_exprs(slots, op->dst_indices);
  code->value = compile_expr_in(slots, op->value);
  const tir::LoadNode* load = op->value.as<tir::LoadNode>();
  code->direct = load && !load->other.defined() && load->dtype == op->dst.dtype();
  code->gemm_pack = op->plan && op->plan->mechanism == tir::CopyMechanism::GemmPack;
  TF_CHECK(!code->gemm_pack || (code->direct && op->vars.size() == 2 && op->dst.rank() == 2),
           "cpu executor: copy into `" + op->dst.name() +
               "` planned gemm_pack is not a 2-D plain load");
  code->vectorizable = false;
  return code;
}

StmtPtr make_gemm_code(const tir::GemmNode* op, SlotMap& slots) {
  auto code = std::make_unique<GemmCode>();
  code->a = bound_buffer(slots, op->a.buffer);
  code->b = bound_buffer(slots, op->b.buffer);
  code->c = bound_buffer(slots, op->c.buffer);
  code->a_prefix = compile_exprs(slots, op->a.prefix);
  code->b_prefix = compile_exprs(slots, op->b.prefix);
  code->c_prefix = compile_exprs(slots, op->c.prefix);
  code->trans_a = op->trans_a;
  code->trans_b = op->trans_b;
  code->vectorizable = false;
  return code;
}

StmtPtr make_fill_code(const tir::FillNode* op, SlotMap& slots) {
  auto code = std::make_unique<FillCode>();
  code->slot = bound_buffer(slots, op->buffer);
  code->value = compile_expr_in(slots, op->value);
  code->vectorizable = false;
  return code;
}

}  // namespace tilefuse::runtime::cpu

namespace tilefuse::runtime {

int64_t gemm_pack_fallbacks() {
  return cpu::g_gemm_pack_fallbacks.load(std::memory_order_relaxed);
}

}  // namespace tilefuse::runtime
