// Tokens of the Tile IR text form (internal to parser.cpp and its tests).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace tilefuse::tir {

enum class TokenKind : uint8_t {
  Ident,   // [A-Za-z_][A-Za-z0-9_]*
  Number,  // digits [. digits] [e[+-]digits] [_suffix]; text holds all of it
  String,  // "..." with \" \\ \n \t escapes; text holds the unescaped value
  Punct,   // ( ) [ ] { } , : = == != < <= > >= && || ! + - * / % and <>
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  SourceLoc loc;
};

// Splits `text` into tokens, skipping whitespace and `#` comments. The last
// token is End. Throws UserError ("line:col: ...") on a character that
// starts no token or an unterminated string.
std::vector<Token> tokenize(std::string_view text);

// Throws UserError with "line:col: " prefixed to message.
[[noreturn]] void throw_at(const SourceLoc& loc, const std::string& message);

}  // namespace tilefuse::tir
