#pragma once
// nll_loss on the GPU. The forward gives each lane a thread: it reads the target's
// log-probability and writes the lane's loss and target weight in double (the CPU's precision),
// which reduce_lane_losses sums. The backward gives each element of gx a thread: the target
// class of its lane gets −w[t]·g_n, every other class 0 — no zero fill, no scatter.

#include "core/cuda/kernel.h"
#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/nll_loss/class_target_kernels.cuh"
#include "ops/nll_loss/nll_loss_kernel.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace nll_cuda {
using class_target_cuda::class_offset;

template <class T>
__global__ void forward_kernel(const T* x, const int64_t* target, const T* weight,
                               double* lane_loss, double* lane_weight, Lanes l,
                               int64_t ignore_index, long long* bad_lane) {
  using C = compute_t<T>;
  const int64_t lanes = l.outer * l.inner;
  for (int64_t n = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; n < lanes;
       n += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = class_target_cuda::lane_class(target, n, l.size, ignore_index, bad_lane);
    double loss = 0, w = 0;
    if (t >= 0) {
      w = weight ? static_cast<double>(static_cast<C>(weight[t])) : 1.0;
      loss = -w * static_cast<C>(x[class_offset(n, t, l)]);
    }
    lane_loss[n] = loss;
    lane_weight[n] = w;
  }
}

// g_n = gy[n] (per_lane) or gy[0] · scale, scale = 1 / Σ weight for a mean, else 1.
template <class T>
__global__ void backward_kernel(const T* gy, const int64_t* target, const T* weight,
                                const double* total_weight, T* gx, Lanes l, int64_t ignore_index,
                                bool per_lane, bool mean) {
  using C = compute_t<T>;
  const int64_t elements = l.outer * l.size * l.inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < elements;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = e / l.inner % l.size, n = e / (l.size * l.inner) * l.inner + e % l.inner;
    const int64_t t = target[n];
    C g = 0;
    if (t == c && t != ignore_index) {
      const double w = weight ? static_cast<double>(static_cast<C>(weight[t])) : 1.0;
      const double gn = per_lane ? static_cast<double>(static_cast<C>(gy[n]))
                                 : static_cast<C>(gy[0]) * (mean ? 1.0 / *total_weight : 1.0);
      g = static_cast<C>(-w * gn);
    }
    gx[e] = T(g);
  }
}

}  // namespace nll_cuda

// The loss and total weight of x (contiguous) for target (contiguous i64) and weight
// (contiguous or undefined), on their device; throws naming the first out-of-range target.
inline detail::ReducedLoss launch_nll_loss(const Tensor& x, const Tensor& target,
                                           const Tensor& weight,
                                           const detail::ClassTargetArgs& args,
                                           cudaStream_t stream) {
  const Lanes l = args.lanes;
  const TensorOptions f64{DType::f64, x.device()};
  const Tensor lane_loss = empty(target.shape(), f64), lane_weight = empty(target.shape(), f64);
  const Tensor bad_lane = full({}, static_cast<double>(l.count()), {DType::i64, x.device()});
  if (l.count() > 0)
    dispatch_floating(x.dtype(), "nll_loss", [&](auto tag) {
      using T = decltype(tag);
      cuda::launch(nll_cuda::forward_kernel<T>, dim3(cuda::grid_for(l.count())),
                   dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                   target.data<int64_t>(), class_target_cuda::data_or_null<T>(weight),
                   lane_loss.data<double>(), lane_weight.data<double>(), l, args.ignore_index,
                   reinterpret_cast<long long*>(bad_lane.data<int64_t>()));
    });
  detail::check_bad_lane("nll_loss", bad_lane, target, l.size, args.ignore_index);
  return detail::reduce_lane_losses(lane_loss, lane_weight, args.reduction, x.dtype());
}

// gx (x's shape, contiguous) from gy (the loss's shape, contiguous).
inline void launch_nll_loss_backward(const Tensor& gy, const Tensor& target, const Tensor& weight,
                                     const Tensor& total_weight, const Tensor& gx,
                                     const detail::ClassTargetArgs& args, cudaStream_t stream) {
  if (gx.numel() == 0) return;
  dispatch_floating(gx.dtype(), "nll_loss_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(nll_cuda::backward_kernel<T>, dim3(cuda::grid_for(gx.numel())),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 target.data<int64_t>(), class_target_cuda::data_or_null<T>(weight),
                 total_weight.data<double>(), static_cast<T*>(gx.data_ptr()), args.lanes,
                 args.ignore_index, args.reduction == Reduction::none,
                 args.reduction == Reduction::mean);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
