#pragma once
// The clipped window of one avg_pool2d output and its divisor (PyTorch's rule, see
// avg_pool2d.h), host/device: the CPU kernels and the GPU kernels compute it with this code.

#include <cstdint>

#include "core/macros.h"
#include "ops/avg_pool2d/avg_pool2d.h"

namespace rg::detail {

struct AvgPoolWindow {
  int64_t h0, h1, w0, w1;  // [h0, h1) × [w0, w1), inside the input; empty when h0 >= h1
  int64_t divisor;
};

RG_HOST_DEVICE inline AvgPoolWindow avg_pool_window(const Pool2dGeometry& g, CountIncludePad count,
                                                    int64_t oh, int64_t ow) {
  AvgPoolWindow win;
  win.h0 = oh * g.stride.h - g.padding.h;
  win.w0 = ow * g.stride.w - g.padding.w;
  // Clipped to the padded input first: that area is the divisor with CountIncludePad::on.
  win.h1 = win.h0 + g.kernel.h < g.h + g.padding.h ? win.h0 + g.kernel.h : g.h + g.padding.h;
  win.w1 = win.w0 + g.kernel.w < g.w + g.padding.w ? win.w0 + g.kernel.w : g.w + g.padding.w;
  const int64_t padded_area = (win.h1 - win.h0) * (win.w1 - win.w0);
  win.h0 = win.h0 > 0 ? win.h0 : 0;
  win.w0 = win.w0 > 0 ? win.w0 : 0;
  win.h1 = win.h1 < g.h ? win.h1 : g.h;
  win.w1 = win.w1 < g.w ? win.w1 : g.w;
  win.divisor = count == CountIncludePad::on ? padded_area : (win.h1 - win.h0) * (win.w1 - win.w0);
  return win;
}

}  // namespace rg::detail
