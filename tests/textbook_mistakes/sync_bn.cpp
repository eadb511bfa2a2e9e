// A mistake for the grader to catch: plain BatchNorm on each rank's share (README.md).
#include "ops/ops.h"
#include "parallel/textbook/textbook.h"

namespace rg::textbook {

Tensor sync_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                       std::shared_ptr<parallel::ProcessGroup>) {
  const int64_t c = x.size(1);
  return batch_norm(x, weight, bias, zeros({c}, {.dtype = x.dtype()}),
                    ones({c}, {.dtype = x.dtype()}), BatchNormMode::train, 0.1, eps);
}

}  // namespace rg::textbook
