// What a .tfs expression evaluates to while the parser builds the Graph.
//
// The front end is one pass: every expression is turned into Graph nodes as
// soon as it is parsed. Not every expression is a tensor, though: `0` in
// `x.transpose(0, 1)` is a Python int, `torch.float16` a dtype, `(1, 0)` a
// tuple. An Operand carries such compile-time values until a builder call
// needs them; numbers become Graph::scalar nodes only when they meet a tensor
// (PyTorch's "wrapped numbers"), and two numbers fold like Python's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace tilefuse::frontend {

struct Operand {
  enum class Kind : uint8_t {
    Tensor,    // `value`
    Int,       // `int_value`
    Float,     // `float_value`
    Bool,      // `int_value` (0 or 1)
    None,      // Python's None
    DType,     // `dtype`
    Module,    // `path`: "torch", "torch.nn", "torch.nn.functional"
    Function,  // `path`: canonical dotted name, e.g. "torch.nn.functional.relu"
    Tuple,     // `items`
    List,      // `items`
    String,    // `path` holds the contents (escapes not decoded)
  };
  Kind kind = Kind::None;
  SourceLoc loc;  // the whole expression (one line at most)
  ValueId value = -1;
  int64_t int_value = 0;
  double float_value = 0;
  DType dtype = DType::F32;
  std::string path;
  std::string spelling;  // Module, Function: the name as written ("F.relu"), for messages
  std::vector<Operand> items;

  static Operand tensor(ValueId v, SourceLoc loc);
  static Operand integer(int64_t v, SourceLoc loc);
  static Operand floating(double v, SourceLoc loc);
  static Operand boolean(bool v, SourceLoc loc);
  static Operand none(SourceLoc loc);
  static Operand of_dtype(DType dt, SourceLoc loc);
  static Operand module(std::string path, std::string spelling, SourceLoc loc);
  static Operand function(std::string path, std::string spelling, SourceLoc loc);
  static Operand string(std::string_view contents, SourceLoc loc);

  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  // Int and Bool are both Python ints (True + 1 == 2).
  bool is_integer_like() const { return kind == Kind::Int || kind == Kind::Bool; }
  double number() const {
    return kind == Kind::Float ? float_value : static_cast<double>(int_value);
  }
};

// For diagnostics: "a tensor", "the integer 3", "the dtype f16", "module 'torch'".
std::string describe(const Operand& op);

// The span from the start of `a` to the end of `b` when both are on one
// line; otherwise `a`.
SourceLoc span(SourceLoc a, SourceLoc b);

// The tensor an operand denotes; a number becomes a Graph::scalar node (a
// wrapped number). Anything else is a UserError at the operand, naming
// `what` ("the left operand of '+'", "argument 'input' of relu()").
ValueId to_tensor(Graph& g, const Operand& op, std::string_view what);
// Like to_tensor, but a number is an error too (matmul operands, index tensors).
ValueId expect_tensor(const Operand& op, std::string_view what);
int64_t expect_int(const Operand& op, std::string_view what);
double expect_number(const Operand& op, std::string_view what);
DType expect_dtype(const Operand& op, std::string_view what);
// A list of ints given either as separate arguments or as one tuple/list
// (`x.permute(1, 0)` and `x.permute((1, 0))` alike).
std::vector<int64_t> expect_int_list(const std::vector<Operand>& ops, std::string_view what,
                                     SourceLoc loc);

// The candidate closest to `name` by edit distance (case-insensitive), if
// one is close enough to be a typo.
std::optional<std::string> closest(std::string_view name,
                                   const std::vector<std::string>& candidates);
// closest() formatted as "; did you mean 'x'?" (with `prefix` before the
// name), or "".
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates,
                         std::string_view prefix = "");

}  // namespace tilefuse::frontend
