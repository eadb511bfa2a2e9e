// The CUDA kernels of max: the elementwise engine's grid-stride kernel, built for the
// functors that max and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/max/max_functors.h"

RG_POINTWISE_CUDA(rg::MaxAllGradFn, 3);
