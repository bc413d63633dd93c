#include "passes/lower_copies.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "analysis/axis_info.h"
#include "core/text.h"
#include "passes/simplify.h"
#include "tir/functor.h"
#include "tir/printer.h"
#include "tir/structural.h"
#include "tir/tma_limits.h"

namespace tilefuse::passes {
namespace {

using namespace tir;  // NOLINT: a pass over the Tile IR
using analysis::AccessFacts;
using analysis::AxisInfo;


// The copy's value when it is a plain load of the destination dtype from a
// global buffer whose masked lanes read 0 (what cp.async's zero-fill and
// TMA's out-of-bounds fill produce).
const LoadNode* plain_load(const CopyNode* c) {
  const LoadNode* l = c->value.as<LoadNode>();
  if (!l || l->buffer.scope() != MemScope::Global || l->dtype != c->dst.dtype()) return nullptr;
  if (l->other.defined()) {
    const IntImmNode* i = l->other.as<IntImmNode>();
    const FloatImmNode* f = l->other.as<FloatImmNode>();
    bool zero = (i && i->value == 0) || (f && f->value == 0.0 && !std::signbit(f->value));
    if (!zero) return nullptr;
  }
  return l;
}

// Limits on one vector access along the innermost dim, in bytes: the
// largest power of two each fact allows.
struct VectorLimits {
  int64_t contiguous = 0;  // contiguity * element size
  int64_t aligned = 0;     // byte divisibility
  int64_t masked = 0;      // mask constancy * element size
  int64_t elem = 1;
  bool allows(int64_t w) const {
    // Runs of contiguity / constancy are aligned in the index space, so a
    // vector of n elements fits when n divides them.
    int64_t n = w / elem;
    return w % elem == 0 && n >= 1 && (contiguous / elem) % n == 0 && aligned % w == 0 &&
           (masked / elem) % n == 0;
  }
};

VectorLimits limits(const AccessFacts& a, size_t inner) {
  VectorLimits v;
  v.elem = a.elem_bytes;
  v.contiguous = a.offset_facts.contiguity[inner] * a.elem_bytes;
  v.aligned = a.byte_divisibility[inner];
  v.masked = a.mask_constancy[inner] * a.elem_bytes;
  return v;
}

int64_t widest(const VectorLimits& v, std::initializer_list<int64_t> widths) {
  for (int64_t w : widths)
    if (v.allows(w)) return w;
  return 0;
}

int64_t largest_pow2_dividing(int64_t v) {
  int64_t p = 1;
  while (v > 0 && v % (p * 2) == 0 && p < 16) p *= 2;
  return p;
}

// The GEMM operand each copy destination feeds (CopyDecision::operand and
// role): the shared tiles gemm() reads are A's and B's ("tile"); a
// non-global buffer that a copy into an operand's buffer reads belongs to the
// same operand ("hoisted"), to a fixed point. Copies of a kernel without a
// gemm feed no operand (absent from the map).
struct CopyOperand {
  std::string operand, role;
};
std::unordered_map<const BufferNode*, CopyOperand> copy_operands(const Kernel& k) {
  struct Walk : IRVisitor {
    std::vector<std::pair<const BufferNode*, std::set<const BufferNode*>>> copies;  // dst, reads
    std::vector<std::pair<const BufferNode*, std::string>> tiles;
    std::set<const BufferNode*>* reads = nullptr;
    using IRVisitor::visit;
    void visit(const CopyNode* op) override {
      std::set<const BufferNode*> r;
      reads = &r;
      IRVisitor::visit(op);
      reads = nullptr;
      copies.emplace_back(op->dst.get(), std::move(r));
    }
    void visit(const LoadNode* op) override {
      if (reads) reads->insert(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const GemmNode* op) override {
      tiles.emplace_back(op->a.buffer.get(), "A");
      tiles.emplace_back(op->b.buffer.get(), "B");
      IRVisitor::visit(op);
    }
  } walk;
  walk.visit_stmt(k.body);
  std::unordered_map<const BufferNode*, CopyOperand> of;
  for (const auto& [buffer, name] : walk.tiles) of.emplace(buffer, CopyOperand{name, "tile"});
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [dst, reads] : walk.copies) {
      auto it = of.find(dst);
      if (it == of.end()) continue;
      const std::string operand = it->second.operand;
      for (const BufferNode* r : reads)
        if (r->scope != MemScope::Global && !of.count(r)) {
          of.emplace(r, CopyOperand{operand, "hoisted"});
          changed = true;
        }
    }
  }
  return of;
}

class Decider : public IRMutator {
 public:
  Decider(const Kernel& k, const Target& t, const CudaOptions& o, CopyReport* r)
      : kernel_(k), target_(t), options_(o), report_(r) {
    allocs_ = allocations(k.body);
    launch_ = k.launch;
    if (report_) operands_ = copy_operands(k);
  }
  LaunchPlan launch_;  // the kernel's, with the tensor maps and notes added

 protected:
  using IRMutator::visit;
  Stmt visit(const ForNode* op) override {
    const bool saved = in_producer_;
    if (const auto* p = std::get_if<PipelinePlan>(&op->plan))
      in_producer_ = p->form == PipelineForm::WarpSpecialized;
    Stmt s = IRMutator::visit(op);
    in_producer_ = saved;
    return s;
  }
  Stmt visit(const CopyNode* op) override {
    if (Stmt split = split_row_gather(op); split.defined()) return split;
    CopyPlan plan = decide(op);
    if (report_) report_->copies.push_back(decision(op, plan));
    return CopyNode::make(op->vars, op->extents, op->dst, op->dst_indices, op->value,
                          std::move(plan));
  }

 public:
  // The mechanism `copy` would get inside a warp-specialized producer.
  CopyMechanism decide_for_producer(const CopyNode* copy) {
    const bool saved = in_producer_;
    in_producer_ = true;
    const CopyMechanism m = decide(copy).mechanism;
    in_producer_ = saved;
    return m;
  }

 private:
  static CopyPlan make_plan(CopyMechanism m, int64_t width, std::string reason,
                            Expr vector_load = Expr()) {
    CopyPlan p;
    p.mechanism = m;
    p.width = width;
    p.reason = std::move(reason);
    p.vector_load = std::move(vector_load);
    return p;
  }

  // CudaOptions::hybrid_row_gather: a gathered tile that cp.async copies
  // (rows x inner, rows a multiple of 4 and at least 32) inside a
  // warp-specialized producer becomes two copies: its first rows / 4 rows
  // by TMA, one 1-row box each, and the others by cp.async, so that each
  // stage's gathered bytes come through both the copy engine and the
  // load/store path at once. Undefined when the option is off or the copy
  // is not such a gather (then it is planned whole). Measured slower on the
  // H200 at every fraction tried (bench/RESULTS.md, session 17): a stage is
  // as late as its TMA row boxes, so the option stays off.
  Stmt split_row_gather(const CopyNode* op) {
    if (!in_producer_ || !options_.tma || !options_.hybrid_row_gather || options_.tma_row_gather ||
        !target_.has_tma() || op->vars.size() != 2)
      return Stmt();
    const int64_t* rows = as_const_int(op->extents[0]);
    if (!rows || *rows < 32 || *rows % 4 != 0) return Stmt();
    // (What the whole copy would be; its tensor maps and notes are dropped:
    // the copy is planned again, whole or in parts.)
    const size_t maps = launch_.tensor_maps.size(), notes = launch_.notes.size();
    const CopyMechanism whole = decide(op).mechanism;
    launch_.tensor_maps.resize(maps);
    launch_.notes.resize(notes);
    if (whole != CopyMechanism::CpAsync) return Stmt();
    const int64_t tma_rows = *rows / 4;
    const DType idt = op->extents[0].dtype();
    std::vector<Expr> ext1 = op->extents;
    ext1[0] = make_const(idt, static_cast<double>(tma_rows));
    Stmt first = CopyNode::make(op->vars, ext1, op->dst, op->dst_indices, op->value);
    CopyPlan p1 = make_plan(CopyMechanism::Tma, 16,
                            "gathered rows of " + plain_load(op)->buffer.name() + " 0.." +
                                std::to_string(tma_rows - 1) +
                                ": TMA, one 1-row box per row (hybrid_row_gather)");
    std::string why;
    if (!plan_tma(first.as<CopyNode>(), /*gather_only=*/true, &p1, &why)) return Stmt();
    // The other rows: row var r' = r - tma_rows over rows - tma_rows.
    const Var& r = op->vars[0];
    Var rest(r.name() + "_c", r.dtype());
    const Expr shifted = AddNode::make(rest, make_const(r.dtype(), static_cast<double>(tma_rows)));
    std::vector<Expr> dst2;
    for (const Expr& e : op->dst_indices) dst2.push_back(simplify(substitute(e, r, shifted)));
    std::vector<Expr> ext2 = op->extents;
    ext2[0] = make_const(idt, static_cast<double>(*rows - tma_rows));
    Stmt second = CopyNode::make({rest, op->vars[1]}, ext2, op->dst, dst2,
                                 simplify(substitute(op->value, r, shifted)));
    CopyPlan p2 = decide(second.as<CopyNode>());
    if (p2.mechanism != CopyMechanism::CpAsync) {
      launch_.tensor_maps.resize(maps);  // (plan_tma's, unused)
      launch_.notes.resize(notes);
      return Stmt();
    }
    launch_.notes.push_back("copy " + op->dst.name() + ": rows 0.." + std::to_string(tma_rows - 1) +
                            " by TMA, one box per gathered row, rows " +
                            std::to_string(tma_rows) + ".." + std::to_string(*rows - 1) +
                            " by cp.async (hybrid_row_gather)");
    p2.reason += "; rows " + std::to_string(tma_rows) + ".." + std::to_string(*rows - 1) +
                 " of the tile (hybrid_row_gather)";
    std::vector<Stmt> parts;
    for (auto [s, p] : {std::pair{first, &p1}, std::pair{second, &p2}}) {
      const CopyNode* c = s.as<CopyNode>();
      if (report_) report_->copies.push_back(decision(c, *p));
      parts.push_back(
          CopyNode::make(c->vars, c->extents, c->dst, c->dst_indices, c->value, std::move(*p)));
    }
    return SeqNode::make(std::move(parts));
  }

  CopyPlan decide(const CopyNode* op) {
    const int64_t elem = dtype_size(op->dst.dtype());
    if (!target_.is_cuda())
      return make_plan(CopyMechanism::Direct, elem,
                       "cpu target: the executor copies element by element");
    std::vector<int64_t> ext;
    for (const Expr& e : op->extents) {
      const int64_t* c = as_const_int(e);
      if (!c)
        return make_plan(CopyMechanism::Register, elem,
                         "extents are not constants: nothing is known");
      ext.push_back(*c);
    }
    if (ext.empty()) return make_plan(CopyMechanism::Register, elem, "a single element");
    const size_t inner = ext.size() - 1;
    const std::string inner_name = op->vars[inner].name();
    AxisInfo info(kernel_, op->vars, ext);

    // The destination: shared, row-major at the copy vars, base 16-byte
    // aligned (the emitter's promise).
    bool dst_shared = op->dst.scope() == MemScope::Shared;
    AccessFacts dst = info.access(LoadNode::make(op->dst, op->dst_indices).as<LoadNode>());
    VectorLimits dl = limits(dst, inner);
    dl.aligned = std::min<int64_t>(16, dst.offset_facts.divisibility[inner] * elem);
    dl.masked = 16;  // the store side is never masked

    const LoadNode* plain = plain_load(op);
    std::string tma_reason;
    if (target_.has_tma()) {
      if (!plain) {
        tma_reason = "the source is not a plain load of " +
                     std::string(dtype_name(op->dst.dtype())) + ", TMA copies bytes unchanged";
      } else if (!dst_shared) {
        tma_reason = "the destination is not shared memory";
      } else {
        tma_reason = tma_problem(op, plain, info, ext, inner);
        if (tma_reason.empty()) {
          std::string box;
          for (size_t i = 0; i < ext.size(); ++i) box += (i ? "x" : "") + std::to_string(ext[i]);
          if (in_producer_ && options_.tma) {
            CopyPlan p = make_plan(CopyMechanism::Tma, 16,
                                   "affine " + box + " tile of " + plain->buffer.name() +
                                       ", 16-byte aligned base and strides: TMA");
            std::string why;
            if (plan_tma(op, /*gather_only=*/false, &p, &why)) return p;
            launch_.notes.push_back("copy " + op->dst.name() + ": cp.async, not TMA: " + why);
            tma_reason = why;
          } else {
            tma_reason = "TMA-eligible (affine " + box + " tile), issued as cp.async: " +
                         (in_producer_ ? std::string("the tma option is off")
                                       : "only the producer warpgroup of a warp-specialized "
                                         "wgmma loop issues TMA");
          }
        }
      }
    }

    std::string why_not;  // why not cp.async
    if (plain && dst_shared && target_.has_cp_async()) {
      AccessFacts src = info.access(plain);
      VectorLimits sl = limits(src, inner);
      int64_t w = 0;
      for (int64_t c : {16, 8, 4})
        if (sl.allows(c) && dl.allows(c)) {
          w = c;
          break;
        }
      if (w) {
        // A gather through L1 (.ca): rows repeated within a tile or across
        // blocks (MoE padding, repeated tokens) are then served by L1 instead
        // of queueing at one L2 slice. Measured on the H200 (seed, every row
        // the same source row): 84 us with .cg, 31-32.5 with .ca; on a
        // permutation .ca costs 0 to 1.7 us (bench/RESULTS.md).
        bool gathered = false;
        for (const Expr& i : plain->indices) gathered = gathered || has_load(i);
        const bool cache_all = gathered && w == 16 && options_.gather_cache_all;
        std::string r = "plain " + std::string(dtype_name(op->dst.dtype())) + " load of " +
                        plain->buffer.name() + ", " + std::to_string(sl.contiguous) +
                        " contiguous bytes along " + inner_name + ", " +
                        std::to_string(std::min<int64_t>(sl.aligned, 16)) +
                        "-byte aligned: cp.async " + std::to_string(w) + " B" +
                        (w == 16 && !cache_all ? " (.cg)" : " (.ca)") +
                        (cache_all ? ", gathered rows through L1" : "");
        if (!tma_reason.empty()) r += "; not TMA: " + tma_reason;
        // Gathered rows by TMA, one box per row (CudaOptions::tma_row_gather:
        // measured slower than cp.async on the H200, bench/RESULTS.md).
        if (in_producer_ && options_.tma && options_.tma_row_gather) {
          CopyPlan p = make_plan(CopyMechanism::Tma, 16,
                                 "gathered rows of " + plain->buffer.name() +
                                     ": TMA, one 1-row box per row (tma_row_gather)");
          std::string why;
          if (plan_tma(op, /*gather_only=*/true, &p, &why)) {
            launch_.notes.push_back("copy " + op->dst.name() +
                                    ": TMA, one box per gathered row (tma_row_gather)");
            return p;
          }
          if (why != "not a row gather")
            launch_.notes.push_back("copy " + op->dst.name() +
                                    ": cp.async, not a TMA row gather: " + why);
        }
        CopyPlan p = make_plan(CopyMechanism::CpAsync, w, r);
        p.cache_all = cache_all;
        return p;
      }
      why_not = narrow_reason(sl, src, inner_name);
    } else if (!plain) {
      why_not = "the source is not a plain load of " + std::string(dtype_name(op->dst.dtype())) +
                " (conversion or math in the prologue)";
    } else if (!dst_shared) {
      why_not = "the destination is not shared memory";
    } else {
      why_not = "no cp.async on " + target_.name();
    }

    // Register-staged: the widest legal vector load of the main source.
    int64_t w = elem;
    Expr vector_load;
    if (const LoadNode* src = main_load(op, info, ext, inner)) {
      AccessFacts a = info.access(src);
      int64_t rw = widest(limits(a, inner), {16, 8, 4, 2, 1});
      if (rw > 0) w = rw;
      // More than one element per access: the code generator loads the main
      // source `w` bytes at a time (contiguous, aligned and uniformly masked
      // along the inner dim, per the limits above) where the inner extent
      // holds whole vectors; else (and with vector loads off) it reads every
      // element alone.
      const int64_t esz = dtype_size(src->buffer.dtype());
      if (w > esz && src->buffer.scope() == MemScope::Global) {
        if (options_.vector_loads && ext[inner] % (w / esz) == 0)
          vector_load = Expr(src);
        else
          w = esz;
      }
    }
    std::string r = "register-staged (ld.global " + std::to_string(w) + " B): " + why_not;
    if (!tma_reason.empty()) r += "; not TMA: " + tma_reason;
    return make_plan(CopyMechanism::Register, w, r, vector_load);
  }

  // Plans `op` as TMA boxes into *p (boxes, tensor map, bytes) against its
  // destination's shared layout; false, with *why, where a tensor map
  // cannot write that tile. gather_only: only as a row gather (one 1-row
  // box per gathered row: A[i, j] = x[idx[i], k0 + j]).
  bool plan_tma(const CopyNode* op, bool gather_only, CopyPlan* p, std::string* why) {
    const LoadNode* l = op->value.as<LoadNode>();
    if (!l || l->buffer.scope() != MemScope::Global) return *why = "not a plain global load", false;
    const Buffer& b = l->buffer;
    const int rank = static_cast<int>(l->indices.size());
    const int elem = static_cast<int>(dtype_size(b.dtype()));
    if (rank < 1 || rank > 5 || op->vars.empty() || op->vars.size() > 2)
      return *why = "rank", false;
    // The tensor: constant shape and strides (bytes), innermost contiguous.
    std::vector<int64_t> shape, strides;
    for (const Expr& e : b->shape) {
      const int64_t* c = as_const_int(e);
      if (!c) return *why = "a symbolic shape", false;
      shape.push_back(*c);
    }
    if (b->strides.empty()) {
      int64_t st = 1;
      strides.assign(rank, 0);
      for (int k = rank; k-- > 0;) strides[k] = st, st *= shape[k];
    } else {
      for (const Expr& e : b->strides) {
        const int64_t* c = as_const_int(e);
        if (!c) return *why = "a symbolic stride", false;
        strides.push_back(*c);
      }
    }
    if (strides.back() != 1) return *why = "the innermost dim is not contiguous", false;
    if (const std::string_view w = tma_map_out_of_range(shape, strides, elem); !w.empty())
      return *why = std::string(w), false;
    // Each copy dim reads one tensor dim, in order, the innermost copy dim
    // the innermost tensor dim; the destination is indexed by the copy vars.
    std::vector<int> dim_of(op->vars.size(), -1);
    for (int k = 0; k < rank; ++k)
      for (size_t d = 0; d < op->vars.size(); ++d)
        if (uses_var(l->indices[k], op->vars[d])) {
          if (dim_of[d] != -1) return *why = "a copy dim feeds two tensor dims", false;
          dim_of[d] = k;
        }
    for (size_t d = 0; d < dim_of.size(); ++d)
      if (dim_of[d] < 0 || (d > 0 && dim_of[d] <= dim_of[d - 1]))
        return *why = "the copy dims are not the tensor dims in order", false;
    if (dim_of.back() != rank - 1)
      return *why = "the inner copy dim is not the inner tensor dim", false;
    // A row gather: the outer copy var reaches its tensor index only
    // through a loaded value.
    const bool gather = op->vars.size() == 2 && has_load(l->indices[dim_of[0]]);
    if (gather_only && !gather) return *why = "not a row gather", false;
    if (!gather_only && gather) return *why = "a gather", false;
    Expr row_mask;  // a gather's mask of whole rows
    if (gather) {
      const Var& inner_var = op->vars.back();
      if (uses_var(simplify(SubNode::make(l->indices.back(), inner_var)), inner_var))
        return *why = "the gathered rows are not contiguous", false;
      // The mask: bounds of the tensor itself are the tensor map's (zero
      // fill out of bounds); what is left must select whole rows.
      if (l->mask.defined()) {
        std::vector<Expr> terms;
        conjuncts(l->mask, &terms);
        for (const Expr& t : terms) {
          if (is_own_bounds_check(t, l)) continue;
          if (uses_var(t, inner_var)) return *why = "a mask within the gathered rows", false;
          row_mask = row_mask.defined() ? AndNode::make(row_mask, t) : t;
        }
      }
    } else if (l->mask.defined() && has_load(l->mask)) {
      return *why = "a mask that reads memory", false;
    }
    if (op->dst_indices.size() != op->vars.size()) return *why = "destination rank", false;
    for (size_t d = 0; d < op->vars.size(); ++d) {
      const VarNode* v = op->dst_indices[d].as<VarNode>();
      if (v != op->vars[d].get())
        return *why = "the destination is not indexed by the copy vars", false;
    }
    std::vector<int64_t> ext;
    for (const Expr& e : op->extents) ext.push_back(*as_const_int(e));
    // The box origin: the source indices with every copy var at 0.
    std::vector<Expr> origin;
    for (int k = 0; k < rank; ++k) {
      Expr e = l->indices[k];
      for (const Var& v : op->vars) e = substitute(e, v, make_const(v.dtype(), 0));
      origin.push_back(simplify(e));
    }
    // The shared layout decides the boxes: row-major (one box, no swizzle),
    // `swizzled` with 128-byte rows (one box, the 128-byte swizzle), or
    // `mn_swizzled` (one box per 128-byte column strip, each 128-byte
    // swizzled). A gathered row is one box of one row: its row starts at any
    // multiple of 128 bytes, the 128-byte swizzle being a function of the
    // address (PTX ISA 9.7.9.27, the tensor map's swizzle modes).
    SharedLayout layout = SharedLayout::RowMajor;
    if (auto it = allocs_.find(op->dst.get()); it != allocs_.end())
      if (const auto* sp = std::get_if<SharedPlan>(&it->second->plan)) layout = sp->layout;
    int64_t tile_elems = 1;
    for (const Expr& e : op->dst->shape) {
      const int64_t* c = as_const_int(e);
      if (!c) return *why = "a shared tile of symbolic size", false;
      tile_elems *= *c;
    }
    const int64_t inner = ext.back(), rows = op->vars.size() == 2 ? ext[0] : 1;
    int64_t box_inner = inner, strips = 1;
    int swizzle = 0;
    switch (layout) {
      case SharedLayout::RowMajor:
        if (inner * elem % 16 != 0)
          return *why = "the inner box is not a multiple of 16 bytes", false;
        break;
      case SharedLayout::Swizzled:
        // `swizzled` rows of 128 or 64 bytes are exactly TMA's 128- or
        // 64-byte swizzle (tf_copy.cuh).
        if (inner * elem != 128 && inner * elem != 64)
          return *why = "swizzled rows of other than 128 or 64 bytes", false;
        swizzle = static_cast<int>(inner * elem);
        break;
      case SharedLayout::MnSwizzled:
        if (inner * elem % 128 != 0) return *why = "mn_swizzled strips", false;
        box_inner = 128 / elem, strips = inner * elem / 128, swizzle = 128;
        break;
      default:
        return *why = "a layout TMA does not write", false;
    }
    // A swizzled box starts on its pattern (1024 bytes), others on 128;
    // layout aligns every stage of the tile so.
    const int64_t align = swizzle ? 1024 : 128;
    if ((tile_elems * elem) % align != 0 ||
        (gather ? (box_inner * elem) % 128 != 0 || strips != 1
                : (rows * box_inner * elem) % align != 0 || rows > 256) ||
        box_inner > 256)
      return *why = "alignment of the stage tiles", false;
    TensorMapPlan m;
    int param = 0;
    for (const KernelParam& kp : kernel_.params) {
      if (kp.is_buffer() && kp.buffer.same_as(b)) break;
      ++param;
    }
    if (param == static_cast<int>(kernel_.params.size()))
      return *why = "not a kernel parameter", false;
    m.param = param;
    m.elem_bytes = elem;
    for (int k = rank; k-- > 0;) m.dims.push_back(shape[k]);
    for (int k = rank - 1; k-- > 0;) m.strides.push_back(strides[k] * elem);
    for (int k = rank; k-- > 0;) {
      int64_t bx = 1;
      if (k == rank - 1)
        bx = box_inner;
      else if (op->vars.size() == 2 && k == dim_of[0] && !gather)
        bx = rows;
      m.box.push_back(static_cast<int>(bx));
    }
    m.swizzle_bytes = swizzle;
    for (int64_t st : m.strides)
      if (st % 16 != 0) return *why = "a stride is not a multiple of 16 bytes", false;
    p->tensor_map = static_cast<int>(launch_.tensor_maps.size());
    p->boxes.clear();
    for (int64_t st = 0; st < strips; ++st) {
      TmaBox box;
      for (int k = rank; k-- > 0;) {
        Expr c = gather && k == dim_of[0] ? l->indices[k] : origin[k];
        if (k == rank - 1 && st > 0)
          c = simplify(AddNode::make(c, make_const(c.dtype(), static_cast<double>(st * box_inner))));
        box.coords.push_back(c);
      }
      box.smem_offset = gather ? 0 : st * rows * box_inner;
      p->boxes.push_back(std::move(box));
    }
    p->tma_bytes = rows * inner * elem;
    p->row_gather = gather;
    if (gather) {
      p->rows = rows;
      p->row_pitch = box_inner;
      p->row_mask = row_mask;
    }
    launch_.tensor_maps.push_back(std::move(m));
    return true;
  }

  // The binding limit of a copy whose cp.async would be narrower than 4 bytes.
  static std::string narrow_reason(const VectorLimits& v, const AccessFacts& a,
                                   const std::string& inner) {
    const std::string off = one_line(print(a.offset));
    if (v.aligned < 4)
      return "source address (element offset " + off + ", " + std::to_string(a.elem_bytes) +
             "-byte elements) is only " + std::to_string(v.aligned) + "-byte aligned along " +
             inner + "; cp.async needs 4, 8 or 16";
    if (v.contiguous < 4)
      return "source is contiguous for only " + std::to_string(v.contiguous) + " bytes along " +
             inner + " (element offset " + off + "); cp.async needs 4, 8 or 16";
    if (v.masked < 4)
      return "the mask changes every " +
             std::to_string(v.masked / std::max<int64_t>(a.elem_bytes, 1)) + " element(s) along " +
             inner + "; a cp.async vector needs one mask bit";
    return "the shared destination is not aligned for a 4-byte vector";
  }

  // The load whose address moves along the innermost dim (the tile data,
  // not a gathered index), else the first load. Among several (x[i, j] *
  // scale[j]), the one broadcast along the fewest tile dims: it carries the
  // most distinct elements; ties go to the last.
  static const LoadNode* main_load(const CopyNode* op, AxisInfo& info,
                                   const std::vector<int64_t>& ext, size_t inner) {
    const std::vector<const LoadNode*> loads = loads_in(op->value);
    int best = -1;
    size_t best_broadcast = 0;
    for (size_t k = loads.size(); k-- > 0;) {
      const std::vector<int64_t>& constancy = info.access(loads[k]).offset_facts.constancy;
      if (constancy[inner] != 1) continue;
      size_t broadcast = 0;
      for (size_t d = 0; d < ext.size(); ++d) broadcast += constancy[d] >= ext[d];
      if (best < 0 || broadcast < best_broadcast) {
        best = static_cast<int>(k);
        best_broadcast = broadcast;
      }
    }
    if (best >= 0) return loads[best];
    return loads.empty() ? nullptr : loads.front();
  }

  // Empty when the plain load is a TMA-able tile, else why not.
  std::string tma_problem(const CopyNode* op, const LoadNode* l, AxisInfo& info,
                          const std::vector<int64_t>& ext, size_t inner) {
    const Buffer& b = l->buffer;
    const int64_t elem = dtype_size(b.dtype());
    for (const Expr& i : l->indices)
      if (has_load(i)) return "gather: address depends on a loaded value, TMA needs an affine tile";
    // Every index is a scalar plus at most one copy var (whole extent
    // contiguous along it), and each copy var feeds one index.
    std::vector<int> used(ext.size(), 0);
    for (size_t k = 0; k < l->indices.size(); ++k) {
      analysis::AxisFacts f = info.facts(l->indices[k]);
      int vars = 0;
      for (size_t d = 0; d < ext.size(); ++d) {
        if (f.constancy[d] == ext[d]) continue;
        if (f.contiguity[d] != ext[d])
          return "index " + one_line(print(l->indices[k])) + " is not affine with unit step in " +
                 op->vars[d].name();
        ++vars;
        ++used[d];
        if (d == inner && k + 1 != l->indices.size())
          return "the innermost copy dim is not the innermost tensor dim";
      }
      if (vars > 1) return "index " + one_line(print(l->indices[k])) + " mixes copy dims";
    }
    for (int u : used)
      if (u != 1) return "a copy dim does not map to exactly one tensor dim";
    // Strides: unit innermost, others multiples of 16 bytes; base 16-byte
    // aligned (cuTensorMapEncodeTiled requirements).
    int64_t base = b->alignment > 0 ? b->alignment : elem;
    if (base % 16 != 0)
      return "the base of " + b.name() + " is only " + std::to_string(largest_pow2_dividing(base)) +
             "-byte aligned, TMA needs 16";
    std::vector<Expr> strides = b->strides;
    if (!strides.empty()) {
      const int64_t* last = as_const_int(strides.back());
      if (!last || *last != 1) return "the innermost dim of " + b.name() + " is not unit-stride";
      for (size_t k = 0; k + 1 < strides.size(); ++k) {
        int64_t div = info.facts(strides[k]).divisibility[0];
        if (const int64_t* c = as_const_int(strides[k])) div = *c;
        if ((div * elem) % 16 != 0)
          return "stride " + one_line(print(strides[k])) + " of " + b.name() +
                 " is not a multiple of 16 bytes";
      }
    } else {
      for (size_t k = 1; k < b->shape.size(); ++k) {
        int64_t div = info.facts(b->shape[k]).divisibility[0];
        if (const int64_t* c = as_const_int(b->shape[k])) div = *c;
        if (k == b->shape.size() - 1 && (div * elem) % 16 != 0)
          return "row pitch of " + b.name() + " is not a multiple of 16 bytes";
      }
    }
    if ((ext[inner] * elem) % 16 != 0)
      return "the box's inner extent is not a multiple of 16 bytes";
    for (int64_t e : ext)
      if (e > 256) return "a box dim exceeds 256 elements (cuTensorMapEncodeTiled boxDim limit)";
    // The mask may only bound indices by the shape (TMA fills out-of-bounds
    // elements with zeros by itself).
    if (l->mask.defined()) {
      std::vector<Expr> terms;
      conjuncts(l->mask, &terms);
      for (const Expr& t : terms) {
        if (!is_own_bounds_check(t, l))
          return "mask " + one_line(print(t)) + " is not a bounds check on the tensor";
      }
    }
    return "";
  }

  // The report's entry for `copy` planned as `plan`.
  CopyDecision decision(const CopyNode* copy, const CopyPlan& plan) const {
    CopyDecision d{copy->dst.name(), std::string(copy_mechanism_name(plan.mechanism)), plan.width,
                   plan.reason};
    if (auto it = operands_.find(copy->dst.get()); it != operands_.end()) {
      d.operand = it->second.operand;
      d.role = it->second.role;
    }
    return d;
  }

  const Kernel& kernel_;
  Target target_;
  CudaOptions options_;
  CopyReport* report_;
  std::unordered_map<const BufferNode*, CopyOperand> operands_;  // when report_
  std::unordered_map<const BufferNode*, const AllocateNode*> allocs_;
  // Inside a warp-specialized pipelined loop, whose producer issues TMA.
  bool in_producer_ = false;
};

}  // namespace

tir::Kernel decide_copies(const tir::Kernel& kernel, const tir::Target& target,
                          const tir::CudaOptions& options, CopyReport* report) {
  Decider d(kernel, target, options, report);
  tir::Kernel out = d.mutate_kernel(kernel);
  out.launch = d.launch_;
  return out;
}

bool copy_can_be_async(const tir::Kernel& kernel, const tir::CopyNode* copy,
                       const tir::Target& target, const tir::CudaOptions& options) {
  Decider d(kernel, target, options, nullptr);
  const CopyMechanism m = d.decide_for_producer(copy);
  return m == CopyMechanism::CpAsync || m == CopyMechanism::Tma;
}

}  // namespace tilefuse::passes
