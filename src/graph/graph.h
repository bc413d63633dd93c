// The graph IR: a tensor program with PyTorch semantics.
//
// A Graph is a list of nodes in topological order; each node produces one
// value, named by its ValueId (its index). Shapes are concrete numbers, but a
// dim may be *symbolic* (see "Symbolic dims" below). Every value has
// a dtype, a shape and a layout (strides and storage offset, in elements,
// relative to the storage of `storage_root`): view ops (Slice, Permute,
// Expand, Select) alias their input's storage and never copy; every other op
// produces a fresh contiguous value that is its own storage root.
//
// The builder methods check their operands, infer the result type with
// PyTorch's broadcasting and type-promotion rules, and throw UserError with
// the given SourceLoc on any violation. A Graph that was built without
// exceptions is well formed. A builder asked for a value the graph already
// has (the same op on the same inputs with the same attributes) returns
// that node: every op is pure, so `x @ w + x @ w` multiplies once (value
// numbering, as Inductor's and AOTAutograd's graph CSE). Such a node keeps
// the location and the name of its first occurrence.
//
// Symbolic dims. A parameter dim written as a name (`x: f16[T, 4096]`) is a
// Symbol: the graph is built at one value of each symbol (its binding), and
// every node records, per dim, which symbol its size is (Node::dim_symbols).
// A symbolic dim is only ever a symbol itself, never an expression of one:
// the builders propagate symbols through elementwise ops, permutes, expand
// (-1 keeps a dim), gathers and matmuls, and reject what would make a size
// depend on a symbol in another way (a slice or select along a symbolic dim)
// or a shape check that holds only for some values (a symbolic dim broadcast
// against a fixed size other than 1, two different symbols where one size
// is needed). So two graphs of one program built at different bindings have
// the same nodes, and differ only in the sizes of symbolic dims and what
// derives from them (strides, offsets): compiled kernels that take the
// symbols as arguments serve every binding (lower.h, Specialization).
//
// Rounding contract (shared by every plan that executes a graph): each node
// rounds its result to its dtype exactly once; elementwise math on
// f16/bf16/f8 is computed in f32 ("opmath"), on other types in their own
// type; matmuls of f16/bf16/f8/f32 accumulate in f32 (f64 in f64) and round
// once at the output; addmm adds beta*bias + alpha*(a@b) in the accumulator
// type and rounds once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"

namespace tilefuse {

using ValueId = int32_t;

// Every op kind, listed once. Dispatch tables (printer, evaluator, shape
// checks, later the scheduler) are generated from this list.
#define TILEFUSE_FOR_EACH_OP(X)                                                 \
  X(Parameter) /* a program input; attrs: name, range                        */ \
  X(Scalar)    /* a Python number (a "wrapped number" for promotion)         */ \
  X(Unary)     /* elementwise; attrs: unary                                  */ \
  X(Binary)    /* elementwise with broadcasting; attrs: binary               */ \
  X(Where)     /* where(cond, a, b), broadcasting                            */ \
  X(Clamp)     /* clamp(x, min?, max?) with scalar bounds                    */ \
  X(Cast)      /* x.to(dtype)                                                */ \
  X(Slice)     /* view: x[start:end:step] along dim                          */ \
  X(Permute)   /* view: dims reordered (.T, .t(), transpose)                 */ \
  X(Expand)    /* view: broadcast to a larger shape (stride 0)               */ \
  X(Select)    /* view: x[i] along dim, dim removed                          */ \
  X(Index)     /* gather: x.index_select(dim, idx) for any idx shape         */ \
  X(Matmul)    /* torch.matmul semantics (1-D, 2-D, batched, broadcast)      */ \
  X(Addmm)     /* beta * bias + alpha * (a @ b), a and b 2-D                 */

enum class OpKind : uint8_t {
#define TF_OP_ENUM(name) name,
  TILEFUSE_FOR_EACH_OP(TF_OP_ENUM)
#undef TF_OP_ENUM
};
std::string_view op_kind_name(OpKind kind);

#define TILEFUSE_FOR_EACH_UNARY_OP(X) \
  X(Neg, "neg")                       \
  X(Relu, "relu")                     \
  X(Gelu, "gelu") /* exact (erf) */   \
  X(Silu, "silu")                     \
  X(Sigmoid, "sigmoid")               \
  X(Tanh, "tanh")                     \
  X(Exp, "exp")                       \
  X(Log, "log")                       \
  X(Sqrt, "sqrt")                     \
  X(Abs, "abs")                       \
  X(LogicalNot, "logical_not")

enum class UnaryOp : uint8_t {
#define TF_UNARY_ENUM(e, name) e,
  TILEFUSE_FOR_EACH_UNARY_OP(TF_UNARY_ENUM)
#undef TF_UNARY_ENUM
};
std::string_view unary_op_name(UnaryOp op);

#define TILEFUSE_FOR_EACH_BINARY_OP(X) \
  X(Add, "add")                        \
  X(Sub, "sub")                        \
  X(Mul, "mul")                        \
  X(Div, "div") /* true division */    \
  X(Maximum, "maximum")                \
  X(Minimum, "minimum")                \
  X(Hypot, "hypot")                    \
  X(Eq, "eq")                          \
  X(Ne, "ne")                          \
  X(Lt, "lt")                          \
  X(Le, "le")                          \
  X(Gt, "gt")                          \
  X(Ge, "ge")

enum class BinaryOp : uint8_t {
#define TF_BINARY_ENUM(e, name) e,
  TILEFUSE_FOR_EACH_BINARY_OP(TF_BINARY_ENUM)
#undef TF_BINARY_ENUM
};
std::string_view binary_op_name(BinaryOp op);
bool is_comparison(BinaryOp op);

// A symbolic dim's index in Graph::symbols(), or kFixedDim.
using SymbolId = int32_t;
inline constexpr SymbolId kFixedDim = -1;

// The value a graph gives symbol number `index` when no binding is known:
// 16 * (65 + 2 * index), plus 1 unless `divisible_by_16`. Over 1000, distinct
// per symbol, divisible by 16 exactly (not by 32) or by nothing, so no
// decision made on it holds for a special size (0, 1, a power of two) only.
int64_t generic_symbol_value(size_t index, bool divisible_by_16 = false);

// A symbolic dim of the program's signature and its value in this graph.
struct Symbol {
  std::string name;
  int64_t value = 0;
  SourceLoc loc;  // its first occurrence
};

// `in [lo, hi)` on an integer parameter: the range random inputs are drawn from.
// A bound may be a symbol or its negation (`in [-T, T)`): lo/hi are then its
// value in this graph, and lo_symbol/hi_symbol say which symbol.
struct IntRange {
  int64_t lo = 0;
  int64_t hi = 0;
  SymbolId lo_symbol = kFixedDim, hi_symbol = kFixedDim;
  bool lo_negated = false, hi_negated = false;
};

struct Node {
  OpKind kind = OpKind::Parameter;
  std::vector<ValueId> inputs;
  SourceLoc loc;

  // Result type and layout.
  DType dtype = DType::F32;
  Shape shape;
  // In a graph with symbols: one entry per dim, the symbol that dim's size
  // is, or kFixedDim (graph.h, "Symbolic dims"). Empty in a graph without.
  std::vector<SymbolId> dim_symbols;
  std::vector<int64_t> strides;  // elements, relative to storage_root's storage
  int64_t offset = 0;            // elements
  ValueId storage_root = -1;     // the value whose storage this one aliases (self if fresh)

  // Attributes; which ones are meaningful depends on `kind`.
  std::string name;  // Parameter: its name; others: the .tfs variable it was bound to, if any
  std::optional<IntRange> range;    // Parameter
  double scalar = 0;                // Scalar: its value
  // Scalar of an integer kind (i64, bool): its exact value (`scalar` holds
  // it rounded to a double; a literal above 2^53 differs).
  int64_t iscalar = 0;
  UnaryOp unary = UnaryOp::Neg;     // Unary
  BinaryOp binary = BinaryOp::Add;  // Binary
  std::optional<double> clamp_min;  // Clamp
  std::optional<double> clamp_max;  // Clamp
  int64_t dim = 0;                  // Slice, Select, Index: the (non-negative) dim
  // Index: a negative index value wraps once (x[idx], Python's rule), or is
  // out of bounds (index_select, whose indices must lie in [0, size)).
  bool index_wraps_negative = true;
  int64_t start = 0, end = 0,
          step = 1;            // Slice (resolved, clamped like Python); Select: start = index
  std::vector<int64_t> perm;   // Permute
  double alpha = 1, beta = 1;  // Addmm
  // Unary, Binary, Where, Clamp: the dtype the operands are converted to
  // before the math (TensorIterator's common dtype: result_type of the
  // operands, then int->f32 for true division and the float unary ops). It
  // equals `dtype` except for comparisons and logical_not (bool results
  // computed in the operands' type). Other kinds: equal to `dtype`.
  // Elementwise math on f16/bf16/f8 then runs in f32 (see "opmath" above).
  DType compute_dtype = DType::F32;

  bool is_view() const;
  // The symbol of dim d, or kFixedDim.
  SymbolId symbol(size_t d) const { return d < dim_symbols.size() ? dim_symbols[d] : kFixedDim; }
  bool has_symbolic_dim() const;
  // A Scalar node is a "wrapped number": it takes part in type promotion
  // only through its category (PyTorch's rule for Python scalars).
  bool is_wrapped_number() const { return kind == OpKind::Scalar; }
};

class Graph {
 public:
  // Declares a symbolic dim with its value in this graph (>= 0). Names are
  // unique (a UserError otherwise). Symbols come before the parameters that
  // use them.
  SymbolId add_symbol(const std::string& name, int64_t value, SourceLoc loc);
  const std::vector<Symbol>& symbols() const { return symbols_; }
  // The symbol named `name`, or kFixedDim.
  SymbolId find_symbol(std::string_view name) const;

  // Parameters, in declaration order. `range` only for integral dtypes.
  // `dim_symbols` (empty, or one per dim) marks symbolic dims: shape[d] must
  // then be that symbol's value.
  ValueId parameter(const std::string& name, DType dtype, const Shape& shape,
                    std::optional<IntRange> range, SourceLoc loc,
                    std::vector<SymbolId> dim_symbols = {});
  // A Python number. `dtype` is its kind as written: Bool, I64 (an integer
  // literal) or F64 (a float literal); for promotion it is a wrapped number,
  // and its node dtype is PyTorch's default for its category (bool, i64, f32).
  // Any other dtype is read by its category. `scalar` keeps the full double
  // value (consumers convert it straight to the op's compute dtype, never
  // through the node dtype: PyTorch wraps Python floats as double). A bool is
  // stored as 0/1; an integer literal outside i64 is a UserError.
  ValueId scalar(double value, DType literal_kind, SourceLoc loc);
  // An integer or bool literal, exact: Node::iscalar keeps the value,
  // Node::scalar its double (scalar() makes its integer kinds through it).
  ValueId int_scalar(int64_t value, DType literal_kind, SourceLoc loc);

  // Python numbers combine before PyTorch sees them: when every operand is a
  // Scalar node, unary Neg and binary Add/Sub/Mul/Div and the comparisons are
  // evaluated here with Python's rules (bool acts as int, int op int stays
  // int, / gives float, comparisons give bool; division by zero and i64
  // overflow are UserErrors) and return a new Scalar node. Everything else
  // builds a node of the named kind.
  ValueId unary(UnaryOp op, ValueId x, SourceLoc loc);
  ValueId binary(BinaryOp op, ValueId a, ValueId b, SourceLoc loc);
  ValueId where(ValueId cond, ValueId a, ValueId b, SourceLoc loc);
  // The bounds are wrapped numbers of kind `bounds_kind` (Bool, I64 or F64:
  // the highest kind among the bounds as written), which decides promotion
  // (torch.clamp(int_tensor, 0.5) is f32). The overload without it treats
  // integer-valued bounds as int literals and any other bound as a float.
  // With an integer result, a bound must convert to its dtype as PyTorch's
  // Scalar::to does (c10::checked_convert): one outside the dtype is a
  // UserError at `min_loc` / `max_loc` (`loc` where those are invalid), and
  // a u8 bound in [-255, -1] wraps to 256 + bound.
  ValueId clamp(ValueId x, std::optional<double> min, std::optional<double> max, SourceLoc loc);
  ValueId clamp(ValueId x, std::optional<double> min, std::optional<double> max, DType bounds_kind,
                SourceLoc loc, SourceLoc min_loc = {}, SourceLoc max_loc = {});
  ValueId cast(ValueId x, DType dtype, SourceLoc loc);

  // Views. Dims may be negative (wrap once, PyTorch style). Slice bounds
  // follow Python (negative wrap, clamped, missing = whole dim); step >= 1.
  ValueId slice(ValueId x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                int64_t step, SourceLoc loc);
  ValueId permute(ValueId x, const std::vector<int64_t>& perm, SourceLoc loc);
  ValueId transpose(ValueId x, int64_t dim0, int64_t dim1, SourceLoc loc);
  // `sizes` as torch.Tensor.expand: -1 keeps a dim; new leading dims allowed.
  ValueId expand(ValueId x, const std::vector<int64_t>& sizes, SourceLoc loc);
  ValueId select(ValueId x, int64_t dim, int64_t index, SourceLoc loc);

  // Gather along `dim` with an integer index tensor of any shape:
  // out.shape = x.shape[:dim] + idx.shape + x.shape[dim+1:]. With
  // `wrap_negative` (x[idx]) negative index values wrap once and values
  // outside [-size, size) are a run-time error; without it (index_select,
  // PyTorch's "index out of range in self") values outside [0, size) are.
  ValueId index(ValueId x, int64_t dim, ValueId idx, SourceLoc loc, bool wrap_negative = true);
  // What a bounds error of an index that does not wrap adds to its message
  // (every engine: the lowered check and the reference).
  static constexpr const char* kNoWrapNote =
      " (index_select takes indices in [0, size): a negative one does not wrap)";

  // torch.matmul: both operands floating and of the same dtype.
  ValueId matmul(ValueId a, ValueId b, SourceLoc loc);
  // torch.addmm(bias, a, b, beta=, alpha=): a, b 2-D; bias broadcasts to [M, N].
  ValueId addmm(ValueId bias, ValueId a, ValueId b, double beta, double alpha, SourceLoc loc);

  void add_output(ValueId v) { outputs_.push_back(v); }
  // Records the .tfs variable bound to v (for the printer and messages). A
  // parameter keeps its own name and the first name bound to a value sticks
  // (`h = x[i]; g = h` leaves v named `h`).
  void set_name(ValueId v, const std::string& name);

  const Node& node(ValueId v) const { return nodes_.at(static_cast<size_t>(v)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& parameters() const { return parameters_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }

  // Stable text form (`tilefuse emit --stage=graph`), one node per line:
  //   %ID = OP OPERANDS ATTRS : DTYPE[SHAPE] [VIEW LAYOUT] [  # NAME]
  // then one `return %a, %b` line. A graph with symbols starts with
  // `symbols T=2048, N=64` (their values here); a symbolic dim prints as its
  // name in every SHAPE (`f16[T, 4096]`), and a range bound as `T` / `-T`. OP is the unary/binary
  // op name for those kinds, else the lower-case kind. Operands are `%id`s separated by ", ";
  // attributes are `key=value`. A view's layout is `strides=[..] offset=N
  // root=%R` (a stride or offset past int64, which only the generic
  // placeholder sizes of many symbolic dims reach, prints as `?`); `# NAME` is the .tfs variable a
  // non-parameter value is bound to. Per kind:
  //   %0 = parameter x : f16[64, 32]
  //   %1 = parameter idx in [0, 64) : i64[50]
  //   %2 = scalar 0.5 : f32[]            (True/False, 3, 0.5, 1e+20, inf, nan)
  //   %3 = index %0, %1 dim=0 : f16[50, 32]
  //   %3 = index %0, %1 dim=0 negative=error : f16[50, 32]   (index_select)
  //   %4 = add %3, %2 : f16[50, 32]  # h
  //   %5 = slice %0 dim=1 start=0 end=32 step=2 : f16[64, 16] strides=[32, 2] offset=0 root=%0
  //   %6 = permute %5 perm=[1, 0] : f16[16, 64] strides=[2, 32] offset=0 root=%0
  //   %7 = select %0 dim=0 index=3 : f16[32] strides=[1] offset=96 root=%0
  //   %8 = expand %7 : f16[4, 32] strides=[0, 1] offset=96 root=%0
  //   %9 = clamp %4 min=0 max=6 : f16[50, 32]
  //   %10 = where %c, %a, %b : ...     %11 = cast %4 : f32[50, 32]
  //   %12 = matmul %a, %b : ...        %13 = addmm %bias, %a, %b beta=1 alpha=0.5 : ...
  //   return %4, %12
  std::string to_string() const;

 private:
  // Appends `node`, or returns the earlier node that computes the same value
  // (value numbering: same kind, inputs and attributes; see the builders).
  ValueId add(Node node);
  std::vector<Symbol> symbols_;
  // Name -> position in symbols_: find_symbol is called for every symbolic
  // dim of the signature, so a linear search made tens of thousands of
  // symbols quadratic (40,000 took 3.5 s to parse, a 16 MiB signature hours).
  std::unordered_map<std::string, SymbolId> symbol_ids_;
  std::vector<Node> nodes_;
  std::vector<ValueId> parameters_;
  std::vector<ValueId> outputs_;
  std::unordered_multimap<uint64_t, ValueId> value_numbers_;  // value hash -> node
  std::unordered_set<std::string> parameter_names_;
};

// The most dims a value may have (the kernels' index arithmetic and the CPU
// executor's buffers are sized for it); a node with more is a UserError at
// its location.
inline constexpr int kMaxRank = 8;

// The largest tensor the graph accepts: 2^40 elements. Every node's shape is
// checked (counting size-0 dims as 1, so strides and offsets stay far from
// int64 overflow); a larger one is a UserError.
inline constexpr int64_t kMaxNumel = int64_t{1} << 40;

// "" when `shape` is within kMaxNumel (its dims multiplied, size-0 dims
// counted as 1); else what is wrong, as the words that follow the tensor's
// type in an error: "has more than 2^40 elements", or for a tensor with a
// size-0 dim (no elements) the bound its other dims break, naming them.
std::string size_limit_violation(const Shape& shape);

// torch.promote_types over tilefuse's dtypes. Throws UserError (at `loc`)
// where PyTorch would need a type we lack (i8 with u8 gives int16) and for
// any float8 type mixed with another dtype (PyTorch: "Promotion for Float8
// Types is not supported").
DType promote_types(DType a, DType b, SourceLoc loc = {});
// How run-time errors name a value: "`x`" when it is bound to a name, else
// "the result of <op>" (run-time errors carry no source location, so the
// name or the op is all the user gets). Every engine uses this one function,
// so the reference evaluator and compiled kernels report identical messages.
std::string describe_value(const Node& n);

// PyTorch type promotion (torch.result_type) over the given values, with the
// tensor / zero-dim tensor / wrapped-number priority rules. Throws as
// promote_types, at `loc`.
DType result_type(const Graph& g, const std::vector<ValueId>& values, SourceLoc loc = {});
// Broadcast two shapes (PyTorch/NumPy rules); nullopt when incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// n's shape as written in messages and the text form: "[T, 4096]" (a
// symbolic dim by its name).
std::string symbolic_shape_string(const Graph& g, const Node& n);
// True when a and b have the same sizes and the same symbols per dim.
bool same_shape(const Node& a, const Node& b);
// Per node (indexed by ValueId): whether some graph output depends on it
// (the node is an output or an input of a live node).
std::vector<bool> live_values(const Graph& g);

}  // namespace tilefuse
