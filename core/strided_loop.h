#pragma once
// Visits the elements of an N-D index space in row-major order with the element offsets of
// several operands (each with its own strides, 0 for broadcast dims). Kernels use it for
// non-contiguous or broadcast operands; contiguous cases take their own fast paths.

#include <array>
#include <cstdint>
#include <vector>

namespace rg {

// For every linear index in [begin, end): f(offsets) where offsets[k] = sum_d idx[d]*strides[k][d].
template <std::size_t N, class F>
void strided_loop(const std::vector<int64_t>& shape,
                  const std::array<const std::vector<int64_t>*, N>& strides, int64_t begin,
                  int64_t end, F&& f) {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  std::vector<int64_t> idx(ndim, 0);
  std::array<int64_t, N> off{};
  int64_t rest = begin;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    idx[d] = shape[d] == 0 ? 0 : rest % shape[d];
    rest = shape[d] == 0 ? 0 : rest / shape[d];
    for (std::size_t k = 0; k < N; ++k) off[k] += idx[d] * (*strides[k])[d];
  }
  for (int64_t i = begin; i < end; ++i) {
    f(off);
    for (int64_t d = ndim - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        for (std::size_t k = 0; k < N; ++k) off[k] += (*strides[k])[d];
        break;
      }
      for (std::size_t k = 0; k < N; ++k) off[k] -= (shape[d] - 1) * (*strides[k])[d];
      idx[d] = 0;
    }
  }
}

}  // namespace rg
