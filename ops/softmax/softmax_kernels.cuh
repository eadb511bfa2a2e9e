#pragma once
// softmax and log_softmax on the GPU, forward and backward: one block per lane (the elements
// along `dim` for one position of the other dims), grid-stride over the lanes. Each block
// reduces its lane in the compute type (float for f32 and the 16-bit types, double for f64)
// with the warp-shuffle tree of core/cuda/reduce_kernels.cuh, which keeps float's error near
// log2(n)·u; the CPU sums in double, hence parity within device_parity_tolerance.

#include <cmath>
#include <limits>

#include "core/cuda/reduce_kernels.cuh"
#include "ops/reduction/reduction.h"
#include "ops/softmax/softmax_kernel.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace softmax_cuda {

// Lane `lane` of (outer, size, inner) starts at base and steps by inner.
RG_HOST_DEVICE inline int64_t lane_base(int64_t lane, const Lanes& l) {
  return lane / l.inner * l.size * l.inner + lane % l.inner;
}

// minus_inf: −∞ in C, from the host (numeric_limits is host-only code for nvcc).
template <class T, class C>
__global__ void forward_kernel(const T* x, T* y, Lanes l, bool log_softmax, C minus_inf) {
  using reduce_cuda::block_all_reduce;
  for (int64_t lane = blockIdx.x; lane < l.outer * l.inner; lane += gridDim.x) {
    const int64_t base = lane_base(lane, l);
    C m = minus_inf;
    for (int64_t c = threadIdx.x; c < l.size; c += blockDim.x)
      m = reduce_cuda::Larger{}(m, static_cast<C>(x[base + c * l.inner]));
    m = block_all_reduce(m, reduce_cuda::Larger{}, minus_inf);
    C s = 0;
    for (int64_t c = threadIdx.x; c < l.size; c += blockDim.x)
      s += std::exp(static_cast<C>(x[base + c * l.inner]) - m);
    s = block_all_reduce(s, reduce_cuda::Plus{}, C(0));
    const C scale = C(1) / s, log_s = std::log(s);
    for (int64_t c = threadIdx.x; c < l.size; c += blockDim.x) {
      const C v = static_cast<C>(x[base + c * l.inner]);
      // (x − m) − log s, in this order: x − m is exact near the max, where it matters.
      y[base + c * l.inner] = T(log_softmax ? (v - m) - log_s : std::exp(v - m) * scale);
    }
  }
}

// softmax: gx = y · (gy − Σ gy·y);  log_softmax: gx = gy − exp(y) · Σ gy.
template <class T, class C>
__global__ void backward_kernel(const T* gy, const T* y, T* gx, Lanes l, bool log_softmax) {
  for (int64_t lane = blockIdx.x; lane < l.outer * l.inner; lane += gridDim.x) {
    const int64_t base = lane_base(lane, l);
    C acc = 0;
    for (int64_t c = threadIdx.x; c < l.size; c += blockDim.x) {
      const int64_t i = base + c * l.inner;
      acc += log_softmax ? static_cast<C>(gy[i]) : static_cast<C>(gy[i]) * static_cast<C>(y[i]);
    }
    acc = reduce_cuda::block_all_reduce(acc, reduce_cuda::Plus{}, C(0));
    for (int64_t c = threadIdx.x; c < l.size; c += blockDim.x) {
      const int64_t i = base + c * l.inner;
      const C g = static_cast<C>(gy[i]), v = static_cast<C>(y[i]);
      gx[i] = T(log_softmax ? g - std::exp(v) * acc : v * (g - acc));
    }
  }
}

}  // namespace softmax_cuda

// y = softmax(x) or log_softmax(x) along `dim`; x and y contiguous, same shape and dtype.
inline void launch_softmax(const Tensor& x, const Tensor& y, int64_t dim, detail::SoftmaxKind kind,
                           cudaStream_t stream) {
  if (x.numel() == 0) return;
  const Lanes l = lanes_around(x.shape(), dim);
  dispatch_floating(x.dtype(), "softmax", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(softmax_cuda::forward_kernel<T, compute_t<T>>, dim3(cuda::lane_blocks(l.count())),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                 static_cast<T*>(y.data_ptr()), l, kind == detail::SoftmaxKind::log_softmax,
                 -std::numeric_limits<compute_t<T>>::infinity());
  });
}

// gx from gy and the forward's output y; all contiguous, same shape and dtype.
inline void launch_softmax_backward(const Tensor& gy, const Tensor& y, const Tensor& gx,
                                    int64_t dim, detail::SoftmaxKind kind, cudaStream_t stream) {
  if (y.numel() == 0) return;
  const Lanes l = lanes_around(y.shape(), dim);
  dispatch_floating(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(softmax_cuda::backward_kernel<T, compute_t<T>>, dim3(cuda::lane_blocks(l.count())),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<const T*>(y.data_ptr()), static_cast<T*>(gx.data_ptr()), l,
                 kind == detail::SoftmaxKind::log_softmax);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
