// The CUDA kernels of softsign: ringgrad's grid-stride elementwise kernel, built for its functors.
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/softsign/softsign_functors.h"

RG_POINTWISE_CUDA(my::SoftsignFn, 1);
RG_POINTWISE_CUDA(my::SoftsignGradFn, 2);
