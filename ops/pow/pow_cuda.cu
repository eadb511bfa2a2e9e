// The CUDA kernels of pow: the elementwise engine's grid-stride kernel, built for the
// functors that pow and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/pow/pow_functors.h"

RG_POINTWISE_CUDA(rg::PowScalarFn, 1);
RG_POINTWISE_CUDA(rg::PowScalarGradFn, 2);
RG_POINTWISE_CUDA(rg::PowFn, 2);
RG_POINTWISE_CUDA(rg::PowGradBaseFn, 3);
RG_POINTWISE_CUDA(rg::PowGradExponentFn, 3);
RG_POINTWISE_CUDA(rg::RpowScalarFn, 1);
RG_POINTWISE_CUDA(rg::RpowGradFn, 2);
