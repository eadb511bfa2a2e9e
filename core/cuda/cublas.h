#pragma once
// cuBLAS handles for the GEMMs of ops/matmul and ops/linear, one per host thread and device
// (core/cuda/handle_pool.h). CUDA builds only.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/error.h"

// Checks a cuBLAS call: on failure an rg::Error naming the call, `what` (the op and its shapes)
// and cuBLAS's own status name and description.
#define RG_CUBLAS_CHECK(call, ...)                                                            \
  do {                                                                                        \
    const cublasStatus_t rg_blas_status_ = (call);                                            \
    if (rg_blas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]] {                              \
      ::rg::fail(__VA_ARGS__, ": ", #call, " failed: ", cublasGetStatusName(rg_blas_status_), \
                 " (", cublasGetStatusString(rg_blas_status_), ")");                          \
    }                                                                                         \
  } while (0)

namespace rg::cuda {

// The calling thread's handle for `device` (which must be the current device), bound to
// `stream` with a workspace from the caching allocator that only work on `stream` uses:
// cublasSetStream resets a handle's workspace, so the workspace is set again on every call.
cublasHandle_t cublas_handle(int device, cudaStream_t stream);

}  // namespace rg::cuda
