#pragma once
// Checks every CUDA runtime call: on failure, an rg::Error with file:line, the call and the
// runtime's own error string. (cuDNN, cuBLAS and NCCL get their own macros beside their code.)

#include <cuda_runtime.h>

#include "core/error.h"

#define RG_CUDA_CHECK(call)                                                                       \
  do {                                                                                            \
    const cudaError_t rg_status_ = (call);                                                        \
    if (rg_status_ != cudaSuccess) [[unlikely]]                                                   \
      ::rg::fail(__FILE__, ":", __LINE__, ": ", #call, " failed: ", cudaGetErrorName(rg_status_), \
                 " (", cudaGetErrorString(rg_status_), ")");                                      \
  } while (0)
