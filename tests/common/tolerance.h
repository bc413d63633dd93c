// Tolerances and checks shared by the property tests (the CPU one,
// tests/unit/lower/property_test.cpp, and the GPU one,
// tests/gpu/property_test.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"

namespace tilefuse::testing {

// The tolerance of the least precise floating dtype in `v`'s cone: 1e-2 for
// f16/bf16, 0.15 for f8, 1e-5 for f32/f64 (and when the cone has no
// floating dtype).
inline double cone_tolerance(const Graph& g, ValueId v) {
  double tol = 0;
  std::vector<bool> seen(static_cast<size_t>(g.size()), false);
  std::vector<ValueId> stack = {v};
  while (!stack.empty()) {
    const ValueId u = stack.back();
    stack.pop_back();
    if (seen[u]) continue;
    seen[u] = true;
    switch (g.node(u).dtype) {
      case DType::F16:
      case DType::BF16:
        tol = std::max(tol, 1e-2);
        break;
      case DType::F8E4M3:
      case DType::F8E5M2:
        tol = std::max(tol, 0.15);
        break;
      case DType::F32:
      case DType::F64:
        tol = std::max(tol, 1e-5);
        break;
      default:
        break;
    }
    for (ValueId in : g.node(u).inputs) stack.push_back(in);
  }
  return tol > 0 ? tol : 1e-5;
}

// True when every element of `t` is finite (always for integer and bool
// tensors).
inline bool all_finite(const Tensor& t) {
  if (!is_floating(t.dtype())) return true;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.get_linear(i))) return false;
  return true;
}

}  // namespace tilefuse::testing
