#include "train/device_eval.h"

#include "core/autograd.h"
#include "ops/ops.h"

namespace rg::train {

DeviceEvaluator::DeviceEvaluator(const parallel::DistributedSampler& sampler, const Device& device)
    : cursor_(sampler),
      device_(device),
      correct_(zeros({}, {DType::f64, device})),
      loss_sum_(zeros({}, {DType::f64, device})) {}

void DeviceEvaluator::add(const Tensor& logits, const Tensor& labels) {
  RG_CHECK(logits.dim() == 2 && labels.dim() == 1 && labels.size(0) == logits.size(0) &&
               labels.dtype() == DType::i64 && is_floating(logits.dtype()),
           "DeviceEvaluator::add: expected logits (B, K) and labels (B) i64, got ",
           logits.describe(), " and ", labels.describe());
  RG_CHECK(logits.device() == device_ && labels.device() == device_,
           "DeviceEvaluator::add: logits ", logits.describe(), " and labels ", labels.describe(),
           " must be on the evaluator's device ", device_);
  // The rest of the batch past `real` are padded duplicates: counted on the ranks that own them.
  const int64_t real = cursor_.advance(logits.size(0), "DeviceEvaluator::add");
  if (real == 0) return;
  NoGradGuard no_grad;
  // In f64, as DistributedEvaluator scores them: the same arg-max and loss of each sample.
  const Tensor z = logits.detach().narrow(0, 0, real).to(DType::f64);
  const Tensor y = labels.narrow(0, 0, real);
  loss_sum_ = rg::add(loss_sum_, cross_entropy(z, y, Tensor(), Reduction::sum));
  // With d = predicted − label (whole numbers, exact in f64), relu(1 − d²) is 1 where they agree
  // and 0 elsewhere: a count without a comparison op or a read-back.
  const Tensor d = sub(max(z, 1).indices.to(DType::f64), y.to(DType::f64));
  correct_ = rg::add(correct_, sum(relu(rg::add(neg(mul(d, d)), 1.0))));
  count_ += real;
}

parallel::EvalTotals DeviceEvaluator::all_ranks(parallel::ProcessGroup& group) const {
  const std::vector<double> sums =
      cat({correct_.reshape({1}), loss_sum_.reshape({1})}, 0).to_vector<double>();
  // f64 holds counts exactly up to 2^53.
  Tensor t = from_vector<double>({sums[0], sums[1], static_cast<double>(count_)}, {3},
                                 {DType::f64, Device::cpu()});
  group.allreduce(t, parallel::ReduceOp::sum)->wait();
  const std::vector<double> v = t.to_vector<double>();
  return {static_cast<int64_t>(v[0]), v[1], static_cast<int64_t>(v[2])};
}

}  // namespace rg::train
