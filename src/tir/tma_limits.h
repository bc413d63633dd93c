// What a TMA tensor map (tir::TensorMapPlan) can name; lower_copies (loads)
// and the CUDA epilogue pass (stores) plan one only within these.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tilefuse::tir {

// The largest dim a map may have: TMA's coordinates are signed 32-bit (PTX
// cp.async.bulk.tensor's tensorCoords are .s32), and a tile's box starts
// below the dim and reaches up to 256 elements past it. A tensor with a
// longer dim goes by cp.async with 64-bit addresses: a coordinate cast to
// int would wrap and read or write the wrong (zero-filled) rows.
inline constexpr int64_t kTmaMaxDim = (int64_t{1} << 31) - 256;
// cuTensorMapEncodeTiled takes global strides below 2^40 bytes.
inline constexpr int64_t kTmaStrideBytesLimit = int64_t{1} << 40;

// Why a tensor of these dims and strides (elements, `elem` bytes each)
// cannot have a map, or "" where it can.
inline std::string_view tma_map_out_of_range(const std::vector<int64_t>& dims,
                                             const std::vector<int64_t>& strides, int64_t elem) {
  for (int64_t d : dims)
    if (d > kTmaMaxDim) return "a dim of more than 2^31 - 256 elements (TMA coordinates are 32-bit)";
  for (int64_t s : strides)
    if (s >= kTmaStrideBytesLimit / elem) return "a stride of 2^40 bytes or more (a tensor map's limit)";
  return "";
}

}  // namespace tilefuse::tir
