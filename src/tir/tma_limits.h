// What a TMA tensor map (tir::TensorMapPlan) can name; lower_copies (loads)
// and the CUDA epilogue pass (stores) plan one only within these.
#pragma once

#include <cstdint>

namespace tilefuse::tir {

// The largest dim a map may have: TMA's coordinates are signed 32-bit (PTX
// cp.async.bulk.tensor's tensorCoords are .s32), and a tile's box starts
// below the dim and reaches up to 256 elements past it. A tensor with a
// longer dim goes by cp.async with 64-bit addresses: a coordinate cast to
// int would wrap and read or write the wrong (zero-filled) rows.
inline constexpr int64_t kTmaMaxDim = (int64_t{1} << 31) - 256;
// cuTensorMapEncodeTiled takes global strides below 2^40 bytes.
inline constexpr int64_t kTmaStrideBytesLimit = int64_t{1} << 40;

}  // namespace tilefuse::tir
