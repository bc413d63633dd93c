// Specializations and the lowering's view of symbolic dims (see specialization.h).
#include "lower/specialization.h"

#include <fmt/format.h>

#include <algorithm>

#include "lower/expr_lowering.h"
#include "lower/signature.h"
#include "tir/builder.h"

namespace tilefuse {
namespace {

constexpr int64_t kI32Limit = int64_t{1} << 31;
constexpr int64_t kSaturate = int64_t{1} << 62;

int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) || r > kSaturate ? kSaturate : r;
}
int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) || r > kSaturate ? kSaturate : r;
}

}  // namespace

std::string Specialization::key(const Graph& graph) const {
  std::string s;
  for (size_t i = 0; i < graph.symbols().size(); ++i) {
    s += graph.symbols()[i].name;
    if (i < divisible_by_16.size() && divisible_by_16[i]) s += "%16";
    s += " ";
  }
  s += index64 ? "i64" : "i32";
  for (size_t i = 0; i < params.size() && i < graph.parameters().size(); ++i) {
    const ParamLayout& p = params[i];
    s += " " + graph.node(graph.parameters()[i]).name + ":";
    if (p.strides.empty()) {
      s += "c";
    } else {
      s += "[";
      for (size_t d = 0; d < p.strides.size(); ++d) {
        if (d) s += ",";
        if (p.strides[d] == ParamLayout::kRuntime) {
          s += "?";
          if (d < p.stride_divisible_by_16.size() && p.stride_divisible_by_16[d]) s += "16";
        } else {
          s += std::to_string(p.strides[d]);
        }
      }
      s += "]";
    }
    s += "/" + std::to_string(p.alignment);
  }
  return s;
}

DimEnv::DimEnv(const Graph& graph, const Specialization& spec) : graph_(graph), spec_(spec) {
  for (const Symbol& s : graph.symbols()) symbol_vars_.emplace_back(s.name, symbol_dtype());
  stride_vars_.resize(graph.parameters().size());
  TF_CHECK(spec_.params.empty() || spec_.params.size() == graph.parameters().size(),
           "a specialization with a layout per parameter expected");
  TF_CHECK(spec_.divisible_by_16.empty() || spec_.divisible_by_16.size() == graph.symbols().size(),
           "a specialization with a divisibility per symbol expected");
  TF_CHECK(spec_.size_hints.empty() || spec_.size_hints.size() == graph.symbols().size(),
           "a specialization with a hint per symbol expected");
}

DType DimEnv::symbol_dtype() const {
  return spec_.index64 ? DType::I64 : DType::I32;
}

tir::Expr DimEnv::size(int64_t value, SymbolId s) const {
  if (s == kFixedDim) return index_const(value, value);
  return symbol_var(s);
}

tir::Expr DimEnv::size(const Node& n, size_t d) const {
  return size(n.shape[d], n.symbol(d));
}

tir::Expr DimEnv::as(DType dt, const tir::Expr& e) {
  if (e.dtype() == dt) return e;
  if (const int64_t* c = tir::as_const_int(e)) return tir::make_int(dt, *c);
  return tir::cast(dt, e);
}

tir::Expr DimEnv::product(const Node& n, size_t begin, size_t end) const {
  // Constants folded first, so a fixed product stays one constant.
  int64_t fixed = 1;
  std::vector<tir::Expr> symbolic;
  for (size_t d = begin; d < end; ++d) {
    if (n.symbol(d) == kFixedDim)
      fixed = sat_mul(fixed, n.shape[d]);
    else
      symbolic.push_back(symbol_var(n.symbol(d)));
  }
  if (symbolic.empty()) return index_const(fixed, fixed);
  const DType dt = symbol_dtype();
  tir::Expr p = symbolic[0];
  for (size_t i = 1; i < symbolic.size(); ++i) p = p * symbolic[i];
  if (fixed != 1) {
    tir::Expr c = index_const(fixed, fixed);
    const DType wide = c.dtype() == DType::I64 ? DType::I64 : dt;
    p = as(wide, p) * as(wide, c);
  }
  return p;
}

std::vector<tir::Expr> DimEnv::contiguous_strides(const Node& n) const {
  std::vector<tir::Expr> s(n.shape.size());
  // Each stride is the product of the sizes after its dim, a zero size
  // counting as 1 (tensor.h's contiguous_strides).
  for (size_t d = 0; d < n.shape.size(); ++d) {
    int64_t fixed = 1;
    std::vector<tir::Expr> symbolic;
    for (size_t e = d + 1; e < n.shape.size(); ++e) {
      if (n.symbol(e) == kFixedDim)
        fixed = sat_mul(fixed, std::max<int64_t>(n.shape[e], 1));
      else
        symbolic.push_back(symbol_var(n.symbol(e)));
    }
    if (symbolic.empty()) {
      s[d] = index_const(fixed, fixed);
      continue;
    }
    // A symbol of value 0 makes the tensor empty: its strides are never
    // used, so the product need not count it as 1.
    tir::Expr p = symbolic[0];
    for (size_t i = 1; i < symbolic.size(); ++i) p = p * symbolic[i];
    if (fixed != 1) {
      tir::Expr c = index_const(fixed, fixed);
      const DType wide = c.dtype() == DType::I64 ? DType::I64 : symbol_dtype();
      p = as(wide, p) * as(wide, c);
    }
    s[d] = p;
  }
  return s;
}

int64_t DimEnv::bound(const tir::Expr& e) const {
  if (const int64_t* c = tir::as_const_int(e)) return *c < 0 ? sat_mul(*c, -1) : *c;
  if (e.as<tir::VarNode>()) return spec_.index64 ? kI32Limit : 1;
  if (const auto* m = e.as<tir::MulNode>()) return sat_mul(bound(m->a), bound(m->b));
  if (const auto* a = e.as<tir::AddNode>()) return sat_add(bound(a->a), bound(a->b));
  if (const auto* a = e.as<tir::SubNode>()) return sat_add(bound(a->a), bound(a->b));
  // |a / b| <= |a| and |a % b| < |b| for the positive divisors sizes have.
  if (const auto* d = e.as<tir::DivNode>()) return bound(d->a);
  if (const auto* d = e.as<tir::ModNode>()) return bound(d->b);
  if (const auto* m = e.as<tir::MinNode>()) return std::max(bound(m->a), bound(m->b));
  if (const auto* m = e.as<tir::MaxNode>()) return std::max(bound(m->a), bound(m->b));
  if (const auto* c = e.as<tir::CastNode>()) return bound(c->value);
  return kI32Limit;
}

DType DimEnv::index_dtype_of(const tir::Expr& e) const {
  if (e.dtype() == DType::I64) return DType::I64;
  return bound(e) < kI32Limit ? DType::I32 : DType::I64;
}

bool DimEnv::needs_i64(const tir::Expr& size, const tir::Expr& stride) const {
  const int64_t s = bound(size);
  return s >= kI32Limit || sat_mul(s, bound(stride)) >= kI32Limit || size.dtype() == DType::I64 ||
         stride.dtype() == DType::I64;
}

size_t DimEnv::param_position(ValueId param) const {
  const std::vector<ValueId>& ps = graph_.parameters();
  auto it = std::find(ps.begin(), ps.end(), param);
  TF_CHECK(it != ps.end(), "%" + std::to_string(param) + " is not a parameter");
  return static_cast<size_t>(it - ps.begin());
}

tir::Var DimEnv::stride_var(ValueId param, size_t d) const {
  std::vector<tir::Var>& vars = stride_vars_[param_position(param)];
  if (vars.size() <= d) vars.resize(graph_.node(param).shape.size());
  if (!vars[d].defined())
    vars[d] = tir::Var(fmt::format("{}_stride{}", graph_.node(param).name, d), symbol_dtype());
  return vars[d];
}

std::vector<tir::Expr> DimEnv::param_strides(ValueId param) const {
  const Node& n = graph_.node(param);
  const size_t pos = param_position(param);
  if (spec_.params.empty() || spec_.params[pos].strides.empty()) return contiguous_strides(n);
  const ParamLayout& layout = spec_.params[pos];
  TF_CHECK(layout.strides.size() == n.shape.size(), "parameter `" + n.name + "`: a stride per dim expected");
  std::vector<tir::Expr> out;
  for (size_t d = 0; d < layout.strides.size(); ++d) {
    const int64_t st = layout.strides[d];
    if (st == ParamLayout::kRuntime)
      out.push_back(stride_var(param, d));
    else
      out.push_back(index_const(st, st < 0 ? -st : st));
  }
  return out;
}

int DimEnv::param_alignment(ValueId param) const {
  if (spec_.params.empty()) return 16;
  return spec_.params[param_position(param)].alignment;
}

int64_t DimEnv::hint(int64_t value, SymbolId s) const {
  if (s == kFixedDim || spec_.size_hints.empty()) return value;
  return spec_.size_hints.at(static_cast<size_t>(s));
}

bool DimEnv::divisible_by_16(int64_t value, SymbolId s) const {
  if (s == kFixedDim) return value % 16 == 0;
  return !spec_.divisible_by_16.empty() && spec_.divisible_by_16.at(static_cast<size_t>(s));
}

}  // namespace tilefuse
