// The CUDA kernels of mul: the elementwise engine's grid-stride kernel, built for the
// functors that mul and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/mul/mul_functors.h"

RG_POINTWISE_CUDA(rg::MulFn, 2);
RG_POINTWISE_CUDA(rg::MulScalarFn, 1);
