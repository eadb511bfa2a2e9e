#include "ops/count_correct/count_correct.h"

#include "core/dispatch.h"
#include "ops/count_correct/count_correct_kernel.h"

namespace rg {

Tensor count_correct(const Tensor& logits, const Tensor& labels) {
  constexpr std::string_view op = "count_correct";
  RG_CHECK(logits.defined() && labels.defined(), op, ": logits and labels are required");
  RG_CHECK(is_floating(logits.dtype()) && logits.dim() == 2, op,
           ": logits must be (N, K) floating, got ", logits.describe());
  RG_CHECK(labels.dtype() == DType::i64 && labels.dim() == 1 && labels.size(0) == logits.size(0),
           op, ": labels must be (N) i64 with N = ", logits.size(0), " (the logits' rows), got ",
           labels.describe());
  RG_CHECK(labels.device() == logits.device(), op, ": device mismatch, logits ", logits.describe(),
           " vs labels ", labels.describe());
  RG_CHECK(logits.size(1) > 0 || logits.size(0) == 0, op,
           ": logits have no classes (K = 0): no argmax, got ", logits.describe());
  const Tensor x = logits.detach().contiguous(), y = labels.detach().contiguous();
  const Tensor out = empty({}, {DType::f64, logits.device()});
  dispatch_device<Kernels::cpu_and_cuda>(op, logits.device(),
                                         [&](auto on) { count_correct(on, out, x, y); });
  return out;
}

}  // namespace rg
