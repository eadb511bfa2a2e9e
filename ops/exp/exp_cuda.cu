// The CUDA kernels of exp: the elementwise engine's grid-stride kernel, built for the
// functors that exp and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/exp/exp_functors.h"

RG_POINTWISE_CUDA(rg::ExpFn, 1);
