#include "ops/nll_loss/nll_loss.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/nll_loss/nll_loss_kernel.h"

namespace rg {
namespace {

class NllLossBackward : public Node {
 public:
  NllLossBackward(Tensor target, Tensor weight, Shape x_shape, detail::ClassTargetArgs args,
                  Tensor total_weight)
      : target_(std::move(target)),
        weight_(std::move(weight)),
        x_shape_(std::move(x_shape)),
        args_(args),
        total_weight_(std::move(total_weight)) {}
  std::string name() const override { return "NllLossBackward"; }
  void release_saved() override { target_ = weight_ = total_weight_ = Tensor(); }

  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gx =
        dispatch_device<Kernels::cpu_and_cuda>("nll_loss_backward", g[0].device(), [&](auto on) {
          return detail::nll_loss_backward(on, g[0], target_, weight_, x_shape_, args_,
                                           total_weight_);
        });
    return {gx, Tensor(), Tensor()};
  }

 private:
  Tensor target_, weight_;
  Shape x_shape_;
  detail::ClassTargetArgs args_;
  Tensor total_weight_;
};

}  // namespace

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
    record(std::make_shared<NllLossBackward>(saved(target.contiguous()), saved(weight),
                                             log_probs.shape(), args, r.total_weight),
           {log_probs, target, weight_in}, {&r.loss});
  return r.loss;
}

}  // namespace rg
