#include "ops/max_pool2d/max_pool2d.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

class MaxPool2dBackward : public Node {
 public:
  MaxPool2dBackward(Tensor indices, Shape input_shape)
      : indices_(std::move(indices)), input_shape_(std::move(input_shape)) {}
  std::string name() const override { return "MaxPool2dBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gy = g[0].contiguous();
    Tensor gx = zeros(input_shape_, {gy.dtype(), gy.device()});
    max_pool2d_backward_cpu(gy, indices_, gx);
    return {gx};
  }
  void release_saved() override { indices_ = Tensor(); }

 private:
  Tensor indices_;
  Shape input_shape_;
};

}  // namespace

MaxPool2dResult max_pool2d(const Tensor& x, Pool2dSize kernel_size, Pool2dSize stride,
                           Pool2dSize padding, Pool2dSize dilation, CeilMode ceil_mode) {
  check_same_float("max_pool2d", {x});
  const Pool2dGeometry g =
      pool2d_geometry("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode);
  check_cpu("max_pool2d", {x});
  const Tensor xc = x.detach().contiguous();
  MaxPool2dResult r;
  r.output = empty({g.n, g.c, g.oh, g.ow}, {x.dtype(), x.device()});
  r.indices = empty({g.n, g.c, g.oh, g.ow}, {DType::i64, x.device()});
  max_pool2d_forward_cpu(xc, g, r.output, r.indices);
  if (needs_grad({x}))
    record(std::make_shared<MaxPool2dBackward>(saved(r.indices), x.shape()), {x}, {&r.output});
  return r;
}

}  // namespace rg
