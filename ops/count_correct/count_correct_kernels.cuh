#pragma once
// The CUDA kernel of count_correct and its launcher. nvcc compiles this header for the GPU
// (count_correct_cuda.cu); the host compiler compiles it against the kernel emulator for the tests
// (the `kernels` of count_correct_spec.cpp), so keep to what core/cuda/kernel.h provides.

#include "core/cuda/reduce_kernels.cuh"
#include "ops/count_correct/count_correct_kernel.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace count_correct_cuda {

// One block: its threads take rows in turn, each testing whole rows, and the block adds their
// counts. A training batch has ~10³ rows of ~10 classes: one block is ample, and one launch with
// no zero-filled output to add into. Counts are whole numbers below 2^53: exact in double, in
// any order.
template <class T>
__global__ void count_kernel(const T* logits, const int64_t* labels, int64_t n, int64_t k,
                             double* out) {
  double correct = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    correct += row_is_correct<compute_t<T>>(logits + i * k, k, labels[i]) ? 1.0 : 0.0;
  correct = reduce_cuda::block_sum(correct);
  if (threadIdx.x == 0) *out = correct;
}

}  // namespace count_correct_cuda

// out (0-d f64) = the count, from contiguous logits (N, K) and labels (N) i64, on `stream`.
inline void launch_count_correct(const Tensor& out, const Tensor& logits, const Tensor& labels,
                                 cudaStream_t stream) {
  dispatch_floating(logits.dtype(), "count_correct", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(count_correct_cuda::count_kernel<T>, dim3(1), dim3(cuda::kBlockThreads), 0, stream,
                 logits.data<T>(), labels.data<int64_t>(), logits.size(0), logits.size(1),
                 out.data<double>());
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
