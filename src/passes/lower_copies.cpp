#include "passes/lower_copies.h"

#include <algorithm>
#include <cmath>

#include "analysis/axis_info.h"
#include "tir/functor.h"
#include "tir/printer.h"
#include "tir/structural.h"

namespace tilefuse::passes {
namespace {

using namespace tir;  // NOLINT: a pass over the Tile IR
using analysis::AccessFacts;
using analysis::AxisInfo;

std::string one_line(const std::string& s) {
  std::string r = s;
  while (!r.empty() && r.back() == '\n') r.pop_back();
  return r;
}

bool has_load(const Expr& e) {
  struct V : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const LoadNode*) override { found = true; }
    void visit(const HookLoadNode*) override { found = true; }
  } v;
  v.visit_expr(e);
  return v.found;
}

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

class Decider : public IRMutator {
 public:
  Decider(const Kernel& k, const Target& t, CopyReport* r) : kernel_(k), target_(t), report_(r) {}

 protected:
  using IRMutator::visit;
  Stmt visit(const CopyNode* op) override {
    CopyPlan plan = decide(op);
    if (report_)
      report_->copies.push_back(
          {op->dst.name(), std::string(copy_mechanism_name(plan.mechanism)), plan.width, plan.reason});
    return CopyNode::make(op->vars, op->extents, op->dst, op->dst_indices, op->value,
                          std::move(plan));
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
          if (target_.tma_copies)
            return make_plan(CopyMechanism::Tma, 16,
                             "affine " + box + " tile of " + plain->buffer.name() +
                                 ", 16-byte aligned base and strides: TMA");
          tma_reason = "TMA-eligible (affine " + box +
                       " tile), issued as cp.async: TMA is lowered only on sm_90a, by the "
                       "producer of the warp-specialized wgmma loop (Target::tma_copies)";
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
        std::string r = "plain " + std::string(dtype_name(op->dst.dtype())) + " load of " +
                        plain->buffer.name() + ", " + std::to_string(sl.contiguous) +
                        " contiguous bytes along " + inner_name + ", " +
                        std::to_string(std::min<int64_t>(sl.aligned, 16)) +
                        "-byte aligned: cp.async " + std::to_string(w) + " B" +
                        (w == 16 ? " (.cg)" : " (.ca)");
        if (!tma_reason.empty()) r += "; not TMA: " + tma_reason;
        return make_plan(CopyMechanism::CpAsync, w, r);
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
      // along the inner dim, per the limits above).
      if (w > dtype_size(src->buffer.dtype()) && src->buffer.scope() == MemScope::Global)
        vector_load = Expr(src);
    }
    std::string r = "register-staged (ld.global " + std::to_string(w) + " B): " + why_not;
    if (!tma_reason.empty()) r += "; not TMA: " + tma_reason;
    return make_plan(CopyMechanism::Register, w, r, vector_load);
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

  const Kernel& kernel_;
  Target target_;
  CopyReport* report_;
};

}  // namespace

tir::Kernel decide_copies(const tir::Kernel& kernel, const tir::Target& target,
                          CopyReport* report) {
  Decider d(kernel, target, report);
  return d.mutate_kernel(kernel);
}

}  // namespace tilefuse::passes
