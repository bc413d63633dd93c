#include "frontend/lexer.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace tilefuse::frontend {

namespace {

constexpr std::array<std::pair<std::string_view, TokenKind>, 9> kKeywords = {{
    {"def", TokenKind::KwDef},
    {"return", TokenKind::KwReturn},
    {"import", TokenKind::KwImport},
    {"from", TokenKind::KwFrom},
    {"as", TokenKind::KwAs},
    {"in", TokenKind::KwIn},
    {"True", TokenKind::KwTrue},
    {"False", TokenKind::KwFalse},
    {"None", TokenKind::KwNone},
}};

// Python keywords the language does not use. They are tokens of their own so
// that `for i in ...` reports "'for' is not supported", not a confusing
// syntax error further on.
constexpr std::array<std::string_view, 26> kReservedKeywords = {
    "and",  "assert", "async",   "await", "break",  "class", "continue", "del",    "elif",
    "else", "except", "finally", "for",   "global", "if",    "is",       "lambda", "nonlocal",
    "not",  "or",     "pass",    "raise", "try",    "while", "with",     "yield"};

// Operators and punctuation, longest first so that a greedy scan finds "**"
// before "*" and "..." before ".".
constexpr std::array<std::pair<std::string_view, TokenKind>, 36> kPunctuation = {{
    {"...", TokenKind::Ellipsis},   {"->", TokenKind::Arrow},      {"+=", TokenKind::PlusAssign},
    {"-=", TokenKind::MinusAssign}, {"*=", TokenKind::StarAssign}, {"/=", TokenKind::SlashAssign},
    {"@=", TokenKind::AtAssign},    {"==", TokenKind::EqEq},       {"!=", TokenKind::NotEq},
    {"<=", TokenKind::LessEq},      {">=", TokenKind::GreaterEq},  {"**", TokenKind::StarStar},
    {"//", TokenKind::SlashSlash},  {"<<", TokenKind::LessLess},   {">>", TokenKind::GreaterGreater},
    {"(", TokenKind::LParen},       {")", TokenKind::RParen},
    {"[", TokenKind::LBracket},     {"]", TokenKind::RBracket},    {",", TokenKind::Comma},
    {":", TokenKind::Colon},        {";", TokenKind::Semicolon},   {".", TokenKind::Dot},
    {"=", TokenKind::Assign},       {"<", TokenKind::Less},        {">", TokenKind::Greater},
    {"+", TokenKind::Plus},         {"-", TokenKind::Minus},       {"*", TokenKind::Star},
    {"/", TokenKind::Slash},        {"@", TokenKind::At},          {"~", TokenKind::Tilde},
    {"%", TokenKind::Percent},      {"&", TokenKind::Amp},         {"|", TokenKind::Pipe},
    {"^", TokenKind::Caret},
}};

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}
bool is_continuation_byte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// Code points in `s` (a UTF-8 continuation byte does not start a column).
int count_columns(std::string_view s) {
  int n = 0;
  for (char c : s) n += is_continuation_byte(c) ? 0 : 1;
  return n;
}

bool is_digit_of_base(char c, int base) {
  switch (base) {
    case 2:
      return c == '0' || c == '1';
    case 8:
      return c >= '0' && c <= '7';
    case 16:
      return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    default:
      return is_digit(c);
  }
}

// Removes Python's digit-group underscores; false when an underscore is not
// between two digits of `base` ("1__0", "1_", "_1" inside a literal).
bool strip_underscores(std::string_view s, int base, std::string& out) {
  out.clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '_') {
      out.push_back(s[i]);
      continue;
    }
    if (i == 0 || i + 1 == s.size() || !is_digit_of_base(s[i - 1], base) ||
        !is_digit_of_base(s[i + 1], base))
      return false;
  }
  return true;
}

// The offset of the first byte of `s` that does not start a well-formed UTF-8
// sequence (a stray continuation byte, an overlong form, a surrogate, a code
// point past U+10FFFF, a sequence cut short), or npos. The Unicode
// Standard's table of well-formed byte sequences (ch. 3, table 3-7).
size_t first_invalid_utf8(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char b = byte(i);
    if (b < 0x80) {
      ++i;
      continue;
    }
    // The sequence's length and the range of its second byte.
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      n = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;  // not a surrogate
    } else if (b >= 0xF0 && b <= 0xF4) {
      n = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;  // at most U+10FFFF
    } else {
      return i;
    }
    if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return i;
    for (size_t k = 2; k < n; ++k)
      if (!is_continuation_byte(s[i + k])) return i;
    i += n;
  }
  return std::string_view::npos;
}

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// `source` without a leading UTF-8 byte order mark (what some editors write
// first): it is not part of the program, and columns count from after it.
std::string_view skip_bom(std::string_view source) {
  return source.starts_with(kUtf8Bom) ? source.substr(kUtf8Bom.size()) : source;
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(skip_bom(src)) {}

  // "LE" or "BE" when the first bytes (up to 64, at least 4) read as
  // UTF-16 text of ASCII characters: every odd byte NUL and no even one
  // (LE), or the other way round (BE); null otherwise.
  const char* utf16_without_bom() const {
    const size_t n = std::min<size_t>(src_.size(), 64) & ~size_t{1};
    if (n < 4) return nullptr;
    bool le = true, be = true;
    for (size_t i = 0; i < n; i += 2) {
      const bool even_nul = src_[i] == '\0', odd_nul = src_[i + 1] == '\0';
      le = le && !even_nul && odd_nul;
      be = be && even_nul && !odd_nul;
    }
    return le ? "LE" : be ? "BE" : nullptr;
  }

  std::vector<Token> run() {
    // A UTF-16 (or UTF-32) byte order mark: the whole file is in an encoding
    // the lexer does not read, which "non-ASCII character" at 1:1 would hide.
    for (const auto& [bom, name] : {std::pair{std::string_view("\xFF\xFE", 2), "FF FE"},
                                    std::pair{std::string_view("\xFE\xFF", 2), "FE FF"}})
      if (src_.starts_with(bom))
        fail(fmt::format("the file looks UTF-16 encoded (it starts with the byte order mark {}); "
                         "a program must be UTF-8: convert it (e.g. iconv -f UTF-16 -t UTF-8)",
                         name),
             here());
    // UTF-16 without a byte order mark: ASCII text with a NUL byte beside
    // every character (after it: little-endian, before it: big-endian).
    // UTF-8 text has no NUL bytes; "control character 0x00" would hide it.
    if (const char* order = utf16_without_bom())
      fail(fmt::format("the file looks UTF-16{} encoded (no byte order mark, a NUL byte beside "
                       "each character); a program must be UTF-8: convert it (e.g. iconv -f "
                       "UTF-16{} -t UTF-8)",
                       order, order),
           here());
    // Malformed UTF-8 anywhere, comments and strings included: at its line
    // and column (the text before it is well formed, so columns count).
    if (const size_t bad = first_invalid_utf8(src_); bad != std::string_view::npos) {
      int line = 1;
      size_t line_start = 0;
      for (size_t i = 0; i < bad; ++i) {
        if (src_[i] == '\r' && i + 1 < bad && src_[i + 1] == '\n') ++i;
        if (src_[i] == '\n' || src_[i] == '\r') {
          ++line;
          line_start = i + 1;
        }
      }
      fail(fmt::format("malformed UTF-8 (byte 0x{:02X}); a program must be UTF-8: convert it "
                       "(e.g. iconv -f LATIN1 -t UTF-8)",
                       static_cast<unsigned char>(src_[bad])),
           SourceLoc{line, count_columns(src_.substr(line_start, bad - line_start)) + 1, 1});
    }
    indents_.push_back("");
    while (true) {
      if (at_line_start_ && brackets_.empty()) {
        if (!handle_line_start()) break;
        continue;
      }
      if (pos_ >= src_.size()) break;
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\f') {
        advance(1);
      } else if (c == '#') {
        skip_comment();
      } else if (c == '\n' || c == '\r') {
        // Inside brackets a line break is plain whitespace.
        bool logical_end = brackets_.empty();
        if (logical_end) emit_newline();
        consume_line_break();
        at_line_start_ = logical_end;
      } else if (c == '\\') {
        lex_line_continuation();
      } else if (is_ident_start(c)) {
        lex_name();
      } else if (is_digit(c) || (c == '.' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))) {
        lex_number();
      } else if (c == '"' || c == '\'') {
        lex_string();
      } else {
        lex_punctuation();
      }
    }
    finish();
    return std::move(tokens_);
  }

 private:
  struct OpenBracket {
    char ch;
    SourceLoc loc;
    bool range;  // `in [lo, hi)`: this '[' may be closed by ')'
  };

  [[noreturn]] void fail(const std::string& message, SourceLoc loc) {
    throw UserError(message, loc);
  }

  SourceLoc here(int length = 1) const { return SourceLoc{line_, col_, std::max(1, length)}; }

  void advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < src_.size(); ++i, ++pos_) {
      if (!is_continuation_byte(src_[pos_])) ++col_;
    }
  }

  void consume_line_break() {
    if (src_[pos_] == '\r' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
    ++line_;
    col_ = 1;
  }

  void skip_comment() {
    size_t end = src_.find_first_of("\r\n", pos_);
    advance((end == std::string_view::npos ? src_.size() : end) - pos_);
  }

  void push(TokenKind kind, size_t begin, SourceLoc loc) {
    Token t;
    t.kind = kind;
    t.text = src_.substr(begin, pos_ - begin);
    t.loc = loc;
    tokens_.push_back(t);
    line_has_tokens_ = true;
  }

  void push_synthetic(TokenKind kind, SourceLoc loc) {
    Token t;
    t.kind = kind;
    t.loc = loc;
    tokens_.push_back(t);
  }

  void emit_newline() {
    if (!line_has_tokens_) return;
    push_synthetic(TokenKind::Newline, here());
    line_has_tokens_ = false;
  }

  // At the start of a logical line: skips blank and comment-only lines and
  // turns the indentation into INDENT / DEDENT tokens. False at end of input.
  bool handle_line_start() {
    size_t begin = pos_;
    std::string indent;
    while (pos_ < src_.size() && (src_[pos_] == ' ' || src_[pos_] == '\t' || src_[pos_] == '\f')) {
      // A form feed resets the indentation count, as in CPython.
      if (src_[pos_] == '\f')
        indent.clear();
      else
        indent.push_back(src_[pos_]);
      advance(1);
    }
    if (pos_ >= src_.size()) return false;
    char c = src_[pos_];
    if (c == '#') {
      skip_comment();
      return true;  // the line break that follows is handled by this function again
    }
    if (c == '\n' || c == '\r') {
      consume_line_break();
      return true;
    }
    at_line_start_ = false;
    SourceLoc loc{line_, 1, std::max(1, count_columns(src_.substr(begin, pos_ - begin)))};
    if (indent.find(' ') != std::string::npos && indent.find('\t') != std::string::npos)
      fail("indentation mixes tabs and spaces", loc);
    const std::string& top = indents_.back();
    if (indent == top) return true;
    if (indent.starts_with(top)) {
      indents_.push_back(indent);
      push_synthetic(TokenKind::Indent, loc);
      return true;
    }
    if (!top.starts_with(indent)) {
      // Neither is a prefix of the other and each is all tabs or all spaces:
      // one uses tabs where the other uses spaces.
      fail("indentation mixes tabs and spaces (this line and the enclosing block differ)", loc);
    }
    while (indents_.back().size() > indent.size()) {
      indents_.pop_back();
      push_synthetic(TokenKind::Dedent, SourceLoc{line_, col_, 1});
    }
    if (indents_.back() != indent)
      fail("inconsistent indentation: this line does not match any enclosing block", loc);
    return true;
  }

  void lex_line_continuation() {
    SourceLoc loc = here();
    size_t next = pos_ + 1;
    if (next < src_.size() && (src_[next] == '\n' || src_[next] == '\r')) {
      advance(1);
      consume_line_break();
      return;
    }
    if (next >= src_.size()) fail("unexpected end of file after a line continuation '\\'", loc);
    fail("unexpected character '\\' (a line continuation must end its line)", loc);
  }

  void lex_name() {
    size_t begin = pos_;
    SourceLoc loc = here();
    size_t end = pos_;
    while (end < src_.size() && is_ident_char(src_[end])) ++end;
    advance(end - begin);
    std::string_view text = src_.substr(begin, end - begin);
    loc.length = static_cast<int>(text.size());
    TokenKind kind = TokenKind::Name;
    for (const auto& [word, k] : kKeywords)
      if (word == text) kind = k;
    for (std::string_view word : kReservedKeywords)
      if (word == text) kind = TokenKind::Keyword;
    push(kind, begin, loc);
  }

  void lex_number() {
    size_t begin = pos_;
    SourceLoc loc = here();
    // Take the longest run that could belong to the literal, then validate it
    // as a whole: "12abc" or "1e" is one bad number, not a number and a name.
    size_t end = pos_;
    bool hex = src_.size() > pos_ + 1 && src_[pos_] == '0' &&
               (src_[pos_ + 1] == 'x' || src_[pos_ + 1] == 'X');
    while (end < src_.size()) {
      char c = src_[end];
      if (is_ident_char(c) || c == '.') {
        ++end;
      } else if ((c == '+' || c == '-') && !hex && (src_[end - 1] == 'e' || src_[end - 1] == 'E')) {
        ++end;
      } else {
        break;
      }
    }
    std::string_view text = src_.substr(begin, end - begin);
    advance(end - begin);
    loc.length = static_cast<int>(text.size());
    Token t;
    t.text = text;
    t.loc = loc;
    parse_number(text, loc, t);
    tokens_.push_back(t);
    line_has_tokens_ = true;
  }

  // An Int token of magnitude `v` (`past_u64`: more than 2**64 - 1). Up to
  // 2**63 - 1 it is the value; 2**63 is INT64_MIN's magnitude, kept for a
  // unary '-' (Token::int_is_2_pow_63); more is too large.
  void set_int(std::string_view text, SourceLoc loc, bool past_u64, uint64_t v, Token& t) {
    constexpr uint64_t kTwoPow63 = uint64_t{1} << 63;
    if (past_u64 || v > kTwoPow63) fail(too_large_message(text), loc);
    t.kind = TokenKind::Int;
    t.int_is_2_pow_63 = v == kTwoPow63;
    t.int_value = t.int_is_2_pow_63 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(v);
  }

  void parse_number(std::string_view text, SourceLoc loc, Token& t) {
    auto bad = [&](std::string_view why) {
      fail(fmt::format("invalid number literal {}{}", quote_token_text(text), why), loc);
    };
    std::string clean;
    if (text.size() > 1 && text[0] == '0' &&
        std::string_view("xXoObB").find(text[1]) != std::string_view::npos) {
      int base = (text[1] == 'x' || text[1] == 'X')   ? 16
                 : (text[1] == 'o' || text[1] == 'O') ? 8
                                                      : 2;
      std::string_view digits = text.substr(2);
      if (!digits.empty() && digits[0] == '_') digits.remove_prefix(1);  // 0x_ff is legal Python
      if (digits.empty() || !strip_underscores(digits, base, clean)) bad("");
      for (char c : clean)
        if (!is_digit_of_base(c, base)) bad("");
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), v, base);
      if (ec != std::errc::result_out_of_range &&
          (ec != std::errc() || p != clean.data() + clean.size()))
        bad("");
      set_int(text, loc, ec == std::errc::result_out_of_range, v, t);
      return;
    }
    // Decimal: digits [. digits] [e [+-] digits], with at least one digit
    // in the mantissa; underscores only between digits.
    size_t i = 0;
    auto digit_run = [&]() {
      size_t s = i;
      while (i < text.size() && (is_digit(text[i]) || text[i] == '_')) ++i;
      return text.substr(s, i - s);
    };
    std::string_view int_part = digit_run();
    bool is_float = false;
    std::string_view frac_part, exp_part;
    if (i < text.size() && text[i] == '.') {
      is_float = true;
      ++i;
      frac_part = digit_run();
    }
    char exp_sign = 0;
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
      is_float = true;
      ++i;
      if (i < text.size() && (text[i] == '+' || text[i] == '-')) exp_sign = text[i++];
      exp_part = digit_run();
      if (exp_part.empty()) bad(" (the exponent has no digits)");
    }
    if (i != text.size()) {
      if (text[i] == 'j' || text[i] == 'J') bad(" (complex numbers are not supported)");
      bad("");
    }
    if (int_part.empty() && frac_part.empty()) bad("");
    std::string a, b, e;
    if ((!int_part.empty() && !strip_underscores(int_part, 10, a)) ||
        (!frac_part.empty() && !strip_underscores(frac_part, 10, b)) ||
        (!exp_part.empty() && !strip_underscores(exp_part, 10, e)))
      bad(" (misplaced '_')");
    if (!is_float) {
      if (a.size() > 1 && a[0] == '0' && a.find_first_not_of('0') != std::string::npos)
        bad(" (leading zeros are not allowed in decimal integers)");
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(a.data(), a.data() + a.size(), v);
      set_int(text, loc, ec == std::errc::result_out_of_range, v, t);
      return;
    }
    clean = (a.empty() ? "0" : a) + "." + (b.empty() ? "0" : b);
    if (!e.empty()) {
      clean += 'e';
      if (exp_sign == '-') clean += '-';
      clean += e;
    }
    double v = 0;
    auto [p, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), v);
    if (ec == std::errc::result_out_of_range) {
      // from_chars reports underflow and overflow alike; Python rounds an
      // underflow to 0 (or a subnormal), which strtod reproduces.
      errno = 0;
      v = std::strtod(clean.c_str(), nullptr);
      if (std::isinf(v))
        fail(fmt::format("float literal {} is out of range", quote_token_text(text)), loc);
    } else if (ec != std::errc() || p != clean.data() + clean.size()) {
      bad("");
    }
    t.kind = TokenKind::Float;
    t.float_value = v;
  }

  void lex_string() {
    size_t begin = pos_;
    SourceLoc loc = here();
    char quote = src_[pos_];
    bool triple = pos_ + 2 < src_.size() && src_[pos_ + 1] == quote && src_[pos_ + 2] == quote;
    size_t i = pos_ + (triple ? 3 : 1);
    bool closed = false;
    while (i < src_.size()) {
      char c = src_[i];
      if (c == '\\') {
        i += 2;
        continue;
      }
      if (!triple && (c == '\n' || c == '\r')) break;
      if (c == quote) {
        if (!triple) {
          ++i;
          closed = true;
          break;
        }
        if (i + 2 < src_.size() && src_[i + 1] == quote && src_[i + 2] == quote) {
          i += 3;
          closed = true;
          break;
        }
      }
      ++i;
    }
    if (!closed) fail("unterminated string literal", loc);
    // The caret covers the string up to the end of its first line.
    std::string_view text = src_.substr(begin, i - begin);
    size_t first_break = text.find_first_of("\r\n");
    loc.length = std::max(1, count_columns(text.substr(0, first_break)));
    // Advance line by line so that line/col stay right for a triple-quoted string.
    while (pos_ < i) {
      if (src_[pos_] == '\n' || src_[pos_] == '\r')
        consume_line_break();
      else
        advance(1);
    }
    push(TokenKind::String, begin, loc);
  }

  void lex_punctuation() {
    size_t begin = pos_;
    SourceLoc loc = here();
    std::string_view rest = src_.substr(pos_);
    // Python's assignment expression: no .tfs form takes ':' before '=', so
    // say what it is here rather than fail on its target as an unknown name.
    if (rest.starts_with(":=")) {
      loc.length = 2;
      fail("the ':=' operator (an assignment expression) is not supported; assign on a line of "
           "its own",
           loc);
    }
    for (const auto& [text, kind] : kPunctuation) {
      if (!rest.starts_with(text)) continue;
      advance(text.size());
      loc.length = static_cast<int>(text.size());
      track_bracket(kind, loc);
      push(kind, begin, loc);
      return;
    }
    unsigned char c = static_cast<unsigned char>(src_[pos_]);
    if (c >= 0x80) fail("non-ASCII character outside a comment or string", loc);
    if (c < 0x20 || c == 0x7f) fail(fmt::format("unexpected control character 0x{:02x}", c), loc);
    fail(fmt::format("unexpected character '{}'", static_cast<char>(c)), loc);
  }

  void track_bracket(TokenKind kind, SourceLoc loc) {
    if (kind == TokenKind::LParen || kind == TokenKind::LBracket) {
      bool range =
          kind == TokenKind::LBracket && !tokens_.empty() && tokens_.back().kind == TokenKind::KwIn;
      brackets_.push_back({kind == TokenKind::LParen ? '(' : '[', loc, range});
      return;
    }
    if (kind != TokenKind::RParen && kind != TokenKind::RBracket) return;
    char close = kind == TokenKind::RParen ? ')' : ']';
    if (brackets_.empty()) fail(fmt::format("unmatched '{}'", close), loc);
    const OpenBracket& open = brackets_.back();
    bool ok = (open.ch == '(' && close == ')') || (open.ch == '[' && (close == ']' || open.range));
    if (!ok)
      fail(fmt::format("closing '{}' does not match the '{}' opened at line {}, column {}", close,
                       open.ch, open.loc.line, open.loc.col),
           loc);
    brackets_.pop_back();
  }

  void finish() {
    if (!brackets_.empty()) {
      const OpenBracket& open = brackets_.back();
      fail(fmt::format("'{}' is never closed", open.ch), open.loc);
    }
    // End-of-input tokens sit just after the last real token, so an "expected
    // X, found end of file" caret lands on the last line of the program.
    SourceLoc end{1, 1, 1};
    for (auto it = tokens_.rbegin(); it != tokens_.rend(); ++it) {
      if (it->kind == TokenKind::Newline || it->kind == TokenKind::Indent ||
          it->kind == TokenKind::Dedent)
        continue;
      end = SourceLoc{it->loc.line, it->loc.col + it->loc.length, 1};
      break;
    }
    if (line_has_tokens_) push_synthetic(TokenKind::Newline, end);
    for (size_t i = 1; i < indents_.size(); ++i) push_synthetic(TokenKind::Dedent, end);
    push_synthetic(TokenKind::End, end);
  }

  std::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  bool at_line_start_ = true;
  bool line_has_tokens_ = false;
  std::vector<std::string> indents_;
  std::vector<OpenBracket> brackets_;
  std::vector<Token> tokens_;
};

}  // namespace

std::string quote_token_text(std::string_view text) {
  constexpr size_t kHead = 32, kTail = 8;
  if (text.size() <= kHead + kTail + 8) return fmt::format("'{}'", text);
  return fmt::format("'{}...{}' ({} characters)", text.substr(0, kHead),
                     text.substr(text.size() - kTail), text.size());
}

std::string too_large_message(std::string_view literal) {
  return fmt::format("integer literal {} is too large (the limit is 2**63 - 1)",
                     quote_token_text(literal));
}

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(source).run();
}

std::string describe_token(const Token& token) {
  static constexpr std::string_view kSpellings[] = {
#define TF_TOKEN_SPELLING(e, spelling) spelling,
      TILEFUSE_FOR_EACH_TOKEN(TF_TOKEN_SPELLING)
#undef TF_TOKEN_SPELLING
  };
  switch (token.kind) {
    case TokenKind::Name:
      return "name " + quote_token_text(token.text);
    case TokenKind::Int:
    case TokenKind::Float:
      return "number " + quote_token_text(token.text);
    case TokenKind::String:
      return "a string";
    case TokenKind::Keyword:
      return "keyword " + quote_token_text(token.text);
    default:
      return std::string(kSpellings[static_cast<size_t>(token.kind)]);
  }
}

std::string_view source_line(std::string_view source, int line) {
  if (line < 1) return {};
  source = skip_bom(source);
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    size_t br = source.find_first_of("\r\n", pos);
    if (br == std::string_view::npos) return {};
    pos = br + ((source[br] == '\r' && br + 1 < source.size() && source[br + 1] == '\n') ? 2 : 1);
  }
  size_t end = source.find_first_of("\r\n", pos);
  return source.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
}

}  // namespace tilefuse::frontend
