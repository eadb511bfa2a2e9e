#pragma once
// vol2col / col2vol: the 3-D im2col (ops/conv/conv2d/im2col.h) that turns a 3-D convolution into a
// GEMM, for a slab of output depths at a time so the column matrix of a large volume stays small.
//
// One volume x: (C, D, H, W). Its column matrix over output depths [d0, d1):
//   col[((c·kD + a)·kH + i)·kW + j, (od − d0)·Ho·Wo + oh·Wo + ow]
//       = x[c, od·sD − pD + a·dD, oh·sH − pH + i·dH, ow·sW − pW + j·dW]   (0 outside x)
// so that y[:, od, :, :] for od in [d0, d1) = W · col for W: (O, C·kD·kH·kW).
// col2vol is the adjoint: it adds every col entry back onto the voxel it came from.
// `ld` is the row stride of col in elements (>= (d1 − d0)·Ho·Wo).

#include <cstdint>

namespace rg {

struct Vol2colGeometry {
  int64_t channels = 0, depth = 0, height = 0, width = 0;  // of the volume: (C, D, H, W)
  int64_t kernel[3] = {1, 1, 1};                           // kD, kH, kW
  int64_t stride[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  int64_t out[3] = {0, 0, 0};  // Do, Ho, Wo

  int64_t rows() const { return channels * kernel[0] * kernel[1] * kernel[2]; }
  int64_t plane() const { return out[1] * out[2]; }  // Ho·Wo: columns per output depth
};

// col (rows() × (d1 − d0)·Ho·Wo, row stride ld) = the taps described above; writes every entry.
// T: float, double, BFloat16 (a copy: bf16 stays bf16).
// Rows of channels [c0, c1) only (the caller may split the channels over threads).
template <class T>
void vol2col(const T* x, const Vol2colGeometry& g, int64_t d0, int64_t d1, int64_t c0, int64_t c1,
             T* col, int64_t ld);

// x[c, ...] += every col entry of channels [c0, c1) that vol2col would have read from it.
// Accumulates: the caller zeroes x first. Channels write disjoint parts of x, so threads may
// take disjoint channel ranges.
template <class T>
void col2vol(const T* col, int64_t ld, const Vol2colGeometry& g, int64_t d0, int64_t d1, int64_t c0,
             int64_t c1, T* x);

}  // namespace rg
