// The CUDA kernels of neg: the elementwise engine's grid-stride kernel, built for the
// functors that neg and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/neg/neg_functors.h"

RG_POINTWISE_CUDA(rg::NegFn, 1);
