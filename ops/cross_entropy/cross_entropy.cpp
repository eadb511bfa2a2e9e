#include "ops/cross_entropy/cross_entropy.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/cross_entropy/cross_entropy_kernel.h"

namespace rg {
namespace {

class CrossEntropyBackward : public Node {
 public:
  CrossEntropyBackward(Tensor logits, Tensor target, Tensor weight, Tensor lse,
                       detail::CrossEntropyArgs args, Tensor total_weight)
      : logits_(std::move(logits)),
        target_(std::move(target)),
        weight_(std::move(weight)),
        lse_(std::move(lse)),
        args_(args),
        total_weight_(std::move(total_weight)) {}
  std::string name() const override { return "CrossEntropyBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gx = dispatch_device<Kernels::cpu_and_cuda>(
        "cross_entropy_backward", logits_.device(), [&](auto on) {
          return detail::cross_entropy_backward(on, g[0], logits_, target_, weight_, lse_, args_,
                                                total_weight_);
        });
    return {gx, Tensor(), Tensor()};
  }
  void release_saved() override { logits_ = target_ = weight_ = lse_ = total_weight_ = Tensor(); }

 private:
  Tensor logits_, target_, weight_, lse_;
  detail::CrossEntropyArgs args_;
  Tensor total_weight_;
};

}  // namespace

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
    record(std::make_shared<CrossEntropyBackward>(saved(logits), saved(target), saved(weight),
                                                  f.lse, args, f.reduced.total_weight),
           {logits, target, weight}, {&out});
  return out;
}

}  // namespace rg
