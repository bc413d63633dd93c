#include "reference/element_access.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/error.h"

namespace tilefuse::reference {
namespace {

template <typename S>
S load_raw(const std::byte* p) {
  S v;
  std::memcpy(&v, p, sizeof(S));
  return v;
}

template <typename S>
void store_raw(std::byte* p, S v) {
  std::memcpy(p, &v, sizeof(S));
}

// static_cast with round_to's answers where C++ leaves the result undefined
// (floating -> integer out of range).
template <typename C, typename S>
C convert(S x) {
  if constexpr (std::is_same_v<C, bool>) {
    return x != S{0};
  } else if constexpr (std::is_same_v<C, int64_t> && std::is_floating_point_v<S>) {
    return truncate_to_int64(static_cast<double>(x));
  } else {
    return static_cast<C>(x);
  }
}

}  // namespace

int64_t truncate_to_int64(double v) {
  if (!std::isfinite(v)) return 0;
  const double t = std::trunc(v);
  constexpr double kTwo63 = 9223372036854775808.0;
  if (t >= -kTwo63 && t < kTwo63) return static_cast<int64_t>(t);
  // Wrap modulo 2^64; fmod is exact and so is the shift into [0, 2^64).
  constexpr double kTwo64 = 18446744073709551616.0;
  double m = std::fmod(t, kTwo64);
  if (m < 0) m += kTwo64;
  return static_cast<int64_t>(static_cast<uint64_t>(m));
}

template <typename C>
ReadFn<C> reader(DType dt) {
  switch (dt) {
    case DType::Bool:
      return [](const std::byte* p) { return convert<C>(load_raw<uint8_t>(p) != 0); };
    case DType::U8:
      return [](const std::byte* p) { return convert<C>(load_raw<uint8_t>(p)); };
    case DType::I8:
      return [](const std::byte* p) { return convert<C>(load_raw<int8_t>(p)); };
    case DType::I32:
      return [](const std::byte* p) { return convert<C>(load_raw<int32_t>(p)); };
    case DType::I64:
      return [](const std::byte* p) { return convert<C>(load_raw<int64_t>(p)); };
    case DType::F8E4M3:
      return
          [](const std::byte* p) { return convert<C>(f8e4m3_bits_to_f32(load_raw<uint8_t>(p))); };
    case DType::F8E5M2:
      return
          [](const std::byte* p) { return convert<C>(f8e5m2_bits_to_f32(load_raw<uint8_t>(p))); };
    case DType::F16:
      return [](const std::byte* p) { return convert<C>(f16_bits_to_f32(load_raw<uint16_t>(p))); };
    case DType::BF16:
      return [](const std::byte* p) { return convert<C>(bf16_bits_to_f32(load_raw<uint16_t>(p))); };
    case DType::F32:
      return [](const std::byte* p) { return convert<C>(load_raw<float>(p)); };
    case DType::F64:
      return [](const std::byte* p) { return convert<C>(load_raw<double>(p)); };
  }
  throw InternalError("reader: unknown dtype");
}

template <typename C>
WriteFn<C> writer(DType dt) {
  switch (dt) {
    case DType::Bool:
      return [](std::byte* p, C v) { store_raw<uint8_t>(p, convert<bool>(v) ? 1 : 0); };
    case DType::U8:
      return [](std::byte* p, C v) { store_raw(p, static_cast<uint8_t>(convert<int64_t>(v))); };
    case DType::I8:
      return [](std::byte* p, C v) { store_raw(p, static_cast<int8_t>(convert<int64_t>(v))); };
    case DType::I32:
      return [](std::byte* p, C v) { store_raw(p, static_cast<int32_t>(convert<int64_t>(v))); };
    case DType::I64:
      return [](std::byte* p, C v) { store_raw(p, convert<int64_t>(v)); };
    case DType::F8E4M3:
      return [](std::byte* p, C v) { store_raw(p, f32_to_f8e4m3_bits(convert<float>(v))); };
    case DType::F8E5M2:
      return [](std::byte* p, C v) { store_raw(p, f32_to_f8e5m2_bits(convert<float>(v))); };
    case DType::F16:
      return [](std::byte* p, C v) { store_raw(p, f32_to_f16_bits(convert<float>(v))); };
    case DType::BF16:
      return [](std::byte* p, C v) { store_raw(p, f32_to_bf16_bits(convert<float>(v))); };
    case DType::F32:
      return [](std::byte* p, C v) { store_raw(p, convert<float>(v)); };
    case DType::F64:
      return [](std::byte* p, C v) { store_raw(p, convert<double>(v)); };
  }
  throw InternalError("writer: unknown dtype");
}

template ReadFn<float> reader<float>(DType);
template ReadFn<double> reader<double>(DType);
template ReadFn<int64_t> reader<int64_t>(DType);
template ReadFn<bool> reader<bool>(DType);
template WriteFn<float> writer<float>(DType);
template WriteFn<double> writer<double>(DType);
template WriteFn<int64_t> writer<int64_t>(DType);
template WriteFn<bool> writer<bool>(DType);

}  // namespace tilefuse::reference
