// Node constructors and names. The makers only check that operands exist:
// type errors are left for the verifier, which can name the kernel and the
// node (a maker deep inside a pass could not).
#include "tir/ir.h"

#include <cmath>

namespace tilefuse::tir {

namespace {

void require(const Expr& e, const char* what) {
  TF_CHECK(e.defined(), std::string("tir: undefined ") + what);
}
void require(const Stmt& s, const char* what) {
  TF_CHECK(s.defined(), std::string("tir: undefined ") + what);
}
void require_all(const std::vector<Expr>& es, const char* what) {
  for (const Expr& e : es) require(e, what);
}

}  // namespace

std::string_view expr_kind_name(ExprKind kind) {
  switch (kind) {
#define TF_TIR_CASE(name, ...) \
  case ExprKind::name:         \
    return #name;
    TILEFUSE_FOR_EACH_TIR_EXPR(TF_TIR_CASE)
#undef TF_TIR_CASE
  }
  return "?";
}

std::string_view stmt_kind_name(StmtKind kind) {
  switch (kind) {
#define TF_TIR_CASE(name, ...) \
  case StmtKind::name:         \
    return #name;
    TILEFUSE_FOR_EACH_TIR_STMT(TF_TIR_CASE)
#undef TF_TIR_CASE
  }
  return "?";
}

std::string_view intrinsic_name(Intrinsic op) {
  switch (op) {
#define TF_TIR_CASE(name, text, arity, float_only) \
  case Intrinsic::name:                            \
    return text;
    TILEFUSE_FOR_EACH_TIR_INTRINSIC(TF_TIR_CASE)
#undef TF_TIR_CASE
  }
  return "?";
}

int intrinsic_arity(Intrinsic op) {
  switch (op) {
#define TF_TIR_CASE(name, text, arity, float_only) \
  case Intrinsic::name:                            \
    return arity;
    TILEFUSE_FOR_EACH_TIR_INTRINSIC(TF_TIR_CASE)
#undef TF_TIR_CASE
  }
  return 0;
}

bool intrinsic_float_only(Intrinsic op) {
  switch (op) {
#define TF_TIR_CASE(name, text, arity, float_only) \
  case Intrinsic::name:                            \
    return float_only;
    TILEFUSE_FOR_EACH_TIR_INTRINSIC(TF_TIR_CASE)
#undef TF_TIR_CASE
  }
  return false;
}

bool is_binary_op(ExprKind kind) {
  switch (kind) {
#define TF_TIR_CASE(name, ...) case ExprKind::name:
    TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_CASE)
#undef TF_TIR_CASE
    return true;
    default:
      return false;
  }
}

std::string_view binary_symbol(ExprKind kind) {
  switch (kind) {
#define TF_TIR_CASE(name, sym, prec) \
  case ExprKind::name:               \
    return sym;
    TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_CASE)
#undef TF_TIR_CASE
    default:
      return "?";
  }
}

bool is_comparison(ExprKind kind) {
  switch (kind) {
    case ExprKind::EQ:
    case ExprKind::NE:
    case ExprKind::LT:
    case ExprKind::LE:
    case ExprKind::GT:
    case ExprKind::GE:
      return true;
    default:
      return false;
  }
}

std::string_view mem_scope_name(MemScope scope) {
  switch (scope) {
    case MemScope::Global:
      return "global";
    case MemScope::Shared:
      return "shared";
    case MemScope::Fragment:
      return "fragment";
    case MemScope::Local:
      return "local";
  }
  return "?";
}

std::string_view for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::Serial:
      return "serial";
    case ForKind::Unrolled:
      return "unrolled";
    case ForKind::Pipelined:
      return "pipelined";
    case ForKind::Parallel:
      return "parallel";
  }
  return "?";
}

Expr::Expr(int value) : Expr(IntImmNode::make(DType::I32, value)) {}

Var::Var(std::string name, DType dtype) : Expr(new VarNode(std::move(name), dtype)) {}

Buffer BufferNode::make(std::string name, DType dtype, MemScope scope, std::vector<Expr> shape,
                        std::vector<Expr> strides, bool read_only, int alignment) {
  require_all(shape, "buffer shape");
  require_all(strides, "buffer stride");
  auto* n = new BufferNode;
  n->name = std::move(name);
  n->dtype = dtype;
  n->scope = scope;
  n->shape = std::move(shape);
  n->strides = std::move(strides);
  n->read_only = read_only;
  n->alignment = alignment;
  return Buffer(n);
}

Expr IntImmNode::make(DType dt, int64_t value) {
  return Expr(new IntImmNode(dt, value));
}
Expr FloatImmNode::make(DType dt, double value) {
  return Expr(new FloatImmNode(dt, value));
}

template <ExprKind K>
Expr BinaryOpNode<K>::make(Expr a, Expr b) {
  require(a, "binary operand");
  require(b, "binary operand");
  DType dt = is_comparison(K) ? DType::Bool : a.dtype();
  return Expr(new BinaryOpNode<K>(dt, std::move(a), std::move(b)));
}
#define TF_TIR_INSTANTIATE(name, ...) template struct BinaryOpNode<ExprKind::name>;
TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_INSTANTIATE)
#undef TF_TIR_INSTANTIATE

Expr make_binary(ExprKind kind, Expr a, Expr b) {
  switch (kind) {
#define TF_TIR_CASE(name, ...) \
  case ExprKind::name:         \
    return name##Node::make(std::move(a), std::move(b));
    TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_CASE)
#undef TF_TIR_CASE
    default:
      break;
  }
  TF_CHECK(false, "make_binary: not a binary op: " + std::string(expr_kind_name(kind)));
  return {};
}

Expr NotNode::make(Expr a) {
  require(a, "! operand");
  return Expr(new NotNode(std::move(a)));
}

Expr SelectNode::make(Expr cond, Expr true_value, Expr false_value) {
  require(cond, "select condition");
  require(true_value, "select value");
  require(false_value, "select value");
  return Expr(new SelectNode(std::move(cond), std::move(true_value), std::move(false_value)));
}

Expr CastNode::make(DType dt, Expr value) {
  require(value, "cast operand");
  return Expr(new CastNode(dt, std::move(value)));
}

Expr CallNode::make(Intrinsic op, std::vector<Expr> args) {
  TF_CHECK(!args.empty(), "tir: call without arguments");
  require_all(args, "call argument");
  DType dt = args[0].dtype();
  return Expr(new CallNode(dt, op, std::move(args)));
}

Expr LoadNode::make(Buffer buffer, std::vector<Expr> indices, Expr mask, Expr other) {
  TF_CHECK(buffer.defined(), "tir: load from an undefined buffer");
  require_all(indices, "load index");
  return Expr(
      new LoadNode(std::move(buffer), std::move(indices), std::move(mask), std::move(other)));
}

Expr HookLoadNode::make(DType dtype, std::string name, std::vector<Expr> indices, Expr mask) {
  require_all(indices, "load_input index");
  return Expr(new HookLoadNode(dtype, std::move(name), std::move(indices), std::move(mask)));
}

Stmt ForNode::make(Var var, Expr min, Expr extent, ForKind kind, int num_stages, Stmt body,
                   LoopPlan plan) {
  require(var, "loop var");
  require(min, "loop min");
  require(extent, "loop extent");
  require(body, "loop body");
  auto* n = new ForNode;
  n->var = std::move(var);
  n->min = std::move(min);
  n->extent = std::move(extent);
  n->for_kind = kind;
  n->num_stages = num_stages;
  n->body = std::move(body);
  n->plan = std::move(plan);
  return Stmt(n);
}

Stmt IfThenElseNode::make(Expr cond, Stmt then_case, Stmt else_case) {
  require(cond, "if condition");
  require(then_case, "then branch");
  auto* n = new IfThenElseNode;
  n->cond = std::move(cond);
  n->then_case = std::move(then_case);
  n->else_case = std::move(else_case);
  return Stmt(n);
}

Stmt LetStmtNode::make(Var var, Expr value, Stmt body) {
  require(var, "let var");
  require(value, "let value");
  require(body, "let body");
  auto* n = new LetStmtNode;
  n->var = std::move(var);
  n->value = std::move(value);
  n->body = std::move(body);
  return Stmt(n);
}

Stmt StoreNode::make(Buffer buffer, std::vector<Expr> indices, Expr value, Expr mask) {
  TF_CHECK(buffer.defined(), "tir: store to an undefined buffer");
  require_all(indices, "store index");
  require(value, "store value");
  auto* n = new StoreNode;
  n->buffer = std::move(buffer);
  n->indices = std::move(indices);
  n->value = std::move(value);
  n->mask = std::move(mask);
  return Stmt(n);
}

Stmt HookStoreNode::make(std::string name, std::vector<Expr> indices, Expr value, Expr mask) {
  require_all(indices, "store_output index");
  require(value, "store_output value");
  auto* n = new HookStoreNode;
  n->name = std::move(name);
  n->indices = std::move(indices);
  n->value = std::move(value);
  n->mask = std::move(mask);
  return Stmt(n);
}

Stmt CopyNode::make(std::vector<Var> vars, std::vector<Expr> extents, Buffer dst,
                    std::vector<Expr> dst_indices, Expr value,
                     std::optional<CopyPlan> plan) {
  TF_CHECK(vars.size() == extents.size(), "tir: copy needs one extent per var");
  TF_CHECK(dst.defined(), "tir: copy to an undefined buffer");
  for (const Var& v : vars) require(v, "copy var");
  require_all(extents, "copy extent");
  require_all(dst_indices, "copy index");
  require(value, "copy value");
  auto* n = new CopyNode;
  n->vars = std::move(vars);
  n->extents = std::move(extents);
  n->dst = std::move(dst);
  n->dst_indices = std::move(dst_indices);
  n->value = std::move(value);
  n->plan = std::move(plan);
  return Stmt(n);
}

Stmt GemmNode::make(TileRef a, TileRef b, TileRef c, bool trans_a, bool trans_b) {
  for (const TileRef* t : {&a, &b, &c}) {
    TF_CHECK(t->buffer.defined(), "tir: gemm operand undefined");
    require_all(t->prefix, "gemm tile index");
  }
  auto* n = new GemmNode;
  n->a = std::move(a);
  n->b = std::move(b);
  n->c = std::move(c);
  n->trans_a = trans_a;
  n->trans_b = trans_b;
  return Stmt(n);
}

Stmt FillNode::make(Buffer buffer, Expr value) {
  TF_CHECK(buffer.defined(), "tir: fill of an undefined buffer");
  require(value, "fill value");
  auto* n = new FillNode;
  n->buffer = std::move(buffer);
  n->value = std::move(value);
  return Stmt(n);
}

Stmt CheckNode::make(Expr cond, int64_t code, std::string message, std::vector<Expr> args,
                     SourceLoc loc) {
  require(cond, "check condition");
  require_all(args, "check argument");
  auto* n = new CheckNode;
  n->cond = std::move(cond);
  n->code = code;
  n->message = std::move(message);
  n->args = std::move(args);
  n->loc = loc;
  return Stmt(n);
}

Stmt BarrierNode::make(BarrierKind kind) {
  auto* n = new BarrierNode;
  n->barrier_kind = kind;
  return Stmt(n);
}

Stmt SeqNode::make(std::vector<Stmt> stmts) {
  for (const Stmt& s : stmts) require(s, "statement in a sequence");
  auto* n = new SeqNode;
  n->stmts = std::move(stmts);
  return Stmt(n);
}

Stmt AllocateNode::make(Buffer buffer, Stmt body, BufferPlan plan) {
  TF_CHECK(buffer.defined(), "tir: alloc of an undefined buffer");
  require(body, "alloc body");
  auto* n = new AllocateNode;
  n->buffer = std::move(buffer);
  n->body = std::move(body);
  n->plan = std::move(plan);
  return Stmt(n);
}

Stmt LastArrivalNode::make(Buffer counter, std::vector<Expr> indices, Expr count, Stmt body) {
  TF_CHECK(counter.defined(), "tir: if_last_arrival on an undefined counter");
  require(body, "last-arrival body");
  require(count, "last-arrival count");
  for (const Expr& i : indices) require(i, "last-arrival index");
  auto* n = new LastArrivalNode;
  n->counter = std::move(counter);
  n->indices = std::move(indices);
  n->count = std::move(count);
  n->body = std::move(body);
  return Stmt(n);
}

Stmt EvaluateNode::make(Expr value) {
  require(value, "evaluate value");
  auto* n = new EvaluateNode;
  n->value = std::move(value);
  return Stmt(n);
}

namespace {
void flatten_into(std::vector<Stmt>* out, Stmt s) {
  if (const auto* seq = s.as<SeqNode>()) {
    for (const Stmt& inner : seq->stmts) flatten_into(out, inner);
  } else {
    out->push_back(std::move(s));
  }
}
}  // namespace

Stmt make_seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) flatten_into(&flat, std::move(s));
  if (flat.size() == 1) return flat[0];
  return SeqNode::make(std::move(flat));
}

Stmt make_block(const std::vector<BlockEntry>& entries) {
  // Backwards, so each let / alloc wraps everything after it.
  std::vector<Stmt> tail;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->stmt.defined()) {
      tail.insert(tail.begin(), it->stmt);
    } else if (it->let_var.defined()) {
      tail = {LetStmtNode::make(it->let_var, it->let_value, make_seq(std::move(tail)))};
    } else {
      tail = {AllocateNode::make(it->alloc, make_seq(std::move(tail)), it->alloc_plan)};
    }
  }
  return make_seq(std::move(tail));
}

Expr make_int(DType dt, int64_t value) {
  return IntImmNode::make(dt, value);
}

Expr make_bool(bool value) {
  return IntImmNode::make(DType::Bool, value ? 1 : 0);
}

Expr make_const(DType dt, double value) {
  if (dt == DType::Bool) return make_bool(value != 0);
  if (is_floating(dt)) return FloatImmNode::make(dt, round_to(dt, value));
  return IntImmNode::make(dt, static_cast<int64_t>(round_to(dt, std::trunc(value))));
}

const int64_t* as_const_int(const Expr& e) {
  const auto* imm = e.as<IntImmNode>();
  return imm ? &imm->value : nullptr;
}

}  // namespace tilefuse::tir
