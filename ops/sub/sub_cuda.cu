// The CUDA kernels of sub: the elementwise engine's grid-stride kernel, built for the
// functors that sub and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/sub/sub_functors.h"

RG_POINTWISE_CUDA(rg::SubFn, 2);
RG_POINTWISE_CUDA(rg::SubScalarFn, 1);
RG_POINTWISE_CUDA(rg::RsubScalarFn, 1);
