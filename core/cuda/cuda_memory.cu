// Copies between host and device memory, and fill — the CUDA side of core/copy.cpp.
#include "core/cuda/cuda_check.h"
#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg {
namespace {

template <class T>
__global__ void fill_kernel(T* out, int64_t n, T value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = value;
}

}  // namespace

void cuda_copy_bytes(void* dst, const Device& dst_device, const void* src, const Device& src_device,
                     std::size_t nbytes) {
  const int index = dst_device.is_cuda() ? dst_device.index : src_device.index;
  RG_CUDA_CHECK(cudaSetDevice(index));
  RG_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDefault));
}

void cuda_fill(void* dst, const Device& device, DType dtype, int64_t n, double value) {
  RG_CUDA_CHECK(cudaSetDevice(device.index));
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
    fill_kernel<T><<<blocks, threads>>>(static_cast<T*>(dst), n, convert<T>(value));
  });
  RG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rg
