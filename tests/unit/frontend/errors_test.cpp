// Malformed programs: every error kind is a UserError with one clear message
// at the exact line:col of the offending token.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "frontend/frontend.h"
#include "frontend/parser.h"
#include "frontend_test_util.h"

namespace tilefuse::testing {
namespace {

struct BadProgram {
  const char* name;
  std::string source;
  int line;
  int col;
  const char* needle;             // a substring of the message
  const char* needle2 = nullptr;  // another one (both shapes, both dtypes)
};

// `def f(<params>):` then `    return <e>` (the expression starts at col 12).
std::string ret(const std::string& params, const std::string& e) {
  return "def f(" + params + "):\n    return " + e + "\n";
}

const std::string X = "x: f32[4, 4]";

using frontend::kMaxNesting;

// x[x[x[...x...]]], `depth` subscripts deep.
std::string nested_subscripts(int depth) {
  std::string s = "x";
  for (int i = 0; i < depth; ++i) s = "x[" + s + "]";
  return s;
}

// "1, " n times: a long size list.
std::string ones(int n) {
  std::string l;
  for (int i = 0; i < n; ++i) l += "1, ";
  return l;
}

const BadProgram kBadPrograms[] = {
    // --- lexical ---------------------------------------------------------------
    {"bad_character", ret(X, "x $ x"), 2, 14, "unexpected character '$'"},
    // A UTF-16 file (either byte order) is named as such, not as a
    // "non-ASCII character" at 1:1.
    {"utf16_le_bom",
     std::string("\xFF\xFE"
                 "d\0e\0f\0 \0f\0(\0)\0",
                 16),
     1, 1, "the file looks UTF-16 encoded (it starts with the byte order mark FF FE)",
     "a program must be UTF-8"},
    {"utf16_be_bom",
     std::string("\xFE\xFF"
                 "\0d\0e\0f",
                 8),
     1, 1, "looks UTF-16 encoded (it starts with the byte order mark FE FF)"},
    // ... and so is one without a byte order mark (a NUL beside every ASCII
    // character), not a "control character 0x00".
    {"utf16_le_no_bom", std::string("d\0e\0f\0 \0f\0(\0)\0", 14), 1, 1,
     "the file looks UTF-16LE encoded (no byte order mark", "iconv -f UTF-16LE -t UTF-8"},
    {"utf16_be_no_bom", std::string("\0d\0e\0f\0 \0f", 10), 1, 1,
     "the file looks UTF-16BE encoded (no byte order mark"},
    {"bad_character_in_header", "def f(x: f32[4])!:\n    return x\n", 1, 17,
     "unexpected character '!'"},
    {"control_character", ret(X, "x\x01"), 2, 13, "control character 0x01"},
    {"non_ascii_operator", ret(X, "x \xc3\x97 2"), 2, 14, "non-ASCII character"},
    // Malformed UTF-8 is an error wherever it is, comments and strings
    // included (they were read through), at the byte's line and column.
    {"latin1_in_comment", "def f(x: f32[4]):  # caf\xe9\n    return x\n", 1, 25,
     "malformed UTF-8 (byte 0xE9)", "a program must be UTF-8"},
    {"stray_continuation_in_string", ret(X, "x + '\xc3\xa9\xa9'"), 2, 18,
     "malformed UTF-8 (byte 0xA9)"},
    {"overlong_slash", ret(X, "x # \xc0\xaf"), 2, 16, "malformed UTF-8 (byte 0xC0)"},
    {"surrogate", ret(X, "x # \xed\xa0\x80"), 2, 16, "malformed UTF-8 (byte 0xED)"},
    {"past_u10ffff", ret(X, "x # \xf4\x90\x80\x80"), 2, 16, "malformed UTF-8 (byte 0xF4)"},
    {"cut_short_at_end", "def f(x: f32[4]):\r\n    return x # \xe2\x82", 2, 16,
     "malformed UTF-8 (byte 0xE2)"},
    // Columns count code points: the 'é' in the string is one column.
    {"column_after_utf8", ret(X, "x + '\xc3\xa9' $"), 2, 20, "unexpected character '$'"},
    {"exponent_without_digits", ret(X, "x * 1e"), 2, 16, "invalid number literal '1e'"},
    {"number_with_letters", ret(X, "x * 12abc"), 2, 16, "invalid number literal '12abc'"},
    {"leading_zeros", ret(X, "x * 007"), 2, 16, "leading zeros"},
    {"misplaced_underscore", ret(X, "x * 1__0"), 2, 16, "misplaced '_'"},
    {"integer_too_large", ret(X, "x * 99999999999999999999"), 2, 16, "is too large"},
    {"float_out_of_range", ret(X, "x * 1e999"), 2, 16, "out of range"},
    {"complex_literal", ret(X, "x * 3j"), 2, 16, "complex numbers are not supported"},
    {"bad_hex_literal", ret(X, "x * 0xZ"), 2, 16, "invalid number literal '0xZ'"},
    {"unterminated_string", ret(X, "x + 'abc"), 2, 16, "unterminated string literal"},
    {"unclosed_paren", "def f(x: f32[4]):\n    return (x + 1\n", 2, 12, "'(' is never closed"},
    {"unclosed_parameter_list", "def f(x: f32[4]:\n    return x\n", 1, 6, "'(' is never closed"},
    {"unmatched_close", ret(X, "x)"), 2, 13, "unmatched ')'"},
    {"mismatched_close", ret(X, "(x]"), 2, 14,
     "closing ']' does not match the '(' opened at line 2, column 12"},
    {"inconsistent_dedent", "def f(x: f32[4]):\n    y = x\n  return y\n", 3, 1,
     "inconsistent indentation"},
    {"tabs_and_spaces_in_one_indent", "def f(x: f32[4]):\n \treturn x\n", 2, 1,
     "mixes tabs and spaces"},
    {"tab_block_under_space_block", "def f(x: f32[4]):\n    y = x\n\treturn y\n", 3, 1,
     "mixes tabs and spaces"},
    {"stray_backslash", ret(X, "x \\ 2"), 2, 14, "unexpected character '\\'"},
    {"backslash_at_end_of_file", "def f(x: f32[4]):\n    return x \\", 2, 14,
     "end of file after a line continuation"},

    // --- indentation and structure ---------------------------------------------
    {"unexpected_indent", "def f(x: f32[4]):\n    y = x\n        return y\n", 3, 1,
     "unexpected indentation"},
    {"indented_def", "  def f(x: f32[4]):\n    return x\n", 1, 1, "unexpected indentation"},
    {"missing_indented_block", "def f(x: f32[4]):\nreturn x\n", 2, 1,
     "expected an indented block after 'def f(...):'"},
    {"missing_colon", "def f(x: f32[4])\n    return x\n", 1, 17,
     "expected ':' after the parameter list, found end of line"},
    {"no_def", "x = 1\n", 1, 1, "expected 'def' (a program is one function), found name 'x'"},
    {"empty_program", "", 1, 1, "found end of file"},
    {"only_comments", "# nothing here\n\n", 1, 1, "expected 'def'"},
    {"second_def", "def f(x: f32[2]):\n    return x\ndef g(y: f32[2]):\n    return y\n", 3, 1,
     "exactly one function"},
    {"nested_def", "def f(x: f32[2]):\n    def g(y):\n        return y\n", 2, 5,
     "nested functions are not supported"},
    {"code_after_function", "def f(x: f32[2]):\n    return x\nx = 1\n", 3, 1,
     "expected the end of the program after the function"},
    {"missing_return", "def f(x: f32[2]):\n    y = x\n", 1, 5,
     "function 'f' has no return statement"},
    {"code_after_return", "def f(x: f32[2]):\n    return x\n    y = x\n", 3, 5,
     "code after 'return' is unreachable"},
    {"code_after_return_same_line", "def f(x: f32[2]): return x; y = x\n", 1, 29,
     "code after 'return' is unreachable"},
    {"bare_return", "def f(x: f32[2]):\n    return\n", 2, 5, "'return' needs at least one value"},
    {"import_numpy", "import numpy as np\ndef f(x: f32[2]):\n    return x\n", 1, 8,
     "only torch modules can be imported, found 'numpy'"},
    {"import_in_body", "def f(x: f32[2]):\n    import torch\n    return x\n", 2, 5,
     "imports must come before the 'def'"},

    // --- parameters --------------------------------------------------------------
    {"parameter_without_type", "def f(x, y: f32[2]):\n    return y\n", 1, 8,
     "expected ':' and a type such as f16[128, 64] after parameter 'x', found ','"},
    {"parameter_without_shape", "def f(x: f32):\n    return x\n", 1, 13,
     "expected '[' and the shape of parameter 'x', found ')'"},
    {"dim_not_int_or_name", "def f(x: f32[1.5]):\n    return x\n", 1, 14,
     "expected a dimension size (an integer, or a name for a symbolic dim), found"},
    // --- symbolic dims ---------------------------------------------------------------
    {"symbol_named_like_param", "def f(T: f32[T]):\n    return T\n", 1, 14,
     "the symbolic dim 'T' has the name of a parameter"},
    {"two_symbols_broadcast", "def f(x: f32[T], y: f32[S]):\n    return x + y\n", 2, 14,
     "two different symbolic dims `T` and `S`"},
    {"symbol_broadcast_fixed", "def f(x: f32[T, 4], y: f32[3, 4]):\n    return x + y\n", 2, 14,
     "the symbolic dim `T` against the fixed size 3"},
    {"symbol_k_mismatch", "def f(a: f32[4, K], b: f32[J, 4]):\n    return a @ b\n", 2, 14,
     "(`K` vs `J`; the reduction dims must be the same fixed size or the same symbol)"},
    {"symbol_k_vs_fixed", "def f(a: f32[4, K], b: f32[8, 4]):\n    return a @ b\n", 2, 14,
     "(`K` vs 8;"},
    {"symbol_sliced", "def f(x: f32[T, 4]):\n    return x[1:]\n", 2, 14,
     "slicing along the symbolic dim `T` of f32[T, 4] is not supported"},
    {"symbol_selected", "def f(x: f32[T, 4]):\n    return x[0]\n", 2, 14,
     "selecting along the symbolic dim `T` of f32[T, 4]"},
    {"symbol_as_a_value", "def f(x: f32[T, 4]):\n    return x.expand(2, T, 4)\n", 2, 24,
     "'T' is a symbolic dim of the signature, not a value (in expand(), -1 keeps a dim's size)"},

    {"symbol_expanded_to_number", "def f(x: f32[T, 1]):\n    return x.expand(5, 4)\n", 2, 14,
     "dimension 0 is the symbolic dim `T`; keep it with -1"},
    {"range_symbol_unknown", "def f(x: f32[T], i: i64[4] in [0, U)):\n    return x[i]\n", 1, 35,
     "'U' in the range of 'i' is not a symbolic dim of a parameter's shape"},
    {"negative_dim", "def f(x: f32[-3, 4]):\n    return x\n", 1, 14,
     "dimension sizes must be non-negative, found -3"},
    {"dims_overflow", "def f(x: f32[4294967296, 4294967296]):\n    return x\n", 1, 26,
     "too many elements"},
    {"parameter_too_large", "def f(x: f32[2000000, 2000000]):\n    return x\n", 1, 7, "too large",
     "[2000000, 2000000]"},
    {"duplicate_parameter", "def f(x: f32[2], x: f32[2]):\n    return x\n", 1, 18,
     "duplicate parameter 'x'"},
    {"parameter_default", "def f(x: f32[2] = 0):\n    return x\n", 1, 17,
     "default values for parameters are not supported"},
    {"unknown_dtype", "def f(x: f17[4]):\n    return x\n", 1, 10,
     "unknown dtype 'f17'; did you mean 'f16'?"},
    {"unknown_torch_dtype", "def f(x: torch.float17[4]):\n    return x\n", 1, 10,
     "unknown dtype 'torch.float17'"},
    {"tensor_annotation", "def f(x: torch.Tensor):\n    return x\n", 1, 10,
     "parameter 'x' needs a dtype and a shape"},
    {"range_closed_with_bracket", "def f(i: i64[4] in [0, 4]):\n    return i\n", 1, 25,
     "a range is half-open: write [lo, hi)"},
    {"range_on_float_parameter", "def f(x: f32[4] in [0, 4)):\n    return x\n", 1, 17,
     "ranges are only allowed on integer parameters, and 'x' is f32"},
    {"range_on_bool_parameter", "def f(m: bool[4] in [0, 2)):\n    return m\n", 1, 18,
     "only allowed on integer parameters"},
    {"empty_range", "def f(i: i64[4] in [5, 5)):\n    return i\n", 1, 20,
     "the range [5, 5) is empty"},
    {"inverted_range", "def f(i: i64[4] in [3, -3)):\n    return i\n", 1, 20, "is empty"},
    {"range_does_not_fit", "def f(i: i8[4] in [0, 1000)):\n    return i\n", 1, 19,
     "does not fit in i8"},
    {"range_bound_not_integer", "def f(i: i64[4] in [0, 2.5)):\n    return i\n", 1, 24,
     "expected an integer or a symbolic dim for the range's upper bound, found"},
    {"range_bound_not_symbol", "def f(i: i64[4] in [0, n)):\n    return i\n", 1, 24,
     "'n' in the range of 'i' is not a symbolic dim of a parameter's shape"},

    // --- statements and expressions ----------------------------------------------
    {"chained_comparison", ret(X, "x < x < x"), 2, 18, "chained comparisons"},
    {"dangling_operator", ret(X, "x +"), 2, 15, "expected an expression, found end of line"},
    {"power_operator", ret(X, "x ** 2"), 2, 14, "the '**' operator is not supported"},
    {"floor_division", ret(X, "x // 2"), 2, 14, "the '//' operator is not supported"},
    {"modulo", ret(X, "x % 2"), 2, 14, "the '%' operator is not supported"},
    {"bitwise_and", ret(X, "x & x"), 2, 14, "the '&' operator is not supported"},
    {"left_shift", ret(X, "x << 1"), 2, 14, "the '<<' operator is not supported"},
    {"right_shift", ret(X, "x >> 1"), 2, 14, "the '>>' operator is not supported"},
    {"shift_after_comparison", ret(X, "x < x >> 1"), 2, 18, "the '>>' operator is not supported"},
    {"shift_after_sum", ret(X, "x + 1 << 2"), 2, 18, "the '<<' operator is not supported"},
    {"if_statement", "def f(x: f32[2]):\n    if x:\n        return x\n", 2, 5,
     "'if' is not supported"},
    {"for_loop", "def f(x: f32[2]):\n    for i in x:\n        return x\n", 2, 5,
     "'for' is not supported"},
    {"lambda", ret(X, "lambda"), 2, 12, "'lambda' is not supported"},
    {"assignment_expression", ret(X, "(y := x) * x"), 2, 15,
     "the ':=' operator (an assignment expression) is not supported"},
    {"tuple_assignment", "def f(x: f32[2]):\n    a, b = x, x\n    return a\n", 2, 6,
     "tuple assignment"},
    {"expression_statement", "def f(x: f32[2]):\n    print(x)\n    return x\n", 2, 10,
     "expected '=' after 'print'"},
    {"chained_assignment", "def f(x: f32[2]):\n    y = x = x\n    return y\n", 2, 11,
     "chained assignment"},
    // Writes into a tensor (index_put / scatter forms): the language has none.
    {"subscript_assignment",
     "def f(x: f32[4, 8], i: i64[2], y: f32[2, 8]):\n    x[i] = y\n    return x\n", 2, 6,
     "assignment through a subscript ('x[...] = ...') is not supported", "torch.where"},
    {"subscript_augmented_assignment",
     "def f(x: f32[4, 8], i: i64[2], y: f32[2, 8]):\n    x[i, :] += y\n    return x\n", 2, 6,
     "assignment through a subscript ('x[...] += ...') is not supported"},
    {"nested_subscript_assignment",
     "def f(x: f32[4, 8], i: i64[2]):\n    x[i][x[0] > 0] = 0\n    return x\n", 2, 6,
     "assignment through a subscript ('x[...] = ...') is not supported"},
    {"attribute_assignment", "def f(x: f32[4, 8]):\n    x.data = x * 2\n    return x\n", 2, 6,
     "assignment to an attribute ('x.data = ...') is not supported"},
    {"subscript_without_assignment", "def f(x: f32[4, 8]):\n    x[0]\n    return x\n", 2, 6,
     "expected '=' after 'x'"},
    {"in_place_method_statement",
     "def f(x: f32[4, 8], i: i64[2], y: f32[2, 8]):\n    x.index_add_(0, i, y)\n    return x\n",
     2, 6, "expected '=' after 'x'"},
    {"ellipsis_outside_subscript", ret(X, "..."), 2, 12,
     "'...' is only allowed inside a subscript"},
    {"missing_comma_in_call", ret(X, "torch.relu(x x)"), 2, 25,
     "expected ',' or ')' in the argument list, found name 'x'"},
    {"positional_after_keyword", ret(X, "x.clamp(min=0, 1)"), 2, 27,
     "a positional argument cannot follow a keyword argument"},
    {"argument_unpacking", ret(X, "torch.relu(*x)"), 2, 23, "argument unpacking"},
    {"too_deep_parentheses", ret(X, std::string(300, '(') + "x" + std::string(300, ')')), 2,
     12 + kMaxNesting, "nested too deeply"},
    {"too_deep_unary", ret(X, std::string(300, '-') + "x"), 2, 12 + kMaxNesting - 1,
     "nested too deeply"},
    {"too_deep_subscripts", ret("x: i64[4]", nested_subscripts(300)), 2, 12 + 2 * kMaxNesting,
     "nested too deeply"},

    // --- names, attributes, methods, functions -----------------------------------
    {"unknown_name_with_suggestion", "def f(weight: f32[4]):\n    return weigth\n", 2, 12,
     "unknown name 'weigth'; did you mean 'weight'?"},
    {"unknown_name", ret(X, "zzz"), 2, 12, "unknown name 'zzz'"},
    {"use_before_assignment", "def f(x: f32[4]):\n    y = h + x\n    h = x\n    return y\n", 2, 9,
     "unknown name 'h'"},
    {"unknown_method", ret(X, "x.rellu()"), 2, 14,
     "unknown tensor method 'rellu'; did you mean 'relu'?"},
    {"unknown_attribute", ret(X, "x.shape"), 2, 14, "unknown tensor attribute 'shape'"},
    {"method_not_called", ret(X, "x.relu"), 2, 14, "method 'relu' must be called"},
    {"unknown_torch_function", ret(X, "torch.relux(x)"), 2, 18,
     "unknown function 'torch.relux'; did you mean 'relu'?"},
    // Two swapped letters are one edit.
    {"swapped_letters", ret(X, "torch.rleu(x)"), 2, 18,
     "unknown function 'torch.rleu'; did you mean 'relu'?"},
    {"unknown_functional_function", ret(X, "F.softmax(x, -1)"), 2, 14,
     "unknown function 'F.softmax'"},
    {"unknown_dtype_in_to", ret(X, "x.to(torch.float17)"), 2, 23,
     "unknown dtype 'torch.float17'; did you mean 'torch.float16'?"},
    {"unknown_module_attribute", ret(X, "torch.foo"), 2, 18,
     "module 'torch' has no attribute 'foo'"},
    {"call_a_tensor", ret(X, "x(1)"), 2, 12, "a tensor is not callable"},
    {"call_a_module", ret(X, "torch(x)"), 2, 12, "module 'torch' is not callable"},
    {"attribute_of_a_number", ret(X, "(1).foo"), 2, 16, "the integer 1 has no attribute 'foo'"},

    // --- arity and keyword arguments -----------------------------------------------
    {"method_takes_no_arguments", ret(X, "x.exp(1)"), 2, 18, "exp() takes no arguments"},
    {"too_many_arguments", ret(X, "torch.mm(x, x, x)"), 2, 27,
     "torch.mm() takes at most 2 positional arguments"},
    {"missing_argument", ret(X, "torch.mm(x)"), 2, 12, "torch.mm() is missing its argument 'mat2'"},
    {"missing_transpose_dim", ret(X, "torch.transpose(x, 0)"), 2, 12,
     "is missing its argument 'dim1'"},
    {"unknown_keyword", ret(X, "x.clamp(mn=0)"), 2, 20,
     "clamp() has no keyword argument 'mn'; did you mean 'min'?"},
    {"duplicate_keyword", ret(X, "x.clamp(0, min=1)"), 2, 23,
     "clamp() got two values for argument 'min'"},
    {"receiver_as_keyword", ret(X, "x.relu(input=x)"), 2, 19,
     "relu() has no keyword argument 'input'"},
    {"float_dim", ret(X, "x.transpose(0.5, 1)"), 2, 24,
     "expected an integer for argument 'dim0' of transpose(), found the number 0.5"},
    {"float_in_permute", ret(X, "x.permute(0, 1.5)"), 2, 25, "expected an integer"},
    // A float that reads as an integer keeps its ".0" (it said "the number 1").
    {"whole_float_dim", ret(X, "x.transpose(1.0, 0)"), 2, 24,
     "expected an integer for argument 'dim0' of transpose(), found the number 1.0"},
    {"to_a_number", ret(X, "x.to(3)"), 2, 17, "expected a dtype"},
    {"clamp_without_bounds", ret(X, "x.clamp()"), 2, 14, "needs at least one of 'min' and 'max'"},
    {"clamp_with_tensor_bound", ret(X, "x.clamp(min=x)"), 2, 24, "tensor bounds"},
    // PyTorch converts an int bound to the integer dtype with an overflow
    // check ("value cannot be converted to type int8_t without overflow"):
    // clamping to 200 and storing would give -56 everywhere.
    {"clamp_int_bound_beyond_i8", ret("x: i8[4]", "torch.clamp(x, 200)"), 2, 27,
     "clamp min=200 cannot be converted to i8 without overflow"},
    {"clamp_int_bound_below_i8", ret("x: i8[4]", "x.clip(-129, 0)"), 2, 19,
     "clamp min=-129 cannot be converted to i8 without overflow"},
    {"clamp_int_bound_beyond_u8", ret("x: u8[4]", "x.clamp(max=300)"), 2, 24,
     "clamp max=300 cannot be converted to u8 without overflow"},
    {"clamp_int_bound_below_u8", ret("x: u8[4]", "x.clamp(0, -256)"), 2, 23,
     "clamp max=-256 cannot be converted to u8 without overflow"},
    {"clamp_int_bound_beyond_i32", ret("x: i32[4]", "torch.clamp(x, None, 2147483648)"), 2, 33,
     "clamp max=2147483648 cannot be converted to i32 without overflow"},
    {"clamp_int_bound_inexact_in_f64", ret("x: i64[4]", "x.clamp(max=1152921504606846977)"), 2, 24,
     "max=1152921504606846977 is not supported: an integer clamp bound past 2^53 must be exact"},
    {"clamp_float_bound_beyond_f16", ret("x: f16[4]", "torch.clamp(x, max=1e5)"), 2, 31,
     "clamp max=100000 cannot be converted to f16 without overflow"},
    {"addmm_scale_positional", ret("b: f32[4], " + X, "torch.addmm(b, x, x, 2)"), 2, 33,
     "torch.addmm() takes at most 3 positional arguments"},
    {"addmm_beta_beyond_f32", ret("b: f32[4], " + X, "torch.addmm(b, x, x, beta=1e308)"), 2, 38,
     "beta=1e+308 cannot be converted to f32 without overflow"},
    {"gelu_tanh", ret(X, "F.gelu(x, approximate='tanh')"), 2, 34,
     "gelu(approximate='tanh') is not supported"},
    {"inplace_relu", ret(X, "F.relu(x, inplace=True)"), 2, 30, "in-place operations"},
    {"inplace_tensor", ret(X, "torch.relu(x, x)"), 2, 26, "expected True or False"},
    {"inplace_number", ret(X, "torch.relu(x, 3)"), 2, 26,
     "expected True or False for argument 'inplace' of torch.relu(), found the integer 3"},
    {"maximum_number", ret(X, "torch.maximum(x, 2.0)"), 2, 29,
     "expected a tensor for argument 'other'"},
    {"exp_number", ret(X, "torch.exp(3.0)"), 2, 22, "expected a tensor for argument 'input'"},
    {"inplace_kw_tensor", ret(X, "x.relu(inplace=x)"), 2, 27, "expected True or False"},
    {"string_operand", ret(X, "x + 'a'"), 2, 16, "found a string"},
    {"float_call", ret(X, "x * float('inf')"), 2, 16,
     "the dtype f64 is not callable: a dtype name such as `float` is not Python's conversion"},
    {"module_operand", ret(X, "x + torch"), 2, 16, "found module 'torch'"},

    // --- shapes (messages from the Graph builder) ----------------------------------
    {"matmul_k_mismatch", "def f(x: f16[300, 1001], y: f16[1000, 129]):\n    return x @ y\n", 2, 14,
     "[300, 1001]", "[1000, 129]"},
    {"broadcast_mismatch", "def f(a: f32[3, 4], b: f32[5]):\n    return a + b\n", 2, 14, "[3, 4]",
     "[5]"},
    {"mm_of_3d", "def f(a: f32[2, 3, 4], b: f32[4, 5]):\n    return torch.mm(a, b)\n", 2, 12,
     "[2, 3, 4]", "2-D"},
    {"bmm_of_2d", "def f(a: f32[3, 4], b: f32[4, 5]):\n    return a.bmm(b)\n", 2, 14, "3-D",
     "[3, 4]"},
    {"bmm_batch_mismatch", "def f(a: f32[4, 3, 2], b: f32[3, 2, 5]):\n    return torch.bmm(a, b)\n",
     2, 12, "batch sizes differ", "[4, 3, 2]"},
    {"addmm_k_mismatch",
     "def f(b: f32[5], x: f32[4, 3], y: f32[2, 5]):\n    return torch.addmm(b, x, y)\n", 2, 12,
     "[4, 3]", "[2, 5]"},
    {"too_many_indices", "def f(x: f32[4]):\n    return x[0, 1]\n", 2, 17, "too many indices"},
    {"select_out_of_bounds", "def f(x: f32[4]):\n    return x[10]\n", 2, 14, "out of bounds"},
    {"transpose_dim_out_of_range", ret(X, "x.transpose(0, 5)"), 2, 14, "out of range"},
    {"permute_not_a_permutation", ret(X, "x.permute(0, 0)"), 2, 14, "not a permutation"},
    {"expand_mismatch", "def f(b: f32[3]):\n    return b.expand(4, 5)\n", 2, 14, "cannot expand"},
    // A list past the front end's guard names the graph's limit, 8 dims.
    {"expand_65_sizes", "def f(b: f32[3]):\n    return b.expand(" + ones(64) + "3)\n", 2, 14,
     "expand() was given 65 sizes; tilefuse's kernels index at most 8 dims"},
    {"t_of_3d", "def f(x: f32[2, 2, 2]):\n    return x.t()\n", 2, 14, "at most 2 dims"},
    {"mT_of_1d", "def f(x: f32[2]):\n    return x.mT\n", 2, 14, "at least 2 dims"},
    {"two_tensor_indices", "def f(x: f32[4, 4], i: i64[2]):\n    return x[i, i]\n", 2, 17,
     "more than one tensor is not supported"},
    {"two_ellipses", ret(X, "x[..., ...]"), 2, 19, "a single '...'"},
    {"slice_step_zero", ret(X, "x[::0]"), 2, 16, "step of a slice must be positive"},
    {"slice_step_negative", ret(X, "x[::-1]"), 2, 16, "step of a slice must be positive"},
    {"slice_bound_float", ret(X, "x[0.5:]"), 2, 14, "the start of a slice must be an integer"},
    {"index_with_none", ret(X, "x[None]"), 2, 14, "None"},
    {"index_with_list", ret(X, "x[[0, 1]]"), 2, 14, "list or tuple"},
    {"empty_subscript", ret(X, "x[]"), 2, 14, "empty subscript"},
    {"float_constant_index", ret(X, "x[1.5]"), 2, 14, "an index must be an integer"},
    {"index_a_number", ret(X, "(1)[0]"), 2, 12, "only tensors can be indexed"},
    {"linear_3d_weight", "def f(x: f32[2, 4], w: f32[1, 5, 4]):\n    return F.linear(x, w)\n", 2,
     24, "1-D or 2-D weight"},

    // --- dtypes ----------------------------------------------------------------------
    {"matmul_dtype_mismatch", "def f(a: f16[4, 4], b: f32[4, 4]):\n    return a @ b\n", 2, 14,
     "f16", "f32"},
    {"matmul_of_integers", "def f(a: i32[4, 4], b: i32[4, 4]):\n    return a @ b\n", 2, 14, "i32"},
    {"boolean_mask_index", "def f(x: f32[4], m: bool[4]):\n    return x[m]\n", 2, 14,
     "boolean mask indexing is not supported"},
    {"float_index_tensor", "def f(x: f32[4], i: f32[4]):\n    return x[i]\n", 2, 14,
     "integer dtype (i32 or i64), found f32"},
    {"u8_index_tensor", "def f(x: f32[4], i: u8[4]):\n    return x[i]\n", 2, 14,
     "u8 index tensors are boolean masks"},
    {"i8_index_tensor", "def f(x: f32[4], i: i8[4]):\n    return x[:, i]\n", 2, 17, "found i8"},
    {"index_select_2d_index", "def f(x: f32[4], i: i64[2, 2]):\n    return x.index_select(0, i)\n",
     2, 30, "expects a 1-D index, found shape [2, 2]"},
    {"index_select_float_index", "def f(x: f32[4], i: f64[2]):\n    return x.index_select(0, i)\n",
     2, 30, "found f64"},
    // A symbolic dim is named by its symbol, never by its placeholder size.
    {"index_select_2d_symbolic_index",
     "def f(x: f32[T, 4], i: i64[M, K]):\n    return x.index_select(0, i)\n", 2, 30,
     "expects a 1-D index, found shape [M, K]"},
    {"t_of_2d_symbolic_gather", "def f(x: f32[T, 4], i: i64[M, K]):\n    return x[i].t()\n", 2, 17,
     "found shape [M, K, 4]"},
    {"too_many_indices_symbolic", "def f(x: f32[T, 4], i: i64[M]):\n    return x[i, 0, 1]\n", 2, 20,
     "(shape [T, 4])"},
    {"bmm_two_batch_symbols",
     "def f(a: f32[B, 2, 3], b: f32[C, 3, 4]):\n    return torch.bmm(a, b)\n", 2, 12,
     "batch sizes differ: shapes [B, 2, 3] and [C, 3, 4]"},
    {"where_float_condition", "def f(c: f32[4], x: f32[4]):\n    return torch.where(c, x, x)\n", 2,
     12, "bool", "f32"},
    {"not_of_float", ret(X, "~x"), 2, 12, "only supported on bool tensors"},
    {"negate_bool_tensor", "def f(m: bool[4]):\n    return -m\n", 2, 12, "bool"},
    {"gelu_of_integers", "def f(i: i32[4]):\n    return F.gelu(i)\n", 2, 12, "i32"},
    {"nested_tuple", ret(X, "x.permute((0, (1,)))"), 2, 26, "nested tuples and lists"},
    {"bare_dtype_spelling_is_not_a_name", ret(X, "x.to(half)"), 2, 17, "unknown name 'half'"},
    {"return_a_number", ret(X, "1"), 2, 12,
     "a returned value must be a tensor, found the integer 1"},
    {"return_a_dtype", ret(X, "torch.float16"), 2, 12, "found the dtype f16"},
    {"matmul_with_number", ret(X, "x @ 2"), 2, 16,
     "expected a tensor for the right operand of '@', found the integer 2"},
    // A comprehension is refused at its 'for' (the loop variable was an
    // "unknown name"): in a list, in parentheses, as a call's argument.
    {"list_comprehension", ret(X, "x.permute([v for v in x])"), 2, 25,
     "comprehensions and generator expressions are not supported"},
    {"generator_in_parentheses", ret(X, "x * (v for v in x)"), 2, 19,
     "comprehensions and generator expressions are not supported"},
    {"generator_argument", ret(X, "torch.relu(v * 2 for v in x)"), 2, 29,
     "comprehensions and generator expressions are not supported"},
    {"nested_for_is_its_brackets", ret(X, "x.permute((0,), [v for v in x])"), 2, 31,
     "comprehensions and generator expressions are not supported"},
    {"constant_division_by_zero", ret(X, "x * (1 / 0)"), 2, 19, "division by zero"},
    {"constant_overflow", ret(X, "x * (9223372036854775807 + 1)"), 2, 37, "integer overflow"},
    // 2**63 is an int64 only negated (-9223372036854775808 is INT64_MIN).
    {"int64_min_magnitude_alone", ret(X, "x * 9223372036854775808"), 2, 16,
     "integer literal '9223372036854775808' is too large (the limit is 2**63 - 1)"},
    {"int64_min_magnitude_subtracted", ret(X, "x - 9223372036854775808"), 2, 16,
     "integer literal '9223372036854775808' is too large"},
    {"int64_min_magnitude_in_parentheses", ret(X, "x * -(9223372036854775808)"), 2, 18,
     "integer literal '9223372036854775808' is too large"},
    {"int64_min_negated_twice", ret(X, "x * --9223372036854775808"), 2, 16,
     "integer overflow in a constant expression"},
    {"int64_min_magnitude_as_bound",
     "def f(i: i64[3] in [0, 9223372036854775808)):\n    return i\n", 1, 24,
     "integer literal '9223372036854775808' is too large"},
    {"int64_min_magnitude_as_dim", "def f(x: f32[9223372036854775808]):\n    return x\n", 1, 14,
     "integer literal '9223372036854775808' is too large"},
    {"int64_min_as_dim", "def f(x: f32[-9223372036854775808]):\n    return x\n", 1, 14,
     "dimension sizes must be non-negative, found -9223372036854775808"},
};

// expand()'s hint about -1 only where the name is one of expand()'s arguments.
TEST(FrontendErrors, ASymbolicDimAsAValueHintsAtExpandOnlyInsideIt) {
  try {
    parse("def f(x: f32[T, 4]):\n    return x * T\n");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "'T' is a symbolic dim of the signature, not a value");
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_EQ(e.loc().col, 16);
  }
}

class BadProgramTest : public ::testing::TestWithParam<BadProgram> {};

TEST_P(BadProgramTest, ReportsMessageAndLocation) {
  const BadProgram& bp = GetParam();
  try {
    parse(bp.source);
    FAIL() << "expected a UserError for:\n" << bp.source;
  } catch (const UserError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(bp.needle), std::string::npos)
        << "message: " << message << "\nexpected to contain: " << bp.needle;
    if (bp.needle2) {
      EXPECT_NE(message.find(bp.needle2), std::string::npos)
          << "message: " << message << "\nexpected to contain: " << bp.needle2;
    }
    EXPECT_EQ(e.loc().line, bp.line) << message;
    EXPECT_EQ(e.loc().col, bp.col) << message;
    EXPECT_GE(e.loc().length, 1);
    // One sentence, no location inside the message itself.
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    std::string rendered = format_diagnostic("test.tfs", bp.source, e);
    std::string header = "test.tfs:" + std::to_string(bp.line) + ":" + std::to_string(bp.col) +
                         ": error: " + message + "\n";
    EXPECT_EQ(rendered.substr(0, header.size()), header);
  }
}

INSTANTIATE_TEST_SUITE_P(Frontend, BadProgramTest, ::testing::ValuesIn(kBadPrograms),
                         [](const ::testing::TestParamInfo<BadProgram>& info) {
                           return std::string(info.param.name);
                         });

TEST(BadPrograms, TableIsLargeAndNamesAreUnique) {
  std::set<std::string> names;
  for (const BadProgram& bp : kBadPrograms) EXPECT_TRUE(names.insert(bp.name).second) << bp.name;
  EXPECT_GE(names.size(), 70u);
}

// --- rendering -------------------------------------------------------------------

TEST(FormatDiagnostic, CaretUnderTheToken) {
  std::string src = "def f(x: f16[300, 1001], y: f16[1000, 129]):\n    return x @ y\n";
  UserError e = error_of(src);
  std::string expected = std::string("odd.tfs:2:14: error: ") + e.what() +
                         "\n"
                         "      return x @ y\n" +
                         std::string(15, ' ') + "^\n";
  EXPECT_EQ(format_diagnostic("odd.tfs", src, e), expected);
}

TEST(FormatDiagnostic, TildesCoverTheTokenLength) {
  std::string src = "def f(x: f32[4]):\n    return torch.relux(x)\n";
  UserError e = error_of(src);
  EXPECT_EQ(e.loc().length, 5);
  EXPECT_EQ(format_diagnostic("p.tfs", src, e), std::string("p.tfs:2:18: error: ") + e.what() +
                                                    "\n"
                                                    "      return torch.relux(x)\n" +
                                                    std::string(19, ' ') + "^~~~~\n");
}

TEST(FormatDiagnostic, TabsAreCopiedSoTheCaretLinesUp) {
  std::string src = "def f(x: f32[4]):\n\treturn\tx $\n";
  UserError e = error_of(src);
  EXPECT_EQ(e.loc().col, 11);
  EXPECT_EQ(format_diagnostic("t.tfs", src, e),
            std::string("t.tfs:2:11: error: ") + e.what() + "\n  \treturn\tx $\n  \t      \t  ^\n");
}

// Control bytes in the quoted line are shown as their Unicode control
// pictures (a NUL would end the printed message there, an ESC would drive
// the terminal), one column each, so the caret still lines up and the
// message ends with its caret line.
TEST(FormatDiagnostic, ControlBytesAreShownAsPictures) {
  std::string src = "def f(x: f32[4]):\n    return x\x1b[31m + \x01\n";
  src.insert(src.find("+ "), 1, '\0');
  UserError e = error_of(src);
  ASSERT_TRUE(e.loc().valid());
  const std::string rendered = format_diagnostic("c.tfs", src, e);
  EXPECT_EQ(rendered.find('\0'), std::string::npos);
  EXPECT_EQ(rendered.find('\x1b'), std::string::npos);
  EXPECT_NE(rendered.find("return x\u241b[31m \u2400+ \u2401"), std::string::npos) << rendered;
  // The caret line: one column a code point from the line's start.
  const std::string caret_line = rendered.substr(rendered.rfind("\n  ", rendered.size() - 2) + 3);
  EXPECT_EQ(caret_line, std::string(static_cast<size_t>(e.loc().col - 1), ' ') + "^\n")
      << rendered;
}

// A very long line shows a window around the column, cut with "...": the
// caret still points at the offending character, and the diagnostic of a
// 4 MB line is not 8 MB.
TEST(FormatDiagnostic, LongLinesShowAWindowAroundTheColumn) {
  std::string expr = "x";
  for (int i = 0; i < 20000; ++i) expr += " + x";
  std::string src = "def f(x: f32[4]):\n    return " + expr + " $ + x + x + x\n";
  UserError e = error_of(src);
  const std::string rendered = format_diagnostic("l.tfs", src, e);
  EXPECT_LT(rendered.size(), 600u) << rendered.size();
  const size_t nl1 = rendered.find('\n'), nl2 = rendered.find('\n', nl1 + 1);
  const std::string shown = rendered.substr(nl1 + 1, nl2 - nl1 - 1);
  const std::string caret = rendered.substr(nl2 + 1);
  EXPECT_EQ(shown.substr(0, 5), "  ...") << shown;
  EXPECT_EQ(shown.back(), 'x') << shown;  // the line's end is within the window
  const size_t at = caret.find('^');
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(shown[at], '$') << shown << "\n" << caret;
}

TEST(FormatDiagnostic, Utf8CountsAsOneColumn) {
  std::string src = "def f(x: f32[4]):\n    return x + '\xc3\xa9\xc3\xa9' $\n";
  UserError e = error_of(src);
  EXPECT_EQ(e.loc().col, 21);
  std::string rendered = format_diagnostic("u.tfs", src, e);
  std::string caret_line(22, ' ');
  caret_line += "^\n";
  EXPECT_NE(rendered.find(caret_line), std::string::npos) << rendered;
}

// After a leading UTF-8 byte order mark, line 1's columns and its quoted
// text start after the mark, as an editor shows them.
TEST(FormatDiagnostic, ByteOrderMarkIsNotAColumn) {
  const std::string bom = "\xEF\xBB\xBF";
  const std::string src = bom + "def f(x: f32[4]) $:\n    return x\n";
  UserError e = error_of(src);
  EXPECT_EQ(format_diagnostic("b.tfs", src, e),
            "b.tfs:1:18: error: unexpected character '$'\n"
            "  def f(x: f32[4]) $:\n" +
                std::string(19, ' ') + "^\n");
  const std::string src2 = bom + "def f(x: f32[4]):\n    return y\n";
  UserError e2 = error_of(src2);
  EXPECT_EQ(format_diagnostic("b.tfs", src2, e2),
            std::string("b.tfs:2:12: error: ") + e2.what() + "\n      return y\n" +
                std::string(13, ' ') + "^\n");
  // And the program parses as without it.
  EXPECT_EQ(parse(bom + "def f(x: f32[4]):\n    return x\n").name, "f");
}

TEST(FormatDiagnostic, CrlfSourceLinesHaveNoCarriageReturn) {
  std::string src = "def f(x: f32[4]):\r\n    return y\r\n";
  UserError e = error_of(src);
  EXPECT_EQ(format_diagnostic("c.tfs", src, e), std::string("c.tfs:2:12: error: ") + e.what() +
                                                    "\n"
                                                    "      return y\n" +
                                                    std::string(13, ' ') + "^\n");
}

TEST(FormatDiagnostic, ErrorAtEndOfFileIsOnTheLastLine) {
  std::string src = "def f(x: f32[4]):\n    return (x +";
  UserError e = error_of(src);
  EXPECT_EQ(e.loc().line, 2);
  std::string rendered = format_diagnostic("e.tfs", src, e);
  EXPECT_NE(rendered.find("      return (x +\n"), std::string::npos) << rendered;
}

TEST(FormatDiagnostic, WithoutLocation) {
  EXPECT_EQ(format_diagnostic("a.tfs", "", UserError("cannot read 'a.tfs'")),
            "a.tfs: error: cannot read 'a.tfs'\n");
}

TEST(FormatDiagnostic, OutOfRangeLocationsDoNotCrash) {
  std::string src = "def f():\n";
  for (SourceLoc loc :
       {SourceLoc{1, 1000, 5}, SourceLoc{99, 3, 2}, SourceLoc{2, 1, 1000}, SourceLoc{1, 1, 0}}) {
    std::string rendered = format_diagnostic("x.tfs", src, UserError("boom", loc));
    EXPECT_NE(rendered.find("^"), std::string::npos);
  }
}

}  // namespace
}  // namespace tilefuse::testing
