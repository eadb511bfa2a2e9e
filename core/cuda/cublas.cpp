// The per-thread cuBLAS handles and their stream-ordered workspaces (see cublas.h).
#include "core/cuda/cublas.h"

#include <map>
#include <mutex>
#include <utility>

#include "core/cuda/cuda_check.h"
#include "core/cuda/handle_pool.h"
#include "core/cuda/stream.h"
#include "core/tensor.h"

namespace rg::cuda {
namespace {

std::mutex& workspace_mutex() {
  static std::mutex m;
  return m;
}

// One workspace per (handle, stream): work queued on another stream must never share it. The
// tensor's memory is allocated on that stream, so stream order keeps it safe to reuse.
std::map<std::pair<cublasHandle_t, cudaStream_t>, Tensor>& workspaces() {
  static auto& all = *new std::map<std::pair<cublasHandle_t, cudaStream_t>, Tensor>;
  return all;
}

// NVIDIA's recommended workspace (cublasSetWorkspace): 32 MiB on Hopper and later, 4 MiB
// before.
std::size_t workspace_bytes(int device) {
  int major = 0;
  RG_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return (major >= 9 ? 32u : 4u) << 20;
}

}  // namespace

cublasHandle_t cublas_handle(int device, cudaStream_t stream) {
  cublasHandle_t handle = thread_handle<cublasHandle_t>(device, [](int d) {
    cublasHandle_t created = nullptr;
    RG_CUBLAS_CHECK(cublasCreate(&created), "cuBLAS on cuda:", d);
    return created;
  });
  RG_CUBLAS_CHECK(cublasSetStream(handle, stream), "cuBLAS on cuda:", device);
  void* workspace = nullptr;
  std::size_t bytes = 0;
  {
    std::lock_guard lock(workspace_mutex());
    Tensor& buffer = workspaces()[{handle, stream}];
    if (!buffer.defined()) {
      // Allocated on `stream` (the allocator takes the current stream's order).
      StreamGuard on(device, stream);
      buffer =
          empty({static_cast<int64_t>(workspace_bytes(device))}, {DType::u8, Device::cuda(device)});
    }
    workspace = buffer.data_ptr();
    bytes = static_cast<std::size_t>(buffer.numel());
  }
  RG_CUBLAS_CHECK(cublasSetWorkspace(handle, workspace, bytes), "cuBLAS on cuda:", device);
  return handle;
}

}  // namespace rg::cuda
