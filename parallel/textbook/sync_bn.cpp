// Lesson 4: SyncBatchNorm (docs/learn/4-sync-batch-norm.md). BatchNorm normalises each channel
// with the mean and variance of the batch; with the batch split over ranks, each rank alone
// sees only its share. SyncBN adds up every rank's sums first, so each share is normalised with
// the statistics of the whole batch — exactly what one device with the whole batch computes.
//
//   forward, per channel:  n, Σx, Σx² summed over the ranks (one allreduce)
//                          mean = Σx / n,  var = Σx² / n − mean²,  x̂ = (x − mean) / √(var + ε)
//                          y = weight · x̂ + bias
//   backward:              Σgy and Σgy·x̂ summed over the ranks (one allreduce)
//                          gx = weight / √(var + ε) · (gy − Σgy / n − x̂ · Σgy·x̂ / n)
//                          gweight = Σgy·x̂, gbias = Σgy of this rank's share (DDP averages them)
//
// The sums are in f64: var = E[x²] − E[x]² in f32 loses the variance's digits when the mean is
// large (the real one combines counts, means and M2 instead: Chan's formula).
#include "core/autograd.h"
#include "ops/ops.h"
#include "parallel/textbook/textbook.h"

namespace rg::textbook {

Tensor sync_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                       std::shared_ptr<parallel::ProcessGroup> group) {
  RG_CHECK(x.dim() >= 2, "textbook sync_batch_norm: x must be (N, C, *), got ", x.describe());
  const int64_t c = x.size(1);
  std::vector<int64_t> dims{0};  // every dim but the channels
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Shape channel(static_cast<std::size_t>(x.dim()), 1);  // (1, C, 1, ...): broadcast per channel
  channel[1] = c;

  const Tensor x64 = x.detach().to(DType::f64);  // detached: the backward is written by hand
  Tensor sums = cat({full({1}, static_cast<double>(x.numel() / c), {.dtype = DType::f64}),
                     sum(x64, dims), sum(x64 * x64, dims)});
  group->allreduce(sums, parallel::ReduceOp::sum)->wait();
  const double n = sums.narrow(0, 0, 1).item();
  const Tensor mean = sums.narrow(0, 1, c) / n;
  const Tensor var = sums.narrow(0, 1 + c, c) / n - mean * mean;
  const Tensor invstd = (1.0 / sqrt(var + eps)).view(channel);
  const Tensor xhat = (x64 - mean.view(channel)) * invstd;
  const Tensor w = weight.detach().to(DType::f64).view(channel);
  Tensor y = (xhat * w + bias.detach().to(DType::f64).view(channel)).to(x.dtype());
  if (!needs_grad({x, weight, bias})) return y;

  record_backward("TextbookSyncBatchNormBackward", {x, weight, bias}, y,
                  [=](const Tensor& gy) -> Grads {
                    const Tensor g = gy.to(DType::f64);
                    const Tensor local = cat({sum(g, dims), sum(g * xhat, dims)});
                    Tensor global = local.clone();
                    group->allreduce(global, parallel::ReduceOp::sum)->wait();
                    const Tensor mean_g = (global.narrow(0, 0, c) / n).view(channel);
                    const Tensor mean_gx = (global.narrow(0, c, c) / n).view(channel);
                    const Tensor gx = w * invstd * (g - mean_g - xhat * mean_gx);
                    return {gx.to(x.dtype()), local.narrow(0, c, c).to(weight.dtype()),
                            local.narrow(0, 0, c).to(bias.dtype())};
                  });
  return y;
}

}  // namespace rg::textbook
