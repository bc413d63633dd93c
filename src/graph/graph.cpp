// Graph construction: names, node bookkeeping, parameters, Python numbers and
// the elementwise builders (unary, binary, where, clamp, cast).
//
// Each builder checks in PyTorch's order where it matters for the message:
// op-specific dtype guards first (sub_check, neg on bool), then broadcasting,
// then type promotion (TensorIterator computes shapes before dtypes).
#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "graph/graph.h"
#include "graph/graph_internal.h"

namespace tilefuse {

using graph_internal::type_string;

std::string_view op_kind_name(OpKind kind) {
  // Lower-case, as the printer and messages spell ops ("index", "matmul").
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
#define TF_OP_NAME(name) v.emplace_back(#name);
    TILEFUSE_FOR_EACH_OP(TF_OP_NAME)
#undef TF_OP_NAME
    for (std::string& s : v) {
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return v;
  }();
  const auto i = static_cast<size_t>(kind);
  return i < names.size() ? std::string_view(names[i]) : std::string_view("?");
}

std::string_view unary_op_name(UnaryOp op) {
  switch (op) {
#define TF_UNARY_NAME(e, name) \
  case UnaryOp::e:             \
    return name;
    TILEFUSE_FOR_EACH_UNARY_OP(TF_UNARY_NAME)
#undef TF_UNARY_NAME
  }
  return "?";
}

std::string_view binary_op_name(BinaryOp op) {
  switch (op) {
#define TF_BINARY_NAME(e, name) \
  case BinaryOp::e:             \
    return name;
    TILEFUSE_FOR_EACH_BINARY_OP(TF_BINARY_NAME)
#undef TF_BINARY_NAME
  }
  return "?";
}

bool is_comparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
      return true;
    default:
      return false;
  }
}

bool Node::has_symbolic_dim() const {
  for (SymbolId s : dim_symbols)
    if (s != kFixedDim) return true;
  return false;
}

std::vector<bool> live_values(const Graph& g) {
  std::vector<bool> live(static_cast<size_t>(g.size()), false);
  for (ValueId v : g.outputs()) live[static_cast<size_t>(v)] = true;
  // Inputs precede their users, so one backward sweep reaches every one.
  for (ValueId v = g.size() - 1; v >= 0; --v)
    if (live[static_cast<size_t>(v)])
      for (ValueId in : g.node(v).inputs) live[static_cast<size_t>(in)] = true;
  return live;
}

bool same_shape(const Node& a, const Node& b) {
  if (a.shape != b.shape) return false;
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (a.symbol(d) != b.symbol(d)) return false;
  return true;
}

std::string symbolic_shape_string(const Graph& g, const Node& n) {
  if (!n.has_symbolic_dim()) return shape_to_string(n.shape);
  std::string s = "[";
  for (size_t d = 0; d < n.shape.size(); ++d) {
    if (d) s += ", ";
    s += n.symbol(d) == kFixedDim ? std::to_string(n.shape[d])
                                  : graph_internal::symbol_name(g, n.symbol(d));
  }
  return s + "]";
}

bool Node::is_view() const {
  return kind == OpKind::Slice || kind == OpKind::Permute || kind == OpKind::Expand ||
         kind == OpKind::Select;
}

namespace graph_internal {

std::string type_string(const Graph& g, const Node& n) {
  return std::string(dtype_name(n.dtype)) + symbolic_shape_string(g, n);
}

std::string symbol_name(const Graph& g, SymbolId s) {
  return s == kFixedDim ? std::string() : g.symbols().at(static_cast<size_t>(s)).name;
}

std::vector<SymbolId> broadcast_symbols(const Graph& g, std::string_view op, const Node& a,
                                        const Node& b, SourceLoc loc) {
  if (!a.has_symbolic_dim() && !b.has_symbolic_dim()) return {};
  const size_t n = std::max(a.shape.size(), b.shape.size());
  std::vector<SymbolId> out(n, kFixedDim);
  for (size_t i = 0; i < n; ++i) {
    const size_t r = n - i;  // 1-based position from the right
    const bool in_a = r <= a.shape.size(), in_b = r <= b.shape.size();
    const size_t ia = a.shape.size() - r, ib = b.shape.size() - r;
    const SymbolId sa = in_a ? a.symbol(ia) : kFixedDim, sb = in_b ? b.symbol(ib) : kFixedDim;
    if (!in_a || !in_b) {
      out[i] = in_a ? sa : sb;
      continue;
    }
    if (sa == sb) {
      out[i] = sa;
      continue;
    }
    const std::string head = std::string(op) + " operands do not broadcast for every size: " +
                             type_string(g, a) + " and " + type_string(g, b) + " at dimension " +
                             std::to_string(i) + ": ";
    if (sa != kFixedDim && sb != kFixedDim)
      throw UserError(head + "two different symbolic dims `" + symbol_name(g, sa) + "` and `" +
                          symbol_name(g, sb) + "` (use one name where the sizes must agree)",
                      loc);
    const SymbolId s = sa != kFixedDim ? sa : sb;
    const int64_t fixed = sa != kFixedDim ? b.shape[ib] : a.shape[ia];
    if (fixed != 1)
      throw UserError(head + "the symbolic dim `" + symbol_name(g, s) + "` against the fixed size " +
                          std::to_string(fixed) +
                          " (a symbolic dim broadcasts only against 1; make it fixed)",
                      loc);
    out[i] = s;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op, SourceLoc loc, bool scalar_ok) {
  // maybe_wrap_dim: a 0-dim tensor is treated as 1-D for wrapping, when allowed.
  const int64_t n = (ndim == 0 && scalar_ok) ? 1 : ndim;
  if (n == 0) {
    throw UserError(std::string(op) + " cannot be applied to a 0-dim tensor", loc);
  }
  if (dim < -n || dim >= n) {
    throw UserError("dimension " + std::to_string(dim) + " is out of range for " + std::string(op) +
                        " of a " + std::to_string(ndim) + "-dim tensor (expected " +
                        std::to_string(-n) + " to " + std::to_string(n - 1) + ")",
                    loc);
  }
  return dim < 0 ? dim + n : dim;
}

void check_size(const Graph& g, const Node& n) {
  if (n.shape.size() > static_cast<size_t>(kMaxRank)) {
    const std::string what = n.kind == OpKind::Parameter
                                 ? "parameter `" + n.name + "`"
                                 : "the result of " + std::string(op_kind_name(n.kind));
    throw UserError(what + " has " + std::to_string(n.shape.size()) + " dims: tilefuse's kernels " +
                        "index at most " + std::to_string(kMaxRank) + " (" + type_string(g, n) + ")",
                    n.loc);
  }
  // A symbolic dim at its generic placeholder size (no size given yet)
  // counts as 1 here: the bound sizes are checked when they are bound
  // (driver::bind_symbols), and four placeholders of ~1000 would pass 2^40
  // for a program that is fine at its real sizes.
  Shape checked = n.shape;
  for (size_t i = 0; i < n.shape.size(); ++i) {
    const SymbolId sym = n.symbol(i);
    if (sym != kFixedDim && g.symbols()[static_cast<size_t>(sym)].value ==
                                generic_symbol_value(static_cast<size_t>(sym)))
      checked[i] = 1;
  }
  const std::string problem = size_limit_violation(checked);
  if (!problem.empty()) {
    const std::string what = n.kind == OpKind::Parameter
                                 ? "parameter `" + n.name + "`"
                                 : "the result of " + std::string(op_kind_name(n.kind));
    // The sizes the symbols were given (`with D = 2000000`): the type names
    // only the symbols.
    std::string given;
    for (size_t i = 0; i < n.shape.size(); ++i) {
      const SymbolId sym = n.symbol(i);
      if (sym == kFixedDim) continue;
      const std::string part =
          symbol_name(g, sym) + " = " + std::to_string(g.symbols()[static_cast<size_t>(sym)].value);
      if (given.find(part) == std::string::npos) given += (given.empty() ? " with " : ", ") + part;
    }
    throw UserError(what + " is too large: " + type_string(g, n) + given + " " + problem, n.loc);
  }
}

DType wrapped_number_dtype(DType literal_kind) {
  switch (dtype_category(literal_kind)) {
    case DTypeCategory::Bool:
      return DType::Bool;
    case DTypeCategory::Integral:
      return DType::I64;
    case DTypeCategory::Floating:
      return DType::F32;
  }
  return DType::F32;
}

}  // namespace graph_internal

namespace {

// Shape of a broadcast, or a UserError naming both operands and the first
// dimension (of the result) where their sizes clash.
Shape broadcast_or_throw(const Graph& g, std::string_view op, const Node& a, const Node& b,
                         SourceLoc loc) {
  if (auto out = broadcast_shapes(a.shape, b.shape)) return *out;
  const size_t n = std::max(a.shape.size(), b.shape.size());
  for (size_t i = 0; i < n; ++i) {
    const size_t r = n - i;                                  // 1-based position from the right
    if (r > a.shape.size() || r > b.shape.size()) continue;  // a missing dim broadcasts
    const int64_t da = a.shape[a.shape.size() - r], db = b.shape[b.shape.size() - r];
    if (da != db && da != 1 && db != 1) {
      throw UserError(std::string(op) + " operands do not broadcast: " + type_string(g, a) +
                          " and " + type_string(g, b) + " differ at dimension " + std::to_string(i) + " (" +
                          std::to_string(da) + " vs " + std::to_string(db) + ")",
                      loc);
    }
  }
  throw InternalError("broadcast_or_throw: no clashing dimension found");
}

bool is_int64_value(double v) {
  // [-2^63, 2^63): the doubles that convert to int64_t without overflow.
  return v >= -9223372036854775808.0 && v < 9223372036854775808.0;
}

// `v` stored in the integer dtype `dt`: two's complement, modulo 2^bits
// (c10's static_cast from int64). Other dtypes return `v`.
int64_t wrap_to_integer(DType dt, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  switch (dt) {
    case DType::I8:
      return static_cast<int8_t>(static_cast<uint8_t>(u));
    case DType::U8:
      return static_cast<uint8_t>(u);
    case DType::I32:
      return static_cast<int32_t>(static_cast<uint32_t>(u));
    default:
      return v;
  }
}

// The Python kind of a Scalar node: bool, int or float.
enum class PyKind { Bool, Int, Float };
PyKind py_kind(const Node& n) {
  if (n.dtype == DType::Bool) return PyKind::Bool;
  return is_floating(n.dtype) ? PyKind::Float : PyKind::Int;
}

// Value numbering (Graph::add): every field that decides a node's value,
// i.e. all but its name and source location. Doubles by their bits (NaN
// literals with the same bits are one value; 0.0 and -0.0 are two).
uint64_t value_hash(const Node& n) {
  uint64_t h = 0;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull + (h >> 29); };
  auto bits = [](double d) { return std::bit_cast<uint64_t>(d); };
  mix(static_cast<uint64_t>(n.kind));
  mix(static_cast<uint64_t>(n.dtype));
  for (ValueId in : n.inputs) mix(static_cast<uint64_t>(in));
  for (int64_t d : n.shape) mix(static_cast<uint64_t>(d));
  mix(bits(n.scalar));
  mix(static_cast<uint64_t>(n.iscalar));
  mix(static_cast<uint64_t>(n.unary) << 8 | static_cast<uint64_t>(n.binary));
  mix(static_cast<uint64_t>(n.dim));
  mix(static_cast<uint64_t>(n.start));
  mix(static_cast<uint64_t>(n.step));
  return h;
}

bool same_value(const Node& a, const Node& b) {
  auto same_double = [](double x, double y) {
    return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y);
  };
  auto same_opt = [&](const std::optional<double>& x, const std::optional<double>& y) {
    return x.has_value() == y.has_value() && (!x || same_double(*x, *y));
  };
  return a.kind == b.kind && a.inputs == b.inputs && a.dtype == b.dtype && a.shape == b.shape &&
         a.dim_symbols == b.dim_symbols &&
         a.strides == b.strides && a.offset == b.offset &&
         (!a.is_view() || a.storage_root == b.storage_root) && same_double(a.scalar, b.scalar) &&
         a.iscalar == b.iscalar && a.unary == b.unary && a.binary == b.binary &&
         same_opt(a.clamp_min, b.clamp_min) && same_opt(a.clamp_max, b.clamp_max) && a.dim == b.dim &&
         a.index_wraps_negative == b.index_wraps_negative && a.start == b.start &&
         a.end == b.end && a.step == b.step && a.perm == b.perm && same_double(a.alpha, b.alpha) &&
         same_double(a.beta, b.beta) && a.compute_dtype == b.compute_dtype;
}

bool foldable(BinaryOp op) {
  return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Div ||
         is_comparison(op);
}

}  // namespace

std::string size_limit_violation(const Shape& shape) {
  int64_t extent = 1;  // the dims multiplied, size-0 dims as 1
  bool empty = false, over = false;
  for (int64_t d : shape) {
    empty = empty || d == 0;
    const int64_t e = std::max<int64_t>(d, 1);
    if (!over && (e > kMaxNumel || extent > kMaxNumel / e)) over = true;
    if (!over) extent *= e;
  }
  if (!over) return "";
  if (!empty) return "has more than 2^40 elements";
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] > 1) dims += (dims.empty() ? "" : " * ") + std::to_string(shape[i]);
  return "has no elements (a dim is 0), but its other dims multiply to more than 2^40 (" + dims +
         "): every dim of a tensor counts toward tilefuse's 2^40 limit, a size-0 dim as 1, so "
         "that strides, offsets and loop bounds stay far from int64 overflow";
}

ValueId Graph::add(Node node) {
  const ValueId id = size();
  for (int64_t d : node.shape) TF_CHECK(d >= 0, "negative size in " + shape_to_string(node.shape));
  graph_internal::check_size(*this, node);
  // With symbols every node names a symbol (or none) per dim, and a
  // symbolic dim has its symbol's value.
  if (!symbols_.empty()) {
    if (node.dim_symbols.empty()) node.dim_symbols.assign(node.shape.size(), kFixedDim);
    TF_CHECK(node.dim_symbols.size() == node.shape.size(), "dim_symbols and shape differ in rank");
    for (size_t d = 0; d < node.shape.size(); ++d)
      TF_CHECK(node.dim_symbols[d] == kFixedDim ||
                   (node.dim_symbols[d] >= 0 &&
                    static_cast<size_t>(node.dim_symbols[d]) < symbols_.size() &&
                    node.shape[d] == symbols_[node.dim_symbols[d]].value),
               "a symbolic dim whose size is not its symbol's value");
  } else {
    TF_CHECK(node.dim_symbols.empty(), "dim_symbols in a graph without symbols");
  }
  if (!node.is_view()) {
    node.strides = contiguous_strides(node.shape);
    node.offset = 0;
    node.storage_root = id;
  }
  TF_CHECK(node.strides.size() == node.shape.size(), "strides and shape differ in rank");
  const bool elementwise = node.kind == OpKind::Unary || node.kind == OpKind::Binary ||
                           node.kind == OpKind::Where || node.kind == OpKind::Clamp;
  if (!elementwise) node.compute_dtype = node.dtype;
  // Value numbering: every op is a pure function of its inputs and
  // attributes, so a node equal to an earlier one is that value (`x @ w +
  // x @ w` multiplies once). A parameter is always new.
  if (node.kind != OpKind::Parameter) {
    const uint64_t h = value_hash(node);
    auto [first, last] = value_numbers_.equal_range(h);
    for (auto it = first; it != last; ++it)
      if (same_value(nodes_[static_cast<size_t>(it->second)], node)) return it->second;
    value_numbers_.emplace(h, id);
  }
  nodes_.push_back(std::move(node));
  return id;
}

int64_t generic_symbol_value(size_t index, bool divisible_by_16) {
  return 16 * (65 + 2 * static_cast<int64_t>(index)) + (divisible_by_16 ? 0 : 1);
}

SymbolId Graph::add_symbol(const std::string& name, int64_t value, SourceLoc loc) {
  if (name.empty()) throw UserError("a symbolic dim needs a name", loc);
  if (find_symbol(name) != kFixedDim)
    throw UserError("duplicate symbolic dim `" + name + "`", loc);
  if (value < 0)
    throw UserError("symbolic dim `" + name + "` cannot be " + std::to_string(value), loc);
  TF_CHECK(nodes_.empty(), "symbols are declared before any node");
  symbols_.push_back({name, value, loc});
  const SymbolId id = static_cast<SymbolId>(symbols_.size() - 1);
  symbol_ids_.emplace(name, id);
  return id;
}

SymbolId Graph::find_symbol(std::string_view name) const {
  const auto it = symbol_ids_.find(std::string(name));
  return it == symbol_ids_.end() ? kFixedDim : it->second;
}

ValueId Graph::parameter(const std::string& name, DType dtype, const Shape& shape,
                         std::optional<IntRange> range, SourceLoc loc,
                         std::vector<SymbolId> dim_symbols) {
  if (name.empty()) throw UserError("a parameter needs a name", loc);
  if (!dim_symbols.empty() && dim_symbols.size() != shape.size())
    throw InternalError("parameter `" + name + "`: one symbol per dim expected");
  if (parameter_names_.count(name)) throw UserError("duplicate parameter name `" + name + "`", loc);
  for (int64_t d : shape) {
    if (d < 0) {
      throw UserError("parameter `" + name + "` has a negative size " + std::to_string(d) + " in " +
                          shape_to_string(shape),
                      loc);
    }
  }
  if (range) {
    const std::string r =
        std::string(1, '[') + std::to_string(range->lo) + ", " + std::to_string(range->hi) + ")";
    if (!is_integral(dtype)) {
      throw UserError("`in " + r + "` is only allowed on integer parameters, but `" + name +
                          "` is " + std::string(dtype_name(dtype)),
                      loc);
    }
    // A bound that is a symbolic dim may leave the range empty at some
    // binding (an index into a dim of size 0): only random inputs use it.
    const bool symbolic = range->lo_symbol != kFixedDim || range->hi_symbol != kFixedDim;
    if (!symbolic && range->lo >= range->hi) {
      throw UserError("the range " + r + " of parameter `" + name + "` is empty", loc);
    }
    int64_t lo = std::numeric_limits<int64_t>::min(), hi_max = std::numeric_limits<int64_t>::max();
    if (dtype == DType::U8) lo = 0, hi_max = 256;
    if (dtype == DType::I8) lo = -128, hi_max = 128;
    if (dtype == DType::I32) lo = std::numeric_limits<int32_t>::min(), hi_max = int64_t{1} << 31;
    if (!symbolic && (range->lo < lo || range->hi > hi_max)) {
      throw UserError("the range " + r + " of parameter `" + name + "` does not fit in " +
                          std::string(dtype_name(dtype)),
                      loc);
    }
  }
  Node n;
  n.kind = OpKind::Parameter;
  n.loc = loc;
  n.dtype = dtype;
  n.shape = shape;
  n.name = name;
  n.range = range;
  n.dim_symbols = std::move(dim_symbols);
  for (size_t d = 0; d < n.dim_symbols.size(); ++d) {
    const SymbolId s = n.dim_symbols[d];
    if (s != kFixedDim && (s < 0 || static_cast<size_t>(s) >= symbols_.size()))
      throw InternalError("parameter `" + name + "`: unknown symbol");
    if (s != kFixedDim && shape[d] != symbols_[s].value)
      throw InternalError("parameter `" + name + "`: dim " + std::to_string(d) +
                          " is not its symbol's value");
  }
  const ValueId id = add(std::move(n));
  parameters_.push_back(id);
  parameter_names_.insert(name);
  return id;
}

ValueId Graph::scalar(double value, DType literal_kind, SourceLoc loc) {
  const DType dt = graph_internal::wrapped_number_dtype(literal_kind);
  if (dt == DType::Bool) return int_scalar(value != 0 ? 1 : 0, dt, loc);
  if (dt == DType::I64) {
    // PyTorch unpacks Python ints into int64 ("Overflow when unpacking long").
    if (!is_int64_value(value)) {
      throw UserError("integer " + graph_internal::format_number(value) + " does not fit in i64",
                      loc);
    }
    TF_CHECK(std::trunc(value) == value, "integer literal with a fraction");
    return int_scalar(static_cast<int64_t>(value), dt, loc);
  }
  Node n;
  n.kind = OpKind::Scalar;
  n.loc = loc;
  n.dtype = dt;
  n.scalar = value;
  return add(std::move(n));
}

ValueId Graph::int_scalar(int64_t value, DType literal_kind, SourceLoc loc) {
  TF_CHECK(!is_floating(literal_kind), "int_scalar of a floating kind");
  Node n;
  n.kind = OpKind::Scalar;
  n.loc = loc;
  n.dtype = graph_internal::wrapped_number_dtype(literal_kind);
  n.iscalar = n.dtype == DType::Bool ? (value != 0 ? 1 : 0) : value;
  n.scalar = static_cast<double>(n.iscalar);
  return add(std::move(n));
}

ValueId Graph::unary(UnaryOp op, ValueId xv, SourceLoc loc) {
  TF_CHECK(xv >= 0 && xv < size(), "unary: invalid value");
  const Node& x = nodes_[xv];
  const std::string name(unary_op_name(op));
  if (op == UnaryOp::Neg && x.is_wrapped_number()) {
    // Python negates the number itself: -True is the int -1.
    if (py_kind(x) == PyKind::Float) return scalar(-x.scalar, DType::F64, loc);
    if (x.iscalar == INT64_MIN) throw UserError("integer overflow in -", loc);
    return int_scalar(-x.iscalar, DType::I64, loc);
  }
  const DType in = x.dtype;
  Node n;
  n.kind = OpKind::Unary;
  n.unary = op;
  n.inputs = {xv};
  n.loc = loc;
  n.shape = x.shape;
  n.dim_symbols = x.dim_symbols;
  n.dtype = n.compute_dtype = in;
  switch (op) {
    case UnaryOp::Neg:
      // neg_check: "Negation, the `-` operator, on a bool tensor is not supported."
      if (in == DType::Bool) {
        throw UserError(
            "negation (unary -) of a bool tensor is not supported; use torch.logical_not(x) or ~x",
            loc);
      }
      break;
    case UnaryOp::Relu:
    case UnaryOp::Abs:
      // PyTorch: "Boolean inputs not supported for relu" (and abs).
      if (in == DType::Bool) throw UserError(name + " is not supported for bool tensors", loc);
      break;
    case UnaryOp::Gelu:
    case UnaryOp::Silu:
      // Their kernels dispatch on floating types only (no int->float promotion).
      if (!is_floating(in)) {
        throw UserError(
            name + " requires a floating-point tensor, got " + std::string(dtype_name(in)), loc);
      }
      break;
    case UnaryOp::Sigmoid:
    case UnaryOp::Tanh:
    case UnaryOp::Exp:
    case UnaryOp::Log:
    case UnaryOp::Sqrt:
      // unary_float_op: integral and bool inputs compute in the default dtype.
      if (!is_floating(in)) n.dtype = n.compute_dtype = DType::F32;
      break;
    case UnaryOp::LogicalNot:
      n.dtype = DType::Bool;
      break;
  }
  return add(std::move(n));
}

ValueId Graph::binary(BinaryOp op, ValueId av, ValueId bv, SourceLoc loc) {
  TF_CHECK(av >= 0 && av < size() && bv >= 0 && bv < size(), "binary: invalid value");
  const std::string name(binary_op_name(op));
  {
    const Node& a = nodes_[av];
    const Node& b = nodes_[bv];
    if (a.is_wrapped_number() && b.is_wrapped_number() && foldable(op)) {
      // Python evaluates number arithmetic before PyTorch sees it.
      const PyKind ka = py_kind(a), kb = py_kind(b);
      const double x = a.scalar, y = b.scalar;
      if (is_comparison(op)) {
        // Two ints compare exactly; with a float, as doubles (Python compares
        // an int and a float exactly too, but literals that far apart in
        // magnitude do not occur in these programs).
        const bool ints = ka != PyKind::Float && kb != PyKind::Float;
        const int c = ints ? (a.iscalar < b.iscalar ? -1 : a.iscalar > b.iscalar ? 1 : 0)
                           : (x < y ? -1 : x > y ? 1 : 0);
        const bool unordered = !ints && (std::isnan(x) || std::isnan(y));
        bool r = false;
        switch (op) {
          case BinaryOp::Eq:
            r = !unordered && c == 0;
            break;
          case BinaryOp::Ne:
            r = unordered || c != 0;
            break;
          case BinaryOp::Lt:
            r = !unordered && c < 0;
            break;
          case BinaryOp::Le:
            r = !unordered && c <= 0;
            break;
          case BinaryOp::Gt:
            r = !unordered && c > 0;
            break;
          default:
            r = !unordered && c >= 0;
            break;
        }
        return int_scalar(r ? 1 : 0, DType::Bool, loc);
      }
      if (op == BinaryOp::Div) {
        if (y == 0) throw UserError("division by zero", loc);
        return scalar(x / y, DType::F64, loc);
      }
      if (ka == PyKind::Float || kb == PyKind::Float) {
        const double r = op == BinaryOp::Add ? x + y : op == BinaryOp::Sub ? x - y : x * y;
        return scalar(r, DType::F64, loc);
      }
      // int (or bool, which Python treats as int) arithmetic, checked for i64 overflow.
      const int64_t i = a.iscalar, j = b.iscalar;
      int64_t r = 0;
      const bool overflow = op == BinaryOp::Add   ? __builtin_add_overflow(i, j, &r)
                            : op == BinaryOp::Sub ? __builtin_sub_overflow(i, j, &r)
                                                  : __builtin_mul_overflow(i, j, &r);
      if (overflow) throw UserError("integer overflow in " + name + " of two numbers", loc);
      return int_scalar(r, DType::I64, loc);
    }
    if (op == BinaryOp::Sub && (a.dtype == DType::Bool || b.dtype == DType::Bool)) {
      // sub_check: PyTorch rejects - with any bool operand.
      throw UserError("subtraction with a bool operand is not supported (got " +
                          std::string(dtype_name(a.dtype)) + " and " +
                          std::string(dtype_name(b.dtype)) + ")",
                      loc);
    }
  }
  Node n;
  n.kind = OpKind::Binary;
  n.binary = op;
  n.inputs = {av, bv};
  n.loc = loc;
  n.dim_symbols = graph_internal::broadcast_symbols(*this, name, nodes_[av], nodes_[bv], loc);
  n.shape = broadcast_or_throw(*this, name, nodes_[av], nodes_[bv], loc);
  const DType common = result_type(*this, {av, bv}, loc);
  n.dtype = n.compute_dtype = common;
  if (is_comparison(op) && is_integral(common)) {
    // PyTorch compares in the promoted type, and a Python int does not widen
    // an integer tensor: the number is converted to that dtype first, as
    // c10's static_cast does, wrapping modulo 2^bits (u8 == 256 compares
    // with 0, i8 < 200 with -56; pytorch/pytorch#101653), the same
    // conversion as u8 + 300. Engines compare integers in int64, so the
    // literal is replaced by the value it wraps to.
    for (ValueId& in : n.inputs) {
      if (!nodes_[in].is_wrapped_number() || is_floating(nodes_[in].dtype)) continue;
      const int64_t v = nodes_[in].iscalar;
      const int64_t w = wrap_to_integer(common, v);
      if (w != v) {
        const SourceLoc number_loc = nodes_[in].loc;
        in = int_scalar(w, DType::I64, number_loc);
      }
    }
  }
  if (op == BinaryOp::Div) {
    // True division promotes integral and bool inputs to the default dtype.
    if (!is_floating(common)) n.dtype = n.compute_dtype = DType::F32;
  } else if (op == BinaryOp::Hypot) {
    // hypot's kernel dispatches on floating types only.
    if (!is_floating(common)) {
      throw UserError("hypot requires floating-point operands, got " +
                          std::string(dtype_name(nodes_[av].dtype)) + " and " +
                          std::string(dtype_name(nodes_[bv].dtype)),
                      loc);
    }
  } else if (is_comparison(op)) {
    n.dtype = DType::Bool;  // computed in the promoted type
  }
  return add(std::move(n));
}

ValueId Graph::where(ValueId cv, ValueId av, ValueId bv, SourceLoc loc) {
  TF_CHECK(cv >= 0 && cv < size() && av >= 0 && av < size() && bv >= 0 && bv < size(),
           "where: invalid value");
  const Node& c = nodes_[cv];
  const Node& a = nodes_[av];
  const Node& b = nodes_[bv];
  if (c.dtype != DType::Bool) {
    throw UserError("where expects a bool condition, got " + std::string(dtype_name(c.dtype)), loc);
  }
  Node n;
  n.kind = OpKind::Where;
  n.inputs = {cv, av, bv};
  n.loc = loc;
  // Three-way broadcasting fails exactly when some pair clashes; name that pair.
  if (c.has_symbolic_dim() || a.has_symbolic_dim() || b.has_symbolic_dim()) {
    graph_internal::broadcast_symbols(*this, "where", c, a, loc);
    graph_internal::broadcast_symbols(*this, "where", c, b, loc);
    graph_internal::broadcast_symbols(*this, "where", a, b, loc);
  }
  auto ca = broadcast_shapes(c.shape, a.shape);
  auto all = ca ? broadcast_shapes(*ca, b.shape) : std::nullopt;
  if (!all) {
    broadcast_or_throw(*this, "where", c, a, loc);
    broadcast_or_throw(*this, "where", c, b, loc);
    broadcast_or_throw(*this, "where", a, b, loc);
  }
  n.shape = *all;
  if (c.has_symbolic_dim() || a.has_symbolic_dim() || b.has_symbolic_dim()) {
    // Pairwise agreement (checked above) makes the three-way merge exact.
    n.dim_symbols.assign(n.shape.size(), kFixedDim);
    for (const Node* op : {&c, &a, &b})
      for (size_t i = 0; i < op->shape.size(); ++i)
        if (op->symbol(i) != kFixedDim)
          n.dim_symbols[n.shape.size() - op->shape.size() + i] = op->symbol(i);
  }
  n.dtype = n.compute_dtype = result_type(*this, {av, bv}, loc);
  return add(std::move(n));
}

ValueId Graph::clamp(ValueId x, std::optional<double> min, std::optional<double> max,
                     SourceLoc loc) {
  // A bound as written in Python keeps its kind; from a double, an integer
  // value is the best guess for an int literal.
  auto is_int = [](std::optional<double> v) { return !v || std::trunc(*v) == *v; };
  const DType kind = is_int(min) && is_int(max) ? DType::I64 : DType::F64;
  return clamp(x, min, max, kind, loc);
}

ValueId Graph::clamp(ValueId xv, std::optional<double> min, std::optional<double> max,
                     DType bounds_kind, SourceLoc loc, SourceLoc min_loc, SourceLoc max_loc) {
  TF_CHECK(xv >= 0 && xv < size(), "clamp: invalid value");
  if (!min && !max) throw UserError("clamp needs at least one of min and max", loc);
  const Node& x = nodes_[xv];
  // TORCH_META_FUNC(clamp): result_type(self, min, max) with the bounds as
  // wrapped numbers, so a bool tensor with int bounds clamps as i64; a bool
  // result has no clamp kernel.
  std::vector<graph_internal::PromotionOperand> ops = {graph_internal::promotion_operand(x)};
  const DType bound = graph_internal::wrapped_number_dtype(bounds_kind);
  if (min) ops.push_back({bound, graph_internal::PromotionGroup::Wrapped});
  if (max) ops.push_back({bound, graph_internal::PromotionGroup::Wrapped});
  const DType dt = graph_internal::result_type_of(ops, loc);
  if (dt == DType::Bool) throw UserError("clamp is not supported for bool tensors", loc);
  // The kernels convert each bound with Scalar::to<scalar_t>(), i.e.
  // c10::checked_convert: "value cannot be converted to type int8_t without
  // overflow" for one outside the dtype (c10::overflows). An integer dtype:
  // its range, except that a negative value down to -max converts to an
  // unsigned type by wrapping (clamp(u8, -1) clamps to 255); an i64 result
  // needs no check (an int bound is an i64 already). A floating dtype: a
  // finite bound past its largest finite value (clamp(f16, max=1e5)); an
  // infinite one converts where the dtype has infinities (all but f8e4m3),
  // NaN always; f64 takes any.
  if (dt != DType::I64 && dt != DType::F64) {
    const bool integral = is_integral(dt);
    const double hi = dt == DType::U8       ? 255.0
                      : dt == DType::I8     ? 127.0
                      : dt == DType::I32    ? static_cast<double>(std::numeric_limits<int32_t>::max())
                      : dt == DType::F16    ? 65504.0
                      : dt == DType::BF16   ? 3.3895313892515355e38
                      : dt == DType::F8E4M3 ? 448.0
                      : dt == DType::F8E5M2 ? 57344.0
                                            : static_cast<double>(std::numeric_limits<float>::max());
    const double lo = dt == DType::I8 ? -128.0 : dt == DType::I32 ? -hi - 1 : -hi;
    for (std::optional<double>* b : {&min, &max}) {
      if (!*b) continue;
      const double v = **b;
      const bool fits = (v >= lo && v <= hi) ||
                        (!integral && (std::isnan(v) || (std::isinf(v) && dt != DType::F8E4M3)));
      if (!fits) {
        const SourceLoc at = b == &min ? min_loc : max_loc;
        // (an integer result means int bounds: printed as written, where 3e+09
        // would hide the digits)
        throw UserError(
            fmt::format("clamp {}={} cannot be converted to {} without overflow ({})",
                        b == &min ? "min" : "max",
                        integral ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v),
                        dtype_name(dt),
                        integral ? std::string("an integer clamp's bounds must fit its dtype")
                                 : fmt::format("its largest finite value is {:g}", hi)),
            at.valid() ? at : loc);
      }
      if (dt == DType::U8 && v < 0) **b = v + 256.0;
    }
  }
  Node n;
  n.kind = OpKind::Clamp;
  n.inputs = {xv};
  n.loc = loc;
  n.shape = x.shape;
  n.dim_symbols = x.dim_symbols;
  n.dtype = n.compute_dtype = dt;
  n.clamp_min = min;
  n.clamp_max = max;
  return add(std::move(n));
}

ValueId Graph::cast(ValueId xv, DType dtype, SourceLoc loc) {
  TF_CHECK(xv >= 0 && xv < size(), "cast: invalid value");
  Node n;
  n.kind = OpKind::Cast;
  n.inputs = {xv};
  n.loc = loc;
  n.shape = nodes_[xv].shape;
  n.dim_symbols = nodes_[xv].dim_symbols;
  n.dtype = dtype;
  return add(std::move(n));
}

void Graph::set_name(ValueId v, const std::string& name) {
  TF_CHECK(v >= 0 && v < size(), "set_name: invalid value");
  Node& n = nodes_[static_cast<size_t>(v)];
  if (n.kind == OpKind::Parameter || !n.name.empty()) return;
  n.name = name;
}

std::string describe_value(const Node& n) {
  if (!n.name.empty()) return "`" + n.name + "`";
  switch (n.kind) {
    case OpKind::Unary:
      return "the result of " + std::string(unary_op_name(n.unary));
    case OpKind::Binary:
      return "the result of " + std::string(binary_op_name(n.binary));
    default:
      return "the result of " + std::string(op_kind_name(n.kind));
  }
}

}  // namespace tilefuse
