#include "frontend/builtins.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace tilefuse::frontend {

namespace {

constexpr std::string_view kTorch = "torch";
constexpr std::string_view kFunctional = "torch.nn.functional";

// Where a builtin can be called from.
enum Form : unsigned {
  kMethod = 1,        // x.name(...)
  kTorchFn = 2,       // torch.name(...)
  kFunctionalFn = 4,  // torch.nn.functional.name(...) / F.name(...)
};

struct Param {
  std::string_view name;
  bool required = true;
  bool keyword_only = false;
};

// The arguments of one call, bound to a builtin's parameters.
struct Call {
  Graph& g;
  std::string_view display;  // "relu", "torch.mm", "F.gelu"
  SourceLoc loc;             // the function or method name
  SourceLoc span;            // the whole call
  const std::vector<Param>& params;
  std::vector<std::optional<Operand>> args;  // one per param
  std::vector<Operand> rest;                 // *args of a variadic builtin

  bool has(size_t i) const { return args[i].has_value() && args[i]->kind != Operand::Kind::None; }
  const Operand& arg(size_t i) const { return *args[i]; }
  std::string what(size_t i) const {
    return fmt::format("argument '{}' of {}()", params[i].name, display);
  }
  ValueId tensor(size_t i) const { return to_tensor(g, arg(i), what(i)); }
  ValueId strict_tensor(size_t i) const { return expect_tensor(arg(i), what(i)); }
  int64_t integer(size_t i) const { return expect_int(arg(i), what(i)); }
  Operand result(ValueId v) const { return Operand::tensor(v, span); }
  const Node& node(ValueId v) const { return g.node(v); }
  // v's shape in a message: symbolic dims by name ("[M, K]"), never by their
  // placeholder sizes.
  std::string shape_text(ValueId v) const { return symbolic_shape_string(g, g.node(v)); }
};

using Handler = Operand (*)(Call&);

struct Builtin {
  std::string_view name;
  unsigned forms;
  std::vector<Param> params;
  bool variadic = false;  // trailing *args (permute, expand)
  Handler handler;
};

// --- handlers ---------------------------------------------------------------

// `inplace=True` would mutate the argument, which a value graph cannot express;
// `inplace=False` is the default and harmless.
void reject_inplace(const Call& c, size_t i) {
  if (!c.has(i)) return;
  const Operand& a = c.arg(i);
  // True/False (or 0/1, which Python accepts for a bool): anything else is
  // not a flag (torch.relu(x, 3) is no in-place request).
  const bool flag = a.kind == Operand::Kind::Bool ||
                    (a.is_number() && (a.number() == 0 || a.number() == 1));
  if (!flag)
    throw UserError(fmt::format("expected True or False for {}, found {}", c.what(i), describe(a)),
                    a.loc);
  if (a.number() != 0)
    throw UserError(
        fmt::format("in-place operations are not supported ({}(inplace=True))", c.display), a.loc);
}

// As in PyTorch, the math functions take tensors only: torch.exp(3.0) and
// torch.maximum(x, 2.0) are errors there ("must be Tensor, not float").
template <UnaryOp op>
Operand unary(Call& c) {
  return c.result(c.g.unary(op, c.strict_tensor(0), c.loc));
}

template <UnaryOp op>
Operand unary_inplace(Call& c) {
  reject_inplace(c, 1);
  return unary<op>(c);
}

Operand gelu(Call& c) {
  if (c.has(1)) {
    const Operand& a = c.arg(1);
    if (a.kind != Operand::Kind::String)
      throw UserError(fmt::format("expected a string for {}, found {}", c.what(1), describe(a)),
                      a.loc);
    if (a.path != "none")
      throw UserError(fmt::format("gelu(approximate='{}') is not supported; only the exact "
                                  "gelu (approximate='none') is",
                                  a.path),
                      a.loc);
  }
  return c.result(c.g.unary(UnaryOp::Gelu, c.tensor(0), c.loc));
}

template <BinaryOp op>
Operand binary(Call& c) {
  ValueId a = c.strict_tensor(0);
  ValueId b = c.strict_tensor(1);
  return c.result(c.g.binary(op, a, b, c.loc));
}

Operand clamp(Call& c) {
  ValueId x = c.tensor(0);
  std::optional<double> bounds[2];
  // The highest literal kind among the bounds decides promotion, as in
  // PyTorch: clamp(int_tensor, 0.0, 6.0) is f32, clamp(int_tensor, 0, 6) int.
  DType bounds_kind = DType::Bool;
  for (size_t i = 1; i <= 2; ++i) {
    if (!c.has(i)) continue;
    if (c.arg(i).is_tensor())
      throw UserError(fmt::format("{}() with tensor bounds is not supported; use "
                                  "torch.maximum / torch.minimum",
                                  c.display),
                      c.arg(i).loc);
    bounds[i - 1] = expect_number(c.arg(i), c.what(i));
    // An integer clamp keeps its bounds as f64 (Node::clamp_min): an int
    // bound past 2^53 that f64 would round is refused, not rounded (it
    // would clamp an i64 tensor to another value than PyTorch's).
    if (c.arg(i).kind == Operand::Kind::Int && is_integral(c.g.node(x).dtype)) {
      const int64_t v = c.arg(i).int_value;
      const double d = static_cast<double>(v);
      if (d >= 9223372036854775808.0 || static_cast<int64_t>(d) != v)
        throw UserError(fmt::format("{}={} is not supported: an integer clamp bound past 2^53 must "
                                    "be exact in f64 (this one would round to {:.0f})",
                                    i == 1 ? "min" : "max", v, d),
                        c.arg(i).loc);
    }
    if (c.arg(i).kind == Operand::Kind::Float)
      bounds_kind = DType::F64;
    else if (c.arg(i).kind == Operand::Kind::Int && bounds_kind == DType::Bool)
      bounds_kind = DType::I64;
  }
  if (!bounds[0] && !bounds[1])
    throw UserError(fmt::format("{}() needs at least one of 'min' and 'max'", c.display), c.loc);
  return c.result(c.g.clamp(x, bounds[0], bounds[1], bounds_kind, c.loc,
                            c.has(1) ? c.arg(1).loc : SourceLoc{},
                            c.has(2) ? c.arg(2).loc : SourceLoc{}));
}

Operand where(Call& c) {
  ValueId cond = c.tensor(0);
  ValueId a = c.tensor(1);
  ValueId b = c.tensor(2);
  return c.result(c.g.where(cond, a, b, c.loc));
}

Operand matmul(Call& c) {
  ValueId a = c.strict_tensor(0);
  ValueId b = c.strict_tensor(1);
  return c.result(c.g.matmul(a, b, c.loc));
}

// torch.mm and torch.bmm are stricter than torch.matmul (which Graph::matmul
// implements): exact ranks and, for bmm, equal batch sizes, no broadcasting.
Operand mm(Call& c) {
  ValueId a = c.strict_tensor(0);
  ValueId b = c.strict_tensor(1);
  const Shape& sa = c.node(a).shape;
  const Shape& sb = c.node(b).shape;
  if (sa.size() != 2 || sb.size() != 2)
    throw UserError(fmt::format("{}() expects two 2-D matrices, found shapes {} and {}", c.display,
                                c.shape_text(a), c.shape_text(b)),
                    c.loc);
  return c.result(c.g.matmul(a, b, c.loc));
}

Operand bmm(Call& c) {
  ValueId a = c.strict_tensor(0);
  ValueId b = c.strict_tensor(1);
  const Shape& sa = c.node(a).shape;
  const Shape& sb = c.node(b).shape;
  if (sa.size() != 3 || sb.size() != 3)
    throw UserError(fmt::format("{}() expects two 3-D tensors, found shapes {} and {}", c.display,
                                c.shape_text(a), c.shape_text(b)),
                    c.loc);
  // The batch dims: one fixed size, or one symbol (a symbol's placeholder
  // size could equal a fixed size or another symbol's by chance).
  if (sa[0] != sb[0] || c.node(a).symbol(0) != c.node(b).symbol(0))
    throw UserError(fmt::format("{}() batch sizes differ: shapes {} and {}", c.display,
                                c.shape_text(a), c.shape_text(b)),
                    c.loc);
  return c.result(c.g.matmul(a, b, c.loc));
}

Operand addmm(Call& c) {
  ValueId bias = c.strict_tensor(0);
  ValueId a = c.strict_tensor(1);
  ValueId b = c.strict_tensor(2);
  double beta = c.has(3) ? expect_number(c.arg(3), c.what(3)) : 1.0;
  double alpha = c.has(4) ? expect_number(c.arg(4), c.what(4)) : 1.0;
  const ValueId out = c.g.addmm(bias, a, b, beta, alpha, c.loc);
  // PyTorch converts beta and alpha to the op's scalar type (f32 below f64)
  // and refuses a finite value beyond it ("value cannot be converted to type
  // float without overflow").
  if (c.node(out).dtype != DType::F64) {
    for (const size_t i : {size_t{3}, size_t{4}}) {
      const double v = i == 3 ? beta : alpha;
      if (c.has(i) && std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max())
        throw UserError(fmt::format("{}={} cannot be converted to f32 without overflow",
                                    i == 3 ? "beta" : "alpha", v),
                        c.arg(i).loc);
    }
  }
  return c.result(out);
}

// F.linear(x, w, b) = x @ w.T + b. With a 2-D input and a bias PyTorch runs
// addmm (one rounding), so the graph does too.
Operand linear(Call& c) {
  ValueId x = c.strict_tensor(0);
  ValueId w = c.strict_tensor(1);
  const Shape& sw = c.node(w).shape;
  if (sw.size() != 1 && sw.size() != 2)
    throw UserError(fmt::format("{}() expects a 1-D or 2-D weight, found shape {}", c.display,
                                c.shape_text(w)),
                    c.arg(1).loc);
  ValueId wt = sw.size() == 2 ? c.g.transpose(w, 0, 1, c.loc) : w;
  if (c.has(2)) {
    ValueId bias = c.strict_tensor(2);
    if (c.node(x).shape.size() == 2 && sw.size() == 2)
      return c.result(c.g.addmm(bias, x, wt, 1.0, 1.0, c.loc));
    return c.result(c.g.binary(BinaryOp::Add, c.g.matmul(x, wt, c.loc), bias, c.loc));
  }
  return c.result(c.g.matmul(x, wt, c.loc));
}

void check_index_dtype(const Graph& g, ValueId idx, SourceLoc loc) {
  DType dt = g.node(idx).dtype;
  if (dt == DType::Bool) throw UserError("boolean mask indexing is not supported", loc);
  if (dt == DType::U8)
    throw UserError(
        "u8 index tensors are boolean masks in PyTorch, and mask indexing is not supported", loc);
  if (dt != DType::I32 && dt != DType::I64)
    throw UserError(fmt::format("index tensors must have an integer dtype (i32 or i64), found {}",
                                dtype_name(dt)),
                    loc);
}

Operand index_select(Call& c) {
  ValueId x = c.strict_tensor(0);
  int64_t dim = c.integer(1);
  ValueId idx = c.strict_tensor(2);
  check_index_dtype(c.g, idx, c.arg(2).loc);
  const Shape& si = c.node(idx).shape;
  if (si.size() > 1)
    throw UserError(
        fmt::format("{}() expects a 1-D index, found shape {}", c.display, c.shape_text(idx)),
        c.arg(2).loc);
  // A 0-d index selects one entry and keeps the dim (PyTorch: the result's
  // size along `dim` is index.numel()), unlike x[i], which drops it.
  if (si.empty()) {
    const std::string name = c.node(idx).name;
    idx = c.g.expand(idx, {1}, c.arg(2).loc);
    if (!name.empty()) c.g.set_name(idx, name);  // an index error names the tensor
  }
  // index_select does not wrap a negative index (PyTorch raises "index out
  // of range in self"), unlike x[idx].
  return c.result(c.g.index(x, dim, idx, c.loc, /*wrap_negative=*/false));
}

Operand transpose(Call& c) {
  ValueId x = c.strict_tensor(0);
  int64_t d0 = c.integer(1);
  int64_t d1 = c.integer(2);
  return c.result(c.g.transpose(x, d0, d1, c.loc));
}

Operand t(Call& c) {
  ValueId x = c.strict_tensor(0);
  size_t rank = c.node(x).shape.size();
  if (rank > 2)
    throw UserError(fmt::format("{}() expects a tensor of at most 2 dims, found shape {}",
                                c.display, c.shape_text(x)),
                    c.loc);
  return c.result(rank == 2 ? c.g.transpose(x, 0, 1, c.loc) : x);
}

// A list of dims or sizes longer than this is refused before the graph is
// built (its own check, kMaxRank, would come after a list of any length);
// the message names the graph's limit, the one that binds.
constexpr size_t kMaxListedDims = 64;

Operand permute(Call& c) {
  ValueId x = c.strict_tensor(0);
  std::vector<int64_t> dims =
      expect_int_list(c.rest, fmt::format("the dims of {}()", c.display), c.loc);
  if (dims.size() > kMaxListedDims)
    throw UserError(fmt::format("{}() was given {} dims; tilefuse's kernels index at most {}",
                                c.display, dims.size(), kMaxRank),
                    c.loc);
  return c.result(c.g.permute(x, dims, c.loc));
}

Operand expand(Call& c) {
  ValueId x = c.strict_tensor(0);
  std::vector<int64_t> sizes =
      expect_int_list(c.rest, fmt::format("the sizes of {}()", c.display), c.loc);
  if (sizes.size() > kMaxListedDims)
    throw UserError(fmt::format("{}() was given {} sizes; tilefuse's kernels index at most {} dims",
                                c.display, sizes.size(), kMaxRank),
                    c.loc);
  return c.result(c.g.expand(x, sizes, c.loc));
}

// PyTorch's .to() returns the tensor itself when the dtype already matches.
Operand cast(Call& c, ValueId x, DType dt) {
  return c.result(c.node(x).dtype == dt ? x : c.g.cast(x, dt, c.loc));
}

Operand to(Call& c) {
  ValueId x = c.strict_tensor(0);
  return cast(c, x, expect_dtype(c.arg(1), c.what(1)));
}

template <DType dt>
Operand cast_to(Call& c) {
  return cast(c, c.strict_tensor(0), dt);
}

// .contiguous() / .clone() change the layout or the storage, never a value.
Operand identity(Call& c) {
  return c.result(c.strict_tensor(0));
}

const std::vector<Builtin>& builtins() {
  const Param input{"input"};
  const Param other{"other"};
  const Param inplace{"inplace", false, false};
  constexpr unsigned kAll = kMethod | kTorchFn | kFunctionalFn;
  constexpr unsigned kMT = kMethod | kTorchFn;
  static const std::vector<Builtin> table = {
      {"relu", kAll, {input, inplace}, false, unary_inplace<UnaryOp::Relu>},
      {"gelu", kAll, {input, {"approximate", false, true}}, false, gelu},
      {"silu", kAll, {input, inplace}, false, unary_inplace<UnaryOp::Silu>},
      {"sigmoid", kAll, {input}, false, unary<UnaryOp::Sigmoid>},
      {"tanh", kAll, {input}, false, unary<UnaryOp::Tanh>},
      {"exp", kMT, {input}, false, unary<UnaryOp::Exp>},
      {"log", kMT, {input}, false, unary<UnaryOp::Log>},
      {"sqrt", kMT, {input}, false, unary<UnaryOp::Sqrt>},
      {"abs", kMT, {input}, false, unary<UnaryOp::Abs>},
      {"neg", kMT, {input}, false, unary<UnaryOp::Neg>},
      {"logical_not", kMT, {input}, false, unary<UnaryOp::LogicalNot>},
      {"maximum", kMT, {input, other}, false, binary<BinaryOp::Maximum>},
      {"minimum", kMT, {input, other}, false, binary<BinaryOp::Minimum>},
      {"hypot", kMT, {input, other}, false, binary<BinaryOp::Hypot>},
      {"clamp", kMT, {input, {"min", false}, {"max", false}}, false, clamp},
      {"clip", kMT, {input, {"min", false}, {"max", false}}, false, clamp},
      {"where", kTorchFn, {{"condition"}, input, other}, false, where},
      {"mm", kMT, {input, {"mat2"}}, false, mm},
      {"matmul", kMT, {input, other}, false, matmul},
      {"bmm", kMT, {input, {"mat2"}}, false, bmm},
      {"addmm",
       kMT,
       {input, {"mat1"}, {"mat2"}, {"beta", false, true}, {"alpha", false, true}},
       false,
       addmm},
      {"linear", kFunctionalFn, {input, {"weight"}, {"bias", false}}, false, linear},
      {"index_select", kMT, {input, {"dim"}, {"index"}}, false, index_select},
      {"transpose", kMT, {input, {"dim0"}, {"dim1"}}, false, transpose},
      {"swapaxes", kMT, {input, {"axis0"}, {"axis1"}}, false, transpose},
      {"t", kMT, {input}, false, t},
      {"permute", kMT, {input}, true, permute},
      {"expand", kMethod, {input}, true, expand},
      {"to", kMethod, {input, {"dtype"}}, false, to},
      {"float", kMethod, {input}, false, cast_to<DType::F32>},
      {"half", kMethod, {input}, false, cast_to<DType::F16>},
      {"bfloat16", kMethod, {input}, false, cast_to<DType::BF16>},
      {"double", kMethod, {input}, false, cast_to<DType::F64>},
      {"int", kMethod, {input}, false, cast_to<DType::I32>},
      {"long", kMethod, {input}, false, cast_to<DType::I64>},
      {"bool", kMethod, {input}, false, cast_to<DType::Bool>},
      {"byte", kMethod, {input}, false, cast_to<DType::U8>},
      {"char", kMethod, {input}, false, cast_to<DType::I8>},
      {"contiguous", kMethod, {input}, false, identity},
      {"clone", kMethod, {input}, false, identity},
  };
  return table;
}

unsigned form_of_module(std::string_view module_path) {
  if (module_path == kTorch) return kTorchFn;
  if (module_path == kFunctional) return kFunctionalFn;
  return 0;
}

// Splits "torch.nn.functional.relu" into its module and its last name.
std::pair<std::string_view, std::string_view> split_path(std::string_view path) {
  size_t dot = path.rfind('.');
  if (dot == std::string_view::npos) return {"", path};
  return {path.substr(0, dot), path.substr(dot + 1)};
}

const Builtin* find(std::string_view name, unsigned form) {
  for (const Builtin& b : builtins())
    if (b.name == name && (b.forms & form)) return &b;
  return nullptr;
}

std::string plural(size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

Operand invoke(Graph& g, const Builtin& b, std::string_view display, const Operand* self,
               std::vector<Argument>& args, SourceLoc name_loc, SourceLoc call_span) {
  Call c{g, display, name_loc, call_span, b.params, {}, {}};
  c.args.resize(b.params.size());
  size_t slot = 0;
  if (self) c.args[slot++] = *self;
  size_t positional_slots = 0;
  for (const Param& p : b.params) positional_slots += p.keyword_only ? 0 : 1;
  size_t receiver = self ? 1 : 0;
  for (Argument& a : args) {
    if (!a.keyword.empty()) continue;
    if (slot < positional_slots) {
      c.args[slot++] = std::move(a.value);
    } else if (b.variadic) {
      c.rest.push_back(std::move(a.value));
    } else {
      size_t n = positional_slots - receiver;
      throw UserError(
          n == 0 ? fmt::format("{}() takes no arguments", display)
                 : fmt::format("{}() takes at most {}", display, plural(n, "positional argument")),
          a.value.loc);
    }
  }
  for (Argument& a : args) {
    if (a.keyword.empty()) continue;
    auto it = std::find_if(b.params.begin(), b.params.end(),
                           [&](const Param& p) { return p.name == a.keyword; });
    // The receiver of a method call is not a keyword argument.
    if (it == b.params.end() || (self && it == b.params.begin())) {
      std::vector<std::string> names;
      for (size_t i = receiver; i < b.params.size(); ++i) names.emplace_back(b.params[i].name);
      throw UserError(fmt::format("{}() has no keyword argument '{}'{}", display, a.keyword,
                                  did_you_mean(a.keyword, names)),
                      a.keyword_loc);
    }
    size_t i = static_cast<size_t>(it - b.params.begin());
    if (c.args[i])
      throw UserError(fmt::format("{}() got two values for argument '{}'", display, a.keyword),
                      a.keyword_loc);
    c.args[i] = std::move(a.value);
  }
  for (size_t i = 0; i < b.params.size(); ++i)
    if (b.params[i].required && !c.args[i])
      throw UserError(fmt::format("{}() is missing its argument '{}'", display, b.params[i].name),
                      name_loc);
  if (b.variadic && c.rest.empty())
    throw UserError(fmt::format("{}() needs at least one dim", display), name_loc);
  return b.handler(c);
}

}  // namespace

bool is_module(std::string_view path) {
  return path == kTorch || path == "torch.nn" || path == kFunctional;
}

bool is_function(std::string_view path) {
  auto [module, name] = split_path(path);
  unsigned form = form_of_module(module);
  return form != 0 && find(name, form) != nullptr;
}

std::vector<std::string> function_names(std::string_view module_path) {
  std::vector<std::string> out;
  unsigned form = form_of_module(module_path);
  for (const Builtin& b : builtins())
    if (b.forms & form) out.emplace_back(b.name);
  return out;
}

bool is_method(std::string_view name) {
  return find(name, kMethod) != nullptr;
}

std::vector<std::string> method_names() {
  std::vector<std::string> out;
  for (const Builtin& b : builtins())
    if (b.forms & kMethod) out.emplace_back(b.name);
  return out;
}

Operand call_function(Graph& g, const Operand& fn, std::string_view display,
                      std::vector<Argument> args, SourceLoc name_loc, SourceLoc call_span) {
  auto [module, name] = split_path(fn.path);
  const Builtin* b = find(name, form_of_module(module));
  TF_CHECK(b != nullptr, "call of an unknown function " + fn.path);
  return invoke(g, *b, display, nullptr, args, name_loc, call_span);
}

Operand call_method(Graph& g, const Operand& self, std::string_view name,
                    std::vector<Argument> args, SourceLoc name_loc, SourceLoc call_span) {
  const Builtin* b = find(name, kMethod);
  TF_CHECK(b != nullptr, "call of an unknown method " + std::string(name));
  return invoke(g, *b, name, &self, args, name_loc, call_span);
}

// --- indexing -----------------------------------------------------------------

IndexItem index_item(const Graph& g, const Operand& op) {
  IndexItem item;
  item.loc = op.loc;
  switch (op.kind) {
    case Operand::Kind::Int:
      item.kind = IndexItem::Kind::Int;
      item.index = op.int_value;
      return item;
    case Operand::Kind::Tensor:
      check_index_dtype(g, op.value, op.loc);
      item.kind = IndexItem::Kind::Tensor;
      item.tensor = op.value;
      return item;
    case Operand::Kind::None:
      throw UserError("indexing with None (a new axis) is not supported", op.loc);
    case Operand::Kind::Bool:
      throw UserError("indexing with a bool is not supported", op.loc);
    case Operand::Kind::Tuple:
    case Operand::Kind::List:
      throw UserError(
          "indexing with a list or tuple is not supported; use an index tensor parameter", op.loc);
    default:
      throw UserError(fmt::format("an index must be an integer, a slice, '...' or an integer "
                                  "tensor, found {}",
                                  describe(op)),
                      op.loc);
  }
}

IndexItem slice_item(const std::optional<Operand>& start, const std::optional<Operand>& stop,
                     const std::optional<Operand>& step, SourceLoc loc) {
  IndexItem item;
  item.kind = IndexItem::Kind::Slice;
  item.loc = loc;
  auto bound = [](const std::optional<Operand>& op,
                  std::string_view what) -> std::optional<int64_t> {
    if (!op || op->kind == Operand::Kind::None) return std::nullopt;
    if (op->kind != Operand::Kind::Int)
      throw UserError(
          fmt::format("the {} of a slice must be an integer, found {}", what, describe(*op)),
          op->loc);
    return op->int_value;
  };
  item.start = bound(start, "start");
  item.stop = bound(stop, "stop");
  if (std::optional<int64_t> s = bound(step, "step")) {
    if (*s <= 0) throw UserError("the step of a slice must be positive", step->loc);
    item.step = *s;
  }
  return item;
}

Operand apply_subscript(Graph& g, const Operand& base, const std::vector<IndexItem>& items,
                        SourceLoc span) {
  if (base.kind != Operand::Kind::Tensor)
    throw UserError(fmt::format("only tensors can be indexed, found {}", describe(base)), base.loc);
  ValueId x = base.value;
  const int64_t rank = static_cast<int64_t>(g.node(x).shape.size());
  // Items that consume a dim of `x`; '...' stands for the dims they leave.
  int64_t consuming = 0;
  const IndexItem* ellipsis = nullptr;
  const IndexItem* gather = nullptr;
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::Kind::Ellipsis) {
      if (ellipsis) throw UserError("an index can only have a single '...'", it.loc);
      ellipsis = &it;
      continue;
    }
    if (it.kind == IndexItem::Kind::Tensor) {
      if (gather) throw UserError("indexing with more than one tensor is not supported", it.loc);
      gather = &it;
    }
    if (++consuming > rank)
      throw UserError(fmt::format("too many indices for a tensor of {} dim{} (shape {})", rank,
                                  rank == 1 ? "" : "s", symbolic_shape_string(g, g.node(x))),
                      it.loc);
  }
  // `d` walks the dims of the current view: a slice keeps its dim, a select
  // removes it, a tensor index keeps it until the gather at the end.
  int64_t d = 0;
  int64_t gather_dim = -1;
  for (const IndexItem& it : items) {
    switch (it.kind) {
      case IndexItem::Kind::Ellipsis:
        d += rank - consuming;
        break;
      case IndexItem::Kind::Slice:
        // A bare ':' keeps the dim whole; no view node for it.
        if (it.start || it.stop || it.step != 1)
          x = g.slice(x, d, it.start, it.stop, it.step, it.loc);
        ++d;
        break;
      case IndexItem::Kind::Int:
        x = g.select(x, d, it.index, it.loc);
        break;
      case IndexItem::Kind::Tensor:
        gather_dim = d++;
        break;
    }
  }
  if (gather) x = g.index(x, gather_dim, gather->tensor, gather->loc);
  return Operand::tensor(x, span);
}

}  // namespace tilefuse::frontend
