#include "ops/avg_pool2d/avg_pool2d.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/avg_pool2d/avg_pool2d_kernel.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

class AvgPool2dBackward : public Node {
 public:
  AvgPool2dBackward(const Pool2dGeometry& g, CountIncludePad count) : g_(g), count_(count) {}
  std::string name() const override { return "AvgPool2dBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gy = g[0].contiguous();
    return {dispatch_device<Kernels::cpu_and_cuda>(
        "avg_pool2d_backward", gy.device(),
        [&](auto on) { return detail::avg_pool2d_backward(on, gy, g_, count_); })};
  }

 private:
  Pool2dGeometry g_;
  CountIncludePad count_;
};

}  // namespace

Tensor avg_pool2d(const Tensor& x, Pool2dSize kernel_size, Pool2dSize stride, Pool2dSize padding,
                  CeilMode ceil_mode, CountIncludePad count_include_pad) {
  check_same_float("avg_pool2d", {x});
  const Pool2dGeometry g =
      pool2d_geometry("avg_pool2d", x, kernel_size, stride, padding, 1, ceil_mode);
  Tensor y = empty({g.n, g.c, g.oh, g.ow}, {x.dtype(), x.device()});
  const Tensor xc = x.detach().contiguous();
  dispatch_device<Kernels::cpu_and_cuda>("avg_pool2d", x.device(), [&](auto on) {
    detail::avg_pool2d_forward(on, xc, g, count_include_pad, y);
  });
  if (needs_grad({x})) record(std::make_shared<AvgPool2dBackward>(g, count_include_pad), {x}, {&y});
  return y;
}

}  // namespace rg
