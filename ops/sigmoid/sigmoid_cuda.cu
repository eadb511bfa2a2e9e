// The CUDA kernels of sigmoid: the elementwise engine's grid-stride kernel, built for the
// functors that sigmoid and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/sigmoid/sigmoid_functors.h"

RG_POINTWISE_CUDA(rg::SigmoidFn, 1);
RG_POINTWISE_CUDA(rg::SigmoidGradFn, 2);
