// The CUDA kernels of gelu: the elementwise engine's grid-stride kernel, built for the
// functors that gelu and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/gelu/gelu_functors.h"

RG_POINTWISE_CUDA(rg::GeluFn, 1);
RG_POINTWISE_CUDA(rg::GeluGradFn, 2);
