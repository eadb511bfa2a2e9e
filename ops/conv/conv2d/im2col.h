#pragma once
// im2col / col2im: the layout change that turns a 2-D convolution into a GEMM. Shared by
// ops/conv2d and ops/conv_transpose2d (this folder is not an op).
//
// One image x: (C, H, W). Its column matrix col: (C·kH·kW, Ho·Wo), row r = (c, i, j) holding,
// for every output position (ho, wo), the input pixel the kernel tap (i, j) of channel c sees:
//   col[(c·kH + i)·kW + j, ho·Wo + wo] = x[c, ho·sH − pH + i·dH, wo·sW − pW + j·dW]
// (zero where that falls in the padding). Then y = W · col for W: (O, C·kH·kW).
// col2im is the adjoint: it scatters-adds every col entry back onto the pixel it came from.
//
// `ld` is the row stride of col in elements (>= Ho·Wo), so several images can sit side by side
// in one wide column matrix and share one GEMM (what keeps small spatial sizes fast).

#include <cstdint>

namespace rg {

struct Im2colGeometry {
  int64_t channels = 0, height = 0, width = 0;  // of the image: (C, H, W)
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t out_h = 0, out_w = 0;  // Ho, Wo

  int64_t rows() const { return channels * kernel_h * kernel_w; }  // C·kH·kW
  int64_t cols() const { return out_h * out_w; }                   // Ho·Wo
  // True when col is the image itself (1x1 kernel, stride 1, no padding, Ho·Wo = H·W).
  bool is_identity() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 &&
           pad_w == 0 && out_h == height && out_w == width;
  }
};

// col[r, p] (row stride ld) = the tap of x: (C, H, W) described above. Writes every entry.
template <class T>
void im2col(const T* x, const Im2colGeometry& g, T* col, int64_t ld);

// x[c, h, w] += every col entry that im2col would have read from it. Accumulates: the caller
// zeroes x first.
template <class T>
void col2im(const T* col, int64_t ld, const Im2colGeometry& g, T* x);

}  // namespace rg
