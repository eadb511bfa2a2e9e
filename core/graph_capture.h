#pragma once
// Whether a CUDA graph capture (core/cuda/graph.h) is under way on a device, for code outside
// core/cuda that must refuse to be captured. A capture records kernels with the arguments they
// had, once: a random draw takes its counter offset on the host, so a captured draw would repeat
// the same numbers at every replay. Synchronous copies and host reads need no such check: CUDA
// refuses them inside a capture, and the copy's error names the call.

#include <string_view>

#include "core/device.h"

namespace rg {

bool graph_capture_underway(const Device& device);

// Throws naming `what` and `why` while a capture is under way on `device`.
void refuse_in_graph_capture(const Device& device, std::string_view what, std::string_view why);

namespace detail {
// Set by core/cuda/cuda_allocator.cpp's set_capture_memory, around a capture of CUDA device
// `index`.
void set_graph_capture_underway(int index, bool underway);
}  // namespace detail

}  // namespace rg
