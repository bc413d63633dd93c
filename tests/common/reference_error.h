// The reference evaluator's error for a program's inputs, which the CPU
// executor and the GPU runs must reproduce (message, kind and place).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "reference/eval.h"

namespace tilefuse::testing {

struct ReferenceError {
  std::string message;
  SourceLoc loc;
  ErrorKind kind = ErrorKind::kGeneric;
};

// The UserError evaluate() throws on `inputs`, or nullopt when it runs.
inline std::optional<ReferenceError> reference_error_of(const Graph& g,
                                                        const std::vector<Tensor>& inputs) {
  try {
    evaluate(g, inputs);
  } catch (const UserError& e) {
    return ReferenceError{e.what(), e.loc(), e.kind()};
  }
  return std::nullopt;
}

}  // namespace tilefuse::testing
