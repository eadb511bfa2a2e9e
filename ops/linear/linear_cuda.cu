// linear on the GPU: cuBLAS GEMMs (ops/matmul/matmul_cuda.cu) reading the transposed operands in
// place; the bias is copied into the output rows first and the GEMM adds into them (beta = 1).
#include "core/cuda/copy_kernels.cuh"
#include "core/cuda/stream.h"
#include "ops/linear/linear_kernel.h"
#include "ops/matmul/gemm.h"
#include "ops/sum/sum.h"

namespace rg::detail {

Tensor linear_forward(OnCuda on, const Tensor& x2, const Tensor& w, const Tensor& bias) {
  const int64_t m = x2.size(0), o = w.size(0);
  Tensor y2 = empty({m, o}, {x2.dtype(), x2.device()});
  const int index = x2.device().index;
  cuda::DeviceGuard guard(index);
  if (bias.defined()) launch_copy(y2, bias.expand({m, o}), cuda::current_stream(index));
  gemm_into(on, x2, w.transpose(0, 1), y2, bias.defined());
  return y2;
}

LinearGrads linear_backward(OnCuda on, const Tensor& gy2, const Tensor& x2, const Tensor& w,
                            LinearWants wants) {
  LinearGrads grads;
  if (wants.x2) grads.x2 = batched_matmul(on, gy2, w, {});
  if (wants.weight) grads.weight = batched_matmul(on, gy2.transpose(0, 1), x2, {});
  if (wants.bias) grads.bias = sum(gy2, {0});  // accumulates in f32 for 16-bit gradients
  return grads;
}

}  // namespace rg::detail
