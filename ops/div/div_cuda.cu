// The CUDA kernels of div: the elementwise engine's grid-stride kernel, built for the
// functors that div and its backward apply (the CPU loop applies the same ones).
#include "ops/div/div_functors.h"
#include "ops/elementwise/elementwise_cuda.cuh"

RG_POINTWISE_CUDA(rg::DivFn, 2);
RG_POINTWISE_CUDA(rg::DivScalarFn, 1);
RG_POINTWISE_CUDA(rg::RdivScalarFn, 1);
RG_POINTWISE_CUDA(rg::DivGradOtherFn, 3);
RG_POINTWISE_CUDA(rg::RdivGradFn, 2);
