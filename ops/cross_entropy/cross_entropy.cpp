#include "ops/cross_entropy/cross_entropy.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/cross_entropy/cross_entropy_kernel.h"
#include "ops/nll_loss/class_target.h"

namespace rg {
namespace {

class CrossEntropyBackward : public Node {
 public:
  CrossEntropyBackward(Tensor logits, Tensor target, Tensor weight, Tensor lse,
                       detail::CrossEntropyArgs args, double total_weight)
      : logits_(std::move(logits)),
        target_(std::move(target)),
        weight_(std::move(weight)),
        lse_(std::move(lse)),
        args_(args),
        total_weight_(total_weight) {}
  std::string name() const override { return "CrossEntropyBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {detail::cross_entropy_backward_cpu(g[0], logits_, target_, weight_, lse_, args_,
                                               total_weight_),
            Tensor(), Tensor()};
  }
  void release_saved() override { logits_ = target_ = weight_ = lse_ = Tensor(); }

 private:
  Tensor logits_, target_, weight_, lse_;
  detail::CrossEntropyArgs args_;
  double total_weight_;
};

}  // namespace

Tensor cross_entropy(const Tensor& logits_in, const Tensor& target, const Tensor& weight_in,

                     Reduction reduction, int64_t ignore_index, double label_smoothing) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, logits_in, weight_in);
  const Tensor &logits = cast[0], &weight = cast[1];
  RG_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
           "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  detail::CrossEntropyArgs args;
  args.lanes = detail::check_class_target("cross_entropy", logits, target, weight, ignore_index);
  args.reduction = reduction;
  args.ignore_index = ignore_index;
  args.label_smoothing = label_smoothing;
  Tensor lse;
  double total_weight = 0;
  Tensor out = detail::cross_entropy_cpu(logits, target, weight, args, lse, total_weight);
  if (needs_grad({logits}))
    record(std::make_shared<CrossEntropyBackward>(saved(logits), saved(target), saved(weight), lse,
                                                  args, total_weight),
           {logits, target, weight}, {&out});
  return out;
}

}  // namespace rg
