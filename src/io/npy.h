// NumPy .npy files (format versions 1.0–3.0), C order.
//
// dtypes: bool '|b1', u8 '|u1', i8 '|i1', i32 '<i4', i64 '<i8', f16 '<f2',
// f32 '<f4', f64 '<f8' (and the big-endian forms when reading). bf16 and the
// f8 types have no .npy type: they are written as '<f4' (exact) and read from
// any floating file with rounding.
#pragma once

#include <string>

#include "core/tensor.h"

namespace tilefuse {

// Reads a .npy file. Throws UserError naming the path and what is wrong
// (missing file, bad magic, unsupported dtype or Fortran order, truncated data).
Tensor read_npy(const std::string& path);

// A .npy file's dtype and shape, from its header alone (the data is not
// read, nor its length checked: read_npy does that). Throws UserError as
// read_npy does for the header.
struct NpyInfo {
  DType dtype;
  Shape shape;
};
NpyInfo read_npy_info(const std::string& path);

// Writes `t` (any strides) as a C-order .npy. Throws UserError on I/O failure.
// The write is atomic (temporary file + rename).
void write_npy(const std::string& path, const Tensor& t);

}  // namespace tilefuse
