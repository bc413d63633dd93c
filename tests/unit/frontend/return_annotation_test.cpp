// Return annotations (`def f(...) -> f16[M, 64]:`) are checked against what
// `return` gives: the count, and each typed value's dtype and shape with its
// symbolic dims. A mismatch is a UserError at the returned value naming both
// types; an annotation that is not a type is an error at the annotation.
#include <gtest/gtest.h>

#include <string>

#include "frontend/frontend.h"
#include "frontend_test_util.h"

namespace tilefuse::testing {
namespace {

void expect_error(const std::string& source, int line, int col,
                  std::initializer_list<const char*> needles) {
  const UserError e = error_of(source);
  const std::string message = e.what();
  for (const char* needle : needles)
    EXPECT_NE(message.find(needle), std::string::npos)
        << "message: " << message << "\nexpected to contain: " << needle;
  EXPECT_EQ(e.loc().line, line) << message;
  EXPECT_EQ(e.loc().col, col) << message;
  const std::string rendered = format_diagnostic("test.tfs", source, e);
  const std::string header =
      "test.tfs:" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + message + "\n";
  EXPECT_EQ(rendered.substr(0, header.size()), header);
}

TEST(ReturnAnnotation, MatchingTypesParse) {
  // Fixed, symbolic, dtype aliases, 0-dim, tuples and torch.Tensor.
  const char* const kGood[] = {
      "def f(x: f16[9, 9]) -> f16[9, 9]:\n    return x\n",
      "def f(x: f16[M, 64], w: f16[64, 32]) -> f16[M, 32]:\n    return x @ w\n",
      "def f(x: f16[M, 64]) -> torch.float16[M, 64,]:\n    return x\n",
      "def f(x: f32[4]) -> f32[]:\n    return x[0]\n",
      "def f(x: f32[4]) -> f64[4]:\n    return x.double()\n",
      "def f(x: f32[4]) -> tuple[f32[4], bool[4]]:\n    return x, x > 0\n",
      "def f(x: f32[4]) -> Tuple[f32[4], torch.Tensor]:\n    return (x, x * 2)\n",
      "def f(x: f32[4]) -> torch.Tensor:\n    return x\n",
      "def f(x: f32[T, 4], i: i64[M] in [0, T)) -> f32[M, 4]:\n    return x[i]\n",
      "def f(x: f32[4]) -> tuple[torch.Tensor, ...]:\n    return x, x, x\n",
      "def f(x: f32[4]) -> tuple[f32[4], ...]:\n    return x, -x\n",
  };
  for (const char* src : kGood) {
    try {
      Program p = parse(src);
      EXPECT_FALSE(p.graph.outputs().empty()) << src;
    } catch (const UserError& e) {
      ADD_FAILURE() << src << "\n" << e.what();
    }
  }
}

TEST(ReturnAnnotation, AnnotationDoesNotChangeTheGraph) {
  const Program with = parse(
      "def f(x: f16[M, 64], w: f16[64, 32]) -> f16[M, 32]:\n"
      "    return x @ w\n");
  const Program without = parse("def f(x: f16[M, 64], w: f16[64, 32]):\n    return x @ w\n");
  EXPECT_EQ(with.graph.to_string(), without.graph.to_string());
}

TEST(ReturnAnnotation, WrongShapeIsAnErrorAtTheReturnedValue) {
  // The tester's report: f16[4, 4] returned, f16[9, 9] declared.
  expect_error("def f(x: f16[4, 4]) -> f16[9, 9]:\n    return x + 1\n", 2, 12,
               {"the returned value is f16[4, 4]",
                "the return annotation (line 1, column 24) says f16[9, 9]"});
}

TEST(ReturnAnnotation, WrongDtypeIsAnError) {
  expect_error("def f(x: f16[9, 9]) -> f32[9, 9]:\n    return x\n", 2, 12,
               {"is f16[9, 9]", "says f32[9, 9]"});
}

TEST(ReturnAnnotation, WrongRankIsAnError) {
  expect_error("def f(x: f16[9, 9]) -> f16[81]:\n    return x\n", 2, 12,
               {"is f16[9, 9]", "says f16[81]"});
}

TEST(ReturnAnnotation, SymbolicDimsMustBeTheSameSymbol) {
  // M where N is declared, and a fixed size where a symbol is returned.
  expect_error("def f(x: f16[M, 4], y: f16[N, 4]) -> f16[N, 4]:\n    return x\n", 2, 12,
               {"is f16[M, 4]", "says f16[N, 4]"});
  expect_error("def f(x: f16[M, 4]) -> f16[1234, 4]:\n    return x\n", 2, 12,
               {"is f16[M, 4]", "says f16[1234, 4]"});
  expect_error("def f(x: f16[4, 4]) -> f16[M, 4]:\n    return x\n", 1, 28,
               {"'M' in the return annotation is not a symbolic dim"});
}

TEST(ReturnAnnotation, SymbolicCheckHoldsWithABinding) {
  // Bound to M = 9 the output is still `M`, not the number 9: the same
  // program is an error whatever the binding.
  const SymbolValues values{{"M", 9}};
  const std::string src = "def f(x: f16[M, 9]) -> f16[9, 9]:\n    return x\n";
  EXPECT_THROW(parse_program(src, "test.tfs", &values), UserError);
  EXPECT_NO_THROW(
      parse_program("def f(x: f16[M, 9]) -> f16[M, 9]:\n    return x\n", "test.tfs", &values));
}

TEST(ReturnAnnotation, CountMustMatch) {
  expect_error("def f(x: f32[4]) -> f32[4]:\n    return x, x\n", 2, 5,
               {"'return' gives 2 values but the return annotation (line 1, column 21) "
                "declares 1"});
  expect_error("def f(x: f32[4]) -> tuple[f32[4], f32[4]]:\n    return x\n", 2, 5,
               {"'return' gives 1 value but", "declares 2"});
  expect_error("def f(x: f32[4]) -> torch.Tensor:\n    return x, x\n", 2, 5,
               {"gives 2 values", "declares 1 (several values are annotated tuple[...])"});
}

TEST(ReturnAnnotation, TupleElementsAreCheckedInOrder) {
  expect_error("def f(x: f32[4]) -> tuple[f32[4], f32[4]]:\n    return x, x > 0\n", 2, 15,
               {"returned value 2 of 2 is bool[4]", "(line 1, column 35) says f32[4]"});
}

TEST(ReturnAnnotation, VariadicTupleChecksEveryValue) {
  expect_error("def f(x: f32[4]) -> tuple[f32[4], ...]:\n    return x, x, x.half()\n", 2, 18,
               {"returned value 3 of 3 is f16[4]", "(line 1, column 27) says f32[4]"});
  expect_error("def f(x: f32[4]) -> tuple[f32[4], ..., f32[4]]:\n    return x\n", 1, 38,
               {"expected ',' or ']' in 'tuple[...]'"});
}

TEST(ReturnAnnotation, UnsupportedAnnotationsAreRefused) {
  expect_error("def f(x: f32[4]) -> None:\n    return x\n", 1, 21,
               {"unsupported return annotation", "such as f16[M, 64]"});
  expect_error("def f(x: f32[4]) -> list[f32[4]]:\n    return x\n", 1, 21,
               {"unsupported return annotation (found name 'list')"});
  expect_error("def f(x: f32[4]) -> 'f32[4]':\n    return x\n", 1, 21,
               {"unsupported return annotation (found a string)"});
  expect_error("def f(x: f32[4]) -> f17[4]:\n    return x\n", 1, 21,
               {"unknown dtype 'f17' in the return annotation"});
  expect_error("def f(x: f32[4]) -> f32:\n    return x\n", 1, 24,
               {"expected '[' and the shape of the returned type"});
  expect_error("def f(x: f32[4]) -> torch.Tensor[4]:\n    return x\n", 1, 33,
               {"'torch.Tensor' takes no shape"});
}

}  // namespace
}  // namespace tilefuse::testing
