// The printer's expressions and element offsets (printer.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "codegen/cuda/printer.h"
#include "core/error.h"
#include "core/stack_guard.h"
#include "tir/printer.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: the printer reads the Tile IR

std::string Printer::name_of(const void* node, const std::string& hint) {
  auto it = names_.find(node);
  if (it != names_.end()) return it->second;
  std::string base;
  for (char c : hint) base += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v_" + base;
  static const std::set<std::string> kReserved = {
      "int",       "float",    "double",   "char",      "short",    "long",     "bool",
      "void",      "auto",     "const",    "if",        "else",     "for",      "while",
      "do",        "return",   "break",    "case",      "switch",   "new",      "delete",
      "this",      "true",     "false",    "struct",    "class",    "union",    "signed",
      "unsigned",  "static",   "extern",   "register",  "volatile", "default",  "goto",
      "sizeof",    "template", "typename", "namespace", "using",    "operator", "private",
      "public",    "asm",      "inline",   "restrict",  "min",      "max",      "tf",
      "threadIdx", "blockIdx", "blockDim", "gridDim",   "warpSize", "kThreads", "e", "kMmaThreads", "kProducerThreads"};
  if (kReserved.count(base) || base.rfind("tf_", 0) == 0) base += "_";
  std::string name = base;
  for (int n = 1; used_names_.count(name); ++n) name = base + "_" + std::to_string(n);
  used_names_.insert(name);
  names_[node] = name;
  return name;
}

// ---- expressions ----------------------------------------------------------------

std::string Printer::literal(const Expr& e) {
  if (const IntImmNode* i = e.as<IntImmNode>()) {
    switch (e.dtype()) {
      case DType::Bool:
        return i->value ? "true" : "false";
      case DType::I32:
        return i->value == std::numeric_limits<int32_t>::min() ? "(-2147483647 - 1)"
                                                               : std::to_string(i->value);
      case DType::I64:
        return i->value == std::numeric_limits<int64_t>::min() ? "(-9223372036854775807ll - 1)"
                                                               : std::to_string(i->value) + "ll";
      default:
        return "static_cast<" + cuda_type(e.dtype()) + ">(" + std::to_string(i->value) + ")";
    }
  }
  const FloatImmNode* f = e.as<FloatImmNode>();
  const double v = f->value;
  auto f32_bits = [](float x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  };
  switch (e.dtype()) {
    case DType::F32:
      if (std::isfinite(v)) return fmt::format("{:a}f", static_cast<float>(v));
      return fmt::format("__int_as_float(0x{:08x})", f32_bits(static_cast<float>(v)));
    case DType::F64:
      if (std::isfinite(v)) return fmt::format("{:a}", v);
      {
        uint64_t b;
        std::memcpy(&b, &v, 8);
        return fmt::format("__longlong_as_double(0x{:016x}ll)", b);
      }
    case DType::F16:
      return fmt::format("tf::f16{{0x{:04x}}}", f32_to_f16_bits(static_cast<float>(v)));
    case DType::BF16:
      return fmt::format("tf::bf16{{0x{:04x}}}", f32_to_bf16_bits(static_cast<float>(v)));
    case DType::F8E4M3:
      return fmt::format("tf::f8e4m3{{0x{:02x}}}", f32_to_f8e4m3_bits(static_cast<float>(v)));
    case DType::F8E5M2:
      return fmt::format("tf::f8e5m2{{0x{:02x}}}", f32_to_f8e5m2_bits(static_cast<float>(v)));
    default:
      TF_CHECK(false, "cuda printer: a float constant of a non-float dtype");
  }
  return "";
}

std::string Printer::cast(DType to, const Expr& v) {
  const DType from = v.dtype();
  std::string x = expr(v);
  if (from == to) return x;
  // Integer widening/narrowing wraps (C++20 modular conversion); bool -> int
  // is 0/1. Everything else follows the IR contract in tf::cast.
  if ((is_integral(from) || from == DType::Bool) && is_integral(to))
    return "static_cast<" + cuda_type(to) + ">(" + x + ")";
  return "tf::cast<" + cuda_type(to) + ">(" + x + ")";
}

std::string Printer::binary(const Expr& e) {
  auto ab = [&](const auto* op) { return std::make_pair(op->a, op->b); };
  Expr a, b;
  switch (e.kind()) {
#define TF_AB(name, ...)                     \
  case ExprKind::name:                       \
    std::tie(a, b) = ab(e.as<name##Node>()); \
    break;
    TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_AB)
#undef TF_AB
    default:
      TF_CHECK(false, "cuda printer: not a binary op");
  }
  const DType dt = a.dtype();
  const std::string x = expr(a), y = expr(b);
  const bool narrow_int = dt == DType::I8 || dt == DType::U8;
  auto arith = [&](const char* sym) {
    std::string r = "(" + x + " " + sym + " " + y + ")";
    return narrow_int ? "static_cast<" + cuda_type(dt) + ">" + r : r;
  };
  if (is_comparison(e.kind()))  // C++ has the IR's comparison operators
    return "(" + x + " " + std::string(binary_symbol(e.kind())) + " " + y + ")";
  switch (e.kind()) {
    case ExprKind::Add:
      return arith("+");
    case ExprKind::Sub:
      return arith("-");
    case ExprKind::Mul:
      return arith("*");
    case ExprKind::Div: {
      if (!is_integral(dt)) return "(" + x + " / " + y + ")";
      const int64_t* c = as_const_int(b);
      if (c && *c > 0 && nonneg_.holds(a)) return arith("/");
      return "tf::floordiv(" + x + ", " + y + ")";
    }
    case ExprKind::Mod: {
      const int64_t* c = as_const_int(b);
      if (is_integral(dt) && c && *c > 0 && nonneg_.holds(a)) return arith("%");
      return "tf::floormod(" + x + ", " + y + ")";
    }
    case ExprKind::Min:
      return "tf::min(" + x + ", " + y + ")";
    case ExprKind::Max:
      return "tf::max(" + x + ", " + y + ")";
    case ExprKind::And:
    case ExprKind::Or:
      return "(" + x + " " + std::string(binary_symbol(e.kind())) + " " + y + ")";
    default:
      break;
  }
  TF_CHECK(false, "cuda printer: unhandled binary op");
  return "";
}

std::string Printer::expr(const Expr& e) {
  check_stack("a Tile IR expression (CUDA emitter)");
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
      return literal(e);
    case ExprKind::Var: {
      const VarNode* v = e.as<VarNode>();
      TF_CHECK(names_.count(v), "cuda printer: unbound var " + v->name);
      return names_.at(v);
    }
    case ExprKind::Not:
      return "(!" + expr(e.as<NotNode>()->a) + ")";
    case ExprKind::Select: {
      const SelectNode* s = e.as<SelectNode>();
      return "(" + expr(s->cond) + " ? " + expr(s->true_value) + " : " + expr(s->false_value) + ")";
    }
    case ExprKind::Cast:
      return cast(e.dtype(), e.as<CastNode>()->value);
    case ExprKind::Call: {
      const CallNode* c = e.as<CallNode>();
      std::string r = "tf::" + std::string(intrinsic_name(c->op)) + "(";
      for (size_t i = 0; i < c->args.size(); ++i) r += (i ? ", " : "") + expr(c->args[i]);
      return r + ")";
    }
    case ExprKind::Load:
      return load(e.as<LoadNode>());
    case ExprKind::HookLoad:
      TF_CHECK(false, "cuda printer: a load_input hook was not inlined");
      return "";
    default:
      return binary(e);
  }
}

std::string Printer::global_offset(const Buffer& b, const std::vector<Expr>& idx) {
  const size_t rank = idx.size();
  // Each stride: a constant, or an expression over scalar params (a
  // symbolic dim, a run-time stride: lower/specialization.h).
  std::vector<Expr> strides(rank);
  if (!b->strides.empty()) {
    for (size_t d = 0; d < rank; ++d) strides[d] = b->strides[d];
  } else {
    int64_t s = 1;
    for (size_t d = rank; d-- > 0;) {
      strides[d] = make_int(DType::I64, s);
      s *= const_of(b->shape[d], "a buffer extent (strides are given where shapes are symbolic)");
    }
  }
  // 64-bit unless the largest offset and every index fit 32 bits (the IR's
  // "Offsets" rule). With symbolic sizes the largest offset is not known
  // here: the kernel's `index_bits` says whether the runtime checked that
  // every offset fits 32 bits (then the sizes and strides are i32 and so is
  // the sum), else it is 64-bit.
  bool symbolic = false;
  int64_t max_off = 0;
  bool wide = false;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t* ext = as_const_int(b->shape[d]);
    const int64_t* st = as_const_int(strides[d]);
    if (!ext || !st) {
      symbolic = true;
    } else {
      max_off += std::max<int64_t>(*ext - 1, 0) * std::abs(*st);
    }
    wide |= idx[d].dtype() == DType::I64 || (strides[d].dtype() == DType::I64 && !st);
  }
  if (symbolic) {
    auto bits = k_.attrs.find("index_bits");
    const bool fits32 = bits != k_.attrs.end() && std::holds_alternative<int64_t>(bits->second) &&
                        std::get<int64_t>(bits->second) == 32;
    wide |= !fits32;
  }
  wide |= max_off > std::numeric_limits<int32_t>::max();
  std::string r;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t* st = as_const_int(strides[d]);
    if (st && *st == 0) continue;
    std::string term = expr(idx[d]);
    if (wide && idx[d].dtype() != DType::I64) term = "static_cast<long long>(" + term + ")";
    if (st) {
      if (*st != 1) term += " * " + std::to_string(*st) + (wide ? "ll" : "");
    } else {
      std::string s = expr(strides[d]);
      if (wide && strides[d].dtype() != DType::I64) s = "static_cast<long long>(" + s + ")";
      term += " * (" + s + ")";
    }
    r += (r.empty() ? "" : " + ") + term;
  }
  return r.empty() ? "0" : r;
}

std::string Printer::shared_offset(const Buffer& b, const std::vector<Expr>& idx) {
  const SharedPlan& info = shared(b);
  std::string off;
  if (idx.size() == 2) {
    const int64_t cols = const_of(b->shape[1], "a shared extent");
    switch (info.layout) {
      case SharedLayout::Swizzled:
        off = fmt::format("tf::swizzled<{}, {}>({}, {})", cols, dtype_size(b.dtype()),
                          expr(idx[0]), expr(idx[1]));
        break;
      case SharedLayout::Swizzled32:
        off = fmt::format("tf::swizzled<{}, {}, {}>({}, {})", cols, dtype_size(b.dtype()),
                          32, expr(idx[0]), expr(idx[1]));
        break;
      case SharedLayout::MnSwizzled:
        off = fmt::format("tf::mn_swizzled<{}, {}, {}>({}, {})",
                          const_of(b->shape[0], "a shared extent"), cols, dtype_size(b.dtype()),
                          expr(idx[0]), expr(idx[1]));
        break;
      case SharedLayout::RowMajor:
        off = fmt::format("tf::row_major<{}>({}, {})", cols, expr(idx[0]), expr(idx[1]));
        break;
    }
  } else {
    int64_t s = 1;
    for (size_t d = idx.size(); d-- > 0;) {
      std::string term = expr(idx[d]);
      if (s != 1) term += " * " + std::to_string(s);
      off = off.empty() ? term : term + " + " + off;
      s *= const_of(b->shape[d], "a shared extent");
    }
    if (off.empty()) off = "0";
  }
  if (info.stages > 1) {
    auto it = stage_expr_.find(b.get());
    TF_CHECK(it != stage_expr_.end(),
             "cuda printer: staged buffer " + b.name() + " used outside its pipelined loop");
    off = "(" + it->second + ") * " + std::to_string(tile_elems(b)) + " + " + off;
  }
  return off;
}

std::string Printer::element(const Buffer& b, const std::vector<Expr>& idx) {
  switch (b.scope()) {
    case MemScope::Global:
      return buf(b) + "[" + global_offset(b, idx) + "]";
    case MemScope::Shared:
      return buf(b) + "[" + shared_offset(b, idx) + "]";
    case MemScope::Local: {
      std::string off;
      int64_t s = 1;
      for (size_t d = idx.size(); d-- > 0;) {
        std::string term = expr(idx[d]) + (s != 1 ? " * " + std::to_string(s) : "");
        off = off.empty() ? term : term + " + " + off;
        s *= const_of(b->shape[d], "a local extent");
      }
      return buf(b) + "[" + (off.empty() ? "0" : off) + "]";
    }
    case MemScope::Fragment: {
      bool ok = frag_ == b.get() && idx.size() == frag_vars_.size();
      for (size_t d = 0; ok && d < idx.size(); ++d) ok = idx[d].get() == frag_vars_[d];
      TF_CHECK(ok, "cuda printer: fragment " + b.name() +
                       " accessed outside a parallel nest over its own elements");
      return buf(b) + ".c[" + frag_e_ + "]";
    }
  }
  return "";
}

std::string Printer::address(const Buffer& b, const std::vector<Expr>& idx) {
  std::string e = element(b, idx);
  e.insert(e.begin(), '&');  // (not "&" + e: GCC 12 warns -Wrestrict on that, falsely)
  return e;
}

std::string Printer::load(const LoadNode* op) {
  // Already loaded, a vector at a time: the vector load and every load of
  // the same address (a prologue that reads it twice, `select(x < 0, x +
  // n, x)`).
  if (vector_load_.defined() &&
      (op == vector_load_.get() || structural_equal(Expr(op), vector_load_)))
    return vector_lane_;
  std::string el;
  if (k_.launch.workspace_fragment_order >= 0 &&
      k_.params[static_cast<size_t>(k_.launch.workspace_fragment_order)].buffer.same_as(
          op->buffer)) {
    // A split-K partial in fragment order: this thread's element frag_e_.
    TF_CHECK(!frag_e_.empty(), "cuda printer: the workspace read outside a fragment nest");
    if (k_.launch.split_k_cluster) {
      // Split s's partial (the load's first index) in the cluster's block s.
      const std::string t = cuda_type(op->buffer.dtype());
      el = fmt::format("tf::ld_shared_cluster<{}>(tf::mapa_shared(tf_wsa, {}) + ({}) * {})", t,
                       expr(op->indices[0]), fragment_order_offset(),
                       dtype_size(op->buffer.dtype()));
    } else if (auto it = std::find_if(ws_vectors_.begin(), ws_vectors_.end(),
                                      [&](const auto& p) {
                                        return p.first == op ||
                                               structural_equal(Expr(p.first), Expr(op));
                                      });
               it != ws_vectors_.end()) {
      // (preloaded by the nest, a 16-byte vector at a time, under the
      // load's mask: zeros where it is false, so with no other value than 0
      // the element needs no mask of its own)
      el = fmt::format("tf::vec16_lane({}, {} % {})", it->second, frag_e_,
                       k_.launch.workspace_vector);
      const int64_t* other = op->other.defined() ? as_const_int(op->other) : nullptr;
      const auto* other_f = op->other.defined() ? op->other.as<FloatImmNode>() : nullptr;
      if (!op->other.defined() || (other && *other == 0) ||
          (other_f && other_f->value == 0 && !std::signbit(other_f->value)))
        return el;
    } else {
      el = fmt::format("({})[{}]", workspace_slice(op->indices), fragment_order_offset());
    }
  } else {
    el = element(op->buffer, op->indices);
  }
  // A WgmmaTile's accumulators are read through value(e) (see tf_wgmma.cuh:
  // a conversion reading them directly makes ptxas serialize the wgmma).
  if (op->buffer.scope() == MemScope::Fragment &&
      fragment_plan(allocs_.at(op->buffer.get()))->family == MmaFamily::Wgmma)
    el = buf(op->buffer) + ".value(" + frag_e_ + ")";
  if (!op->mask.defined()) return el;
  std::string other =
      op->other.defined() ? expr(op->other) : literal(make_const(op->buffer.dtype(), 0));
  return "(" + expr(op->mask) + " ? " + el + " : " + other + ")";
}

}  // namespace tilefuse::codegen
