// The CUDA kernels of relu: the elementwise engine's grid-stride kernel, built for the
// functors that relu and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/relu/relu_functors.h"

RG_POINTWISE_CUDA(rg::ReluFn, 1);
RG_POINTWISE_CUDA(rg::ReluGradFn, 2);
