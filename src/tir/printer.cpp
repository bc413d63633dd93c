#include "tir/printer.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tir/functor.h"
#include "tir/plan_text.h"

namespace tilefuse::tir {

namespace {

constexpr int kAtomPrec = 7;
constexpr int kUnaryPrec = 6;

const char* const kKeywords[] = {
    "kernel",   "grid",         "attrs",      "for",      "in",      "if",       "else",
    "let",      "alloc",        "copy",       "gemm",     "fill",    "check",    "barrier",
    "evaluate", "store_output", "load_input", "load",     "select",  "min",      "max",
    "true",     "false",        "inf",        "nan",      "serial",  "unrolled", "pipelined",
    "parallel", "global",       "shared",     "fragment", "local",   "readonly", "strides",
    "align",    "mask",         "other",      "trans_a",  "trans_b", "code",     "msg",
    "args",     "stages",       "plan"};

int precedence(const Expr& e) {
  switch (e.kind()) {
#define TF_TIR_CASE(name, sym, prec) \
  case ExprKind::name:               \
    return (prec) == 0 ? kAtomPrec : (prec);
    TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_CASE)
#undef TF_TIR_CASE
    case ExprKind::Not:
      return kUnaryPrec;
    default:
      return kAtomPrec;
  }
}

int binary_precedence(ExprKind kind) {
  switch (kind) {
#define TF_TIR_CASE(name, sym, prec) \
  case ExprKind::name:               \
    return prec;
    TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_CASE)
#undef TF_TIR_CASE
    default:
      return 0;
  }
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

std::string attr_value(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return format_float(*d, DType::F64);
  return quote(std::get<std::string>(v));
}

class Printer final : public IRVisitor {
 public:
  std::ostringstream os;

  void kernel(const Kernel& k) {
    // The kernel name follows a keyword, so reserved words are fine there.
    os << "kernel " << sanitize_chars(k.name) << "(";
    if (!k.params.empty()) os << "\n";
    for (const KernelParam& p : k.params) {
      os << "  ";
      if (p.is_buffer()) {
        buffer_decl(p.buffer);
      } else {
        os << define(p.var.get(), p.var.name()) << ": " << dtype_name(p.var.dtype());
      }
      os << ",\n";
    }
    os << ") grid(";
    for (size_t i = 0; i < k.grid.size(); ++i) {
      if (i) os << ", ";
      // The extent may only use params, so print it before defining the var.
      std::string extent = expr_str(k.grid[i].extent, 0);
      os << define(k.grid[i].var.get(), k.grid[i].var.name()) << ": " << extent;
    }
    os << ")";
    if (!k.attrs.empty()) os << " " << attrs(k.attrs);
    if (k.launch.defined) os << " " << plan(to_clause(k.launch));
    os << " {\n";
    indent_ = 1;
    block(k.body);
    os << "}\n";
  }

  void block(const Stmt& s) {
    if (s.defined()) visit_stmt(s);
  }

  void expr(const Expr& e, int min_prec) {
    if (!e.defined()) {
      os << "<undefined>";
      return;
    }
    bool parens = precedence(e) < min_prec;
    if (parens) os << "(";
    visit_expr(e);
    if (parens) os << ")";
  }

  std::string expr_str(const Expr& e, int min_prec) {
    std::ostringstream saved;
    std::swap(saved, os);
    expr(e, min_prec);
    std::swap(saved, os);
    return saved.str();
  }

 protected:
  // ---- expressions ----
  void visit(const IntImmNode* op) override {
    if (op->dtype == DType::Bool) {
      os << (op->value ? "true" : "false");
      return;
    }
    os << op->value;
    if (op->dtype != DType::I32) os << "_" << dtype_name(op->dtype);
  }
  void visit(const FloatImmNode* op) override {
    os << format_float(op->value, op->dtype);
    if (op->dtype != DType::F32) os << "_" << dtype_name(op->dtype);
  }
  void visit(const VarNode* op) override { os << name_of(op, op->name); }
#define TF_TIR_BINARY(name, sym, prec)        \
  void visit(const name##Node* op) override { \
    binary(op->kind, op->a, op->b);           \
  }
  TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_BINARY)
#undef TF_TIR_BINARY
  void visit(const NotNode* op) override {
    os << "!";
    expr(op->a, kUnaryPrec);
  }
  void visit(const SelectNode* op) override {
    os << "select(";
    expr(op->cond, 0);
    os << ", ";
    expr(op->true_value, 0);
    os << ", ";
    expr(op->false_value, 0);
    os << ")";
  }
  void visit(const CastNode* op) override {
    os << dtype_name(op->dtype) << "(";
    expr(op->value, 0);
    os << ")";
  }
  void visit(const CallNode* op) override {
    os << intrinsic_name(op->op) << "(";
    list(op->args);
    os << ")";
  }
  void visit(const LoadNode* op) override {
    if (!op->mask.defined() && !op->other.defined()) {
      os << buffer_name(op->buffer) << "[";
      list(op->indices);
      os << "]";
      return;
    }
    os << "load(" << buffer_name(op->buffer) << ", [";
    list(op->indices);
    os << "]";
    keyword_arg("mask", op->mask);
    keyword_arg("other", op->other);
    os << ")";
  }
  void visit(const HookLoadNode* op) override {
    os << "load_input<" << dtype_name(op->dtype) << ">(" << quote(op->name) << ", [";
    list(op->indices);
    os << "]";
    keyword_arg("mask", op->mask);
    os << ")";
  }

  // ---- statements ----
  void visit(const ForNode* op) override {
    std::string min = expr_str(op->min, 0), extent = expr_str(op->extent, 0);
    line() << "for " << define(op->var.get(), op->var.name()) << " in "
           << for_kind_name(op->for_kind) << "(" << min << ", " << extent;
    if (op->for_kind == ForKind::Pipelined) os << ", stages=" << op->num_stages;
    os << ")";
    if (op->plan.index() != 0) os << " " << plan(to_clause(op->plan));
    os << " {\n";
    nested(op->body);
    line() << "}\n";
  }
  void visit(const IfThenElseNode* op) override {
    line() << "if ";
    expr(op->cond, 0);
    os << " {\n";
    nested(op->then_case);
    if (op->else_case.defined()) {
      line() << "} else {\n";
      nested(op->else_case);
    }
    line() << "}\n";
  }
  void visit(const LetStmtNode* op) override {
    std::string value = expr_str(op->value, 0);
    line() << "let " << define(op->var.get(), op->var.name()) << " = " << value << "\n";
    block(op->body);
  }
  void visit(const StoreNode* op) override {
    line() << buffer_name(op->buffer) << "[";
    list(op->indices);
    os << "] = ";
    expr(op->value, 0);
    keyword_arg("mask", op->mask);
    os << "\n";
  }
  void visit(const HookStoreNode* op) override {
    line() << "store_output(" << quote(op->name) << ", [";
    list(op->indices);
    os << "], ";
    expr(op->value, 0);
    keyword_arg("mask", op->mask);
    os << ")\n";
  }
  void visit(const CopyNode* op) override {
    line() << "copy (";
    for (size_t i = 0; i < op->vars.size(); ++i) {
      if (i) os << ", ";
      std::string extent = expr_str(op->extents[i], 0);
      os << define(op->vars[i].get(), op->vars[i].name()) << ": " << extent;
    }
    os << ") " << buffer_name(op->dst) << "[";
    list(op->dst_indices);
    os << "] = ";
    expr(op->value, 0);
    if (op->plan) os << " " << plan(to_clause(*op->plan));
    os << "\n";
  }
  void visit(const GemmNode* op) override {
    line() << "gemm(";
    tile(op->a);
    os << ", ";
    tile(op->b);
    os << ", ";
    tile(op->c);
    if (op->trans_a) os << ", trans_a";
    if (op->trans_b) os << ", trans_b";
    os << ")\n";
  }
  void visit(const FillNode* op) override {
    line() << "fill(" << buffer_name(op->buffer) << ", ";
    expr(op->value, 0);
    os << ")\n";
  }
  void visit(const CheckNode* op) override {
    line() << "check(";
    expr(op->cond, 0);
    os << ", code=" << op->code << ", msg=" << quote(op->message);
    if (!op->args.empty()) {
      os << ", args=[";
      list(op->args);
      os << "]";
    }
    os << ")\n";
  }
  void visit(const BarrierNode* op) override {
    line() << "barrier(";
    if (op->barrier_kind != BarrierKind::Block) os << barrier_kind_name(op->barrier_kind);
    os << ")\n";
  }
  void visit(const SeqNode* op) override {
    for (const Stmt& s : op->stmts) visit_stmt(s);
  }
  void visit(const AllocateNode* op) override {
    line() << "alloc ";
    buffer_decl(op->buffer);
    if (op->plan.index() != 0) os << " " << plan(to_clause(op->plan));
    os << "\n";
    block(op->body);
  }
  void visit(const LastArrivalNode* op) override {
    line() << "if_last_arrival(" << buffer_name(op->counter) << "[";
    list(op->indices);
    os << "], ";
    expr(op->count, 0);
    os << ") {\n";
    nested(op->body);
    line() << "}\n";
  }
  void visit(const EvaluateNode* op) override {
    line() << "evaluate(";
    expr(op->value, 0);
    os << ")\n";
  }

 private:
  std::ostream& line() {
    for (int i = 0; i < indent_; ++i) os << "  ";
    return os;
  }
  void nested(const Stmt& s) {
    ++indent_;
    block(s);
    --indent_;
  }
  void list(const std::vector<Expr>& es) {
    for (size_t i = 0; i < es.size(); ++i) {
      if (i) os << ", ";
      expr(es[i], 0);
    }
  }
  void keyword_arg(const char* key, const Expr& e) {
    if (!e.defined()) return;
    os << ", " << key << "=";
    expr(e, kAtomPrec);
  }
  void binary(ExprKind kind, const Expr& a, const Expr& b) {
    int prec = binary_precedence(kind);
    if (prec == 0) {  // min / max
      os << binary_symbol(kind) << "(";
      expr(a, 0);
      os << ", ";
      expr(b, 0);
      os << ")";
      return;
    }
    // Left-associative; comparisons do not associate at all.
    expr(a, is_comparison(kind) ? prec + 1 : prec);
    if (prec == 5) {
      os << binary_symbol(kind);
    } else {
      os << " " << binary_symbol(kind) << " ";
    }
    expr(b, prec + 1);
  }
  void tile(const TileRef& t) {
    os << buffer_name(t.buffer);
    if (!t.prefix.empty()) {
      os << "[";
      list(t.prefix);
      os << "]";
    }
  }
  void buffer_decl(const Buffer& b) {
    // Shapes only use names defined before the buffer.
    std::string shape, strides;
    for (size_t i = 0; i < b->shape.size(); ++i)
      shape += (i ? ", " : "") + expr_str(b->shape[i], 0);
    for (size_t i = 0; i < b->strides.size(); ++i)
      strides += (i ? ", " : "") + expr_str(b->strides[i], 0);
    os << define(b.get(), b.name()) << ": " << mem_scope_name(b.scope()) << " ";
    if (b->read_only) os << "readonly ";
    os << dtype_name(b.dtype()) << "[" << shape << "]";
    if (!b->strides.empty()) os << " strides [" << strides << "]";
    if (b->alignment) os << " align " << b->alignment;
  }
  std::string plan(const PlanClause& c) {
    return print_clause(c, [this](const Expr& e) { return expr_str(e, 0); });
  }
  std::string attrs(const Attrs& a) {
    std::string out = "attrs(";
    bool first = true;
    for (const auto& [key, value] : a) {
      if (!first) out += ", ";
      first = false;
      out += sanitize_chars(key) + " = " + attr_value(value);  // keys are not names
    }
    return out + ")";
  }

  static std::string sanitize_chars(const std::string& hint) {
    std::string s = hint.empty() ? "v" : hint;
    for (char& c : s) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    }
    if (std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
    return s;
  }
  static std::string sanitize(const std::string& hint) {
    std::string s = sanitize_chars(hint);
    if (is_reserved_word(s)) s += "_";
    return s;
  }
  std::string define(const void* key, const std::string& hint) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;  // a var bound again (e.g. unrolled copies)
    std::string base = sanitize(hint), name = base;
    // Suffixes continue from the last one given to this base (not from 1:
    // hundreds of lets named `t` would make naming quadratic).
    for (int& n = next_suffix_[base]; used_.count(name);) name = base + "_" + std::to_string(++n);
    used_.insert(name);
    names_[key] = name;
    return name;
  }
  std::string name_of(const void* key, const std::string& hint) {
    return define(key, hint);
  }
  std::string buffer_name(const Buffer& b) {
    return define(b.get(), b.name());
  }

  int indent_ = 0;
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> next_suffix_;  // the last suffix given to a base name
};

}  // namespace

bool is_reserved_word(std::string_view word) {
  static const std::unordered_set<std::string_view> words = [] {
    std::unordered_set<std::string_view> w(std::begin(kKeywords), std::end(kKeywords));
#define TF_TIR_ADD(name, text, ...) w.insert(text);
    TILEFUSE_FOR_EACH_TIR_INTRINSIC(TF_TIR_ADD)
#undef TF_TIR_ADD
#define TF_TIR_ADD(name, text, ...) w.insert(text);
    TILEFUSE_FOR_EACH_DTYPE(TF_TIR_ADD)
#undef TF_TIR_ADD
    return w;
  }();
  if (words.count(word)) return true;
  // Suffixed literals: inf_f16, nan_bf16.
  for (std::string_view lit : {"inf_", "nan_"}) {
    if (word.substr(0, 4) == lit && dtype_from_text(word.substr(4))) return true;
  }
  return false;
}

std::optional<DType> dtype_from_text(std::string_view word) {
#define TF_TIR_MATCH(e, text, ...) \
  if (word == text) return DType::e;
  TILEFUSE_FOR_EACH_DTYPE(TF_TIR_MATCH)
#undef TF_TIR_MATCH
  return std::nullopt;
}

std::string format_float(double value, DType dtype) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[64];
  std::to_chars_result r = dtype == DType::F64
                               ? std::to_chars(buf, buf + sizeof buf, value)
                               : std::to_chars(buf, buf + sizeof buf, static_cast<float>(value));
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string print(const Kernel& kernel) {
  Printer p;
  p.kernel(kernel);
  return p.os.str();
}

std::string print(const Stmt& stmt) {
  Printer p;
  p.block(stmt);
  return p.os.str();
}

std::string print(const Expr& expr) {
  Printer p;
  p.expr(expr, 0);
  return p.os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  return os << print(e);
}
std::ostream& operator<<(std::ostream& os, const Stmt& s) {
  return os << print(s);
}
std::ostream& operator<<(std::ostream& os, const Kernel& k) {
  return os << print(k);
}

}  // namespace tilefuse::tir
