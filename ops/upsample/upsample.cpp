#include "ops/upsample/upsample.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/elementwise/elementwise.h"
#include "ops/upsample/upsample_kernel.h"

namespace rg {
namespace {

const char* mode_name(UpsampleMode mode) {
  switch (mode) {
    case UpsampleMode::nearest:
      return "nearest";
    case UpsampleMode::bilinear:
      return "bilinear";
    case UpsampleMode::trilinear:
      return "trilinear";
  }
  return "?";
}

const char* backward_name(UpsampleMode mode) {
  switch (mode) {
    case UpsampleMode::nearest:
      return "UpsampleNearestBackward";
    case UpsampleMode::bilinear:
      return "UpsampleBilinearBackward";
    case UpsampleMode::trilinear:
      return "UpsampleTrilinearBackward";
  }
  return "UpsampleBackward";
}

}  // namespace

Tensor upsample(const Tensor& x, int64_t scale_factor, UpsampleMode mode,
                AlignCorners align_corners) {
  check_same_float("upsample", {x});
  RG_CHECK(x.dim() == 4 || x.dim() == 5,
           "upsample: expected a 4-D input (N, C, H, W) or a 5-D input (N, C, D, H, W), got ",
           x.describe());
  const bool volume = x.dim() == 5;
  RG_CHECK(
      mode != UpsampleMode::bilinear || !volume,
      "upsample: bilinear mode needs a 4-D input (N, C, H, W); use trilinear for volumes, got ",
      x.describe());
  RG_CHECK(mode != UpsampleMode::trilinear || volume,
           "upsample: trilinear mode needs a 5-D input (N, C, D, H, W); use bilinear for images, "
           "got ",
           x.describe());
  RG_CHECK(scale_factor >= 1, "upsample: scale_factor must be an integer >= 1, got ", scale_factor,
           " for input ", x.describe());
  RG_CHECK(mode != UpsampleMode::nearest || align_corners == AlignCorners::off,
           "upsample: align_corners can only be set with bilinear or trilinear mode, got mode ",
           mode_name(mode), " for input ", x.describe());
  Shape out_shape = x.shape();
  for (int64_t d = 2; d < x.dim(); ++d) {
    RG_CHECK(x.size(d) > 0, "upsample: expected non-empty spatial dims, got ", x.describe());
    out_shape[static_cast<std::size_t>(d)] *= scale_factor;
  }
  Tensor y = empty(out_shape, {x.dtype(), x.device()});
  const Tensor xc = x.detach().contiguous();
  dispatch_device<Kernels::cpu_and_cuda>("upsample", x.device(), [&](auto on) {
    if (volume)
      detail::upsample3d_forward(on, xc, scale_factor, mode, align_corners, y);
    else
      detail::upsample_forward(on, xc, scale_factor, mode, align_corners, y);
  });
  if (needs_grad({x}))
    record_backward(
        backward_name(mode), {x}, y,
        [shape = x.shape(), scale_factor, mode, align_corners, volume](const Tensor& g) {
          const Tensor gy = g.contiguous();
          return dispatch_device<Kernels::cpu_and_cuda>(
              "upsample_backward", gy.device(), [&](auto on) {
                return volume ? detail::upsample3d_backward(on, gy, shape, scale_factor, mode,
                                                            align_corners)
                              : detail::upsample_backward(on, gy, shape, scale_factor, mode,
                                                          align_corners);
              });
        });
  return y;
}

}  // namespace rg
