#include "ops/cross_entropy/cross_entropy.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/cross_entropy/cross_entropy_kernel.h"

namespace rg {

Tensor cross_entropy(const Tensor& logits_in, const Tensor& target, const Tensor& weight_in,
                     Reduction reduction, int64_t ignore_index, double label_smoothing) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, logits_in, weight_in);
  const Tensor &logits = cast[0], &weight = cast[1];
  RG_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
           "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  detail::CrossEntropyArgs args;
  args.lanes = detail::check_class_target("cross_entropy", logits, target, weight);
  args.reduction = reduction;
  args.ignore_index = ignore_index;
  args.label_smoothing = label_smoothing;
  detail::CrossEntropyForward f = dispatch_device<Kernels::cpu_and_cuda>(
      "cross_entropy", logits.device(),
      [&](auto on) { return detail::cross_entropy_forward(on, logits, target, weight, args); });
  Tensor& out = f.reduced.loss;
  if (needs_grad({logits}))
    record_backward(
        "CrossEntropyBackward", {logits, target, weight}, out,
        [logits = saved(logits), target = saved(target), weight = saved(weight), lse = f.lse, args,
         total_weight = f.reduced.total_weight](const Tensor& g) -> Grads {
          const Tensor gx = dispatch_device<Kernels::cpu_and_cuda>(
              "cross_entropy_backward", logits.device(), [&](auto on) {
                return detail::cross_entropy_backward(on, g, logits, target, weight, lse, args,
                                                      total_weight);
              });
          return {gx, Tensor(), Tensor()};
        });
  return out;
}

}  // namespace rg
