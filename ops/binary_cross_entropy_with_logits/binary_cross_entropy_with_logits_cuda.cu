// The CUDA kernels of binary_cross_entropy_with_logits: the elementwise engine's grid-stride
// kernel, built for the functors that binary_cross_entropy_with_logits and its backward apply (the
// CPU loop applies the same ones).
#include "ops/binary_cross_entropy_with_logits/bce_functors.h"
#include "ops/elementwise/elementwise_cuda.cuh"

RG_POINTWISE_CUDA(rg::BceWithLogitsFn, 4);
RG_POINTWISE_CUDA(rg::UnitPosWeight<rg::BceWithLogitsFn>, 3);
RG_POINTWISE_CUDA(rg::UnitWeight<rg::BceWithLogitsFn>, 3);
RG_POINTWISE_CUDA(rg::UnitWeights<rg::BceWithLogitsFn>, 2);
RG_POINTWISE_CUDA(rg::BceWithLogitsGradInputFn, 5);
RG_POINTWISE_CUDA(rg::UnitPosWeight<rg::BceWithLogitsGradInputFn>, 4);
RG_POINTWISE_CUDA(rg::UnitWeight<rg::BceWithLogitsGradInputFn>, 4);
RG_POINTWISE_CUDA(rg::UnitWeights<rg::BceWithLogitsGradInputFn>, 3);
RG_POINTWISE_CUDA(rg::BceWithLogitsGradTargetFn, 5);
RG_POINTWISE_CUDA(rg::UnitPosWeight<rg::BceWithLogitsGradTargetFn>, 4);
RG_POINTWISE_CUDA(rg::UnitWeight<rg::BceWithLogitsGradTargetFn>, 4);
RG_POINTWISE_CUDA(rg::UnitWeights<rg::BceWithLogitsGradTargetFn>, 3);
