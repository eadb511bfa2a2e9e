// The CUDA kernels of log: the elementwise engine's grid-stride kernel, built for the
// functors that log and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/log/log_functors.h"

RG_POINTWISE_CUDA(rg::LogFn, 1);
