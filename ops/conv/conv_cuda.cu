// The convolutions on a GPU, every rank: cuDNN graphs (ops/conv/cudnn), planned once per shape,
// dtype, layout and alignment, run on the current stream. f16/bf16 go to cuDNN as they are and
// accumulate in f32; the bias is added by the pointwise kernel, and its gradient is the sum
// kernel over every axis but the channels.
//
// Layout: every operand of one cuDNN call is in one memory format, conv_memory_format's —
// channels-last when the activation (or the weight) is, as PyTorch's
// cudnn_conv_suggest_memory_format: cuDNN's fast 16-bit engines read NHWC, and a mixed call
// would transpose inside cuDNN or find no engine. The weight, an NCHW parameter (checkpoints
// stay NCHW), is converted per call (weights are small beside activations), and its gradient is
// handed back NCHW, the layout its optimizer and accumulation expect.
#include "ops/conv/conv_kernel.h"
#include "ops/conv/cudnn/conv_run.h"
#include "ops/ops.h"

namespace rg {
namespace {

template <int N>
std::vector<int64_t> as_vector(const ConvSize<N>& s) {
  return {s.begin(), s.end()};
}

template <int N>
cuda::ConvProblem problem(cuda::ConvDirection direction, const Tensor& x, const Tensor& w,
                          const Tensor& y, const ConvParams<N>& p) {
  return cuda::conv_problem(direction, x, w, y, as_vector<N>(p.stride), as_vector<N>(p.padding),
                            as_vector<N>(p.dilation));
}

// The plan mode of the process's settings: deterministic_convolutions() overrides
// benchmark_convolutions().
cuda::ConvPlanMode plan_mode() {
  if (deterministic_convolutions()) return cuda::ConvPlanMode::deterministic;
  if (benchmark_convolutions()) return cuda::ConvPlanMode::benchmark;
  return cuda::ConvPlanMode::heuristic;
}

// (1, O, 1, ..., 1): the bias broadcast over a batch of rank-N outputs.
Shape bias_view(int64_t channels, int rank) {
  Shape s(static_cast<size_t>(rank) + 2, 1);
  s[1] = channels;
  return s;
}

}  // namespace

template <int N>
Tensor conv_forward(OnCuda, const Tensor& x_in, const Tensor& w_in, const Tensor& bias,
                    const ConvParams<N>& p) {
  const std::string_view op = kConvName<N>;
  const Shape y_shape = conv_output_shape<N>(op, x_in.shape(), w_in.shape(), p);
  RG_CHECK(!bias.defined() || bias.shape() == Shape{y_shape[1]}, op, ": bias must be (", y_shape[1],
           ") for weight ", w_in.describe(), ", got ", bias.describe());
  const MemoryFormat format = cuda::conv_memory_format(x_in, w_in);
  const Tensor x = x_in.detach().contiguous(format), w = w_in.detach().contiguous(format);
  Tensor y = empty(y_shape, {x.dtype(), x.device()}, format);
  cuda::run_conv(problem<N>(cuda::ConvDirection::forward, x, w, y, p), x, w, y, plan_mode());
  if (bias.defined()) y = add(y, bias.detach().view(bias_view(y_shape[1], N)));
  return y;
}

template <int N>
Tensor conv_backward_data(OnCuda, const Tensor& gy_in, const Tensor& w_in, const Shape& x_shape,
                          const ConvParams<N>& p) {
  // Checks the params against the shapes.
  conv_output_shape<N>(std::string(kConvName<N>) + "_backward_data", x_shape, w_in.shape(), p);
  const MemoryFormat format = cuda::conv_memory_format(gy_in, w_in);
  const Tensor gy = gy_in.detach().contiguous(format), w = w_in.detach().contiguous(format);
  Tensor gx = empty(x_shape, {gy.dtype(), gy.device()}, format);
  cuda::run_conv(problem<N>(cuda::ConvDirection::backward_data, gx, w, gy, p), gx, w, gy,
                 plan_mode());
  return gx;
}

template <int N>
Tensor conv_backward_weight(OnCuda, const Tensor& gy_in, const Tensor& x_in,
                            const Shape& weight_shape, const ConvParams<N>& p) {
  conv_output_shape<N>(std::string(kConvName<N>) + "_backward_weight", x_in.shape(), weight_shape,
                       p);
  const MemoryFormat format = cuda::conv_memory_format(x_in, gy_in);
  const Tensor gy = gy_in.detach().contiguous(format), x = x_in.detach().contiguous(format);
  Tensor gw = empty(weight_shape, {gy.dtype(), gy.device()}, format);
  cuda::run_conv(problem<N>(cuda::ConvDirection::backward_filter, x, gw, gy, p), x, gw, gy,
                 plan_mode());
  return gw.contiguous();
}

template <int N>
Tensor conv_backward_bias(OnCuda, const Tensor& gy) {
  std::vector<int64_t> axes{0};
  for (int a = 0; a < N; ++a) axes.push_back(2 + a);
  return sum(gy.detach(), axes);
}

#define RG_CONV_CUDA_RANK(N)                                                                  \
  template Tensor conv_forward<N>(OnCuda, const Tensor&, const Tensor&, const Tensor&,        \
                                  const ConvParams<N>&);                                      \
  template Tensor conv_backward_data<N>(OnCuda, const Tensor&, const Tensor&, const Shape&,   \
                                        const ConvParams<N>&);                                \
  template Tensor conv_backward_weight<N>(OnCuda, const Tensor&, const Tensor&, const Shape&, \
                                          const ConvParams<N>&);                              \
  template Tensor conv_backward_bias<N>(OnCuda, const Tensor&);
RG_CONV_CUDA_RANK(2)
RG_CONV_CUDA_RANK(3)
#undef RG_CONV_CUDA_RANK

}  // namespace rg
