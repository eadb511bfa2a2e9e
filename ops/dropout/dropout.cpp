#include "ops/dropout/dropout.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/graph_capture.h"
#include "ops/dropout/dropout_kernel.h"
#include "ops/elementwise/elementwise.h"

namespace rg {

Tensor dropout(const Tensor& x, double p, DropoutMode mode, Generator& generator) {
  check_same_float("dropout", {x});
  RG_CHECK(p >= 0 && p <= 1, "dropout: probability p must be in [0, 1], got ", p, " (input ",
           x.describe(), ")");
  if (mode == DropoutMode::eval) return x;
  refuse_in_graph_capture(x.device(), "dropout",
                          "its random draw is taken on the host and would repeat at every replay");
  detail::DropoutDraw draw;
  // One draw per call, even for p = 0 or 1, so the generator's stream does not depend on p.
  draw.seed = generator.seed();
  draw.offset = generator.next_offset();
  draw.threshold = static_cast<float>(p);
  // p = 1 keeps nothing: scale 0 instead of 1/0 (which would turn 0·inf into NaN).
  draw.scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  const Tensor xc = x.detach().contiguous();
  Tensor mask = empty(x.shape(), {DType::u8, x.device()});
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  dispatch_device<Kernels::cpu_and_cuda>(
      "dropout", x.device(), [&](auto on) { detail::dropout_forward(on, xc, draw, mask, y); });
  // mask: u8, the shape of x, on x's device: 1 = kept.
  if (needs_grad({x}))
    record_backward("DropoutBackward", {x}, y, [mask, scale = draw.scale](const Tensor& g) {
      const Tensor gy = g.contiguous();
      Tensor gx = empty_like(gy);
      dispatch_device<Kernels::cpu_and_cuda>("dropout_backward", gy.device(), [&](auto on) {
        detail::dropout_backward(on, gy, mask, scale, gx);
      });
      return gx;
    });
  return y;
}

}  // namespace rg
