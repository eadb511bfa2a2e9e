#pragma once
// The CUDA kernels of template_op and their launchers. nvcc compiles this header for the GPU
// (template_op_cuda.cu); the host compiler compiles it against the kernel emulator for the tests
// (the `kernels` of template_op_spec.cpp), so keep to what core/cuda/kernel.h provides.

#include <algorithm>

#include "core/cuda/kernel.h"
#include "core/dispatch.h"
#include "core/half.h"
#include "core/tensor.h"

// The inline namespace keeps these nvcc-built and emulated definitions apart (core/cuda/kernel.h).
namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace template_op_cuda {

// Grid-stride loops: any n runs on a grid capped at kMaxBlocks.
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

template <class T>
__global__ void forward_kernel(T* y, const T* x, int64_t n) {
  using A = compute_t<T>;  // f32 for the 16-bit types, as on the CPU
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const A v = static_cast<A>(x[i]);
    y[i] = static_cast<T>(v * v * v);
  }
}

template <class T>
__global__ void backward_kernel(T* gx, const T* gy, const T* x, int64_t n) {
  using A = compute_t<T>;  // f32 for the 16-bit types, as on the CPU
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const A v = static_cast<A>(x[i]);
    gx[i] = static_cast<T>(A(3) * v * v * static_cast<A>(gy[i]));
  }
}

inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

}  // namespace template_op_cuda

// ---- kernel launchers: contiguous tensors of one dtype, on the stream given ----

inline void launch_template_op_forward(const Tensor& y, const Tensor& x, cudaStream_t stream) {
  const int64_t n = x.numel();
  if (n == 0) return;  // a launch of 0 blocks is an error
  dispatch_floating(x.dtype(), "template_op", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(template_op_cuda::forward_kernel<T>, dim3(template_op_cuda::blocks_for(n)),
                 dim3(template_op_cuda::kThreads), 0, stream, y.data<T>(), x.data<T>(), n);
  });
}

inline void launch_template_op_backward(const Tensor& gx, const Tensor& gy, const Tensor& x,
                                        cudaStream_t stream) {
  const int64_t n = x.numel();
  if (n == 0) return;
  dispatch_floating(x.dtype(), "template_op_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(template_op_cuda::backward_kernel<T>, dim3(template_op_cuda::blocks_for(n)),
                 dim3(template_op_cuda::kThreads), 0, stream, gx.data<T>(), gy.data<T>(),
                 x.data<T>(), n);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
