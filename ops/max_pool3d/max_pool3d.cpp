#include "ops/max_pool3d/max_pool3d.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/elementwise/elementwise.h"
#include "ops/max_pool3d/max_pool3d_kernel.h"

namespace rg {

Pool3dGeometry pool3d_geometry(const char* op, const Tensor& x, Pool3dSize k, Pool3dSize s,
                               Pool3dSize p, Pool3dSize dil) {
  RG_CHECK(x.dim() == 5, op, ": input must be 5-D (N, C, D, H, W), got ", x.describe());
  if (s == Pool3dSize{}) s = k;
  Pool3dGeometry g;
  g.planes = x.size(0) * x.size(1);
  for (int a = 0; a < 3; ++a) {
    RG_CHECK(k[a] > 0 && s[a] > 0 && dil[a] > 0, op,
             ": kernel_size, stride and dilation must be > 0, got kernel_size ", k, ", stride ", s,
             ", dilation ", dil);
    RG_CHECK(p[a] >= 0 && p[a] <= k[a] / 2, op, ": padding ", p,
             " must be >= 0 and at most half the kernel_size ", k);
    g.in[a] = x.size(2 + a);
    const int64_t span = g.in[a] + 2 * p[a] - dil[a] * (k[a] - 1) - 1;
    RG_CHECK(span >= 0, op, ": output size would be <= 0 for input ", x.describe(),
             " with kernel_size ", k, ", padding ", p, ", dilation ", dil);
    g.out[a] = span / s[a] + 1;
    g.kernel[a] = k[a], g.stride[a] = s[a], g.padding[a] = p[a], g.dilation[a] = dil[a];
  }
  return g;
}

MaxPool3dResult max_pool3d(const Tensor& x, Pool3dSize kernel_size, Pool3dSize stride,
                           Pool3dSize padding, Pool3dSize dilation) {
  check_same_float("max_pool3d", {x});
  const Pool3dGeometry g = pool3d_geometry("max_pool3d", x, kernel_size, stride, padding, dilation);
  const Tensor xc = x.detach().contiguous();
  const Shape out_shape{x.size(0), x.size(1), g.out[0], g.out[1], g.out[2]};
  MaxPool3dResult r;
  r.output = empty(out_shape, {x.dtype(), x.device()});
  r.indices = empty(out_shape, {DType::i64, x.device()});
  dispatch_device<Kernels::cpu_and_cuda>("max_pool3d", x.device(), [&](auto on) {
    detail::max_pool3d_forward(on, xc, g, r.output, r.indices);
  });
  // The GPU's backward walks the windows (g) over each input element.
  if (needs_grad({x}))
    record_backward("MaxPool3dBackward", {x}, r.output,
                    [indices = saved(r.indices), g](const Tensor& grad) {
                      const Tensor gy = grad.contiguous();
                      return dispatch_device<Kernels::cpu_and_cuda>(
                          "max_pool3d_backward", gy.device(),
                          [&](auto on) { return detail::max_pool3d_backward(on, gy, indices, g); });
                    });
  return r;
}

}  // namespace rg
