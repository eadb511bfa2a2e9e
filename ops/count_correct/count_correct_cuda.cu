// count_correct on the GPU: the kernel of count_correct_kernels.cuh on the current stream.
#include "core/cuda/stream.h"
#include "ops/count_correct/count_correct_kernels.cuh"

namespace rg {

void count_correct(OnCuda, const Tensor& out, const Tensor& logits, const Tensor& labels) {
  cuda::DeviceGuard guard(logits.device().index);
  launch_count_correct(out, logits, labels, cuda::current_stream(logits.device().index));
}

}  // namespace rg
