#pragma once
// The CUDA pointwise_into (declared in elementwise.h) for .cu files, and RG_POINTWISE_CUDA,
// which builds it for one functor: each pointwise op's <op>_cuda.cu names its functors.

#include "core/cuda/stream.h"
#include "ops/elementwise/elementwise_kernels.cuh"

namespace rg {

template <class F, class... Ts>
void pointwise_into(OnCuda, std::string_view op, F f, const Tensor& out, const Ts&... inputs) {
  cuda::DeviceGuard guard(out.device().index);
  launch_pointwise(op, f, out, cuda::current_stream(out.device().index), inputs...);
}

}  // namespace rg

// Explicit instantiation of the CUDA pointwise for functor F with N inputs (1 to 5).
#define RG_POINTWISE_CUDA(F, N) RG_POINTWISE_CUDA_##N(F)
#define RG_POINTWISE_TENSOR_ARGS_1 const rg::Tensor&
#define RG_POINTWISE_TENSOR_ARGS_2 RG_POINTWISE_TENSOR_ARGS_1, const rg::Tensor&
#define RG_POINTWISE_TENSOR_ARGS_3 RG_POINTWISE_TENSOR_ARGS_2, const rg::Tensor&
#define RG_POINTWISE_TENSOR_ARGS_4 RG_POINTWISE_TENSOR_ARGS_3, const rg::Tensor&
#define RG_POINTWISE_TENSOR_ARGS_5 RG_POINTWISE_TENSOR_ARGS_4, const rg::Tensor&
#define RG_POINTWISE_INSTANCE(F, ARGS) \
  template void rg::pointwise_into(rg::OnCuda, std::string_view, F, const rg::Tensor&, ARGS)
#define RG_POINTWISE_CUDA_1(F) RG_POINTWISE_INSTANCE(F, RG_POINTWISE_TENSOR_ARGS_1)
#define RG_POINTWISE_CUDA_2(F) RG_POINTWISE_INSTANCE(F, RG_POINTWISE_TENSOR_ARGS_2)
#define RG_POINTWISE_CUDA_3(F) RG_POINTWISE_INSTANCE(F, RG_POINTWISE_TENSOR_ARGS_3)
#define RG_POINTWISE_CUDA_4(F) RG_POINTWISE_INSTANCE(F, RG_POINTWISE_TENSOR_ARGS_4)
#define RG_POINTWISE_CUDA_5(F) RG_POINTWISE_INSTANCE(F, RG_POINTWISE_TENSOR_ARGS_5)
