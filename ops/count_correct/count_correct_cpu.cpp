// The CPU kernel of count_correct: the plain reference the CUDA kernel is tested against.
#include "core/dtype.h"
#include "ops/count_correct/count_correct_kernel.h"

namespace rg {

void count_correct(OnCpu, const Tensor& out, const Tensor& logits, const Tensor& labels) {
  const int64_t n = logits.size(0), k = logits.size(1);
  const int64_t* label = labels.data<int64_t>();
  int64_t correct = 0;
  dispatch_floating(logits.dtype(), "count_correct", [&](auto tag) {
    using T = decltype(tag);
    const T* rows = logits.data<T>();
    for (int64_t i = 0; i < n; ++i)
      correct += row_is_correct<compute_t<T>>(rows + i * k, k, label[i]) ? 1 : 0;
  });
  out.data<double>()[0] = static_cast<double>(correct);
}

}  // namespace rg
