// The CUDA kernels of tanh: the elementwise engine's grid-stride kernel, built for the
// functors that tanh and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/tanh/tanh_functors.h"

RG_POINTWISE_CUDA(rg::TanhFn, 1);
RG_POINTWISE_CUDA(rg::TanhGradFn, 2);
