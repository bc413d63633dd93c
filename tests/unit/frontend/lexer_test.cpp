// The token stream: Python's NEWLINE / INDENT / DEDENT rules, numbers,
// strings, columns.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "frontend/lexer.h"

namespace tilefuse::frontend {
namespace {

using K = TokenKind;

std::vector<K> kinds(std::string_view src) {
  std::vector<K> out;
  for (const Token& t : tokenize(src)) out.push_back(t.kind);
  return out;
}

TEST(Lexer, IndentAndDedent) {
  EXPECT_EQ(kinds("def f():\n    a\n    b\nc\n"),
            (std::vector<K>{K::KwDef, K::Name, K::LParen, K::RParen, K::Colon, K::Newline,
                            K::Indent, K::Name, K::Newline, K::Name, K::Newline, K::Dedent, K::Name,
                            K::Newline, K::End}));
  // Two levels closed by one line; DEDENTs at end of input.
  EXPECT_EQ(kinds("a\n  b\n    c\nd\n  e"),
            (std::vector<K>{K::Name, K::Newline, K::Indent, K::Name, K::Newline, K::Indent, K::Name,
                            K::Newline, K::Dedent, K::Dedent, K::Name, K::Newline, K::Indent,
                            K::Name, K::Newline, K::Dedent, K::End}));
}

TEST(Lexer, BlankAndCommentLinesDoNotCount) {
  EXPECT_EQ(
      kinds("a\n\n   # comment at another indent\n\t\n  b  # trailing\n"),
      (std::vector<K>{K::Name, K::Newline, K::Indent, K::Name, K::Newline, K::Dedent, K::End}));
}

TEST(Lexer, BracketsJoinLines) {
  EXPECT_EQ(kinds("a = (b,\n        c)\n  \nd = [1,\n2]\n"),
            (std::vector<K>{K::Name, K::Assign, K::LParen, K::Name, K::Comma, K::Name, K::RParen,
                            K::Newline, K::Name, K::Assign, K::LBracket, K::Int, K::Comma, K::Int,
                            K::RBracket, K::Newline, K::End}));
  // A backslash joins too, and the next line's indentation means nothing.
  EXPECT_EQ(kinds("a = b + \\\n          c\n"),
            (std::vector<K>{K::Name, K::Assign, K::Name, K::Plus, K::Name, K::Newline, K::End}));
}

TEST(Lexer, RangeBracketClosesWithParen) {
  EXPECT_EQ(kinds("i in [0, 4)"), (std::vector<K>{K::Name, K::KwIn, K::LBracket, K::Int, K::Comma,
                                                  K::Int, K::RParen, K::Newline, K::End}));
  EXPECT_THROW(tokenize("x[0, 4)"), UserError);
}

TEST(Lexer, Numbers) {
  auto first = [](std::string_view s) { return tokenize(s)[0]; };
  EXPECT_EQ(first("42").int_value, 42);
  EXPECT_EQ(first("1_000_000").int_value, 1000000);
  EXPECT_EQ(first("0").int_value, 0);
  EXPECT_EQ(first("000").int_value, 0);
  EXPECT_EQ(first("0xff").int_value, 255);
  EXPECT_EQ(first("0o17").int_value, 15);
  EXPECT_EQ(first("0b101").int_value, 5);
  EXPECT_EQ(first("9223372036854775807").int_value, INT64_MAX);
  EXPECT_EQ(first("1.5").kind, K::Float);
  EXPECT_EQ(first("1.5").float_value, 1.5);
  EXPECT_EQ(first("1.").float_value, 1.0);
  EXPECT_EQ(first(".25").float_value, 0.25);
  EXPECT_EQ(first("1e-3").float_value, 1e-3);
  EXPECT_EQ(first("2E+2").float_value, 200.0);
  EXPECT_EQ(first("1_0.5e1_0").float_value, 10.5e10);
  EXPECT_EQ(first("1e-400").float_value, 0.0);  // underflows to zero, as in Python
  for (const char* bad :
       {"1e", "1e+", "12abc", "0x", "0b2", "1__2", "1_", "01", "1.2.3", "1ee3",
        "9223372036854775809", "18446744073709551616", "0x8000000000000001", "1e400", "5j"})
    EXPECT_THROW(tokenize(bad), UserError) << bad;
  // 2**63 is a token (INT64_MIN's magnitude: the parser takes it after a
  // unary '-' only); 2**63 - 1 is an ordinary integer.
  for (const char* two_pow_63 : {"9223372036854775808", "0x8000000000000000",
                                 "0o1000000000000000000000", "9_223_372_036_854_775_808"}) {
    const Token t = first(two_pow_63);
    EXPECT_EQ(t.kind, K::Int) << two_pow_63;
    EXPECT_TRUE(t.int_is_2_pow_63) << two_pow_63;
    EXPECT_EQ(t.int_value, INT64_MIN) << two_pow_63;
  }
  EXPECT_FALSE(first("9223372036854775807").int_is_2_pow_63);
  try {
    tokenize("x * 9223372036854775809");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "integer literal '9223372036854775809' is too large (the limit is 2**63 - 1)");
    EXPECT_EQ(e.loc().col, 5);
  }
}

// A long literal is quoted by its ends and its length, not in full.
TEST(Lexer, LongLiteralsAreQuotedByTheirEnds) {
  const std::string nines(5000, '9');
  for (const auto& [source, message] : std::vector<std::pair<std::string, std::string>>{
           {"x + 1e" + nines,
            "float literal '1e999999999999999999999999999999...99999999' (5002 characters) is out "
            "of range"},
           {"x + " + nines,
            "integer literal '99999999999999999999999999999999...99999999' (5000 characters) is "
            "too large (the limit is 2**63 - 1)"},
       }) {
    try {
      tokenize(source);
      ADD_FAILURE() << "expected a UserError";
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), message);
      EXPECT_EQ(e.loc().col, 5);
    }
  }
  EXPECT_EQ(quote_token_text("123"), "'123'");
  EXPECT_EQ(quote_token_text(std::string(48, '7')), "'" + std::string(48, '7') + "'");
}

// A UTF-8 byte order mark before the program is skipped: columns count from
// after it, as an editor shows them. Anywhere else it is a non-ASCII character.
TEST(Lexer, LeadingByteOrderMarkIsSkipped) {
  const std::string bom = "\xEF\xBB\xBF";
  const std::string src = bom + "def f\n  x\n";
  std::vector<Token> t = tokenize(src);
  ASSERT_EQ(t[0].kind, K::KwDef);
  EXPECT_EQ(t[0].text, "def");
  EXPECT_EQ(t[0].loc.line, 1);
  EXPECT_EQ(t[0].loc.col, 1);
  EXPECT_EQ(t[1].loc.col, 5);
  EXPECT_EQ(kinds(src), kinds("def f\n  x\n"));
  EXPECT_EQ(source_line(bom + "one\ntwo", 1), "one");
  EXPECT_EQ(source_line(bom + "one\ntwo", 2), "two");
  EXPECT_EQ(tokenize(bom).back().kind, K::End);
  EXPECT_THROW(tokenize("a " + bom), UserError);
  EXPECT_THROW(tokenize("a\n" + bom + "b"), UserError);
  EXPECT_THROW(tokenize(bom + bom + "a"), UserError);  // only one is skipped
}

TEST(Lexer, OperatorsLongestMatch) {
  EXPECT_EQ(kinds("a**b//c->d...e<=f>=g==h!=i+=j@=k"),
            (std::vector<K>{K::Name, K::StarStar, K::Name, K::SlashSlash, K::Name, K::Arrow,
                            K::Name, K::Ellipsis, K::Name, K::LessEq,     K::Name, K::GreaterEq,
                            K::Name, K::EqEq,     K::Name, K::NotEq,      K::Name, K::PlusAssign,
                            K::Name, K::AtAssign, K::Name, K::Newline,    K::End}));
}

TEST(Lexer, KeywordsAndReservedWords) {
  EXPECT_EQ(
      kinds("def return import from as in True False None if lambda xif"),
      (std::vector<K>{K::KwDef, K::KwReturn, K::KwImport, K::KwFrom, K::KwAs, K::KwIn, K::KwTrue,
                      K::KwFalse, K::KwNone, K::Keyword, K::Keyword, K::Name, K::Newline, K::End}));
}

TEST(Lexer, Strings) {
  std::vector<Token> t = tokenize("'a' \"b\\\"c\" '''x\ny''' z");
  ASSERT_EQ(t[0].kind, K::String);
  EXPECT_EQ(t[0].text, "'a'");
  EXPECT_EQ(t[1].text, "\"b\\\"c\"");
  EXPECT_EQ(t[2].text, "'''x\ny'''");
  EXPECT_EQ(t[3].kind, K::Name);  // after the triple-quoted string, on line 2
  EXPECT_EQ(t[3].loc.line, 2);
  EXPECT_EQ(t[3].loc.col, 6);
  EXPECT_THROW(tokenize("'abc\n'"), UserError);
  EXPECT_THROW(tokenize("'''abc"), UserError);
}

TEST(Lexer, LocationsAndLengths) {
  std::vector<Token> t = tokenize("ab = 12.5  # c\n\tfoo(x)\n");
  EXPECT_EQ(t[0].loc.line, 1);
  EXPECT_EQ(t[0].loc.col, 1);
  EXPECT_EQ(t[0].loc.length, 2);
  EXPECT_EQ(t[2].loc.col, 6);
  EXPECT_EQ(t[2].loc.length, 4);
  // NEWLINE sits at the end of its line; INDENT spans the indentation.
  EXPECT_EQ(t[3].kind, K::Newline);
  EXPECT_EQ(t[3].loc.col, 15);
  EXPECT_EQ(t[4].kind, K::Indent);
  EXPECT_EQ(t[4].loc.line, 2);
  EXPECT_EQ(t[5].text, "foo");
  EXPECT_EQ(t[5].loc.col, 2);
  // End of input is reported just after the last token.
  EXPECT_EQ(t.back().kind, K::End);
  EXPECT_EQ(t.back().loc.line, 2);
  EXPECT_EQ(t.back().loc.col, 8);
}

TEST(Lexer, DescribeToken) {
  std::vector<Token> t = tokenize("x 3 'a' () if\n  y");
  EXPECT_EQ(describe_token(t[0]), "name 'x'");
  EXPECT_EQ(describe_token(t[1]), "number '3'");
  EXPECT_EQ(describe_token(t[2]), "a string");
  EXPECT_EQ(describe_token(t[3]), "'('");
  EXPECT_EQ(describe_token(t[4]), "')'");
  EXPECT_EQ(describe_token(t[5]), "keyword 'if'");
  EXPECT_EQ(describe_token(t[6]), "end of line");
  EXPECT_EQ(describe_token(t[7]), "indentation");
  EXPECT_EQ(describe_token(t.back()), "end of file");
}

TEST(Lexer, SourceLine) {
  std::string_view src = "one\r\ntwo\rthree\nfour";
  EXPECT_EQ(source_line(src, 1), "one");
  EXPECT_EQ(source_line(src, 2), "two");
  EXPECT_EQ(source_line(src, 3), "three");
  EXPECT_EQ(source_line(src, 4), "four");
  EXPECT_EQ(source_line(src, 5), "");
  EXPECT_EQ(source_line(src, 0), "");
  // The lexer uses the same line breaks.
  std::vector<Token> t = tokenize("a\r\nb\rc\n");
  EXPECT_EQ(t[2].loc.line, 2);
  EXPECT_EQ(t[4].loc.line, 3);
}

}  // namespace
}  // namespace tilefuse::frontend
