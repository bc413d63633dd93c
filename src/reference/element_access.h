// Typed element reads and writes for the reference evaluator's kernels.
//
// A kernel computes in one of four C++ types ("compute types"): float (the
// opmath of f8/f16/bf16/f32), double (f64, and everything in oracle mode),
// int64_t (integers, with wrap-around on store) and bool. reader<C>(dt)
// returns a function that loads one element stored as `dt` and converts it to
// C; writer<C>(dt) one that converts a C to `dt` and stores it. Both follow
// C++ static_cast, which is what PyTorch's kernels and casts do:
// - float or double to f8/f16/bf16 rounds through f32 (c10::Half and friends
//   have only a float constructor), each step to nearest even;
// - floating to integer truncates toward zero and wraps modulo 2^bits, NaN
//   and infinities give 0 (round_to's definition of the cases C++ leaves
//   undefined); integer to integer wraps;
// - anything to bool is `v != 0` (NaN is true).
// Function pointers are chosen once per operand, outside the element loops.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace tilefuse::reference {

template <typename C>
using ReadFn = C (*)(const std::byte*);
template <typename C>
using WriteFn = void (*)(std::byte*, C);

template <typename C>
ReadFn<C> reader(DType dt);
template <typename C>
WriteFn<C> writer(DType dt);

extern template ReadFn<float> reader<float>(DType);
extern template ReadFn<double> reader<double>(DType);
extern template ReadFn<int64_t> reader<int64_t>(DType);
extern template ReadFn<bool> reader<bool>(DType);
extern template WriteFn<float> writer<float>(DType);
extern template WriteFn<double> writer<double>(DType);
extern template WriteFn<int64_t> writer<int64_t>(DType);
extern template WriteFn<bool> writer<bool>(DType);

// The dtype whose storage format is exactly C (F32, F64, I64, Bool).
template <typename C>
constexpr DType native_dtype();
template <>
constexpr DType native_dtype<float>() {
  return DType::F32;
}
template <>
constexpr DType native_dtype<double>() {
  return DType::F64;
}
template <>
constexpr DType native_dtype<int64_t>() {
  return DType::I64;
}
template <>
constexpr DType native_dtype<bool>() {
  return DType::Bool;
}

// double -> int64_t with round_to's rules (truncate; NaN/inf -> 0; values
// outside the int64 range wrap modulo 2^64).
int64_t truncate_to_int64(double v);

}  // namespace tilefuse::reference
