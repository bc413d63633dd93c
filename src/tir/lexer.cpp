#include "tir/lexer.h"

#include <cctype>

namespace tilefuse::tir {

void throw_at(const SourceLoc& loc, const std::string& message) {
  throw UserError(std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": " + message, loc);
}

namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c));
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      skip_space();
      Token t;
      t.loc = {line_, col_, 1};
      if (pos_ >= text_.size()) {
        out.push_back(t);
        return out;
      }
      size_t start = pos_;
      char c = text_[pos_];
      if (ident_start(c)) {
        t.kind = TokenKind::Ident;
        while (pos_ < text_.size() && ident_char(text_[pos_])) advance();
        t.text = std::string(text_.substr(start, pos_ - start));
      } else if (digit(c)) {
        t.kind = TokenKind::Number;
        number();
        t.text = std::string(text_.substr(start, pos_ - start));
      } else if (c == '"') {
        t.kind = TokenKind::String;
        t.text = string(t.loc);
      } else {
        t.kind = TokenKind::Punct;
        t.text = punct(t.loc);
      }
      t.loc.length = std::max(1, col_ - t.loc.col);
      out.push_back(std::move(t));
    }
  }

 private:
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        advance();
      } else {
        return;
      }
    }
  }
  void digits() {
    while (digit(peek())) advance();
  }
  void number() {
    digits();
    if (peek() == '.' && digit(peek(1))) {
      advance();
      digits();
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && digit(peek(2))))) {
      advance();
      if (peek() == '+' || peek() == '-') advance();
      digits();
    }
    if (peek() == '_' && ident_char(peek(1))) {
      while (ident_char(peek())) advance();
    }
  }
  std::string string(const SourceLoc& loc) {
    advance();  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size() || peek() == '\n') throw_at(loc, "unterminated string");
      char c = peek();
      advance();
      if (c == '"') return out;
      if (c == '\\') {
        char e = peek();
        if (pos_ >= text_.size()) throw_at(loc, "unterminated string");
        advance();
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case '"':
          case '\\':
            out += e;
            break;
          default:
            throw_at({line_, col_ - 2, 2}, std::string("unknown escape \\") + e);
        }
      } else {
        out += c;
      }
    }
  }
  std::string punct(const SourceLoc& loc) {
    static const char* const two[] = {"==", "!=", "<=", ">=", "&&", "||"};
    for (const char* p : two) {
      if (peek() == p[0] && peek(1) == p[1]) {
        advance();
        advance();
        return p;
      }
    }
    char c = peek();
    if (std::string_view("()[]{},:=<>!+-*/%").find(c) == std::string_view::npos) {
      std::string shown = std::isprint(static_cast<unsigned char>(c))
                              ? std::string("'") + c + "'"
                              : "byte " + std::to_string(static_cast<unsigned char>(c));
      throw_at(loc, "unexpected character " + shown);
    }
    advance();
    return std::string(1, c);
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view text) {
  return Lexer(text).run();
}

}  // namespace tilefuse::tir
