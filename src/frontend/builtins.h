// The torch functions and tensor methods a .tfs program may call, and the
// indexing rules of `x[...]`.
//
// Each builtin is listed once with PyTorch's parameter names; it may be
// callable as a tensor method (`x.relu()`), as `torch.relu(x)` and as
// `torch.nn.functional.relu(x)` / `F.relu(x)`. A method call binds the
// receiver to the first parameter, exactly as PyTorch's Tensor methods do.
// Arguments are bound like Python's (positional, then keywords); arity,
// keyword and argument-kind errors are UserErrors at the offending argument,
// shape and dtype errors come from the Graph builder at the call's name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/operand.h"

namespace tilefuse::frontend {

struct Argument {
  std::string keyword;  // empty for a positional argument
  SourceLoc keyword_loc;
  Operand value;
};

// Module paths a program can name: "torch", "torch.nn", "torch.nn.functional".
bool is_module(std::string_view path);
// Whether "torch.relu" / "torch.nn.functional.gelu" names a builtin function.
bool is_function(std::string_view path);
// Builtin function names directly inside `module_path` (for suggestions).
std::vector<std::string> function_names(std::string_view module_path);
bool is_method(std::string_view name);
std::vector<std::string> method_names();

// Calls the function `fn` (an Operand of kind Function). `name_loc` is where
// its name is written (the location of builder errors); `call_span` covers
// the whole call and becomes the result's location. `display` is the name as
// written ("F.relu"), used in messages.
Operand call_function(Graph& g, const Operand& fn, std::string_view display,
                      std::vector<Argument> args, SourceLoc name_loc, SourceLoc call_span);
// Calls method `name` on `self`.
Operand call_method(Graph& g, const Operand& self, std::string_view name,
                    std::vector<Argument> args, SourceLoc name_loc, SourceLoc call_span);

// One component of a subscript `x[a, b:c, ...]`.
struct IndexItem {
  enum class Kind : uint8_t { Slice, Int, Ellipsis, Tensor };
  Kind kind = Kind::Slice;
  SourceLoc loc;
  std::optional<int64_t> start, stop;  // Slice
  int64_t step = 1;                    // Slice
  int64_t index = 0;                   // Int
  ValueId tensor = -1;                 // Tensor
};

// Validates the operand written as a subscript component (an integer, a
// tensor of indices, ...) and turns it into an IndexItem.
IndexItem index_item(const Graph& g, const Operand& op);
// A slice `start:stop:step`; each part is an integer or absent (nullopt).
IndexItem slice_item(const std::optional<Operand>& start, const std::optional<Operand>& stop,
                     const std::optional<Operand>& step, SourceLoc loc);
// `base[items]`: slices and integer selects are views applied left to right;
// a tensor component then gathers along the dim where it was written
// (`x[:, idx]` gathers dim 1), PyTorch style. At most one tensor component.
Operand apply_subscript(Graph& g, const Operand& base, const std::vector<IndexItem>& items,
                        SourceLoc span);

}  // namespace tilefuse::frontend
