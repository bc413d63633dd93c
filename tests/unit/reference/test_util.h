// Helpers shared by the reference evaluator's tests: a tiny deterministic
// generator (independent of src/reference/inputs.cpp), tensor builders that
// use only the core Tensor API, and value comparisons.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"

namespace tilefuse::testing_util {

// Numerical Recipes' 64-bit LCG; the high bits are good enough for tests.
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed * 2862933555777941757ULL + 3037000493ULL) {}
  uint32_t next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state_ >> 32);
  }
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * (next() / 4294967296.0); }
  // Never zero: a magnitude in [0.05, 1) times `scale`, random sign.
  double nonzero(double scale = 1) {
    const double m = uniform(0.05, 1.0) * scale;
    return (next() & 1) ? m : -m;
  }
  int64_t integer(int64_t lo, int64_t hi) {  // [lo, hi)
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo));
  }

 private:
  uint64_t state_;
};

// A contiguous tensor of nonzero random values (rounded to dt by set_linear).
inline Tensor random_tensor(DType dt, const Shape& shape, Lcg& rng, double scale = 1,
                            bool positive = false) {
  Tensor t = Tensor::empty(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = rng.nonzero(scale);
    if (positive) v = std::abs(v);
    t.set_linear(i, v);
  }
  return t;
}

inline Tensor tensor_of(DType dt, const Shape& shape, const std::vector<double>& values) {
  Tensor t = Tensor::empty(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_linear(i, values.at(static_cast<size_t>(i)));
  return t;
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_linear(i);
  return v;
}

// Equal values (both NaN counts as equal; +0 and -0 are equal).
inline bool same_value(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

inline ValueId param(Graph& g, const std::string& name, DType dt, const Shape& shape) {
  return g.parameter(name, dt, shape, std::nullopt, SourceLoc{});
}

// Row-major multi-index of `linear` in `shape`.
inline std::vector<int64_t> unravel(int64_t linear, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = linear % shape[d];
    linear /= shape[d];
  }
  return idx;
}

// Element of `t` at the broadcast position `idx` of a larger shape.
inline double broadcast_get(const Tensor& t, const std::vector<int64_t>& idx) {
  std::vector<int64_t> own(static_cast<size_t>(t.dim()));
  const size_t lead = idx.size() - own.size();
  for (size_t d = 0; d < own.size(); ++d)
    own[d] = t.size(static_cast<int64_t>(d)) == 1 ? 0 : idx[lead + d];
  return t.get(own);
}

}  // namespace tilefuse::testing_util
