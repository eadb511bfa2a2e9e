#pragma once
// Checks every CUDA runtime call: on failure, an rg::Error with file:line, the call and the
// runtime's own error string, after clearing the runtime's last error (as PyTorch's
// C10_CUDA_CHECK does; sticky errors stay). (cuDNN, cuBLAS and NCCL get their own macros beside
// their code.)

#include <cuda_runtime.h>

#include "core/error.h"

#define RG_CUDA_CHECK(call)                                                                       \
  do {                                                                                            \
    const cudaError_t rg_status_ = (call);                                                        \
    if (rg_status_ != cudaSuccess) [[unlikely]] {                                                 \
      cudaGetLastError(); /* a later launch check must not report this error again */             \
      ::rg::fail(__FILE__, ":", __LINE__, ": ", #call, " failed: ", cudaGetErrorName(rg_status_), \
                 " (", cudaGetErrorString(rg_status_), ")");                                      \
    }                                                                                             \
  } while (0)

// For destructors and other paths that must not throw (freeing memory, destroying a stream):
// the same message on stderr instead of an exception, and the runtime's error state cleared.
#define RG_CUDA_WARN(call)                                            \
  do {                                                                \
    const cudaError_t rg_status_ = (call);                            \
    if (rg_status_ != cudaSuccess) [[unlikely]] {                     \
      ::rg::detail::cuda_warn(__FILE__, __LINE__, #call, rg_status_); \
    }                                                                 \
  } while (0)

namespace rg::detail {
void cuda_warn(const char* file, int line, const char* call, cudaError_t status) noexcept;
}  // namespace rg::detail
