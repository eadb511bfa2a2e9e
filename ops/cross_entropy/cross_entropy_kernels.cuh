#pragma once
// The fused cross_entropy on the GPU (formulas in cross_entropy.h).
//
// Forward: per lane, the max m, s = Σ exp(x − m) (in the compute type, as softmax does) and,
// with label smoothing, Σ w[c]·x[c] (in double); then logsumexp = m + log s and the lane's loss
// and target weight, in double, for reduce_lane_losses. A lane gets a block when it is a long
// contiguous row (inner == 1, C ≥ kBlockLaneClasses: the warp-shuffle tree of
// core/cuda/reduce_kernels.cuh), else a thread walks its C classes — the (N, C, H, W) case,
// where neighbouring threads read neighbouring pixels.
// Backward: a thread per element of gx rebuilds p = exp(x − logsumexp) and applies
//   gx_c = p·k_p − k_w·w[c] − [c == t]·k_t, k_t = g·(1 − ε)·w[t], k_w = g·ε/C, k_p = k_t + k_w·Σw.

#include <cmath>
#include <limits>

#include "core/cuda/reduce_kernels.cuh"
#include "ops/cast/cast.h"
#include "ops/cross_entropy/cross_entropy_kernel.h"
#include "ops/nll_loss/class_target_kernels.cuh"
#include "ops/sum/sum.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace cross_entropy_cuda {
using class_target_cuda::class_offset;

inline constexpr int64_t kBlockLaneClasses = 64;

// What a forward kernel needs besides the logits.
struct ForwardArgs {
  const int64_t* target;
  const double* weight_sum;  // Σ_c w[c] (device), read only when eps > 0
  double* lane_loss;
  double* lane_weight;
  double* lse;
  long long* bad_lane;
  Lanes lanes;
  int64_t ignore_index;
  double eps;  // label smoothing
};

template <class T>
__device__ double class_weight(const T* weight, int64_t c) {
  return weight ? static_cast<double>(static_cast<compute_t<T>>(weight[c])) : 1.0;
}

// Writes lane n's logsumexp, loss and target weight from its max m, Σ exp(x − m) and Σ w·x.
template <class T>
__device__ void finish_lane(const T* x, const T* weight, const ForwardArgs& a, int64_t n, double m,
                            double s, double wx) {
  const double lse = m + std::log(s);
  a.lse[n] = lse;
  const int64_t t =
      class_target_cuda::lane_class(a.target, n, a.lanes.size, a.ignore_index, a.bad_lane);
  double loss = 0, w_t = 0;
  if (t >= 0) {
    w_t = class_weight(weight, t);
    const double x_t = static_cast<compute_t<T>>(x[class_offset(n, t, a.lanes)]);
    loss = -w_t * (x_t - lse);
    if (a.eps > 0)
      loss = (1 - a.eps) * loss +
             a.eps / static_cast<double>(a.lanes.size) * (lse * *a.weight_sum - wx);
  }
  a.lane_loss[n] = loss;
  a.lane_weight[n] = w_t;
}

template <class T, class C>
__global__ void forward_thread_per_lane(const T* x, const T* weight, ForwardArgs a, C minus_inf) {
  const Lanes l = a.lanes;
  for (int64_t n = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; n < l.outer * l.inner;
       n += int64_t{gridDim.x} * blockDim.x) {
    const T* xl = x + class_offset(n, 0, l);
    C m = minus_inf;
    for (int64_t c = 0; c < l.size; ++c)
      m = reduce_cuda::Larger{}(m, static_cast<C>(xl[c * l.inner]));
    C s = 0;
    double wx = 0;
    for (int64_t c = 0; c < l.size; ++c) {
      const C v = static_cast<C>(xl[c * l.inner]);
      s += std::exp(v - m);
      if (a.eps > 0) wx += class_weight(weight, c) * static_cast<double>(v);
    }
    finish_lane(x, weight, a, n, m, s, wx);
  }
}

template <class T, class C>
__global__ void forward_block_per_lane(const T* x, const T* weight, ForwardArgs a, C minus_inf) {
  using reduce_cuda::block_all_reduce;
  using reduce_cuda::block_reduce;
  const Lanes l = a.lanes;  // inner == 1: lane n is row n
  for (int64_t n = blockIdx.x; n < l.outer; n += gridDim.x) {
    const T* xl = x + n * l.size;
    C m = minus_inf;
    for (int64_t c = threadIdx.x; c < l.size; c += blockDim.x)
      m = reduce_cuda::Larger{}(m, static_cast<C>(xl[c]));
    m = block_all_reduce(m, reduce_cuda::Larger{}, minus_inf);
    C s = 0;
    double wx = 0;
    for (int64_t c = threadIdx.x; c < l.size; c += blockDim.x) {
      const C v = static_cast<C>(xl[c]);
      s += std::exp(v - m);
      if (a.eps > 0) wx += class_weight(weight, c) * static_cast<double>(v);
    }
    s = block_reduce(s, reduce_cuda::Plus{}, C(0));
    if (a.eps > 0) wx = block_reduce(wx, reduce_cuda::Plus{}, 0.0);
    if (threadIdx.x == 0) finish_lane(x, weight, a, n, m, s, wx);
  }
}

// What the backward kernel needs besides logits and gradients.
struct BackwardArgs {
  const int64_t* target;
  const double* lse;
  const double* weight_sum;    // read only when eps > 0
  const double* total_weight;  // read only for a mean
  Lanes lanes;
  int64_t ignore_index;
  double eps;
  bool per_lane;  // Reduction::none: g_n = gy[n]; else g_n = gy[0] (÷ total weight for a mean)
  bool mean;
};

template <class T, class C>
__global__ void backward_kernel(const T* gy, const T* x, const T* weight, T* gx, BackwardArgs a) {
  const Lanes l = a.lanes;
  const int64_t elements = l.outer * l.size * l.inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < elements;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = e / l.inner % l.size, n = e / (l.size * l.inner) * l.inner + e % l.inner;
    const int64_t t = a.target[n];
    if (t == a.ignore_index) {
      gx[e] = T(C(0));
      continue;
    }
    const double g = a.per_lane ? static_cast<double>(static_cast<C>(gy[n]))
                                : static_cast<C>(gy[0]) * (a.mean ? 1.0 / *a.total_weight : 1.0);
    const double kt = g * (1 - a.eps) * class_weight(weight, t);
    const double kw = a.eps > 0 ? g * a.eps / static_cast<double>(l.size) : 0.0;
    const double kp = a.eps > 0 ? kt + kw * *a.weight_sum : kt;
    const C p = std::exp(static_cast<C>(x[e]) - static_cast<C>(a.lse[n]));
    C v = p * static_cast<C>(kp) - static_cast<C>(kw) * static_cast<C>(class_weight(weight, c));
    if (c == t) v -= static_cast<C>(kt);
    gx[e] = T(v);
  }
}

// Σ_c w[c] as a 0-d f64 on the logits' device when label smoothing needs it, else undefined.
inline Tensor weight_sum(const Tensor& weight, const detail::CrossEntropyArgs& args,
                         const Device& device) {
  if (args.label_smoothing <= 0) return Tensor();
  if (!weight.defined())
    return full({}, static_cast<double>(args.lanes.size), {DType::f64, device});
  return sum(cast(weight, DType::f64));
}

}  // namespace cross_entropy_cuda

// The forward of logits (contiguous) for target (contiguous i64) and weight (contiguous or
// undefined), on their device; throws naming the first out-of-range target.
inline detail::CrossEntropyForward launch_cross_entropy(const Tensor& x, const Tensor& target,
                                                        const Tensor& weight,
                                                        const detail::CrossEntropyArgs& args,
                                                        cudaStream_t stream) {
  namespace ce = cross_entropy_cuda;
  const Lanes l = args.lanes;
  const TensorOptions f64{DType::f64, x.device()};
  const Tensor lane_loss = empty(target.shape(), f64), lane_weight = empty(target.shape(), f64);
  Tensor lse = empty(target.shape(), f64);
  const Tensor bad_lane = full({}, static_cast<double>(l.count()), {DType::i64, x.device()});
  const Tensor w_sum = ce::weight_sum(weight, args, x.device());
  const ce::ForwardArgs a{target.data<int64_t>(),
                          w_sum.defined() ? w_sum.data<double>() : nullptr,
                          lane_loss.data<double>(),
                          lane_weight.data<double>(),
                          lse.data<double>(),
                          reinterpret_cast<long long*>(bad_lane.data<int64_t>()),
                          l,
                          args.ignore_index,
                          args.label_smoothing};
  if (l.count() > 0)
    dispatch_floating(x.dtype(), "cross_entropy", [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* px = static_cast<const T*>(x.data_ptr());
      const C minus_inf = -std::numeric_limits<C>::infinity();
      if (l.inner == 1 && l.size >= ce::kBlockLaneClasses) {
        cuda::launch(ce::forward_block_per_lane<T, C>, dim3(cuda::lane_blocks(l.outer)),
                     dim3(cuda::kBlockThreads), 0, stream, px,
                     class_target_cuda::data_or_null<T>(weight), a, minus_inf);
      } else {
        cuda::launch(ce::forward_thread_per_lane<T, C>, dim3(cuda::grid_for(l.count())),
                     dim3(cuda::kBlockThreads), 0, stream, px,
                     class_target_cuda::data_or_null<T>(weight), a, minus_inf);
      }
    });
  detail::check_bad_lane("cross_entropy", bad_lane, target, l.size, args.ignore_index);
  return {detail::reduce_lane_losses(lane_loss, lane_weight, args.reduction, x.dtype()), lse};
}

// gx (the logits' shape, contiguous) from gy (the loss's shape, contiguous).
inline void launch_cross_entropy_backward(const Tensor& gy, const Tensor& x, const Tensor& target,
                                          const Tensor& weight, const Tensor& lse,
                                          const Tensor& total_weight, const Tensor& gx,
                                          const detail::CrossEntropyArgs& args,
                                          cudaStream_t stream) {
  namespace ce = cross_entropy_cuda;
  if (gx.numel() == 0) return;
  const Tensor w_sum = ce::weight_sum(weight, args, x.device());
  const ce::BackwardArgs a{target.data<int64_t>(),
                           lse.data<double>(),
                           w_sum.defined() ? w_sum.data<double>() : nullptr,
                           total_weight.data<double>(),
                           args.lanes,
                           args.ignore_index,
                           args.label_smoothing,
                           args.reduction == Reduction::none,
                           args.reduction == Reduction::mean};
  dispatch_floating(x.dtype(), "cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ce::backward_kernel<T, compute_t<T>>, dim3(cuda::grid_for(gx.numel())),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<const T*>(x.data_ptr()), class_target_cuda::data_or_null<T>(weight),
                 static_cast<T*>(gx.data_ptr()), a);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
