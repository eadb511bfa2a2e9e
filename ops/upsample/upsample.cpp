#include "ops/upsample/upsample.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/elementwise/elementwise.h"
#include "ops/upsample/upsample_kernel.h"

namespace rg {
namespace {

const char* mode_name(UpsampleMode mode) {
  return mode == UpsampleMode::nearest ? "nearest" : "bilinear";
}

class UpsampleBackward : public Node {
 public:
  UpsampleBackward(Shape input_shape, int64_t scale, UpsampleMode mode, AlignCorners align)
      : input_shape_(std::move(input_shape)), scale_(scale), mode_(mode), align_(align) {}
  std::string name() const override {
    return mode_ == UpsampleMode::nearest ? "UpsampleNearestBackward" : "UpsampleBilinearBackward";
  }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gy = g[0].contiguous();
    return {dispatch_device<Kernels::cpu_and_cuda>("upsample_backward", gy.device(), [&](auto on) {
      return detail::upsample_backward(on, gy, input_shape_, scale_, mode_, align_);
    })};
  }

 private:
  Shape input_shape_;
  int64_t scale_;
  UpsampleMode mode_;
  AlignCorners align_;
};

}  // namespace

Tensor upsample(const Tensor& x, int64_t scale_factor, UpsampleMode mode,
                AlignCorners align_corners) {
  check_same_float("upsample", {x});
  RG_CHECK(x.dim() == 4, "upsample: expected a 4-D input (N, C, H, W), got ", x.describe());
  RG_CHECK(scale_factor >= 1, "upsample: scale_factor must be an integer >= 1, got ", scale_factor,
           " for input ", x.describe());
  RG_CHECK(mode == UpsampleMode::bilinear || align_corners == AlignCorners::off,
           "upsample: align_corners can only be set with bilinear mode, got mode ", mode_name(mode),
           " for input ", x.describe());
  RG_CHECK(x.size(2) > 0 && x.size(3) > 0, "upsample: expected non-empty spatial dims (H, W), got ",
           x.describe());
  Tensor y = empty({x.size(0), x.size(1), x.size(2) * scale_factor, x.size(3) * scale_factor},
                   {x.dtype(), x.device()});
  const Tensor xc = x.detach().contiguous();
  dispatch_device<Kernels::cpu_and_cuda>("upsample", x.device(), [&](auto on) {
    detail::upsample_forward(on, xc, scale_factor, mode, align_corners, y);
  });
  if (needs_grad({x}))
    record(std::make_shared<UpsampleBackward>(x.shape(), scale_factor, mode, align_corners), {x},
           {&y});
  return y;
}

}  // namespace rg
