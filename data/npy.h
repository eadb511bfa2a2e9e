#pragma once
// NumPy .npy files (format versions 1.0, 2.0 and 3.0), as np.save writes them: the magic
// "\x93NUMPY", a version, a header length, a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (32, 160, 160), }
// and the raw array in C order. Read without trusting anything in it: every field is checked
// and every failure is an rg::Error naming the file and what was wrong.
//
// dtypes, little-endian ('<', or '|' for one byte):
//   u1 -> u8, b1 -> u8 (0 or 1), f2 -> f16, f4 -> f32, f8 -> f64,
//   i1, i2, i4, i8 -> i64 (widened: i64 is the core's one signed integer type).
// Refused by name: big-endian data, Fortran order, structured dtypes, any other type.
//
// Writing (predicted masks of volumes): version 1.0, C order, u8 -> '|u1', i64 -> '<i8',
// f16 -> '<f2', f32 -> '<f4', f64 -> '<f8', the header padded as np.save pads it (the data
// starts at a multiple of 64 bytes). bf16 has no NumPy dtype and is refused.

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace rg::data {

// numpy itself refuses headers above 10,000 bytes unless told otherwise (max_header_size);
// a header of a few shapes' worth of digits never needs more than this.
inline constexpr int64_t kMaxNpyHeaderBytes = 65536;
// The largest .npy file read: 1 GiB holds a 512^3 f64 volume.
inline constexpr int64_t kMaxNpyFileBytes = int64_t{1} << 30;
// numpy's own limit on dimensions (NPY_MAXDIMS in numpy 1.x).
inline constexpr int64_t kMaxNpyDims = 32;

// The array stored in the bytes of one .npy file; `name` names it in messages.
Tensor read_npy_bytes(const std::string& bytes, const std::string& name);

// Reads (a regular file of at most kMaxNpyFileBytes) and parses one .npy file.
Tensor read_npy(const std::string& path);

// The bytes of the .npy file holding `array` (any device or layout).
std::string npy_bytes(const Tensor& array);
// Writes them to `path` atomically (core/atomic_file.h).
void write_npy(const std::string& path, const Tensor& array);

}  // namespace rg::data
