#include "ops/nll_loss/nll_loss.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/nll_loss/nll_loss_kernel.h"

namespace rg {

Tensor nll_loss(const Tensor& log_probs_in, const Tensor& target, const Tensor& class_weight,
                Reduction reduction, int64_t ignore_index) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, log_probs_in, class_weight);
  const Tensor &log_probs = cast[0], &weight_in = cast[1];
  detail::ClassTargetArgs args;
  args.lanes = detail::check_class_target("nll_loss", log_probs, target, weight_in);
  args.reduction = reduction;
  args.ignore_index = ignore_index;
  const Tensor weight = weight_in.defined() ? weight_in.contiguous() : Tensor();
  detail::ReducedLoss r = dispatch_device<Kernels::cpu_and_cuda>(
      "nll_loss", log_probs.device(),
      [&](auto on) { return detail::nll_loss_forward(on, log_probs, target, weight, args); });
  if (needs_grad({log_probs}))
    record_backward(
        "NllLossBackward", {log_probs, target, weight_in}, r.loss,
        [target = saved(target.contiguous()), weight = saved(weight), x_shape = log_probs.shape(),
         args, total_weight = r.total_weight](const Tensor& g) -> Grads {
          const Tensor gx =
              dispatch_device<Kernels::cpu_and_cuda>("nll_loss_backward", g.device(), [&](auto on) {
                return detail::nll_loss_backward(on, g, target, weight, x_shape, args,
                                                 total_weight);
              });
          return {gx, Tensor(), Tensor()};
        });
  return r.loss;
}

}  // namespace rg
