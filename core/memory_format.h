#pragma once
// Memory formats, as PyTorch's: a tensor keeps its NCHW shape whatever the order of its elements
// in memory; the format is a stride order. channels_last stores (N, C, H, W) as N, H, W, C
// (C innermost, stride 1), the layout cuDNN's fastest 16-bit convolutions and the NHWC BatchNorm
// and pooling kernels read; channels_last_3d stores (N, C, D, H, W) as N, D, H, W, C.
//
// A tensor "is in" a format when its strides are that format's dense strides, dims of size 1
// ignored (their stride never moves an index) — so a (N, 1, H, W) or (N, C, 1, 1) tensor is in
// both formats at once, as in PyTorch.

#include <cstdint>
#include <string_view>
#include <vector>

namespace rg {

using Shape = std::vector<int64_t>;

enum class MemoryFormat : uint8_t {
  contiguous,        // row-major over the shape: NCHW for images
  channels_last,     // 4-D only: NHWC in memory
  channels_last_3d,  // 5-D only: NDHWC in memory
};

std::string_view memory_format_name(MemoryFormat format);  // "contiguous", "channels_last", ...
// "contiguous" | "channels_last" | "channels_last_3d"; an rg::Error naming the choices otherwise.
MemoryFormat parse_memory_format(std::string_view name);

// The dense strides of `shape` in `format`. A channels-last format on a shape of the wrong rank
// is an rg::Error naming the op (`what`) and the shape.
Shape strides_for(const Shape& shape, MemoryFormat format, std::string_view what = "memory format");

// Whether (shape, strides) are the dense strides of `format` (size-1 dims ignored; an empty
// tensor is in every format of its rank). False, never an error, for a rank the format lacks.
bool has_memory_format(const Shape& shape, const Shape& strides, MemoryFormat format);

// The format a result computed from a tensor of this layout should take: channels_last(_3d)
// when the tensor is in that format and not plainly contiguous, else contiguous. (PyTorch's
// suggest_memory_format, for the dense layouts this project makes.)
MemoryFormat suggest_memory_format(const Shape& shape, const Shape& strides);

}  // namespace rg
