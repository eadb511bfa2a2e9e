// The CUDA kernels of add: the elementwise engine's grid-stride kernel, built for the
// functors that add and its backward apply (the CPU loop applies the same ones).
#include "ops/add/add_functors.h"
#include "ops/elementwise/elementwise_cuda.cuh"

RG_POINTWISE_CUDA(rg::AddFn, 2);
RG_POINTWISE_CUDA(rg::AddScalarFn, 1);
