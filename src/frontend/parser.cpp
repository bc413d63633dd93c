#include "frontend/parser.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "core/stack_guard.h"
#include "frontend/builtins.h"
#include "frontend/operand.h"

namespace tilefuse::frontend {

namespace {

// Every dtype spelling parse_dtype accepts, for "did you mean" suggestions.
std::vector<std::string> dtype_spellings() {
  static const char* const kNames[] = {
      "bool",  "u8",      "i8",     "i32",           "i64",        "f8e4m3", "f8e5m2",
      "f16",   "bf16",    "f32",    "f64",           "float16",    "half",   "bfloat16",
      "float", "float32", "double", "float64",       "int8",       "uint8",  "int",
      "int32", "long",    "int64",  "float8_e4m3fn", "float8_e5m2"};
  std::vector<std::string> out;
  for (const char* n : kNames) {
    for (std::string s : {std::string(n), "torch." + std::string(n)})
      if (parse_dtype(s)) out.push_back(s);
  }
  return out;
}

// Whether an unknown `torch.NAME` was meant as a dtype ("torch.float17"), so
// the error can say "unknown dtype" rather than "unknown attribute".
bool looks_like_dtype(std::string_view name) {
  for (std::string_view p :
       {"float", "int", "uint", "bfloat", "half", "double", "long", "short", "bool", "complex",
        "cfloat", "cdouble", "qint", "quint", "byte", "char"})
    if (name.starts_with(p)) return true;
  return false;
}

// A dtype written as a bare name in an expression: the canonical .tfs names
// (`x.to(f16)`), and Python's own types, which PyTorch maps to its defaults
// for them: float -> float64, int -> int64, bool -> bool. (In a parameter
// annotation `float` is parse_dtype's float32, as torch.float is.)
std::optional<DType> bare_dtype(std::string_view name) {
  if (name == "float") return DType::F64;
  if (name == "int") return DType::I64;
  std::optional<DType> dt = parse_dtype(name);
  if (dt && dtype_name(*dt) == name) return dt;
  return std::nullopt;
}

// '=' or an augmented assignment ('+=', '-=', '*=', '/=', '@=').
bool is_assignment_token(TokenKind k) {
  return k == TokenKind::Assign || k == TokenKind::PlusAssign || k == TokenKind::MinusAssign ||
         k == TokenKind::StarAssign || k == TokenKind::SlashAssign || k == TokenKind::AtAssign;
}

bool is_comparison_token(TokenKind k) {
  return k == TokenKind::EqEq || k == TokenKind::NotEq || k == TokenKind::Less ||
         k == TokenKind::LessEq || k == TokenKind::Greater || k == TokenKind::GreaterEq;
}

BinaryOp binary_op_of(TokenKind k) {
  switch (k) {
    case TokenKind::Plus:
    case TokenKind::PlusAssign:
      return BinaryOp::Add;
    case TokenKind::Minus:
    case TokenKind::MinusAssign:
      return BinaryOp::Sub;
    case TokenKind::Star:
    case TokenKind::StarAssign:
      return BinaryOp::Mul;
    case TokenKind::Slash:
    case TokenKind::SlashAssign:
      return BinaryOp::Div;
    case TokenKind::EqEq:
      return BinaryOp::Eq;
    case TokenKind::NotEq:
      return BinaryOp::Ne;
    case TokenKind::Less:
      return BinaryOp::Lt;
    case TokenKind::LessEq:
      return BinaryOp::Le;
    case TokenKind::Greater:
      return BinaryOp::Gt;
    case TokenKind::GreaterEq:
      return BinaryOp::Ge;
    default:
      TF_CHECK(false, "not a binary operator token");
  }
  return BinaryOp::Add;
}

bool is_matmul_token(TokenKind k) {
  return k == TokenKind::At || k == TokenKind::AtAssign;
}

// The operator as the user wrote it, without the '=' of an augmented assignment.
std::string operator_text(const Token& t) {
  std::string s(t.text);
  if (s.size() == 2 && s[1] == '=' && s[0] != '=' && s[0] != '!' && s[0] != '<' && s[0] != '>')
    s.pop_back();
  return s;
}

// Python's arithmetic on two numbers, at compile time (`x * (1 / 3)`).
Operand fold(const Token& op, const Operand& a, const Operand& b) {
  SourceLoc loc = span(a.loc, b.loc);
  TokenKind k = op.kind;
  bool ints = a.is_integer_like() && b.is_integer_like();
  if (is_comparison_token(k)) {
    bool r = false;
    // Compare exactly when both are ints (doubles lose precision past 2^53).
    auto cmp = [&](auto x, auto y) {
      switch (k) {
        case TokenKind::EqEq:
          return x == y;
        case TokenKind::NotEq:
          return x != y;
        case TokenKind::Less:
          return x < y;
        case TokenKind::LessEq:
          return x <= y;
        case TokenKind::Greater:
          return x > y;
        default:
          return x >= y;
      }
    };
    r = ints ? cmp(a.int_value, b.int_value) : cmp(a.number(), b.number());
    return Operand::boolean(r, loc);
  }
  if (is_matmul_token(k))
    throw UserError(fmt::format("'@' needs tensor operands, found {}", describe(a)), a.loc);
  BinaryOp bop = binary_op_of(k);
  if (bop == BinaryOp::Div) {
    if (b.number() == 0) throw UserError("division by zero in a constant expression", op.loc);
    return Operand::floating(a.number() / b.number(), loc);
  }
  if (ints) {
    int64_t r = 0;
    bool overflow = bop == BinaryOp::Add   ? __builtin_add_overflow(a.int_value, b.int_value, &r)
                    : bop == BinaryOp::Sub ? __builtin_sub_overflow(a.int_value, b.int_value, &r)
                                           : __builtin_mul_overflow(a.int_value, b.int_value, &r);
    if (overflow) throw UserError("integer overflow in a constant expression", op.loc);
    return Operand::integer(r, loc);
  }
  double x = a.number(), y = b.number();
  double r = bop == BinaryOp::Add ? x + y : bop == BinaryOp::Sub ? x - y : x * y;
  return Operand::floating(r, loc);
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, Graph& g, const SymbolValues* values)
      : toks_(tokens), g_(g), values_(values) {
    TF_CHECK(!toks_.empty() && toks_.back().kind == TokenKind::End, "token stream without End");
    aliases_["torch"] = "torch";
    // F is PyTorch's universal alias for torch.nn.functional; accept it even
    // when the pasted code left out the import line.
    aliases_["F"] = "torch.nn.functional";
  }

  std::string parse() {
    parse_preamble();
    if (!at(TokenKind::KwDef)) {
      if (at(TokenKind::Indent)) fail(peek(), "unexpected indentation");
      fail(peek(), fmt::format("expected 'def' (a program is one function), found {}",
                               describe_token(peek())));
    }
    parse_function();
    while (at(TokenKind::String) && is_line_end(peek(1).kind)) skip_string_statement();
    if (!at(TokenKind::End)) {
      if (at(TokenKind::KwDef))
        fail(peek(), "a program has exactly one function; found a second 'def'");
      if (at(TokenKind::Indent)) fail(peek(), "unexpected indentation");
      fail(peek(), fmt::format("expected the end of the program after the function, found {}",
                               describe_token(peek())));
    }
    return name_;
  }

 private:
  // --- token access ----------------------------------------------------------

  // The value of the Int token `t`, negated when `negated` (a unary '-' or a
  // bound's '-' before it). The literal 2**63 is only valid negated
  // (INT64_MIN); anywhere else it is a UserError at the literal.
  static int64_t int_literal(const Token& t, bool negated) {
    if (t.int_is_2_pow_63) {
      if (!negated) throw UserError(frontend::too_large_message(t.text), t.loc);
      return std::numeric_limits<int64_t>::min();
    }
    return negated ? -t.int_value : t.int_value;
  }
  static bool is_postfix_start(TokenKind k) {
    return k == TokenKind::Dot || k == TokenKind::LParen || k == TokenKind::LBracket;
  }

  const Token& peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  bool at(TokenKind k) const { return peek().kind == k; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ + 1 < toks_.size()) ++pos_;
    last_ = &t;
    return t;
  }
  bool accept(TokenKind k) {
    if (!at(k)) return false;
    next();
    return true;
  }
  // Consumes a token of kind `k`; otherwise "expected <what>, found <token>".
  const Token& expect(TokenKind k, std::string_view what) {
    if (!at(k)) fail(peek(), fmt::format("expected {}, found {}", what, describe_token(peek())));
    return next();
  }
  SourceLoc last_loc() const { return last_ ? last_->loc : peek().loc; }
  static bool is_line_end(TokenKind k) {
    return k == TokenKind::Newline || k == TokenKind::Semicolon || k == TokenKind::End;
  }

  [[noreturn]] static void fail(const Token& t, const std::string& message) {
    throw UserError(message, t.loc);
  }

  // Counts one level of expression nesting for the lifetime of the guard.
  class NestingGuard {
   public:
    NestingGuard(Parser& p) : p_(p) {
      // A level of nesting takes a few KiB of stack (the precedence levels
      // recurse): under a small `ulimit -s` the stack runs out before
      // kMaxNesting levels, so the guard checks it too.
      check_stack("the expression parser", p_.peek().loc);
      if (++p_.depth_ > kMaxNesting) {
        --p_.depth_;
        fail(p_.peek(),
             fmt::format("expression is nested too deeply (more than {} levels)", kMaxNesting));
      }
    }
    ~NestingGuard() { --p_.depth_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    Parser& p_;
  };

  // --- program structure -----------------------------------------------------

  // Imports, decorators and docstrings before the `def`.
  void parse_preamble() {
    while (true) {
      if (at(TokenKind::KwImport) || at(TokenKind::KwFrom)) {
        parse_import_line();
      } else if (at(TokenKind::At)) {
        // A decorator (@torch.compile, @torch.no_grad()) changes how PyTorch
        // runs the function, not what it computes.
        while (!at(TokenKind::Newline) && !at(TokenKind::End)) next();
        expect(TokenKind::Newline, "end of line after the decorator");
        if (!at(TokenKind::KwDef) && !at(TokenKind::At))
          fail(peek(),
               fmt::format("expected 'def' after the decorator, found {}", describe_token(peek())));
      } else if (at(TokenKind::String) && is_line_end(peek(1).kind)) {
        skip_string_statement();
      } else {
        return;
      }
    }
  }

  void skip_string_statement() {
    next();
    end_simple_statement();
  }

  // A dotted name: NAME ('.' NAME)*, its text and span.
  std::pair<std::string, SourceLoc> parse_dotted(std::string_view what) {
    const Token& first = expect(TokenKind::Name, what);
    std::string text(first.text);
    SourceLoc loc = first.loc;
    while (at(TokenKind::Dot)) {
      next();
      const Token& part = expect(TokenKind::Name, "a name after '.'");
      text += ".";
      text += part.text;
      loc = span(loc, part.loc);
    }
    return {text, loc};
  }

  // `import torch`, `import torch.nn.functional as F`, `from torch import nn`,
  // `from torch.nn.functional import relu as r`. Only torch is importable; the
  // names bound are resolved like PyTorch's.
  void parse_import_line() {
    if (accept(TokenKind::KwImport)) {
      do {
        auto [path, loc] = parse_dotted("a module name after 'import'");
        if (!is_module(path))
          throw UserError(fmt::format("only torch modules can be imported, found '{}'", path), loc);
        if (accept(TokenKind::KwAs)) {
          const Token& alias = expect(TokenKind::Name, "a name after 'as'");
          aliases_[std::string(alias.text)] = path;
        } else {
          // `import torch.nn.functional` binds `torch`, as in Python.
          aliases_["torch"] = "torch";
        }
      } while (accept(TokenKind::Comma));
    } else {
      next();  // 'from'
      auto [path, loc] = parse_dotted("a module name after 'from'");
      bool future = path == "__future__";
      if (!future && !is_module(path))
        throw UserError(fmt::format("only torch modules can be imported, found '{}'", path), loc);
      expect(TokenKind::KwImport, "'import'");
      do {
        const Token& name = expect(TokenKind::Name, "a name to import");
        std::string full = path + "." + std::string(name.text);
        if (!future && !is_module(full) && !is_function(full))
          fail(name, fmt::format("'{}' is not a torch module or a supported function", full));
        std::string bound(name.text);
        if (accept(TokenKind::KwAs)) bound = expect(TokenKind::Name, "a name after 'as'").text;
        if (!future) aliases_[bound] = full;
      } while (accept(TokenKind::Comma));
    }
    end_simple_statement();
  }

  void parse_function() {
    next();  // 'def'
    const Token& name = expect(TokenKind::Name, "the function's name after 'def'");
    name_ = std::string(name.text);
    name_loc_ = name.loc;
    expect(TokenKind::LParen, fmt::format("'(' after 'def {}'", name_));
    std::set<std::string, std::less<>> seen;
    std::vector<ParamDecl> params;
    while (!at(TokenKind::RParen)) {
      params.push_back(parse_parameter(seen));
      if (!accept(TokenKind::Comma)) break;
    }
    if (at(TokenKind::Assign)) fail(peek(), "default values for parameters are not supported");
    expect(TokenKind::RParen, "',' or ')' in the parameter list");
    declare_parameters(params);
    if (accept(TokenKind::Arrow)) return_annotation_ = parse_return_annotation();
    expect(TokenKind::Colon, "':' after the parameter list");
    parse_body();
  }

  // The return annotation: what `return` must give, checked there.
  //   annotation := type | ('tuple' | 'Tuple' | 'typing.Tuple') '[' type (',' type)* [','] ']'
  //               | ('tuple' | ...) '[' type ',' '...' ']'      (any number of values, each a type)
  //   type       := dotted '[' [dim (',' dim)* [',']] ']'   (a dtype and a shape, as a parameter's)
  //               | 'torch.Tensor' | 'Tensor'               (any tensor: only the count is checked)
  // A dim is an integer or a symbolic dim of the parameters. Anything else
  // is a UserError at the annotation.
  struct ReturnType {
    SourceLoc loc;
    std::optional<DType> dtype;     // nullopt: torch.Tensor, any dtype and shape
    Shape shape;                    // with `dtype`: fixed sizes (0 where symbolic)
    std::vector<SymbolId> symbols;  // with `dtype`: per dim, its symbol or kFixedDim
  };
  struct ReturnAnnotation {
    SourceLoc loc;  // the whole annotation
    std::vector<ReturnType> types;
    bool tuple = false;     // `tuple[...]`
    bool variadic = false;  // `tuple[T, ...]`: any number of values, each a T
  };

  ReturnAnnotation parse_return_annotation() {
    ReturnAnnotation ann;
    const SourceLoc start = peek().loc;
    if (at(TokenKind::Name) &&
        (peek().text == "tuple" || peek().text == "Tuple" || peek().text == "typing") &&
        (peek(1).kind == TokenKind::LBracket || peek(1).kind == TokenKind::Dot)) {
      auto [name, loc] = parse_dotted("a type");
      if (name != "tuple" && name != "Tuple" && name != "typing.Tuple")
        throw UserError(unsupported_return_annotation("name '" + name + "'"), loc);
      expect(TokenKind::LBracket, fmt::format("'[' after '{}'", name));
      ann.tuple = true;
      while (!at(TokenKind::RBracket)) {
        // `tuple[T, ...]`: any number of T (Python's variable-length tuple).
        if (at(TokenKind::Ellipsis) && ann.types.size() == 1 && !ann.variadic) {
          next();
          ann.variadic = true;
          break;
        }
        ann.types.push_back(parse_return_type());
        if (!accept(TokenKind::Comma)) break;
      }
      if (ann.types.empty())
        fail(peek(), fmt::format("expected the type of each returned value in '{}[...]', found {}",
                                 name, describe_token(peek())));
      expect(TokenKind::RBracket, fmt::format("',' or ']' in '{}[...]'", name));
    } else {
      ann.types.push_back(parse_return_type());
    }
    ann.loc = span(start, last_loc());
    return ann;
  }

  static std::string unsupported_return_annotation(std::string_view found) {
    return fmt::format(
        "unsupported return annotation (found {}): write the returned type as a "
        "parameter's, such as f16[M, 64] (checked against what 'return' gives), "
        "torch.Tensor, or tuple[...] of those for several values",
        found);
  }

  ReturnType parse_return_type() {
    if (!at(TokenKind::Name)) fail(peek(), unsupported_return_annotation(describe_token(peek())));
    auto [text, loc] = parse_dotted("a type");
    ReturnType t;
    t.loc = loc;
    if (text == "torch.Tensor" || text == "Tensor") {
      if (at(TokenKind::LBracket))
        fail(peek(), fmt::format("'{}' takes no shape; write a dtype and a shape such as "
                                 "f16[M, 64]",
                                 text));
      return t;
    }
    t.dtype = parse_dtype(text);
    if (!t.dtype) {
      // `NAME[...]` was meant as a dtype and a shape, unless NAME is one of
      // Python's container types; anything else is not a type we check.
      static const std::set<std::string_view> kContainers = {
          "list", "List",     "typing.List",     "dict",  "Dict",         "typing.Dict", "set",
          "Set",  "Optional", "typing.Optional", "Union", "typing.Union", "Sequence"};
      if (at(TokenKind::LBracket) && !kContainers.count(text))
        throw UserError(fmt::format("unknown dtype '{}' in the return annotation{}", text,
                                    did_you_mean(text, dtype_spellings())),
                        loc);
      throw UserError(unsupported_return_annotation("name '" + text + "'"), loc);
    }
    ParamDecl decl;  // parse_shape's dims, resolved against the signature's symbols
    parse_shape("the return annotation", &decl, "the returned type");
    for (const DimDecl& d : decl.dims) {
      if (d.symbol.empty()) {
        t.shape.push_back(d.value);
        t.symbols.push_back(kFixedDim);
        continue;
      }
      const SymbolId s = g_.find_symbol(d.symbol);
      if (s == kFixedDim)
        throw UserError(fmt::format("'{}' in the return annotation is not a symbolic dim of a "
                                    "parameter's shape",
                                    d.symbol),
                        d.loc);
      t.shape.push_back(g_.symbols()[s].value);
      t.symbols.push_back(s);
    }
    t.loc = span(loc, decl.shape_loc);
    return t;
  }

  // "f16[M, 64]": a type as the annotation writes it.
  std::string type_text(DType dtype, const Shape& shape,
                        const std::vector<SymbolId>& symbols) const {
    std::string out = std::string(dtype_name(dtype)) + "[";
    for (size_t d = 0; d < shape.size(); ++d) {
      const SymbolId s = d < symbols.size() ? symbols[d] : kFixedDim;
      out += (d == 0 ? "" : ", ") + (s == kFixedDim ? std::to_string(shape[d])
                                                    : g_.symbols()[static_cast<size_t>(s)].name);
    }
    return out + "]";
  }

  // Holds what `return` gives to the return annotation, if any: the number
  // of values, then each one's dtype and shape (a symbolic dim must be the
  // same symbol, a fixed one the same size). A UserError at the `return`
  // (count) or at the returned value (type), naming both types.
  void check_return_annotation(const Token& ret, const std::vector<Operand>& values) const {
    if (!return_annotation_) return;
    const ReturnAnnotation& ann = *return_annotation_;
    const SourceLoc where = ann.types.size() == 1 ? ann.types[0].loc : ann.loc;
    if (!ann.variadic && values.size() != ann.types.size())
      throw UserError(fmt::format("'return' gives {} value{} but the return annotation (line {}, "
                                  "column {}) declares {}{}",
                                  values.size(), values.size() == 1 ? "" : "s", where.line,
                                  where.col, ann.types.size(),
                                  ann.tuple ? "" : " (several values are annotated tuple[...])"),
                      ret.loc);
    for (size_t i = 0; i < values.size(); ++i) {
      const ReturnType& want = ann.types[ann.variadic ? 0 : i];
      if (!want.dtype) continue;
      const Node& n = g_.node(values[i].value);
      std::vector<SymbolId> got_symbols(n.shape.size(), kFixedDim);
      for (size_t d = 0; d < n.shape.size(); ++d) got_symbols[d] = n.symbol(d);
      bool same = n.dtype == *want.dtype && n.shape.size() == want.shape.size();
      for (size_t d = 0; same && d < n.shape.size(); ++d)
        same = got_symbols[d] == want.symbols[d] &&
               (want.symbols[d] != kFixedDim || n.shape[d] == want.shape[d]);
      if (same) continue;
      const std::string which = values.size() == 1
                                    ? std::string("the returned value")
                                    : fmt::format("returned value {} of {}", i + 1, values.size());
      throw UserError(fmt::format("{} is {} but the return annotation (line {}, column {}) says {}",
                                  which, type_text(n.dtype, n.shape, got_symbols), want.loc.line,
                                  want.loc.col, type_text(*want.dtype, want.shape, want.symbols)),
                      values[i].loc);
    }
  }

  // A parameter as written: its dims and range bounds may name symbolic
  // dims, whose values are known only once the whole signature is read.
  struct DimDecl {
    int64_t value = 0;
    std::string symbol;  // non-empty: a symbolic dim
    SourceLoc loc;
  };
  struct BoundDecl {
    int64_t value = 0;
    std::string symbol;
    bool negated = false;
    SourceLoc loc;
  };
  struct ParamDecl {
    std::string name;
    SourceLoc loc;
    DType dtype = DType::F32;
    std::vector<DimDecl> dims;
    SourceLoc shape_loc;
    std::optional<BoundDecl> lo, hi;
    SourceLoc range_loc;
  };

  ParamDecl parse_parameter(std::set<std::string, std::less<>>& seen) {
    const Token& name = expect(TokenKind::Name, "a parameter name");
    std::string pname(name.text);
    if (!seen.insert(pname).second) fail(name, fmt::format("duplicate parameter '{}'", pname));
    if (!at(TokenKind::Colon))
      fail(peek(), fmt::format("expected ':' and a type such as f16[128, 64] after parameter "
                               "'{}', found {}",
                               pname, describe_token(peek())));
    next();
    auto [dtype_text, dtype_loc] = parse_dotted("a dtype such as f16");
    std::optional<DType> dtype = parse_dtype(dtype_text);
    if (!dtype) {
      if (dtype_text == "torch.Tensor" || dtype_text == "Tensor")
        throw UserError(
            fmt::format("parameter '{}' needs a dtype and a shape such as f16[128, 64], "
                        "not {}",
                        pname, dtype_text),
            dtype_loc);
      throw UserError(fmt::format("unknown dtype '{}'{}", dtype_text,
                                  did_you_mean(dtype_text, dtype_spellings())),
                      dtype_loc);
    }
    ParamDecl decl;
    decl.name = pname;
    decl.loc = name.loc;
    decl.dtype = *dtype;
    parse_shape(pname, &decl);
    if (at(TokenKind::KwIn)) parse_range(pname, &decl);
    return decl;
  }

  // `what` names the shape in the messages (default: "the shape of parameter 'NAME'").
  void parse_shape(const std::string& pname, ParamDecl* decl, std::string_view what = {}) {
    const Token& open =
        expect(TokenKind::LBracket, what.empty()
                                        ? fmt::format("'[' and the shape of parameter '{}'", pname)
                                        : fmt::format("'[' and the shape of {}", what));
    while (!at(TokenKind::RBracket)) {
      SourceLoc loc = peek().loc;
      if (at(TokenKind::Name)) {
        // A symbolic dim: its size is given at call time.
        const Token& sym = next();
        if (decl->dims.size() == kMaxRank)
          throw UserError(fmt::format("a tensor can have at most {} dims", kMaxRank), sym.loc);
        decl->dims.push_back({0, std::string(sym.text), sym.loc});
        if (!accept(TokenKind::Comma)) break;
        continue;
      }
      bool negative = accept(TokenKind::Minus);
      if (!at(TokenKind::Int))
        fail(peek(), fmt::format("expected a dimension size (an integer, or a name for a "
                                 "symbolic dim), found {}",
                                 describe_token(peek())));
      const Token& dim = next();
      loc = span(loc, dim.loc);
      if (dim.int_is_2_pow_63 && !negative) int_literal(dim, false);  // too large
      if (negative)
        throw UserError(fmt::format("dimension sizes must be non-negative, found -{}", dim.text),
                        loc);
      if (decl->dims.size() == static_cast<size_t>(kMaxRank))
        throw UserError(fmt::format("a tensor can have at most {} dims", kMaxRank), loc);
      decl->dims.push_back({dim.int_value, "", loc});
      if (!accept(TokenKind::Comma)) break;
    }
    const Token& close = expect(TokenKind::RBracket, "',' or ']' in the shape");
    decl->shape_loc = span(open.loc, close.loc);
  }

  void parse_range(const std::string& pname, ParamDecl* decl) {
    const Token& in = next();
    if (!is_integral(decl->dtype))
      fail(in, fmt::format("'in [lo, hi)' ranges are only allowed on integer parameters, and "
                           "'{}' is {}",
                           pname, dtype_name(decl->dtype)));
    const Token& open = expect(TokenKind::LBracket, "'[' to start the range [lo, hi)");
    decl->lo = parse_bound("the range's lower bound");
    expect(TokenKind::Comma, "',' between the bounds of the range");
    decl->hi = parse_bound("the range's upper bound");
    if (at(TokenKind::RBracket))
      fail(peek(), "a range is half-open: write [lo, hi) with a closing ')'");
    const Token& close = expect(TokenKind::RParen, "')' to close the range [lo, hi)");
    decl->range_loc = span(open.loc, close.loc);
  }

  // An integer, a symbolic dim's name or its negation (`in [-T, T)`).
  BoundDecl parse_bound(std::string_view what) {
    BoundDecl b;
    b.loc = peek().loc;
    b.negated = accept(TokenKind::Minus);
    if (at(TokenKind::Name)) {
      const Token& sym = next();
      b.symbol = std::string(sym.text);
      b.loc = span(b.loc, sym.loc);
      return b;
    }
    if (!at(TokenKind::Int))
      fail(peek(), fmt::format("expected an integer or a symbolic dim for {}, found {}", what,
                               describe_token(peek())));
    const Token& v = next();
    b.loc = span(b.loc, v.loc);
    b.value = int_literal(v, b.negated);
    return b;
  }

  // Declares the signature's symbols (in order of first appearance, each
  // with its value from the binding, else a generic one), then the
  // parameters with their shapes and ranges resolved.
  void declare_parameters(const std::vector<ParamDecl>& params) {
    std::set<std::string, std::less<>> param_names;
    for (const ParamDecl& p : params) param_names.insert(p.name);
    for (const ParamDecl& p : params) {
      for (const DimDecl& d : p.dims) {
        if (d.symbol.empty() || g_.find_symbol(d.symbol) != kFixedDim) continue;
        if (param_names.count(d.symbol))
          throw UserError(fmt::format("the symbolic dim '{}' has the name of a parameter; "
                                      "give it another name",
                                      d.symbol),
                          d.loc);
        int64_t value = generic_symbol_value(g_.symbols().size());
        if (values_) {
          auto it = values_->find(d.symbol);
          if (it != values_->end()) value = it->second;
        }
        if (value < 0)
          throw UserError(fmt::format("symbolic dim '{}' cannot be {}", d.symbol, value), d.loc);
        g_.add_symbol(d.symbol, value, d.loc);
      }
    }
    if (values_) {
      for (const auto& [name, value] : *values_) {
        if (g_.find_symbol(name) != kFixedDim) continue;
        std::string known;
        for (const Symbol& s : g_.symbols()) known += (known.empty() ? "" : ", ") + s.name;
        throw UserError(ErrorKind::kValue,
                        fmt::format("`{}` is not a symbolic dim of '{}' ({})", name, name_,
                                    known.empty() ? "it has none: every dim is fixed"
                                                  : "its symbolic dims: " + known));
      }
    }
    for (const ParamDecl& p : params) {
      Shape shape;
      std::vector<SymbolId> symbols;
      int64_t nonzero_product = 1;
      std::string bound;  // "T = 4096, M = 16": the given symbols met so far
      for (const DimDecl& d : p.dims) {
        const SymbolId s = d.symbol.empty() ? kFixedDim : g_.find_symbol(d.symbol);
        const int64_t size = s == kFixedDim ? d.value : g_.symbols()[s].value;
        // A symbol at its generic placeholder size (no size given) counts as
        // 1: eight placeholders of ~1000 overflow int64, and the sizes are
        // checked when they are given (here, with `values`, or when bound).
        const bool given = s == kFixedDim || (values_ && values_->count(d.symbol) != 0);
        // Strides are products of the dims after them, so even with a zero dim
        // elsewhere the product of the non-zero dims must fit in int64.
        if (s != kFixedDim && given)
          bound += fmt::format("{}{} = {}", bound.empty() ? "" : ", ", d.symbol, size);
        // (A fixed dim after a huge symbol overflows too: the message names
        // the symbols, whose sizes came from --shape or the inputs.)
        if (given && size != 0 && __builtin_mul_overflow(nonzero_product, size, &nonzero_product))
          throw UserError(
              s == kFixedDim && bound.empty()
                  ? std::string(
                        "the shape has too many elements (the product of its dims overflows)")
                  : fmt::format("the shape of '{}' has too many elements with {} (the "
                                "product of its dims overflows)",
                                p.name,
                                s == kFixedDim ? bound : d.symbol + " = " + std::to_string(size)),
              d.loc);
        shape.push_back(size);
        symbols.push_back(s);
      }
      bool symbolic = false;
      for (SymbolId s : symbols) symbolic = symbolic || s != kFixedDim;
      if (!symbolic) symbols.clear();
      std::optional<IntRange> range;
      if (p.lo) range = resolve_range(p);
      ValueId v = g_.parameter(p.name, p.dtype, shape, range, p.loc, std::move(symbols));
      variables_[p.name] = Operand::tensor(v, p.loc);
    }
  }

  IntRange resolve_range(const ParamDecl& p) {
    IntRange r;
    auto resolve = [&](const BoundDecl& b, int64_t* value, SymbolId* sym, bool* negated) {
      *negated = b.negated && !b.symbol.empty();
      if (b.symbol.empty()) {
        *value = b.value;
        return;
      }
      *sym = g_.find_symbol(b.symbol);
      if (*sym == kFixedDim)
        throw UserError(fmt::format("'{}' in the range of '{}' is not a symbolic dim of a "
                                    "parameter's shape",
                                    b.symbol, p.name),
                        b.loc);
      const int64_t v = g_.symbols()[*sym].value;
      *value = b.negated ? -v : v;
    };
    resolve(*p.lo, &r.lo, &r.lo_symbol, &r.lo_negated);
    resolve(*p.hi, &r.hi, &r.hi_symbol, &r.hi_negated);
    const bool symbolic = r.lo_symbol != kFixedDim || r.hi_symbol != kFixedDim;
    // A symbolic range may be empty for some bindings (an index into a dim
    // of size 0); it only says where random inputs come from.
    if (!symbolic && r.lo >= r.hi)
      throw UserError(fmt::format("the range [{}, {}) is empty; lo must be less than hi", r.lo, r.hi),
                      p.range_loc);
    // The values drawn must be representable in the parameter's dtype.
    int64_t min = std::numeric_limits<int64_t>::min(), max = std::numeric_limits<int64_t>::max();
    switch (p.dtype) {
      case DType::U8:
        min = 0, max = 256;
        break;
      case DType::I8:
        min = -128, max = 128;
        break;
      case DType::I32:
        min = -(int64_t{1} << 31), max = int64_t{1} << 31;
        break;
      default:
        break;
    }
    // (A symbolic bound is clipped to the dtype where random inputs are drawn.)
    if (!symbolic && (r.lo < min || r.hi > max))
      throw UserError(fmt::format("the range [{}, {}) does not fit in {} ([{}, {}))", r.lo, r.hi,
                                  dtype_name(p.dtype), min, max),
                      p.range_loc);
    return r;
  }

  int64_t parse_signed_int(std::string_view what) {
    bool negative = accept(TokenKind::Minus);
    if (!at(TokenKind::Int))
      fail(peek(),
           fmt::format("expected an integer for {}, found {}", what, describe_token(peek())));
    return int_literal(next(), negative);
  }

  // --- statements --------------------------------------------------------------

  void parse_body() {
    if (!accept(TokenKind::Newline)) {
      // `def f(x: f32[2]): return x`
      parse_simple_line();
    } else {
      if (!at(TokenKind::Indent))
        fail(peek(), fmt::format("expected an indented block after 'def {}(...):', found {}", name_,
                                 describe_token(peek())));
      next();
      while (!at(TokenKind::Dedent) && !at(TokenKind::End)) {
        if (at(TokenKind::Indent)) fail(peek(), "unexpected indentation");
        parse_simple_line();
      }
      accept(TokenKind::Dedent);
    }
    if (!returned_)
      throw UserError(fmt::format("function '{}' has no return statement", name_), name_loc_);
  }

  // stmt (';' stmt)* [';'] NEWLINE
  void parse_simple_line() {
    while (true) {
      if (returned_)
        fail(peek(), "code after 'return' is unreachable; 'return' must be the last statement");
      parse_statement();
      if (accept(TokenKind::Semicolon) && !at(TokenKind::Newline) && !at(TokenKind::End)) continue;
      end_line();
      return;
    }
  }

  void end_line() {
    if (at(TokenKind::Assign)) fail(peek(), "chained assignment ('a = b = ...') is not supported");
    if (at(TokenKind::End)) return;
    expect(TokenKind::Newline, "end of line after the statement");
  }

  void end_simple_statement() {
    accept(TokenKind::Semicolon);
    if (at(TokenKind::End)) return;
    expect(TokenKind::Newline, "end of line");
  }

  void parse_statement() {
    const Token& t = peek();
    switch (t.kind) {
      case TokenKind::KwReturn:
        parse_return();
        return;
      case TokenKind::Name:
        parse_assignment();
        return;
      case TokenKind::String:
        // A docstring (or any string statement) computes nothing.
        next();
        return;
      case TokenKind::KwImport:
      case TokenKind::KwFrom:
        fail(t, "imports must come before the 'def'");
      case TokenKind::KwDef:
        fail(t, "nested functions are not supported");
      case TokenKind::Keyword:
        fail(t, fmt::format("'{}' is not supported in .tfs programs (a statement is "
                            "'name = expr' or 'return ...')",
                            t.text));
      case TokenKind::Indent:
        fail(t, "unexpected indentation");
      default:
        fail(t, fmt::format("expected a statement ('name = expr' or 'return ...'), found {}",
                            describe_token(t)));
    }
  }

  void parse_assignment() {
    const Token& name = next();
    const Token& op = peek();
    switch (op.kind) {
      case TokenKind::Assign: {
        next();
        Operand value = parse_expr();
        bind(name, std::move(value));
        return;
      }
      case TokenKind::PlusAssign:
      case TokenKind::MinusAssign:
      case TokenKind::StarAssign:
      case TokenKind::SlashAssign:
      case TokenKind::AtAssign: {
        Operand target = lookup(name);
        next();
        Operand value = parse_expr();
        bind(name, binary(op, std::move(target), std::move(value)));
        return;
      }
      case TokenKind::Comma:
        fail(op, "tuple assignment ('a, b = ...') is not supported");
      case TokenKind::Colon:
        fail(op, "annotated assignments are not supported");
      case TokenKind::LBracket:
      case TokenKind::Dot:
        // `x[i] = v`, `x[i] += v`, `x.data = v`: a write into a tensor.
        if (const Token* assign = statement_assignment()) {
          if (op.kind == TokenKind::LBracket)
            fail(op, fmt::format("assignment through a subscript ('{}[...] {} ...') is not "
                                 "supported: a program cannot write into a tensor (there is no "
                                 "index_put or scatter); compute a new value instead, e.g. with "
                                 "torch.where",
                                 name.text, assign->text));
          fail(op, fmt::format("assignment to an attribute ('{}.{} {} ...') is not supported",
                               name.text, peek(1).text, assign->text));
        }
        [[fallthrough]];
      default:
        fail(op, fmt::format("expected '=' after '{}' (a statement is 'name = expr' or "
                             "'return ...'), found {}",
                             name.text, describe_token(op)));
    }
  }

  // The '=' or augmented assignment that ends the target of the statement
  // starting at the current token (`x[i, 0] = ...`: the '=' after the
  // brackets), or nullptr when the statement has none outside brackets.
  const Token* statement_assignment() const {
    return find_at_own_depth([](const Token& t) { return is_assignment_token(t.kind); },
                             /*statement=*/true);
  }

  // The first token from the current one that `pred` accepts outside every
  // bracket opened after it; nullptr at the closer of the bracket the scan
  // starts in, at the end of the line, or (`statement`) at a ';'.
  template <class Pred>
  const Token* find_at_own_depth(Pred pred, bool statement) const {
    int depth = 0;
    for (size_t k = 0;; ++k) {
      const Token& t = peek(k);
      switch (t.kind) {
        case TokenKind::LParen:
        case TokenKind::LBracket:
          ++depth;
          break;
        case TokenKind::RParen:
        case TokenKind::RBracket:
          if (--depth < 0) return nullptr;
          break;
        case TokenKind::Newline:
        case TokenKind::End:
          return nullptr;
        case TokenKind::Semicolon:
          if (statement) return nullptr;
          break;
        default:
          break;
      }
      if (depth == 0 && pred(t)) return &t;
    }
  }

  void bind(const Token& name, Operand value) {
    std::string n(name.text);
    if (value.is_tensor()) {
      const Node& node = g_.node(value.value);
      // A value keeps the first name it was bound to; a parameter keeps its own.
      if (node.kind != OpKind::Parameter && node.name.empty()) g_.set_name(value.value, n);
    }
    variables_[n] = std::move(value);
  }

  void parse_return() {
    const Token& ret = next();
    if (is_line_end(peek().kind)) fail(ret, "'return' needs at least one value");
    std::vector<Operand> values;
    bool tuple = false;
    while (true) {
      values.push_back(parse_expr());
      if (!accept(TokenKind::Comma)) break;
      tuple = true;
      if (is_line_end(peek().kind)) break;
    }
    // `return (a, b)` returns the same two outputs as `return a, b`.
    if (!tuple && values.size() == 1 && values[0].kind == Operand::Kind::Tuple) {
      std::vector<Operand> items = std::move(values[0].items);
      values = std::move(items);
      if (values.empty()) fail(ret, "'return' needs at least one value");
    }
    for (const Operand& v : values) {
      if (!v.is_tensor())
        throw UserError(fmt::format("a returned value must be a tensor, found {}", describe(v)),
                        v.loc);
    }
    check_return_annotation(ret, values);
    for (const Operand& v : values) g_.add_output(v.value);
    returned_ = true;
  }

  // --- expressions -------------------------------------------------------------

  Operand parse_expr() {
    NestingGuard guard(*this);
    Operand v = parse_comparison();
    if (at(TokenKind::Amp) || at(TokenKind::Pipe) || at(TokenKind::Caret))
      fail(peek(), fmt::format("the '{}' operator is not supported", peek().text));
    return v;
  }

  Operand parse_comparison() {
    Operand lhs = parse_arith();
    if (!is_comparison_token(peek().kind)) return lhs;
    const Token& op = next();
    Operand rhs = parse_arith();
    if (is_comparison_token(peek().kind))
      fail(peek(), "chained comparisons (a < b < c) are not supported");
    return binary(op, std::move(lhs), std::move(rhs));
  }

  Operand parse_arith() {
    Operand lhs = parse_term();
    while (at(TokenKind::Plus) || at(TokenKind::Minus)) {
      const Token& op = next();
      Operand rhs = parse_term();
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
    // Python's shifts bind between + - and the comparisons.
    if (at(TokenKind::LessLess) || at(TokenKind::GreaterGreater))
      fail(peek(), fmt::format("the '{}' operator is not supported", peek().text));
    return lhs;
  }

  Operand parse_term() {
    Operand lhs = parse_unary();
    while (true) {
      if (at(TokenKind::SlashSlash) || at(TokenKind::Percent))
        fail(peek(), fmt::format("the '{}' operator is not supported", peek().text));
      if (!at(TokenKind::Star) && !at(TokenKind::Slash) && !at(TokenKind::At)) return lhs;
      const Token& op = next();
      Operand rhs = parse_unary();
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
  }

  Operand parse_unary() {
    if (!at(TokenKind::Minus) && !at(TokenKind::Plus) && !at(TokenKind::Tilde)) {
      Operand v = parse_postfix();
      if (at(TokenKind::StarStar)) fail(peek(), "the '**' operator is not supported");
      return v;
    }
    // `-9223372036854775808`: a '-' right before the literal 2**63 (nothing
    // postfix after it) folds to INT64_MIN, whose magnitude is no int64.
    if (at(TokenKind::Minus) && peek(1).kind == TokenKind::Int && peek(1).int_is_2_pow_63 &&
        !is_postfix_start(peek(2).kind)) {
      const Token& op = next();
      const Token& lit = next();
      if (at(TokenKind::StarStar)) fail(peek(), "the '**' operator is not supported");
      return Operand::integer(int_literal(lit, true), span(op.loc, lit.loc));
    }
    NestingGuard guard(*this);
    const Token& op = next();
    Operand v = parse_unary();
    return unary(op, std::move(v));
  }

  Operand parse_postfix() {
    Operand v = parse_atom();
    while (true) {
      if (at(TokenKind::Dot)) {
        next();
        const Token& name = expect(TokenKind::Name, "an attribute name after '.'");
        v = attribute(std::move(v), name);
      } else if (at(TokenKind::LParen)) {
        v = call_value(std::move(v));
      } else if (at(TokenKind::LBracket)) {
        v = subscript(std::move(v));
      } else {
        return v;
      }
    }
  }

  Operand parse_atom() {
    const Token& t = peek();
    switch (t.kind) {
      case TokenKind::Name:
        next();
        return lookup(t);
      case TokenKind::Int:
        next();
        return Operand::integer(int_literal(t, false), t.loc);
      case TokenKind::Float:
        next();
        return Operand::floating(t.float_value, t.loc);
      case TokenKind::KwTrue:
      case TokenKind::KwFalse:
        next();
        return Operand::boolean(t.kind == TokenKind::KwTrue, t.loc);
      case TokenKind::KwNone:
        next();
        return Operand::none(t.loc);
      case TokenKind::String: {
        next();
        std::string_view text = t.text;
        size_t quotes = text.size() >= 6 && text[1] == text[0] && text[2] == text[0] ? 3 : 1;
        return Operand::string(text.substr(quotes, text.size() - 2 * quotes), t.loc);
      }
      case TokenKind::LParen:
        return parse_parenthesized();
      case TokenKind::LBracket:
        return parse_list();
      case TokenKind::Ellipsis:
        fail(t, "'...' is only allowed inside a subscript");
      case TokenKind::Keyword:
        fail(t, fmt::format("'{}' is not supported in .tfs programs", t.text));
      default:
        fail(t, fmt::format("expected an expression, found {}", describe_token(t)));
    }
  }

  // Right after an opening '(' or '[': a comprehension or generator
  // (`[v for v in x]`, `sum(v for v in x)`) has 'for' at this bracket's own
  // depth before its closer. It is refused there, before its element is
  // parsed (that reported the loop variable as an unknown name).
  void refuse_comprehension() const {
    const auto is_for = [](const Token& t) {
      return t.kind == TokenKind::Keyword && t.text == "for";
    };
    if (const Token* t = find_at_own_depth(is_for, /*statement=*/false))
      throw UserError(
          "comprehensions and generator expressions are not supported in .tfs programs "
          "(a tensor expression acts on every element: `x * 2`, not `[v * 2 for v in x]`)",
          t->loc);
  }


  // `(e)` or a tuple `()`, `(e,)`, `(a, b)`.
  Operand parse_parenthesized() {
    const Token& open = next();
    refuse_comprehension();
    if (at(TokenKind::RParen)) {
      Operand tuple;
      tuple.kind = Operand::Kind::Tuple;
      tuple.loc = span(open.loc, next().loc);
      return tuple;
    }
    Operand first = parse_expr();
    if (!at(TokenKind::Comma)) {
      const Token& close = expect(TokenKind::RParen, "')'");
      first.loc = span(open.loc, close.loc);
      return first;
    }
    Operand tuple;
    tuple.kind = Operand::Kind::Tuple;
    tuple.items.push_back(flat_item(std::move(first)));
    while (accept(TokenKind::Comma) && !at(TokenKind::RParen))
      tuple.items.push_back(flat_item(parse_expr()));
    const Token& close = expect(TokenKind::RParen, "',' or ')'");
    tuple.loc = span(open.loc, close.loc);
    return tuple;
  }

  // Tuples and lists hold sizes, dims and returned values; nothing needs them
  // nested, and nesting would let `b = (a, a)` chains grow exponentially.
  static Operand flat_item(Operand item) {
    if (item.kind == Operand::Kind::Tuple || item.kind == Operand::Kind::List)
      throw UserError("nested tuples and lists are not supported", item.loc);
    return item;
  }

  Operand parse_list() {
    const Token& open = next();
    refuse_comprehension();
    Operand list;
    list.kind = Operand::Kind::List;
    while (!at(TokenKind::RBracket)) {
      list.items.push_back(flat_item(parse_expr()));
      if (!accept(TokenKind::Comma)) break;
    }
    const Token& close = expect(TokenKind::RBracket, "',' or ']'");
    list.loc = span(open.loc, close.loc);
    return list;
  }

  Operand lookup(const Token& name) {
    std::string n(name.text);
    if (auto it = variables_.find(n); it != variables_.end()) {
      Operand v = it->second;
      v.loc = name.loc;
      return v;
    }
    if (auto it = aliases_.find(n); it != aliases_.end()) {
      if (is_function(it->second)) return Operand::function(it->second, n, name.loc);
      return Operand::module(it->second, n, name.loc);
    }
    if (std::optional<DType> dt = bare_dtype(n)) return Operand::of_dtype(*dt, name.loc);
    // A symbolic dim of the signature names a size, not a value.
    if (g_.find_symbol(n) != kFixedDim)
      fail(name, fmt::format("'{}' is a symbolic dim of the signature, not a value{}", n,
                             arguments_of_ == "expand" ? " (in expand(), -1 keeps a dim's size)"
                                                       : ""));
    std::vector<std::string> candidates;
    for (const auto& [k, v] : variables_) candidates.push_back(k);
    for (const auto& [k, v] : aliases_) candidates.push_back(k);
    fail(name, fmt::format("unknown name '{}'{}", n, did_you_mean(n, candidates)));
  }

  Operand attribute(Operand base, const Token& name) {
    std::string attr(name.text);
    SourceLoc loc = span(base.loc, name.loc);
    bool call = at(TokenKind::LParen);
    switch (base.kind) {
      case Operand::Kind::Module: {
        std::string path = base.path + "." + attr;
        std::string spelling = base.spelling + "." + attr;
        if (is_function(path)) return Operand::function(path, spelling, loc);
        if (call)
          fail(name, fmt::format("unknown function '{}'{}", spelling,
                                 did_you_mean(attr, function_names(base.path))));
        if (is_module(path)) return Operand::module(path, spelling, loc);
        if (base.path == "torch") {
          if (std::optional<DType> dt = parse_dtype(path)) return Operand::of_dtype(*dt, loc);
          if (looks_like_dtype(attr)) {
            std::vector<std::string> names;
            for (const std::string& s : dtype_spellings())
              if (!s.starts_with("torch.")) names.push_back(s);
            fail(name, fmt::format("unknown dtype '{}'{}", spelling,
                                   did_you_mean(attr, names, base.spelling + ".")));
          }
        }
        fail(name, fmt::format("module '{}' has no attribute '{}'", base.spelling, attr));
      }
      case Operand::Kind::Tensor: {
        if (call) {
          if (!is_method(attr)) {
            std::vector<std::string> names = method_names();
            fail(name,
                 fmt::format("unknown tensor method '{}'{}", attr, did_you_mean(attr, names)));
          }
          std::vector<Argument> args = parse_arguments_of(attr);
          return call_method(g_, base, attr, std::move(args), name.loc, span(base.loc, last_loc()));
        }
        return tensor_attribute(base, name, loc);
      }
      default:
        fail(name, fmt::format("{} has no attribute '{}'", describe(base), attr));
    }
  }

  Operand tensor_attribute(const Operand& base, const Token& name, SourceLoc loc) {
    std::string_view attr = name.text;
    ValueId x = base.value;
    int64_t rank = static_cast<int64_t>(g_.node(x).shape.size());
    if (attr == "T") {
      // PyTorch reverses all dims (a no-op for 0-D and 1-D tensors).
      if (rank < 2) return Operand::tensor(x, loc);
      if (rank == 2) return Operand::tensor(g_.transpose(x, 0, 1, name.loc), loc);
      std::vector<int64_t> perm(static_cast<size_t>(rank));
      for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = rank - 1 - i;
      return Operand::tensor(g_.permute(x, perm, name.loc), loc);
    }
    if (attr == "mT") {
      if (rank < 2)
        fail(name, fmt::format(".mT needs a tensor of at least 2 dims, found shape {}",
                               symbolic_shape_string(g_, g_.node(x))));
      return Operand::tensor(g_.transpose(x, -2, -1, name.loc), loc);
    }
    if (is_method(attr))
      fail(name, fmt::format("method '{}' must be called, as in '.{}()'", attr, attr));
    std::vector<std::string> names = method_names();
    names.push_back("T");
    names.push_back("mT");
    fail(name, fmt::format("unknown tensor attribute '{}'{}", attr, did_you_mean(attr, names)));
  }

  Operand call_value(Operand callee) {
    if (callee.kind != Operand::Kind::Function) {
      if (callee.kind == Operand::Kind::Module)
        throw UserError(fmt::format("module '{}' is not callable", callee.spelling), callee.loc);
      if (callee.kind == Operand::Kind::DType)
        throw UserError(
            fmt::format("{} is not callable: a dtype name such as `float` is not Python's "
                        "conversion here (.tfs has none); write the number itself, e.g. 2.0",
                        describe(callee)),
            callee.loc);
      throw UserError(fmt::format("{} is not callable", describe(callee)), callee.loc);
    }
    std::vector<Argument> args = parse_arguments_of(callee.spelling);
    return call_function(g_, callee, callee.spelling, std::move(args), callee.loc,
                         span(callee.loc, last_loc()));
  }

  // parse_arguments, with `callee` (a method's or function's name) as the
  // call whose arguments a name is looked up in (lookup's hints).
  std::vector<Argument> parse_arguments_of(const std::string& callee) {
    std::string saved = std::exchange(arguments_of_, callee);
    std::vector<Argument> args = parse_arguments();
    arguments_of_ = std::move(saved);
    return args;
  }

  std::vector<Argument> parse_arguments() {
    expect(TokenKind::LParen, "'('");
    refuse_comprehension();
    std::vector<Argument> args;
    bool keywords = false;
    while (!at(TokenKind::RParen)) {
      if (at(TokenKind::Star) || at(TokenKind::StarStar))
        fail(peek(), "argument unpacking (*args, **kwargs) is not supported");
      Argument a;
      if (at(TokenKind::Name) && peek(1).kind == TokenKind::Assign) {
        const Token& kw = next();
        next();
        a.keyword = std::string(kw.text);
        a.keyword_loc = kw.loc;
        keywords = true;
      } else if (keywords) {
        fail(peek(), "a positional argument cannot follow a keyword argument");
      }
      a.value = parse_expr();
      args.push_back(std::move(a));
      if (!accept(TokenKind::Comma)) break;
    }
    expect(TokenKind::RParen, "',' or ')' in the argument list");
    return args;
  }

  Operand subscript(Operand base) {
    next();  // '['

    if (!base.is_tensor())
      throw UserError(fmt::format("only tensors can be indexed, found {}", describe(base)),
                      base.loc);
    if (at(TokenKind::RBracket)) fail(peek(), "an empty subscript '[]' is not allowed");
    std::vector<IndexItem> items;
    while (!at(TokenKind::RBracket)) {
      items.push_back(parse_index_item());
      if (!accept(TokenKind::Comma)) break;
    }
    expect(TokenKind::RBracket, "',' or ']' in the subscript");
    return apply_subscript(g_, base, items, span(base.loc, last_loc()));
  }

  IndexItem parse_index_item() {
    const Token& first = peek();
    if (accept(TokenKind::Ellipsis)) {
      IndexItem item;
      item.kind = IndexItem::Kind::Ellipsis;
      item.loc = first.loc;
      return item;
    }
    std::optional<Operand> start, stop, step;
    if (!at(TokenKind::Colon)) {
      start = parse_expr();
      if (!at(TokenKind::Colon)) return index_item(g_, *start);
    }
    next();  // ':'
    auto slice_part_ends = [&] {
      return at(TokenKind::Colon) || at(TokenKind::Comma) || at(TokenKind::RBracket);
    };
    if (!slice_part_ends()) stop = parse_expr();
    if (accept(TokenKind::Colon) && !slice_part_ends()) step = parse_expr();
    return slice_item(start, stop, step, span(first.loc, last_loc()));
  }

  Operand unary(const Token& op, Operand v) {
    SourceLoc loc = span(op.loc, v.loc);
    if (v.is_number()) {
      int64_t i = v.int_value;
      switch (op.kind) {
        case TokenKind::Minus:
          if (v.kind == Operand::Kind::Float) return Operand::floating(-v.float_value, loc);
          if (i == std::numeric_limits<int64_t>::min())
            throw UserError("integer overflow in a constant expression", op.loc);
          return Operand::integer(-i, loc);
        case TokenKind::Plus:
          if (v.kind == Operand::Kind::Float) return Operand::floating(v.float_value, loc);
          return Operand::integer(i, loc);
        default:  // '~'
          if (v.kind == Operand::Kind::Float)
            fail(op, "'~' needs an integer or a bool tensor, found a float");
          return Operand::integer(~i, loc);
      }
    }
    if (!v.is_tensor())
      fail(op, fmt::format("bad operand for unary '{}': {}", op.text, describe(v)));
    switch (op.kind) {
      case TokenKind::Minus:
        return Operand::tensor(g_.unary(UnaryOp::Neg, v.value, op.loc), loc);
      case TokenKind::Plus:
        return Operand::tensor(v.value, loc);
      default: {
        DType dt = g_.node(v.value).dtype;
        if (dt != DType::Bool)
          fail(op, fmt::format("'~' is only supported on bool tensors (logical not), found {}",
                               dtype_name(dt)));
        return Operand::tensor(g_.unary(UnaryOp::LogicalNot, v.value, op.loc), loc);
      }
    }
  }

  Operand binary(const Token& op, Operand a, Operand b) {
    SourceLoc loc = span(a.loc, b.loc);
    std::string text = operator_text(op);
    if (a.is_number() && b.is_number()) return fold(op, a, b);
    if (is_matmul_token(op.kind)) {
      ValueId x = expect_tensor(a, "the left operand of '@'");
      ValueId y = expect_tensor(b, "the right operand of '@'");
      return Operand::tensor(g_.matmul(x, y, op.loc), loc);
    }
    ValueId x = to_tensor(g_, a, fmt::format("the left operand of '{}'", text));
    ValueId y = to_tensor(g_, b, fmt::format("the right operand of '{}'", text));
    return Operand::tensor(g_.binary(binary_op_of(op.kind), x, y, op.loc), loc);
  }

  const std::vector<Token>& toks_;
  Graph& g_;
  const SymbolValues* values_ = nullptr;  // the binding of symbolic dims, if given
  size_t pos_ = 0;
  const Token* last_ = nullptr;
  int depth_ = 0;
  std::string name_;
  SourceLoc name_loc_;
  bool returned_ = false;
  std::map<std::string, Operand, std::less<>> variables_;
  std::map<std::string, std::string, std::less<>> aliases_;  // name -> module or function path
  std::optional<ReturnAnnotation> return_annotation_;        // `-> ...`, checked at `return`
  std::string arguments_of_;  // the call whose arguments are being parsed ("" outside any)
};

}  // namespace

std::string parse_tokens(const std::vector<Token>& tokens, Graph& graph,
                         const SymbolValues* values) {
  return Parser(tokens, graph, values).parse();
}

}  // namespace tilefuse::frontend

namespace tilefuse {

Program parse_program(std::string_view source, const std::string& file,
                      const SymbolValues* values) {
  Program program;
  program.file = file;
  program.source = std::string(source);
  // The tokens view program.source, which must not move until parsing ends.
  std::vector<frontend::Token> tokens = frontend::tokenize(program.source);
  program.name = frontend::parse_tokens(tokens, program.graph, values);
  return program;
}

}  // namespace tilefuse
