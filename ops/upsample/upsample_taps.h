#pragma once
// Bilinear upsample's source taps, host/device: the CPU and GPU kernels compute them with this
// code in the compute type C, so both see the same neighbours and weights.

#include <cstdint>
#include <vector>

#include "core/macros.h"
#include "ops/upsample/upsample.h"

namespace rg::detail {

template <class C>
struct Taps {  // the two source rows (or columns) of one output row and their weights
  int64_t i0, i1;
  C l0, l1;
};

// in/out: the source ratio of one dim (C(0) when align_corners leaves a single output).
template <class C>
RG_HOST_DEVICE inline C linear_ratio(int64_t in, int64_t out, int64_t scale, AlignCorners align) {
  if (align == AlignCorners::on)
    return out > 1 ? static_cast<C>(in - 1) / static_cast<C>(out - 1) : C(0);
  return static_cast<C>(1.0 / static_cast<double>(scale));
}

// PyTorch's area_pixel_compute_source_index with scale_factor given, then its neighbour and
// weight rule (UpSampleKernel.cpp), for output position o of a dim of `in` source positions.
template <class C>
RG_HOST_DEVICE inline Taps<C> linear_tap(int64_t o, int64_t in, C ratio, AlignCorners align) {
  C src = align == AlignCorners::on ? ratio * static_cast<C>(o)
                                    : ratio * (static_cast<C>(o) + C(0.5)) - C(0.5);
  // Pixel-centre coordinates fall below 0 for the first output rows: clamp, so they copy the
  // edge instead of extrapolating.
  src = src > C(0) ? src : C(0);
  const int64_t last = in - 1;
  const int64_t i0 = static_cast<int64_t>(src) < last ? static_cast<int64_t>(src) : last;
  C l1 = src - static_cast<C>(i0);
  l1 = l1 < C(0) ? C(0) : (l1 > C(1) ? C(1) : l1);
  return {i0, i0 < last ? i0 + 1 : i0, C(1) - l1, l1};
}

// The taps of every output position of one dim, for the CPU kernels (host only).
template <class C>
std::vector<Taps<C>> linear_taps(int64_t in, int64_t out, int64_t scale, AlignCorners align) {
  const C ratio = linear_ratio<C>(in, out, scale, align);
  std::vector<Taps<C>> taps(static_cast<std::size_t>(out));
  for (int64_t o = 0; o < out; ++o)
    taps[static_cast<std::size_t>(o)] = linear_tap<C>(o, in, ratio, align);
  return taps;
}

}  // namespace rg::detail
