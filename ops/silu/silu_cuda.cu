// The CUDA kernels of silu: the elementwise engine's grid-stride kernel, built for the
// functors that silu and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/silu/silu_functors.h"

RG_POINTWISE_CUDA(rg::SiluFn, 1);
RG_POINTWISE_CUDA(rg::SiluGradFn, 2);
