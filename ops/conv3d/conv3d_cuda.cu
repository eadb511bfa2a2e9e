// conv3d on a GPU: cuDNN's N-d convolution graphs (ops/conv_cudnn, the same plans and cache as
// conv2d's), run on the current stream. f16/bf16 go to cuDNN as they are and accumulate in f32;
// the bias is added by the pointwise kernel, and its gradient is the sum kernel over (N, D, H, W).
#include "ops/conv3d/conv3d_kernel.h"
#include "ops/conv_cudnn/conv_run.h"
#include "ops/ops.h"

namespace rg {
namespace {

std::vector<int64_t> triple(const Conv3dTriple& t) {
  return {t[0], t[1], t[2]};
}

cuda::ConvProblem problem(cuda::ConvDirection direction, const Tensor& x, const Tensor& w,
                          const Tensor& y, const Conv3dParams& p) {
  return cuda::conv_problem(direction, x, w, y, triple(p.stride), triple(p.padding),
                            triple(p.dilation));
}

}  // namespace

Tensor conv3d_forward(OnCuda, const Tensor& x_in, const Tensor& w_in, const Tensor& bias,
                      const Conv3dParams& p) {
  const Shape y_shape = conv3d_output_shape("conv3d", x_in.shape(), w_in.shape(), p);
  const Tensor x = x_in.detach().contiguous(), w = w_in.detach().contiguous();
  Tensor y = empty(y_shape, {x.dtype(), x.device()});
  cuda::run_conv(problem(cuda::ConvDirection::forward, x, w, y, p), x, w, y);
  if (bias.defined()) y = add(y, bias.detach().view({1, y_shape[1], 1, 1, 1}));
  return y;
}

Tensor conv3d_backward_data(OnCuda, const Tensor& gy_in, const Tensor& w_in, const Shape& x_shape,
                            const Conv3dParams& p) {
  conv3d_output_shape("conv3d_backward_data", x_shape, w_in.shape(), p);  // checks the params
  const Tensor gy = gy_in.detach().contiguous(), w = w_in.detach().contiguous();
  Tensor gx = empty(x_shape, {gy.dtype(), gy.device()});
  cuda::run_conv(problem(cuda::ConvDirection::backward_data, gx, w, gy, p), gx, w, gy);
  return gx;
}

Tensor conv3d_backward_weight(OnCuda, const Tensor& gy_in, const Tensor& x_in,
                              const Shape& weight_shape, const Conv3dParams& p) {
  conv3d_output_shape("conv3d_backward_weight", x_in.shape(), weight_shape, p);
  const Tensor gy = gy_in.detach().contiguous(), x = x_in.detach().contiguous();
  Tensor gw = empty(weight_shape, {gy.dtype(), gy.device()});
  cuda::run_conv(problem(cuda::ConvDirection::backward_filter, x, gw, gy, p), x, gw, gy);
  return gw;
}

Tensor conv3d_backward_bias(OnCuda, const Tensor& gy) {
  RG_CHECK(gy.dim() == 5, "conv3d_backward_bias: expected a 5-D (N, O, Do, Ho, Wo) gradient, got ",
           gy.describe());
  return sum(gy.detach(), {0, 2, 3, 4});
}

}  // namespace rg
