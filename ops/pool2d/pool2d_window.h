#pragma once
// Window geometry shared by max_pool2d and avg_pool2d (header only; each op keeps its own
// kernels in its folder): the (h, w) pair type, ceil mode, PyTorch's argument checks and its
// output-size rule, and the grain that spreads N·C planes over the threads.
//
// Letters: x: (N, C, H, W) -> y: (N, C, OH, OW); a window of kernel (KH, KW), stride (SH, SW),
// padding (PH, PW), dilation (DH, DW).

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "core/error.h"
#include "core/tensor.h"

namespace rg {

// An (h, w) pair; one integer means the same value for both, as PyTorch's int-or-tuple
// arguments: max_pool2d(x, 2) or max_pool2d(x, {3, 2}).
struct Pool2dSize {
  int64_t h = 0, w = 0;
  constexpr Pool2dSize() = default;
  constexpr Pool2dSize(int64_t s) : h(s), w(s) {}  // NOLINT(google-explicit-constructor)
  constexpr Pool2dSize(int64_t h_, int64_t w_) : h(h_), w(w_) {}
  friend bool operator==(const Pool2dSize&, const Pool2dSize&) = default;
};

inline std::ostream& operator<<(std::ostream& out, const Pool2dSize& s) {
  return out << '(' << s.h << ", " << s.w << ')';
}

// PyTorch's ceil_mode: `on` rounds the output size up, so a last, partial window covers the
// rows/columns that floor mode would drop (it must still start inside the input or the left
// padding).
enum class CeilMode { off, on };

struct Pool2dGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t oh = 0, ow = 0;              // output
  Pool2dSize kernel, stride, padding, dilation;
};

namespace detail {

inline int64_t floor_div(int64_t a, int64_t b) {  // b > 0; rounds towards -infinity
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// PyTorch's pooling_output_shape for one spatial dim.
inline int64_t pool_output_length(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
                                  CeilMode ceil) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = floor_div(span + (ceil == CeilMode::on ? s - 1 : 0), s) + 1;
  // A window starting in the right padding would see padding only: drop it.
  if (ceil == CeilMode::on && (out - 1) * s >= in + p) --out;
  return out;
}

}  // namespace detail

// Checks x and the window arguments as PyTorch does and returns the geometry. A zero stride
// (the default {}) means stride = kernel, PyTorch's stride=None.
inline Pool2dGeometry pool2d_geometry(std::string_view op, const Tensor& x, Pool2dSize kernel,
                                      Pool2dSize stride, Pool2dSize padding, Pool2dSize dilation,
                                      CeilMode ceil) {
  RG_CHECK(x.dim() == 4, op, ": expected a 4-D input (N, C, H, W), got ", x.describe());
  RG_CHECK(kernel.h > 0 && kernel.w > 0, op, ": kernel_size must be positive, got ", kernel,
           " for input ", x.describe());
  if (stride == Pool2dSize{}) stride = kernel;
  RG_CHECK(stride.h > 0 && stride.w > 0, op, ": stride must be positive, got ", stride,
           " for input ", x.describe());
  RG_CHECK(dilation.h > 0 && dilation.w > 0, op, ": dilation must be positive, got ", dilation,
           " for input ", x.describe());
  RG_CHECK(padding.h >= 0 && padding.w >= 0, op, ": padding must be non-negative, got ", padding,
           " for input ", x.describe());
  // PyTorch's rule (it compares with the kernel, not the dilated extent): more padding could
  // make windows that see padding only.
  RG_CHECK(padding.h <= kernel.h / 2 && padding.w <= kernel.w / 2, op, ": padding ", padding,
           " must be at most half of kernel_size ", kernel, " for input ", x.describe());
  Pool2dGeometry g;
  g.n = x.size(0);
  g.c = x.size(1);
  g.h = x.size(2);
  g.w = x.size(3);
  g.oh = detail::pool_output_length(g.h, kernel.h, stride.h, padding.h, dilation.h, ceil);
  g.ow = detail::pool_output_length(g.w, kernel.w, stride.w, padding.w, dilation.w, ceil);
  RG_CHECK(g.oh > 0 && g.ow > 0, op, ": input ", x.describe(), " is too small for kernel_size ",
           kernel, ", stride ", stride, ", padding ", padding, ", dilation ", dilation,
           ": the output would be (", g.oh, ", ", g.ow, ")");
  g.kernel = kernel;
  g.stride = stride;
  g.padding = padding;
  g.dilation = dilation;
  return g;
}

// parallel_for grain over planes: enough planes per chunk for ~16K inner steps, so tiny
// feature maps are not split across threads for nothing.
inline int64_t plane_grain(int64_t work_per_plane) {
  return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, work_per_plane));
}

}  // namespace rg
