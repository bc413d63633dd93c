// A recursive-descent parser for the text form (grammar in printer.h).
// Statements are dispatched on their leading keyword through the statement
// list of ir.h; binary operators come from the binary-op list, so a new node
// kind shows up here as a compile error until it has a parse rule.
#include "tir/parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "tir/lexer.h"
#include "tir/plan_text.h"
#include "tir/structural.h"
#include "tir/functor.h"
#include "tir/printer.h"

namespace tilefuse::tir {

namespace {

std::optional<StmtKind> stmt_kind_for_keyword(std::string_view word) {
#define TF_TIR_MATCH(name, keyword) \
  if (*keyword && word == keyword) return StmtKind::name;
  TILEFUSE_FOR_EACH_TIR_STMT(TF_TIR_MATCH)
#undef TF_TIR_MATCH
  return std::nullopt;
}

struct BinaryOpInfo {
  ExprKind kind;
  int prec;
};

std::optional<BinaryOpInfo> infix_op(const Token& t) {
  if (t.kind != TokenKind::Punct) return std::nullopt;
#define TF_TIR_MATCH(name, sym, prec) \
  if ((prec) > 0 && t.text == sym) return BinaryOpInfo{ExprKind::name, prec};
  TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_MATCH)
#undef TF_TIR_MATCH
  return std::nullopt;
}

std::optional<ExprKind> call_form_op(std::string_view word) {
#define TF_TIR_MATCH(name, sym, prec) \
  if ((prec) == 0 && word == sym) return ExprKind::name;
  TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_MATCH)
#undef TF_TIR_MATCH
  return std::nullopt;
}

std::optional<Intrinsic> intrinsic_for_name(std::string_view word) {
#define TF_TIR_MATCH(name, text, ...) \
  if (word == text) return Intrinsic::name;
  TILEFUSE_FOR_EACH_TIR_INTRINSIC(TF_TIR_MATCH)
#undef TF_TIR_MATCH
  return std::nullopt;
}

std::optional<MemScope> scope_for_name(std::string_view word) {
  for (MemScope s : {MemScope::Global, MemScope::Shared, MemScope::Fragment, MemScope::Local}) {
    if (word == mem_scope_name(s)) return s;
  }
  return std::nullopt;
}

std::optional<ForKind> for_kind_for_name(std::string_view word) {
  for (ForKind k : {ForKind::Serial, ForKind::Unrolled, ForKind::Pipelined, ForKind::Parallel}) {
    if (word == for_kind_name(k)) return k;
  }
  return std::nullopt;
}

// A var or a buffer in scope.
struct Symbol {
  Var var;
  Buffer buffer;
};

// One statement of a block; let/alloc scope over the entries after them.
using Entry = BlockEntry;

class Parser {
 public:
  explicit Parser(std::string_view text) : tokens_(tokenize(text)) { scopes_.emplace_back(); }

  Kernel kernel() {
    Kernel k;
    expect_word("kernel");
    k.name = ident("a kernel name");
    expect("(");
    while (!accept(")")) {
      k.params.push_back(param());
      if (!accept(",")) {
        expect(")");
        break;
      }
    }
    expect_word("grid");
    expect("(");
    while (!accept(")")) {
      const Token& name_tok = peek();
      std::string name = ident("a program id name");
      expect(":");
      Expr extent = expr();
      Var v(name, extent.dtype());
      define(name_tok, name, {v, {}});
      k.grid.push_back({v, extent});
      if (!accept(",")) {
        expect(")");
        break;
      }
    }
    if (accept_word("attrs")) k.attrs = attrs();
    if (is_word("plan")) {
      const Token& at = peek();
      next();
      k.launch = from_clause(at, [](const PlanClause& c) { return launch_plan_from(c); });
    }
    expect("{");
    k.body = block();
    expect_end();
    return k;
  }

  Expr standalone_expr(const std::vector<Var>& vars, const std::vector<Buffer>& buffers) {
    for (const Var& v : vars) scopes_.back()[v.name()] = {v, {}};
    for (const Buffer& b : buffers) scopes_.back()[b.name()] = {{}, b};
    Expr e = expr();
    expect_end();
    return e;
  }

 private:
  // ---- tokens ----
  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool is(const char* punct, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Punct && peek(ahead).text == punct;
  }
  bool is_word(const char* word, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Ident && peek(ahead).text == word;
  }
  bool accept(const char* punct) {
    if (!is(punct)) return false;
    next();
    return true;
  }
  bool accept_word(const char* word) {
    if (!is_word(word)) return false;
    next();
    return true;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::End:
        return "the end of the text";
      case TokenKind::String:
        return "a string";
      default:
        return "'" + t.text + "'";
    }
  }
  [[noreturn]] void fail(const Token& t, const std::string& message) { throw_at(t.loc, message); }
  [[noreturn]] void unexpected(const std::string& wanted) {
    fail(peek(), "expected " + wanted + ", found " + describe(peek()));
  }
  void expect(const char* punct) {
    if (!accept(punct)) unexpected(std::string("'") + punct + "'");
  }
  void expect_word(const char* word) {
    if (!accept_word(word)) unexpected(std::string("'") + word + "'");
  }
  void expect_end() {
    if (peek().kind != TokenKind::End) unexpected("the end of the text");
  }
  std::string ident(const char* what) {
    if (peek().kind != TokenKind::Ident) unexpected(what);
    return next().text;
  }
  std::string string_lit(const char* what) {
    if (peek().kind != TokenKind::String) unexpected(what);
    return next().text;
  }
  DType dtype() {
    const Token& t = peek();
    if (t.kind == TokenKind::Ident) {
      if (auto dt = dtype_from_text(t.text)) {
        next();
        return *dt;
      }
    }
    unexpected("a dtype");
  }
  int64_t int_lit(const char* what) {
    bool neg = accept("-");
    const Token& t = peek();
    int64_t v = 0;
    if (t.kind != TokenKind::Number ||
        std::from_chars(t.text.data(), t.text.data() + t.text.size(), v).ptr !=
            t.text.data() + t.text.size())
      unexpected(what);
    next();
    return neg ? -v : v;
  }
  // Keyword argument `, key=` (consumed when present).
  bool keyword_arg(const char* key) {
    if (is(",") && is_word(key, 1) && is("=", 2)) {
      next();
      next();
      next();
      return true;
    }
    return false;
  }

  // ---- names ----
  const Symbol* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }
  void define(const Token& at, const std::string& name, Symbol sym) {
    if (lookup(name)) fail(at, "'" + name + "' is already defined");
    scopes_.back()[name] = std::move(sym);
  }
  Buffer buffer_ref() {
    const Token& t = peek();
    std::string name = ident("a buffer name");
    const Symbol* s = lookup(name);
    if (!s) fail(t, "undefined buffer '" + name + "'");
    if (!s->buffer.defined()) fail(t, "'" + name + "' is a var, not a buffer");
    return s->buffer;
  }

  // ---- declarations ----
  KernelParam param() {
    const Token& name_tok = peek();
    std::string name = ident("a parameter name");
    expect(":");
    if (peek().kind == TokenKind::Ident && scope_for_name(peek().text)) {
      Buffer b = buffer_decl(name_tok, name);
      return {{}, b};
    }
    Var v(name, dtype());
    define(name_tok, name, {v, {}});
    return {v, {}};
  }
  // After `NAME:` — SCOPE [readonly] DTYPE[SHAPE] [strides [..]] [align N].
  Buffer buffer_decl(const Token& name_tok, const std::string& name) {
    const Token& scope_tok = peek();
    auto scope = scope_for_name(ident("a memory scope"));
    if (!scope) fail(scope_tok, "unknown memory scope '" + scope_tok.text + "'");
    bool read_only = accept_word("readonly");
    DType dt = dtype();
    expect("[");
    std::vector<Expr> shape = expr_list("]");
    std::vector<Expr> strides;
    if (accept_word("strides")) {
      expect("[");
      strides = expr_list("]");
    }
    int alignment = 0;
    if (accept_word("align")) alignment = static_cast<int>(int_lit("an alignment in bytes"));
    Buffer b = BufferNode::make(name, dt, *scope, std::move(shape), std::move(strides), read_only,
                                alignment);
    define(name_tok, name, {{}, b});
    return b;
  }
  Attrs attrs() {
    Attrs out;
    expect("(");
    while (!accept(")")) {
      std::string key = ident("an attribute name");
      expect("=");
      bool neg = accept("-");
      const Token& t = peek();
      if (t.kind == TokenKind::String && !neg) {
        out[key] = next().text;
      } else if (is_word("inf") || is_word("nan")) {
        double v = next().text == "inf" ? std::numeric_limits<double>::infinity() : std::nan("");
        out[key] = neg ? -v : v;
      } else if (t.kind == TokenKind::Number) {
        // Attribute numbers are i64 or f64 (no suffix), unlike IR literals.
        const std::string& text = next().text;
        const char* end = text.data() + text.size();
        bool is_float = text.find_first_of(".eE") != std::string::npos;
        double d = 0;
        int64_t i = 0;
        auto r =
            is_float ? std::from_chars(text.data(), end, d) : std::from_chars(text.data(), end, i);
        if (r.ec != std::errc() || r.ptr != end) fail(t, "bad attribute number '" + text + "'");
        if (is_float) {
          out[key] = neg ? -d : d;
        } else {
          out[key] = neg ? -i : i;
        }
      } else {
        unexpected("an attribute value");
      }
      if (!accept(",")) {
        expect(")");
        break;
      }
    }
    return out;
  }

  // ---- plans (tir/plan_text.h) ----
  // `(item, ...)` after the word `plan`, converted by `convert`; a
  // malformed clause is an error at the `plan` keyword.
  template <class F>
  std::invoke_result_t<F, const PlanClause&> from_clause(const Token& at, F&& convert) {
    PlanClause c = plan_items(")");
    try {
      return convert(c);
    } catch (const PlanTextError& e) {
      fail(at, std::string("bad plan: ") + e.what());
    }
  }
  // Items up to `close` (consumed), after the opening bracket.
  std::vector<PlanItem> plan_items(const char* close) {
    if (std::string(close) == ")") expect("(");
    std::vector<PlanItem> items;
    while (!accept(close)) {
      PlanItem it;
      if (peek().kind == TokenKind::Ident && is("=", 1)) {
        it.key = next().text;
        next();
      }
      it.value = plan_value();
      items.push_back(std::move(it));
      if (!accept(",")) {
        expect(close);
        break;
      }
    }
    return items;
  }
  PlanValue plan_value() {
    const Token& t = peek();
    if (t.kind == TokenKind::String) return PlanValue::string(next().text);
    if (t.kind == TokenKind::Ident) return PlanValue::word(next().text);
    if (accept("{")) {
      Expr e = expr();
      expect("}");
      return PlanValue::expr(e);
    }
    if (accept("[")) return PlanValue::list(plan_items("]"));
    if (is("(")) return PlanValue::clause(plan_items(")"));
    return PlanValue::integer(int_lit("a plan value"));
  }

  // ---- statements ----
  // Statements up to the closing '}' (consumed), in a new scope.
  Stmt block() {
    DepthGuard guard(this);
    scopes_.emplace_back();
    std::vector<Entry> entries;
    while (!accept("}")) {
      if (peek().kind == TokenKind::End) unexpected("'}'");
      entries.push_back(statement());
    }
    scopes_.pop_back();
    return make_block(entries);
  }

  Entry statement() {
    const Token& t = peek();
    if (t.kind != TokenKind::Ident) unexpected("a statement");
    if (auto kind = stmt_kind_for_keyword(t.text)) {
      switch (*kind) {
#define TF_TIR_CASE(name, ...) \
  case StmtKind::name:         \
    return parse_##name();
        TILEFUSE_FOR_EACH_TIR_STMT(TF_TIR_CASE)
#undef TF_TIR_CASE
      }
    }
    return parse_Store();
  }
  static Entry stmt(Stmt s) {
    return {std::move(s), {}, {}, {}, {}};
  }

  Entry parse_For() {
    expect_word("for");
    const Token& var_tok = peek();
    std::string name = ident("a loop variable");
    expect_word("in");
    const Token& kind_tok = peek();
    auto kind = for_kind_for_name(ident("a loop kind"));
    if (!kind) fail(kind_tok, "unknown loop kind '" + kind_tok.text + "'");
    expect("(");
    Expr min = expr();
    expect(",");
    Expr extent = expr();
    int stages = 0;
    if (*kind == ForKind::Pipelined) {
      if (!keyword_arg("stages")) unexpected("', stages=N'");
      stages = static_cast<int>(int_lit("a number of stages"));
    }
    expect(")");
    LoopPlan plan;
    if (is_word("plan")) {
      const Token& at = peek();
      next();
      plan = from_clause(at, [](const PlanClause& c) { return loop_plan_from(c); });
    }
    expect("{");
    Var v(name, min.dtype());
    scopes_.emplace_back();
    define(var_tok, name, {v, {}});
    Stmt body = block();
    scopes_.pop_back();
    return stmt(ForNode::make(v, min, extent, *kind, stages, body, std::move(plan)));
  }
  Entry parse_IfThenElse() {
    expect_word("if");
    Expr cond = expr();
    expect("{");
    Stmt then_case = block(), else_case;
    if (accept_word("else")) {
      expect("{");
      else_case = block();
    }
    return stmt(IfThenElseNode::make(cond, then_case, else_case));
  }
  Entry parse_LetStmt() {
    expect_word("let");
    const Token& var_tok = peek();
    std::string name = ident("a variable name");
    expect("=");
    Expr value = expr();
    Var v(name, value.dtype());
    define(var_tok, name, {v, {}});
    return {{}, v, value, {}, {}};
  }
  Entry parse_Allocate() {
    expect_word("alloc");
    const Token& name_tok = peek();
    std::string name = ident("a buffer name");
    expect(":");
    Buffer b = buffer_decl(name_tok, name);
    BufferPlan plan;
    if (is_word("plan")) {
      const Token& at = peek();
      next();
      const MemScope scope = b.scope();
      plan = from_clause(at, [scope](const PlanClause& c) { return buffer_plan_from(c, scope); });
    }
    return {{}, {}, {}, b, std::move(plan)};
  }
  Entry parse_Store() {
    Buffer b = buffer_ref();
    expect("[");
    std::vector<Expr> idx = expr_list("]");
    expect("=");
    Expr value = expr();
    Expr mask = keyword_arg("mask") ? expr() : Expr();
    return stmt(StoreNode::make(b, idx, value, mask));
  }
  Entry parse_HookStore() {
    expect_word("store_output");
    expect("(");
    std::string name = string_lit("an output name string");
    expect(",");
    expect("[");
    std::vector<Expr> idx = expr_list("]");
    expect(",");
    Expr value = expr();
    Expr mask = keyword_arg("mask") ? expr() : Expr();
    expect(")");
    return stmt(HookStoreNode::make(name, idx, value, mask));
  }
  Entry parse_Copy() {
    expect_word("copy");
    expect("(");
    std::vector<Var> vars;
    std::vector<Expr> extents;
    std::vector<const Token*> var_toks;
    while (!accept(")")) {
      var_toks.push_back(&peek());
      std::string name = ident("a copy variable");
      expect(":");
      extents.push_back(expr());
      vars.emplace_back(name, DType::I32);
      if (!accept(",")) {
        expect(")");
        break;
      }
    }
    // The extents are outside the copy's scope; the vars bind the rest.
    scopes_.emplace_back();
    for (size_t i = 0; i < vars.size(); ++i) define(*var_toks[i], vars[i].name(), {vars[i], {}});
    Buffer dst = buffer_ref();
    expect("[");
    std::vector<Expr> idx = expr_list("]");
    expect("=");
    Expr value = expr();
    std::optional<CopyPlan> plan;
    if (is_word("plan")) {  // (in the copy's scope: a vector load reads its vars)
      const Token& at = peek();
      next();
      plan = from_clause(at, [](const PlanClause& c) { return copy_plan_from(c); });
      if (plan->vector_load.defined()) {
        Expr found;
        for (const LoadNode* l : loads_in(value))
          if (structural_equal(Expr(l), plan->vector_load)) found = Expr(l);
        if (!found.defined()) fail(at, "the plan's vector_load is no load of the copy's value");
        plan->vector_load = found;
      }
    }
    scopes_.pop_back();
    return stmt(CopyNode::make(vars, extents, dst, idx, value, std::move(plan)));
  }
  TileRef tile() {
    TileRef t(buffer_ref());
    if (accept("[")) t.prefix = expr_list("]");
    return t;
  }
  Entry parse_Gemm() {
    expect_word("gemm");
    expect("(");
    TileRef a = tile();
    expect(",");
    TileRef b = tile();
    expect(",");
    TileRef c = tile();
    bool trans_a = false, trans_b = false;
    if (is(",") && is_word("trans_a", 1)) {
      next();
      next();
      trans_a = true;
    }
    if (is(",") && is_word("trans_b", 1)) {
      next();
      next();
      trans_b = true;
    }
    expect(")");
    return stmt(GemmNode::make(a, b, c, trans_a, trans_b));
  }
  Entry parse_Fill() {
    expect_word("fill");
    expect("(");
    Buffer b = buffer_ref();
    expect(",");
    Expr value = expr();
    expect(")");
    return stmt(FillNode::make(b, value));
  }
  Entry parse_Check() {
    expect_word("check");
    expect("(");
    Expr cond = expr();
    if (!keyword_arg("code")) unexpected("', code=N'");
    int64_t code = int_lit("an error code");
    if (!keyword_arg("msg")) unexpected("', msg=\"...\"'");
    std::string message = string_lit("a message string");
    std::vector<Expr> args;
    if (keyword_arg("args")) {
      expect("[");
      args = expr_list("]");
    }
    expect(")");
    return stmt(CheckNode::make(cond, code, message, args));
  }
  Entry parse_Barrier() {
    expect_word("barrier");
    expect("(");
    BarrierKind kind = BarrierKind::Block;
    if (!is(")")) {
      const Token& t = peek();
      const std::string w = ident("a barrier kind");
      bool known = false;
      for (BarrierKind k : {BarrierKind::Block, BarrierKind::BlockAsync, BarrierKind::Consumers})
        if (w == barrier_kind_name(k)) kind = k, known = true;
      if (!known) fail(t, "unknown barrier kind '" + w + "'");
    }
    expect(")");
    return stmt(BarrierNode::make(kind));
  }
  Entry parse_LastArrival() {
    expect_word("if_last_arrival");
    expect("(");
    Buffer b = buffer_ref();
    expect("[");
    std::vector<Expr> idx = expr_list("]");
    expect(",");
    const Expr count = expr();
    expect(")");
    expect("{");
    Stmt body = block();
    return stmt(LastArrivalNode::make(b, idx, count, body));
  }
  Entry parse_Evaluate() {
    expect_word("evaluate");
    expect("(");
    Expr value = expr();
    expect(")");
    return stmt(EvaluateNode::make(value));
  }
  Entry parse_Seq() {  // never reached: a sequence has no keyword
    TF_CHECK(false, "tir parser: a Seq has no keyword");
    return {};
  }

  // ---- expressions ----
  std::vector<Expr> expr_list(const char* close) {
    std::vector<Expr> out;
    while (!accept(close)) {
      out.push_back(expr());
      if (!accept(",")) {
        expect(close);
        break;
      }
    }
    return out;
  }

  // Bounds recursion so no input can overflow the stack.
  struct DepthGuard {
    DepthGuard(Parser* p) : p(p) {
      if (++p->depth_ > kMaxDepth) p->fail(p->peek(), "nested too deeply");
    }
    ~DepthGuard() { --p->depth_; }
    Parser* p;
  };
  static constexpr int kMaxDepth = 200;

  Expr expr(int min_prec = 1) {
    DepthGuard guard(this);
    Expr lhs = unary();
    while (true) {
      auto op = infix_op(peek());
      if (!op || op->prec < min_prec) return lhs;
      next();
      Expr rhs = expr(op->prec + 1);
      lhs = make_binary(op->kind, lhs, rhs);
      if (is_comparison(op->kind)) {
        auto again = infix_op(peek());
        if (again && is_comparison(again->kind))
          fail(peek(), "comparisons do not chain; add parentheses");
      }
    }
  }

  Expr unary() {
    if (accept("!")) {
      DepthGuard guard(this);
      return NotNode::make(unary());
    }
    if (is("-")) {
      const Token& minus = next();
      if (peek().kind == TokenKind::Number || is_word("inf") || is_word("nan") ||
          (peek().kind == TokenKind::Ident && is_reserved_word(peek().text) &&
           (peek().text.rfind("inf_", 0) == 0 || peek().text.rfind("nan_", 0) == 0)))
        return literal(/*negate=*/true);
      fail(minus, "unary '-' applies only to literals; write 0 - x or neg(x)");
    }
    return primary();
  }

  // A number, inf or nan with an optional _dtype suffix.
  Expr literal(bool negate) {
    const Token& t = next();
    std::string_view text = t.text, suffix;
    bool is_float = false;
    if (t.kind == TokenKind::Ident) {  // inf, nan, inf_f16, ...
      is_float = true;
      suffix = text.size() > 3 ? text.substr(4) : std::string_view();
      text = text.substr(0, 3);
    } else {
      size_t us = text.find('_');
      if (us != std::string_view::npos) {
        suffix = text.substr(us + 1);
        text = text.substr(0, us);
      }
      is_float = text.find_first_of(".eE") != std::string_view::npos;
    }
    DType dt = is_float ? DType::F32 : DType::I32;
    if (!suffix.empty()) {
      auto parsed = dtype_from_text(suffix);
      if (!parsed) fail(t, "unknown dtype suffix '_" + std::string(suffix) + "'");
      dt = *parsed;
    }
    if (is_float && !is_floating(dt))
      fail(t, "a " + std::string(dtype_name(dt)) + " literal cannot have a fraction");
    if (is_float || is_floating(dt)) {
      double v;
      if (text == "inf") {
        v = std::numeric_limits<double>::infinity();
      } else if (text == "nan") {
        v = std::nan("");
      } else {
        // Printed floats read back exactly: f64 as a double, the rest as a
        // float (printer.h's format_float).
        std::from_chars_result r;
        if (dt == DType::F64) {
          r = std::from_chars(text.data(), text.data() + text.size(), v);
        } else {
          float f = 0;
          r = std::from_chars(text.data(), text.data() + text.size(), f);
          v = f;
        }
        if (r.ec != std::errc() || r.ptr != text.data() + text.size())
          fail(t, std::string(text) + " is out of range for " + std::string(dtype_name(dt)));
      }
      return make_const(dt, negate ? -v : v);
    }
    uint64_t u = 0;
    auto r = std::from_chars(text.data(), text.data() + text.size(), u);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size())
      fail(t, "integer literal out of range");
    if (dt == DType::Bool) fail(t, "write true or false for a bool constant");
    // Magnitudes allowed: up to 2^(bits-1) - 1, or 2^(bits-1) when negative.
    uint64_t max = dt == DType::U8 ? 255 : (uint64_t{1} << (dtype_size(dt) * 8 - 1)) - 1;
    if (negate) max = dt == DType::U8 ? 0 : max + 1;
    if (u > max)
      fail(t, std::string(negate ? "-" : "") + std::string(text) + " does not fit " +
                  std::string(dtype_name(dt)));
    int64_t v = negate ? static_cast<int64_t>(0 - u) : static_cast<int64_t>(u);
    return make_int(dt, v);
  }

  Expr primary() {
    const Token& t = peek();
    if (t.kind == TokenKind::Number) return literal(false);
    if (accept("(")) {
      Expr e = expr();
      expect(")");
      return e;
    }
    if (t.kind != TokenKind::Ident) unexpected("an expression");
    const std::string& w = t.text;
    if (w == "true" || w == "false") {
      next();
      return make_bool(w == "true");
    }
    if (w == "inf" || w == "nan" ||
        (is_reserved_word(w) && (w.rfind("inf_", 0) == 0 || w.rfind("nan_", 0) == 0)))
      return literal(false);
    if (w == "load_input") return hook_load();
    if (w == "load") return masked_load();
    bool called = is("(", 1);
    if (called) {
      if (w == "select") {
        next();
        std::vector<Expr> args = call_args(3, "select");
        return SelectNode::make(args[0], args[1], args[2]);
      }
      if (auto op = call_form_op(w)) {
        next();
        std::vector<Expr> args = call_args(2, w);
        return make_binary(*op, args[0], args[1]);
      }
      if (auto dt = dtype_from_text(w)) {
        next();
        std::vector<Expr> args = call_args(1, "a cast");
        return CastNode::make(*dt, args[0]);
      }
      if (auto op = intrinsic_for_name(w)) {
        next();
        std::vector<Expr> args = call_args(static_cast<size_t>(intrinsic_arity(*op)), w);
        return CallNode::make(*op, args);
      }
      fail(t, "unknown function '" + w + "'");
    }
    if (is("[", 1)) {
      Buffer b = buffer_ref();
      expect("[");
      return LoadNode::make(b, expr_list("]"));
    }
    next();
    const Symbol* s = lookup(w);
    if (!s) fail(t, "undefined name '" + w + "'");
    if (!s->var.defined()) fail(t, "buffer '" + w + "' used as a value; index it");
    return s->var;
  }

  std::vector<Expr> call_args(size_t arity, const std::string& what) {
    const Token& open = peek();
    expect("(");
    std::vector<Expr> args = expr_list(")");
    if (args.size() != arity)
      fail(open, what + " takes " + std::to_string(arity) + " argument" + (arity == 1 ? "" : "s") +
                     ", got " + std::to_string(args.size()));
    return args;
  }

  Expr masked_load() {
    expect_word("load");
    expect("(");
    Buffer b = buffer_ref();
    expect(",");
    expect("[");
    std::vector<Expr> idx = expr_list("]");
    Expr mask = keyword_arg("mask") ? expr() : Expr();
    Expr other = keyword_arg("other") ? expr() : Expr();
    expect(")");
    return LoadNode::make(b, idx, mask, other);
  }

  Expr hook_load() {
    expect_word("load_input");
    expect("<");
    DType dt = dtype();
    expect(">");
    expect("(");
    std::string name = string_lit("an input name string");
    expect(",");
    expect("[");
    std::vector<Expr> idx = expr_list("]");
    Expr mask = keyword_arg("mask") ? expr() : Expr();
    expect(")");
    return HookLoadNode::make(dt, name, idx, mask);
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<std::unordered_map<std::string, Symbol>> scopes_;
};

}  // namespace

Kernel parse_kernel(std::string_view text) {
  return Parser(text).kernel();
}

Expr parse_expr(std::string_view text, const std::vector<Var>& vars,
                const std::vector<Buffer>& buffers) {
  return Parser(text).standalone_expr(vars, buffers);
}

}  // namespace tilefuse::tir
