// Tile IR: the loop-level IR every kernel is built in (DESIGN.md, "Tile IR").
//
// Nodes are immutable and reference counted; `Expr` and `Stmt` are handles.
// Passes rewrite with an IRMutator (functor.h), which returns the very same
// node (`same_as`) when nothing below it changed. Vars and buffers are
// identified by their node, never by their name: two Vars named "i" are two
// different variables, and the printer gives them different names.
//
// ---------------------------------------------------------------------------
// Contract (what every pass may rely on and must preserve)
//
// Values. An expression's value is always representable in its dtype.
// Arithmetic nodes take operands of one dtype (no implicit promotion; the
// verifier rejects mixes) and round their exact result to that dtype: IEEE
// round-to-nearest-even for floats, two's-complement wrap for integers.
// Integer `/` and `%` are floor division and floor modulo (the sign of `%`
// follows the divisor), like Python and torch.div(rounding_mode="floor").
// Float min/max propagate NaN (torch.minimum/maximum). Comparisons, `&&`,
// `||`, `!` produce bool. `&&`, `||` and `select` evaluate every operand:
// nothing is short-circuit, so an access that might be out of bounds must be
// masked, not guarded by a select.
//
// Rounding. Narrowing happens only at explicit Cast nodes (float -> narrower
// float: nearest even, to f16 / bf16 / f8 through f32 first as PyTorch does,
// core/dtype.h round_to; int -> float: the same, from the exact integer;
// float -> int: truncate toward zero, then wrap; any -> bool: != 0). A store, copy or fill never
// converts: its value must already have the buffer's dtype (verifier). Templates compute
// f16/bf16/f8 math in f32 and cast back where PyTorch would store an intermediate, so the fused and
// unfused kernels round at the same points. Gemm accumulates A@B into C rounding each product-sum
// in C's dtype; the summation order is unspecified.
//
// Masks. `load(B, idx, mask=m, other=o)`: where m is false the load yields o
// (0 of the buffer's dtype when o is absent) and performs NO memory access, so
// idx may be out of bounds there. A masked-off store writes nothing. A hook
// (load_input / store_output) with a mask behaves the same way for its whole
// prologue / epilogue.
//
// Hoisting. A load may be moved out of a loop (or across statements, or
// merged with an equal load) when no statement in between writes its buffer.
// Distinct Buffer nodes never alias: the runtime passes fresh allocations for
// outputs, and an input passed as two parameters is read-only in both. A load
// under an `if` or in a loop that may run zero times may only be executed
// earlier with the guard ANDed into its mask (then it cannot fault). A Check
// moves together with the load whose index it checks.
//
// Checks. `check(cond, code, msg, args)` stops the program with an error
// carrying the values of `args` when cond is false: the CPU executor throws
// UserError, a GPU kernel writes a status word the host reads after the
// launch. A failed check does not have to stop other program instances, so
// an access it guards must still be masked by the same condition.
//
// Offsets. Index expressions are i32 or i64 and are evaluated in their own
// dtype. The element offset sum(index_d * stride_d) of a load or store is
// computed in 32 bits only where every term and partial sum provably fits
// (from the shapes and the ranges of the index values), and in 64 bits
// otherwise, including `index * stride` products of gathered indices and
// folded constant offsets. Producers make an index expression i64 when its
// own value may exceed 2^31 - 1.
//
// Scopes. `global` buffers are kernel parameters (pointer, shape, strides,
// dtype); `shared` buffers are per program instance; a `fragment` is one tile
// distributed over the instance's threads, so its elements are only
// accessed by element inside a `parallel` loop (or whole, by copy, gemm and
// fill); `local` buffers are per thread. Hooks are placeholders that
// inline_hooks replaces; passes after it see none.
//
// Scoping. A Var is bound by a kernel parameter, a grid dimension, a For, a
// LetStmt or a Copy, and used only inside that binding's scope; it may not be
// bound again while it is in scope. A let / alloc scopes over the rest of its
// block (the text form prints them without braces).
// ---------------------------------------------------------------------------
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "tir/handle.h"
#include "tir/plan.h"

namespace tilefuse::tir {

// Every binary operator: X(name, symbol, precedence). Precedence 0 means the
// operator is printed as a call (`min(a, b)`); higher binds tighter.
#define TILEFUSE_FOR_EACH_TIR_BINARY_OP(X) \
  X(Add, "+", 4)                           \
  X(Sub, "-", 4)                           \
  X(Mul, "*", 5)                           \
  X(Div, "/", 5)                           \
  X(Mod, "%", 5)                           \
  X(Min, "min", 0)                         \
  X(Max, "max", 0)                         \
  X(EQ, "==", 3)                           \
  X(NE, "!=", 3)                           \
  X(LT, "<", 3)                            \
  X(LE, "<=", 3)                           \
  X(GT, ">", 3)                            \
  X(GE, ">=", 3)                           \
  X(And, "&&", 2)                          \
  X(Or, "||", 1)

// Every expression kind, listed once: X(name, text keyword...). Users define
// X as variadic (`#define X(name, ...)`) since binary ops carry two extras.
#define TILEFUSE_FOR_EACH_TIR_EXPR(X) \
  X(IntImm, "")                       \
  X(FloatImm, "")                     \
  X(Var, "")                          \
  TILEFUSE_FOR_EACH_TIR_BINARY_OP(X)  \
  X(Not, "!")                         \
  X(Select, "select")                 \
  X(Cast, "")                         \
  X(Call, "")                         \
  X(Load, "load")                     \
  X(HookLoad, "load_input")

// Every statement kind, listed once: X(name, leading keyword of its text
// form; "" for Store (`B[i] = v`) and Seq (one statement per line)).
#define TILEFUSE_FOR_EACH_TIR_STMT(X) \
  X(For, "for")                       \
  X(IfThenElse, "if")                 \
  X(LetStmt, "let")                   \
  X(Store, "")                        \
  X(HookStore, "store_output")        \
  X(Copy, "copy")                     \
  X(Gemm, "gemm")                     \
  X(Fill, "fill")                     \
  X(Check, "check")                   \
  X(Barrier, "barrier")               \
  X(Seq, "")                          \
  X(Allocate, "alloc")                \
  X(Evaluate, "evaluate")             \
  X(LastArrival, "if_last_arrival")

// Math intrinsics of Call: X(name, text name, arity, float only).
#define TILEFUSE_FOR_EACH_TIR_INTRINSIC(X) \
  X(Neg, "neg", 1, false)                  \
  X(Abs, "abs", 1, false)                  \
  X(Exp, "exp", 1, true)                   \
  X(Exp2, "exp2", 1, true)                 \
  X(Log, "log", 1, true)                   \
  X(Log2, "log2", 1, true)                 \
  X(Sqrt, "sqrt", 1, true)                 \
  X(Rsqrt, "rsqrt", 1, true)               \
  X(Tanh, "tanh", 1, true)                 \
  X(Erf, "erf", 1, true)                   \
  X(Sigmoid, "sigmoid", 1, true)           \
  X(Sin, "sin", 1, true)                   \
  X(Cos, "cos", 1, true)                   \
  X(Floor, "floor", 1, true)               \
  X(Ceil, "ceil", 1, true)                 \
  X(Hypot, "hypot", 2, true)               \
  X(Pow, "pow", 2, true)                   \
  X(Fma, "fma", 3, true)

enum class ExprKind : uint8_t {
#define TF_TIR_ENUM(name, ...) name,
  TILEFUSE_FOR_EACH_TIR_EXPR(TF_TIR_ENUM)
#undef TF_TIR_ENUM
};
enum class StmtKind : uint8_t {
#define TF_TIR_ENUM(name, ...) name,
  TILEFUSE_FOR_EACH_TIR_STMT(TF_TIR_ENUM)
#undef TF_TIR_ENUM
};
enum class Intrinsic : uint8_t {
#define TF_TIR_ENUM(name, ...) name,
  TILEFUSE_FOR_EACH_TIR_INTRINSIC(TF_TIR_ENUM)
#undef TF_TIR_ENUM
};

std::string_view expr_kind_name(ExprKind kind);
std::string_view stmt_kind_name(StmtKind kind);
std::string_view intrinsic_name(Intrinsic op);  // "exp", "fma", ...
int intrinsic_arity(Intrinsic op);
bool intrinsic_float_only(Intrinsic op);
bool is_binary_op(ExprKind kind);
bool is_comparison(ExprKind kind);  // EQ NE LT LE GT GE
// A binary op's text: "+", "==", "&&", ... or "min" / "max" (printed as a
// call); "?" for a kind that is not a binary op.
std::string_view binary_symbol(ExprKind kind);

// Memory space of a buffer (see "Scopes" above).
enum class MemScope : uint8_t { Global, Shared, Fragment, Local };
std::string_view mem_scope_name(MemScope scope);  // "global", "shared", ...

// How a For runs: one iteration after another; fully unrolled; software
// pipelined over `num_stages` buffers of its async copies; or as one
// iteration per element of a tile, spread over the program's threads.
enum class ForKind : uint8_t { Serial, Unrolled, Pipelined, Parallel };
std::string_view for_kind_name(ForKind kind);  // "serial", "unrolled", ...

// Kernel attributes (config values) and copy annotations. Sorted by key so
// printing is deterministic.
using AttrValue = std::variant<int64_t, double, std::string>;
using Attrs = std::map<std::string, AttrValue>;

// ---- buffers -----------------------------------------------------------------

struct BufferNode : IRNode {
  std::string name;
  DType dtype = DType::F32;
  MemScope scope = MemScope::Global;
  std::vector<Expr> shape;    // elements per dim (i32/i64 exprs over params)
  std::vector<Expr> strides;  // elements; empty = compact row-major
  bool read_only = false;     // a global input: stores to it are rejected
  int alignment = 0;          // bytes the base address is a multiple of; 0 = dtype size

  static Buffer make(std::string name, DType dtype, MemScope scope, std::vector<Expr> shape,
                     std::vector<Expr> strides = {}, bool read_only = false, int alignment = 0);
};

// ---- expressions -------------------------------------------------------------

struct ExprNode : IRNode {
  ExprNode(ExprKind k, DType dt) : kind(k), dtype(dt) {}
  const ExprKind kind;
  const DType dtype;
};

// An integer or bool constant; `value` fits the dtype.
struct IntImmNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  int64_t value;
  IntImmNode(DType dt, int64_t v) : ExprNode(kKind, dt), value(v) {}
  static Expr make(DType dt, int64_t value);
};

// A floating constant, exactly representable in its dtype.
struct FloatImmNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  double value;
  FloatImmNode(DType dt, double v) : ExprNode(kKind, dt), value(v) {}
  static Expr make(DType dt, double value);
};

// A loop var, program id, let var or scalar parameter.
struct VarNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  std::string name;
  VarNode(std::string n, DType dt) : ExprNode(kKind, dt), name(std::move(n)) {}
};

// a OP b. dtype: bool for comparisons, a's dtype otherwise.
template <ExprKind K>
struct BinaryOpNode final : ExprNode {
  static constexpr ExprKind kKind = K;
  Expr a, b;
  BinaryOpNode(DType dt, Expr a_, Expr b_)
      : ExprNode(kKind, dt), a(std::move(a_)), b(std::move(b_)) {}
  static Expr make(Expr a, Expr b);
};
#define TF_TIR_BINARY_ALIAS(name, ...) using name##Node = BinaryOpNode<ExprKind::name>;
TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_BINARY_ALIAS)
#undef TF_TIR_BINARY_ALIAS

// Builds the binary op `kind` (which must be a binary op kind).
Expr make_binary(ExprKind kind, Expr a, Expr b);

struct NotNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Not;
  Expr a;
  NotNode(Expr a_) : ExprNode(kKind, DType::Bool), a(std::move(a_)) {}
  static Expr make(Expr a);
};

// cond ? true_value : false_value, both evaluated.
struct SelectNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  Expr cond, true_value, false_value;
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(kKind, t.dtype()),
        cond(std::move(c)),
        true_value(std::move(t)),
        false_value(std::move(f)) {}
  static Expr make(Expr cond, Expr true_value, Expr false_value);
};

// value converted to `dtype` (the only place values are narrowed).
struct CastNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  Expr value;
  CastNode(DType dt, Expr v) : ExprNode(kKind, dt), value(std::move(v)) {}
  static Expr make(DType dt, Expr value);
};

// A math intrinsic; dtype is the first argument's.
struct CallNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  Intrinsic op;
  std::vector<Expr> args;
  CallNode(DType dt, Intrinsic o, std::vector<Expr> a)
      : ExprNode(kKind, dt), op(o), args(std::move(a)) {}
  static Expr make(Intrinsic op, std::vector<Expr> args);
};

// buffer[indices]; see "Masks" above. mask / other may be undefined.
struct LoadNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Load;
  Buffer buffer;
  std::vector<Expr> indices;
  Expr mask, other;
  LoadNode(Buffer b, std::vector<Expr> i, Expr m, Expr o)
      : ExprNode(kKind, b.dtype()),
        buffer(std::move(b)),
        indices(std::move(i)),
        mask(std::move(m)),
        other(std::move(o)) {}
  static Expr make(Buffer buffer, std::vector<Expr> indices, Expr mask = {}, Expr other = {});
};

// A template's read of operand `name` at logical `indices`, replaced by the
// operand's prologue in inline_hooks. Masked off, it yields 0.
struct HookLoadNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::HookLoad;
  std::string name;
  std::vector<Expr> indices;
  Expr mask;
  HookLoadNode(DType dt, std::string n, std::vector<Expr> i, Expr m)
      : ExprNode(kKind, dt), name(std::move(n)), indices(std::move(i)), mask(std::move(m)) {}
  static Expr make(DType dtype, std::string name, std::vector<Expr> indices, Expr mask = {});
};

// ---- statements --------------------------------------------------------------

struct StmtNode : IRNode {
  explicit StmtNode(StmtKind k) : kind(k) {}
  const StmtKind kind;
};

// for var in [min, min + extent). var, min and extent share one integer dtype.
struct ForNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  Var var;
  Expr min, extent;
  ForKind for_kind = ForKind::Serial;
  int num_stages = 0;  // Pipelined only (>= 1)
  Stmt body;
  // Pipelined: how it runs (PipelinePlan); a parallel nest over an
  // accumulator: how it stores it (EpiloguePlan). Empty before the backend
  // passes (tir/plan.h).
  LoopPlan plan;
  ForNode() : StmtNode(kKind) {}
  static Stmt make(Var var, Expr min, Expr extent, ForKind kind, int num_stages, Stmt body,
                   LoopPlan plan = {});
};

struct IfThenElseNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  Expr cond;
  Stmt then_case, else_case;  // else_case may be undefined
  IfThenElseNode() : StmtNode(kKind) {}
  static Stmt make(Expr cond, Stmt then_case, Stmt else_case = {});
};

// Binds var = value (var.dtype == value.dtype) over body.
struct LetStmtNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LetStmt;
  Var var;
  Expr value;
  Stmt body;
  LetStmtNode() : StmtNode(kKind) {}
  static Stmt make(Var var, Expr value, Stmt body);
};

// buffer[indices] = value where mask (if defined) holds.
struct StoreNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value, mask;
  StoreNode() : StmtNode(kKind) {}
  static Stmt make(Buffer buffer, std::vector<Expr> indices, Expr value, Expr mask = {});
};

// A template's write of output `name` at logical indices, replaced by the
// epilogue (or a plain store) in inline_hooks.
struct HookStoreNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::HookStore;
  std::string name;
  std::vector<Expr> indices;
  Expr value, mask;
  HookStoreNode() : StmtNode(kKind) {}
  static Stmt make(std::string name, std::vector<Expr> indices, Expr value, Expr mask = {});
};

// A tile copy: for every point of vars in [0, extents): dst[dst_indices] =
// value, in any order and in parallel (value must not read dst). The vars
// are bound by the copy. `plan` records how it is done (lower_copies;
// tir/plan.h) and is empty before.
struct CopyNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Copy;
  std::vector<Var> vars;
  std::vector<Expr> extents;
  Buffer dst;
  std::vector<Expr> dst_indices;
  Expr value;
  std::optional<CopyPlan> plan;
  CopyNode() : StmtNode(kKind) {}
  static Stmt make(std::vector<Var> vars, std::vector<Expr> extents, Buffer dst,
                   std::vector<Expr> dst_indices, Expr value,
                   std::optional<CopyPlan> plan = std::nullopt);
};

// A 2-D tile of a buffer: its last two dims at the leading `prefix` indices
// (e.g. the stage of a multi-buffered tile). prefix.size() == rank - 2.
struct TileRef {
  TileRef() = default;
  TileRef(Buffer b, std::vector<Expr> p = {})  // NOLINT: a whole buffer is a tile
      : buffer(std::move(b)), prefix(std::move(p)) {}
  Buffer buffer;
  std::vector<Expr> prefix;
};

// C += op(A) @ op(B); op transposes when the flag is set. Shapes (last two
// dims): op(A) [M, K], op(B) [K, N], C [M, N].
struct GemmNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Gemm;
  TileRef a, b, c;
  bool trans_a = false, trans_b = false;
  GemmNode() : StmtNode(kKind) {}
  static Stmt make(TileRef a, TileRef b, TileRef c, bool trans_a = false, bool trans_b = false);
};

// Every element of buffer = value.
struct FillNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Fill;
  Buffer buffer;
  Expr value;
  FillNode() : StmtNode(kKind) {}
  static Stmt make(Buffer buffer, Expr value);
};

// Stops the program with error `code` when cond is false; `message` has one
// "{}" per arg, filled with the args' values (tensor position, index value).
// CheckNode::code of lowering's bounds check of a gather's index (its loc
// the gather's): the runtime orders index errors by the gather's place.
inline constexpr int64_t kIndexBoundsCheckCode = 1;

struct CheckNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Check;
  Expr cond;
  int64_t code = 0;
  std::string message;
  std::vector<Expr> args;
  // Where in the program the checked operation is (the gather's subscript or
  // index_select call), for the run-time error; not printed in the IR.
  SourceLoc loc;
  CheckNode() : StmtNode(kKind) {}
  static Stmt make(Expr cond, int64_t code, std::string message, std::vector<Expr> args = {},
                   SourceLoc loc = {});
};

// Synchronizes the threads of one program instance (and its shared memory);
// `kind` says which threads and whether the async proxy is fenced (sync;
// tir/plan.h).
struct BarrierNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Barrier;
  BarrierKind barrier_kind = BarrierKind::Block;
  BarrierNode() : StmtNode(kKind) {}
  static Stmt make(BarrierKind kind = BarrierKind::Block);
};

struct SeqNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  std::vector<Stmt> stmts;
  SeqNode() : StmtNode(kKind) {}
  static Stmt make(std::vector<Stmt> stmts);
};

// Declares a non-global buffer over body. `plan`: a shared buffer's layout,
// ring depth and offset (SharedPlan), an accumulator's MMA tile
// (FragmentPlan); empty before the backend passes (tir/plan.h).
struct AllocateNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  Buffer buffer;
  Stmt body;
  BufferPlan plan;
  AllocateNode() : StmtNode(kKind) {}
  static Stmt make(Buffer buffer, Stmt body, BufferPlan plan = {});
};

// Arrives once for the program instance at counter[indices] (an i32 global
// buffer; the element counts arrivals) and runs `body` only in the instance
// whose arrival is the `count`-th since the counter was 0; that instance
// sets the counter back to 0 first, so the next launch (or CUDA-graph
// replay) starts from 0 again. Every global store the arriving instances
// made before their arrival is visible to `body` (release/acquire at GPU
// scope: every thread fences, a block barrier, one thread's atomicAdd, a
// fence and a barrier; the CPU executor uses a sequentially consistent
// fetch-add). No float atomics: the split-K reduction (gemm_template.h)
// elects the last block of a tile with it and sums the partial tiles in a
// fixed order inside `body`. `count` is an integer expression uniform over
// the instance (stream-K: the number of a tile's pieces, which varies from
// tile to tile): at 1 the instance is the only arrival and runs `body`
// without touching the counter; at 0 (or below) it neither arrives nor runs
// `body`. Indices are in bounds where count > 1.
struct LastArrivalNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LastArrival;
  Buffer counter;
  std::vector<Expr> indices;
  Expr count;
  Stmt body;
  LastArrivalNode() : StmtNode(kKind) {}
  static Stmt make(Buffer counter, std::vector<Expr> indices, Expr count, Stmt body);
};

// Evaluates value for its effects (none today; a placeholder passes use).
struct EvaluateNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Evaluate;
  Expr value;
  EvaluateNode() : StmtNode(kKind) {}
  static Stmt make(Expr value);
};

// stmts as one statement: nothing for none, the statement for one, a Seq
// (with nested Seqs flattened) otherwise.
Stmt make_seq(std::vector<Stmt> stmts);

// One entry of a block as it is written (the builder's and the text form's):
// a statement, or a `let` or an `alloc` that scopes over the entries after
// it (exactly one of stmt, let_var, alloc is defined).
struct BlockEntry {
  Stmt stmt;
  Var let_var;
  Expr let_value;
  Buffer alloc;
  BufferPlan alloc_plan;
};
// The entries as one statement: each let and alloc wraps everything after
// it (LetStmt / Allocate over a Seq).
Stmt make_block(const std::vector<BlockEntry>& entries);

// ---- kernel ----------------------------------------------------------------

// A parameter is a scalar Var or a global Buffer (exactly one is defined).
struct KernelParam {
  Var var;
  Buffer buffer;
  bool is_buffer() const { return buffer.defined(); }
  const std::string& name() const { return is_buffer() ? buffer.name() : var.name(); }
};

// One grid dimension: the program id `var` runs over [0, extent).
struct GridDim {
  Var var;
  Expr extent;
};

// A kernel (PrimFunc): the body runs once per point of the grid.
struct Kernel {
  std::string name;
  std::vector<KernelParam> params;
  std::vector<GridDim> grid;
  Stmt body;
  Attrs attrs;  // config: BLOCK_M, num_stages, ...
  LaunchPlan launch;  // the backend passes' launch (tir/plan.h); undefined before
};

// ---- constants -----------------------------------------------------------------

// A constant of dtype dt: IntImm for bool/integers (value truncated toward
// zero), FloatImm for floats (value rounded to dt).
Expr make_const(DType dt, double value);
Expr make_int(DType dt, int64_t value);
Expr make_bool(bool value);
// The constant's value when e is an IntImm.
const int64_t* as_const_int(const Expr& e);

// ---- inline definitions ---------------------------------------------------------

inline ExprKind Expr::kind() const {
  return ptr_.get()->kind;
}
inline DType Expr::dtype() const {
  return ptr_.get()->dtype;
}
template <class T>
const T* Expr::as() const {
  const ExprNode* n = ptr_.get();
  return n && n->kind == T::kKind ? static_cast<const T*>(n) : nullptr;
}
inline StmtKind Stmt::kind() const {
  return ptr_.get()->kind;
}
template <class T>
const T* Stmt::as() const {
  const StmtNode* n = ptr_.get();
  return n && n->kind == T::kKind ? static_cast<const T*>(n) : nullptr;
}
inline Var::Var(const VarNode* node) : Expr(node) {}
inline const VarNode* Var::get() const {
  return static_cast<const VarNode*>(Expr::get());
}
inline const std::string& Var::name() const {
  return get()->name;
}
inline const std::string& Buffer::name() const {
  return ptr_.get()->name;
}
inline DType Buffer::dtype() const {
  return ptr_.get()->dtype;
}
inline MemScope Buffer::scope() const {
  return ptr_.get()->scope;
}
inline int Buffer::rank() const {
  return static_cast<int>(ptr_.get()->shape.size());
}

}  // namespace tilefuse::tir
