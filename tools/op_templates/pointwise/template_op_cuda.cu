// The CUDA kernels of template_op: the elementwise engine's grid-stride kernel, built for the
// functors that template_op and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/template_op/template_op_functors.h"

RG_POINTWISE_CUDA(rg::TemplateOpFn, 1);
RG_POINTWISE_CUDA(rg::TemplateOpGradFn, 2);
