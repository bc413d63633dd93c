// Tokens of the .tfs language and the lexer that produces them.
//
// The token stream follows Python's rules: NEWLINE ends a logical line,
// INDENT / DEDENT bracket an indented block, newlines inside (), [] are not
// tokens, `\` at the end of a line joins it with the next, blank lines and
// `#` comments produce nothing. Columns are counted in code points (1-based)
// so a caret lines up under UTF-8 text in comments and strings.
//
// Every lexical problem (a bad character or number, an unterminated string or
// bracket, inconsistent indentation) throws UserError at the offending text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace tilefuse::frontend {

// X(enumerator, spelling used in diagnostics)
#define TILEFUSE_FOR_EACH_TOKEN(X)                                            \
  X(Name, "name")                                                             \
  X(Int, "integer")                                                           \
  X(Float, "number")                                                          \
  X(String, "string")                                                         \
  X(Newline, "end of line")                                                   \
  X(Indent, "indentation")                                                    \
  X(Dedent, "end of the indented block")                                      \
  X(End, "end of file")                                                       \
  /* keywords the language uses */                                            \
  X(KwDef, "'def'")                                                           \
  X(KwReturn, "'return'")                                                     \
  X(KwImport, "'import'")                                                     \
  X(KwFrom, "'from'")                                                         \
  X(KwAs, "'as'")                                                             \
  X(KwIn, "'in'")                                                             \
  X(KwTrue, "'True'")                                                         \
  X(KwFalse, "'False'")                                                       \
  X(KwNone, "'None'")                                                         \
  /* any other Python keyword: reserved, rejected with a clear message */     \
  X(Keyword, "keyword")                                                       \
  X(LParen, "'('")                                                            \
  X(RParen, "')'")                                                            \
  X(LBracket, "'['")                                                          \
  X(RBracket, "']'")                                                          \
  X(Comma, "','")                                                             \
  X(Colon, "':'")                                                             \
  X(Semicolon, "';'")                                                         \
  X(Dot, "'.'")                                                               \
  X(Ellipsis, "'...'")                                                        \
  X(Arrow, "'->'")                                                            \
  X(Assign, "'='")                                                            \
  X(PlusAssign, "'+='")                                                       \
  X(MinusAssign, "'-='")                                                      \
  X(StarAssign, "'*='")                                                       \
  X(SlashAssign, "'/='")                                                      \
  X(AtAssign, "'@='")                                                         \
  X(EqEq, "'=='")                                                             \
  X(NotEq, "'!='")                                                            \
  X(Less, "'<'")                                                              \
  X(LessEq, "'<='")                                                           \
  X(Greater, "'>'")                                                           \
  X(GreaterEq, "'>='")                                                        \
  X(Plus, "'+'")                                                              \
  X(Minus, "'-'")                                                             \
  X(Star, "'*'")                                                              \
  X(Slash, "'/'")                                                             \
  X(At, "'@'")                                                                \
  X(Tilde, "'~'")                                                             \
  /* Python operators the language does not support (a clear error, not a bad \
     character) */                                                            \
  X(StarStar, "'**'")                                                         \
  X(SlashSlash, "'//'")                                                       \
  X(Percent, "'%'")                                                           \
  X(Amp, "'&'")                                                               \
  X(Pipe, "'|'")                                                              \
  X(Caret, "'^'")                                                             \
  X(LessLess, "'<<'")                                                         \
  X(GreaterGreater, "'>>'")

enum class TokenKind : uint8_t {
#define TF_TOKEN_ENUM(e, spelling) e,
  TILEFUSE_FOR_EACH_TOKEN(TF_TOKEN_ENUM)
#undef TF_TOKEN_ENUM
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string_view text;  // the exact source text (empty for NEWLINE/INDENT/DEDENT/End)
  SourceLoc loc;
  int64_t int_value = 0;   // Int
  // Int: the literal is 2**63, one past INT64_MAX (int_value is then
  // INT64_MIN). Only its negation is an int64 (`-9223372036854775808`); the
  // parser takes it after a unary '-' and reports it as too large elsewhere.
  bool int_is_2_pow_63 = false;
  double float_value = 0;  // Float
};

// Splits `source` into tokens; the last one is always End. Throws UserError.
// A leading UTF-8 byte order mark (EF BB BF) is skipped: line 1's columns
// count from after it.
std::vector<Token> tokenize(std::string_view source);

// A token's text as messages quote it: 'text', or past 48 characters its
// first 32 and last 8 ('1e99999...99999999' (5002 characters)), so a
// 5000-digit literal does not fill the message.
std::string quote_token_text(std::string_view text);

// The error for an integer literal past 2**63 - 1 (`literal` as written):
// the lexer's for one past 2**63, the parser's for 2**63 anywhere but after
// a unary '-'.
std::string too_large_message(std::string_view literal);

// How diagnostics name a token: "'('", "name 'x'", "integer '12'", "end of line".
std::string describe_token(const Token& token);

// Line `line` (1-based) of `source` without its line break; empty when out of
// range. Uses the lexer's line-break rule (\n, \r\n and a lone \r); line 1
// starts after a leading UTF-8 byte order mark, as the lexer's columns do.
std::string_view source_line(std::string_view source, int line);

}  // namespace tilefuse::frontend
