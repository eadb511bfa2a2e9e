// The CUDA kernels of sqrt: the elementwise engine's grid-stride kernel, built for the
// functors that sqrt and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/sqrt/sqrt_functors.h"

RG_POINTWISE_CUDA(rg::SqrtFn, 1);
RG_POINTWISE_CUDA(rg::SqrtGradFn, 2);
