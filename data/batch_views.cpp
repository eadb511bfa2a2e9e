#include "data/batch_views.h"

#include "core/dispatch.h"

namespace rg::data {

Tensor shifted_view(const Tensor& images, int64_t dy, int64_t dx, Mirror mirror) {
  RG_CHECK(images.dim() == 4 && is_floating(images.dtype()),
           "shifted_view: expected floating images (N, C, H, W), got ", images.describe());
  const int64_t h = images.size(2), w = images.size(3);
  RG_CHECK(dy > -h && dy < h && dx > -w && dx < w, "shifted_view: a shift by (", dy, ", ", dx,
           ") reflects beyond images ", images.describe());
  const Tensor src = images.contiguous();
  Tensor out = empty_like(src);
  dispatch_device<Kernels::cpu_and_cuda>("shifted_view", src.device(), [&](auto on) {
    detail::shifted_view(on, src, dy, dx, mirror, out);
  });
  return out;
}

Tensor flip_horizontal(const Tensor& images) {
  RG_CHECK(images.dim() == 4 && is_floating(images.dtype()),
           "flip_horizontal: expected floating images (N, C, H, W), got ", images.describe());
  return shifted_view(images, 0, 0, Mirror::yes);
}

Tensor shift_reflect(const Tensor& images, int64_t by) {
  RG_CHECK(images.dim() == 4 && is_floating(images.dtype()),
           "shift_reflect: expected floating images (N, C, H, W), got ", images.describe());
  RG_CHECK((by == 1 || by == -1) && images.size(2) > 1 && images.size(3) > 1,
           "shift_reflect: shifts by 1 or -1 pixel of images at least 2x2, got ", by, " and ",
           images.describe());
  return shifted_view(images, by, by, Mirror::no);
}

}  // namespace rg::data
