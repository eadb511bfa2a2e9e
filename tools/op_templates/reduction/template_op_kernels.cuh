#pragma once
// The CUDA kernels of template_op and their launchers. nvcc compiles this header for the GPU
// (template_op_cuda.cu); the host compiler compiles it against the kernel emulator for the tests
// (the `kernels` of template_op_spec.cpp), so keep to what core/cuda/kernel.h provides.
// Forward: one block per row (grid-stride over the rows); its threads stride over the row's
// elements and the warp-shuffle tree of core/cuda/reduce_kernels.cuh combines them, in float for
// f32 and the 16-bit types (double for f64). Backward: a grid-stride elementwise loop.

#include <algorithm>

#include "core/cuda/reduce_kernels.cuh"

// The inline namespace keeps these nvcc-built and emulated definitions apart (core/cuda/kernel.h).
namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace template_op_cuda {

#if defined(__CUDACC__)
inline constexpr int64_t kMaxBlocks = 65535;
inline constexpr unsigned kThreads = cuda::kBlockThreads;
#else
// Emulated (one OS thread per CUDA thread, ~1 ms per barrier): a few blocks of two warps still
// exercise the grid-stride loop over rows, the strided loop in a row and the cross-warp step.
inline constexpr int64_t kMaxBlocks = 3;
inline constexpr unsigned kThreads = 64;
#endif

template <class T>
__global__ void forward_kernel(T* y, const T* x, int64_t rows, int64_t cols) {
  using A = compute_t<T>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    A acc = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A v = static_cast<A>(x[r * cols + c]);
      acc += v * v;
    }
    acc = reduce_cuda::block_sum(acc);  // valid in thread 0; ends with a barrier
    if (threadIdx.x == 0) y[r] = static_cast<T>(acc);
  }
}

template <class T>
__global__ void backward_kernel(T* gx, const T* gy, const T* x, int64_t rows, int64_t cols) {
  using A = compute_t<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * cols;
       i += int64_t(gridDim.x) * blockDim.x)
    gx[i] = static_cast<T>(A(2) * static_cast<A>(x[i]) * static_cast<A>(gy[i / cols]));
}

inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>(n, 1, kMaxBlocks));
}

}  // namespace template_op_cuda

// ---- kernel launchers: contiguous tensors of one dtype, on the stream given ----

inline void launch_template_op_forward(const Tensor& y, const Tensor& x, int64_t rows, int64_t cols,
                                       cudaStream_t stream) {
  if (rows == 0) return;  // a launch of 0 blocks is an error
  dispatch_floating(x.dtype(), "template_op", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(template_op_cuda::forward_kernel<T>, dim3(template_op_cuda::blocks_for(rows)),
                 dim3(template_op_cuda::kThreads), 0, stream, y.data<T>(), x.data<T>(), rows, cols);
  });
}

inline void launch_template_op_backward(const Tensor& gx, const Tensor& gy, const Tensor& x,
                                        int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  dispatch_floating(x.dtype(), "template_op_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t blocks =
        (rows * cols + template_op_cuda::kThreads - 1) / template_op_cuda::kThreads;
    cuda::launch(template_op_cuda::backward_kernel<T>, dim3(template_op_cuda::blocks_for(blocks)),
                 dim3(template_op_cuda::kThreads), 0, stream, gx.data<T>(), gy.data<T>(),
                 x.data<T>(), rows, cols);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
