#pragma once
// The device data path on the GPU: grid-stride kernels over the element functions of
// device_batch.h, and their launchers, each taking a stream. nvcc builds them for
// device_batch_cuda.cu; the host compiler builds the same source against the kernel emulator for
// tests/kernels/device_batch_kernels_test.cpp, which checks the batches against the CPU
// DataLoader's bit for bit.

#include "core/cuda/kernel.h"
#include "data/device_batch.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace device_batch_cuda {

__global__ void plan_kernel(const int64_t* order, int64_t n, data::GeometrySpec spec, uint64_t seed,
                            uint64_t epoch, int64_t height, int64_t width, int64_t* plan) {
  for (int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x)
    data::detail::plan_element(order, p, spec, seed, epoch, height, width, plan);
}

template <class T>
__global__ void gather_kernel(data::detail::GatherArgs<T> a, int64_t n) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x)
    data::detail::gather_element(a, e);
}

template <class T>
__global__ void view_kernel(data::detail::ViewArgs<T> a, int64_t n) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x)
    data::detail::view_element(a, e);
}

}  // namespace device_batch_cuda

// ---- launchers ------------------------------------------------------------------------------

inline void launch_plan_epoch(const Tensor& order, const data::GeometrySpec& spec, uint64_t seed,
                              uint64_t epoch, int64_t height, int64_t width, const Tensor& plan,
                              cudaStream_t stream) {
  const int64_t n = order.numel();
  if (n == 0) return;
  cuda::launch(device_batch_cuda::plan_kernel, dim3(cuda::grid_for(n)), dim3(cuda::kBlockThreads),
               0, stream, static_cast<const int64_t*>(order.data_ptr()), n, spec, seed, epoch,
               height, width, static_cast<int64_t*>(plan.data_ptr()));
}

inline void launch_gather_batch(const data::detail::GatherInputs& in, int64_t start,
                                const Tensor& images_out, const Tensor& labels_out,
                                cudaStream_t stream) {
  const int64_t n = images_out.numel();
  if (n == 0) return;
  dispatch_floating(images_out.dtype(), "gather_batch", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(device_batch_cuda::gather_kernel<T>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream,
                 data::detail::gather_args<T>(in, start, images_out, labels_out), n);
  });
}

inline void launch_shifted_view(const Tensor& images, int64_t dy, int64_t dx, data::Mirror mirror,
                                const Tensor& out, cudaStream_t stream) {
  const int64_t n = images.numel();
  if (n == 0) return;
  dispatch_floating(images.dtype(), "shifted_view", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(device_batch_cuda::view_kernel<T>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream,
                 data::detail::view_args<T>(images, dy, dx, mirror, out), n);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
