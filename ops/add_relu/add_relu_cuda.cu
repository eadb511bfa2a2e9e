// The CUDA kernel of add_relu: the elementwise engine's grid-stride kernel, built for its
// functor (the backward runs relu's ReluGradFn, built in relu/relu_cuda.cu).
#include "ops/add_relu/add_relu_functors.h"
#include "ops/elementwise/elementwise_cuda.cuh"

RG_POINTWISE_CUDA(rg::AddReluFn, 2);
