// The CUDA kernels of leaky_relu: the elementwise engine's grid-stride kernel, built for the
// functors that leaky_relu and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/leaky_relu/leaky_relu_functors.h"

RG_POINTWISE_CUDA(rg::LeakyReluFn, 1);
RG_POINTWISE_CUDA(rg::LeakyReluGradFn, 2);
