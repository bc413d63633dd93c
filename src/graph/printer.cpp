// The graph's stable text form; the format is documented at Graph::to_string.
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "graph/graph.h"
#include "graph/graph_internal.h"

namespace tilefuse {

namespace graph_internal {

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  // Shortest round-trip form (to_chars without a precision).
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  TF_CHECK(res.ec == std::errc(), "format_number: to_chars failed");
  return std::string(buf, res.ptr);
}

}  // namespace graph_internal

namespace {

std::string id(ValueId v) {
  std::string s = std::to_string(v);
  s.insert(s.begin(), '%');
  return s;
}

// A Python number as Python prints it: True/False, 3, 0.5, 2.0.
std::string scalar_text(const Node& n) {
  if (n.dtype == DType::Bool) return n.scalar != 0 ? "True" : "False";
  if (!is_floating(n.dtype)) return std::to_string(n.iscalar);
  std::string s = graph_internal::format_number(n.scalar);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // 2 -> 2.0; not 1e+20, inf, nan
  return s;
}

// A range bound: the number, or the symbol (`T`, `-T`) it was written as.
std::string bound_text(const Graph& g, int64_t value, SymbolId s, bool negated) {
  if (s == kFixedDim) return std::to_string(value);
  return (negated ? "-" : "") + g.symbols().at(static_cast<size_t>(s)).name;
}

std::string op_text(const Graph& g, const Node& n) {
  using graph_internal::format_number;
  std::string s;
  switch (n.kind) {
    case OpKind::Unary:
      s = unary_op_name(n.unary);
      break;
    case OpKind::Binary:
      s = binary_op_name(n.binary);
      break;
    default:
      s = op_kind_name(n.kind);
      break;
  }
  for (size_t i = 0; i < n.inputs.size(); ++i) s += (i == 0 ? " " : ", ") + id(n.inputs[i]);
  switch (n.kind) {
    case OpKind::Parameter:
      s += " " + n.name;
      if (n.range) {
        s += " in [" + bound_text(g, n.range->lo, n.range->lo_symbol, n.range->lo_negated) + ", " +
             bound_text(g, n.range->hi, n.range->hi_symbol, n.range->hi_negated) + ")";
      }
      break;
    case OpKind::Scalar:
      s += " " + scalar_text(n);
      break;
    case OpKind::Clamp:
      if (n.clamp_min) s += " min=" + format_number(*n.clamp_min);
      if (n.clamp_max) s += " max=" + format_number(*n.clamp_max);
      break;
    case OpKind::Slice:
      s += " dim=" + std::to_string(n.dim) + " start=" + std::to_string(n.start) +
           " end=" + std::to_string(n.end) + " step=" + std::to_string(n.step);
      break;
    case OpKind::Permute:
      s += " perm=" + shape_to_string(n.perm);
      break;
    case OpKind::Select:
      s += " dim=" + std::to_string(n.dim) + " index=" + std::to_string(n.start);
      break;
    case OpKind::Index:
      s += " dim=" + std::to_string(n.dim);
      if (!n.index_wraps_negative) s += " negative=error";
      break;
    case OpKind::Addmm:
      s += " beta=" + format_number(n.beta) + " alpha=" + format_number(n.alpha);
      break;
    default:
      break;
  }
  return s;
}

}  // namespace

std::string Graph::to_string() const {
  std::string out;
  for (size_t i = 0; i < symbols_.size(); ++i)
    out += (i == 0 ? "symbols " : ", ") + symbols_[i].name + "=" +
           std::to_string(symbols_[i].value) + (i + 1 == symbols_.size() ? "\n" : "");
  for (ValueId v = 0; v < size(); ++v) {
    const Node& n = nodes_[static_cast<size_t>(v)];
    out += id(v) + " = " + op_text(*this, n) + " : " + graph_internal::type_string(*this, n);
    if (n.is_view()) {
      // INT64_MAX is a saturated stride or offset (generic placeholder sizes
      // multiplied past int64): `?`.
      const auto layout_number = [](int64_t v) {
        return v == std::numeric_limits<int64_t>::max() ? std::string("?") : std::to_string(v);
      };
      out += " strides=[";
      for (size_t d = 0; d < n.strides.size(); ++d)
        out += (d == 0 ? "" : ", ") + layout_number(n.strides[d]);
      out += "] offset=" + layout_number(n.offset) + " root=" + id(n.storage_root);
    }
    if (n.kind != OpKind::Parameter && !n.name.empty()) out += "  # " + n.name;
    out += "\n";
  }
  out += "return";
  for (size_t i = 0; i < outputs_.size(); ++i) out += (i == 0 ? " " : ", ") + id(outputs_[i]);
  out += "\n";
  return out;
}

}  // namespace tilefuse
