// The CUDA kernels of mse_loss: the elementwise engine's grid-stride kernel, built for the
// functors that mse_loss and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/mse_loss/mse_loss_functors.h"

RG_POINTWISE_CUDA(rg::SquaredErrorFn, 2);
RG_POINTWISE_CUDA(rg::SquaredErrorGradFn, 3);
