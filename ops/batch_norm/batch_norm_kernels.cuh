#pragma once
// batch_norm on the GPU, forward and backward, with no host round trip: every per-channel value
// stays in (C) f64 tensors on the device.
//   forward:  stats (train: a block per channel sums x − k and (x − k)² in f64, k a value of the
//             channel, as the CPU does) -> a thread per channel: invstd, the running stats'
//             update, scale = invstd·w and shift = b (eval: from the running stats)
//             -> a thread per element: y = (x − mean)·scale + shift
//   backward: a block per channel sums gy and gy·(x − mean) in f64 -> a thread per channel: the
//             coefficients k, a, b (bn_math::grad_coefs) and gweight, gbias
//             -> a thread per element: gx = (gy − a − (x − mean)·b)·k
// Element passes compute in compute_t<T> (f32 for f32 and the 16-bit types), where the CPU uses
// f64 for f32 data: parity within device_parity_tolerance. Parameters and running stats are the
// input's dtype or, for a 16-bit input, f32 (the mixed mode).

#include "core/cuda/reduce_kernels.cuh"
#include "ops/batch_norm/batch_norm_kernels.h"
#include "ops/batch_norm/batch_norm_math.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace bn_cuda {

struct Dims {
  int64_t n = 0, c = 0, s = 1;
};

// The offset of value j (sample j / s, position j % s) of channel c.
RG_HOST_DEVICE inline int64_t at(const Dims& d, int64_t c, int64_t j) {
  return (j / d.s * d.c + c) * d.s + j % d.s;
}

template <class T>
RG_HOST_DEVICE inline double wide(T v) {
  return static_cast<double>(static_cast<compute_t<T>>(v));
}

template <class P>
RG_HOST_DEVICE inline P narrow_to(double v) {
  return P(static_cast<compute_t<P>>(v));
}

template <class T>
__global__ void stats_kernel(const T* x, Dims d, double* mean, double* m2) {
  const int64_t m = d.n * d.s;
  for (int64_t c = blockIdx.x; c < d.c; c += gridDim.x) {
    const double k = wide(x[at(d, c, 0)]);  // the shift: a value of the channel
    double s1 = 0, s2 = 0;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
      const double e = wide(x[at(d, c, j)]) - k;
      s1 += e;
      s2 += e * e;
    }
    s1 = reduce_cuda::block_sum(s1);
    s2 = reduce_cuda::block_sum(s2);
    if (threadIdx.x == 0) {
      const double cnt = static_cast<double>(m);
      mean[c] = k + s1 / cnt;
      const double v = s2 - s1 * (s1 / cnt);
      m2[c] = v > 0 ? v : 0.0;
    }
  }
}

struct ForwardChannels {
  double* mean;  // train: the batch's (read); eval: written from running_mean
  const double* m2;
  double *invstd, *scale, *shift;
  int64_t channels, running_mean_stride, running_var_stride;
  double count, eps, momentum;
  bool train;
};

template <class P>
__global__ void forward_channels(ForwardChannels a, const P* w, const P* b, P* running_mean,
                                 P* running_var) {
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < a.channels;
       c += int64_t{gridDim.x} * blockDim.x) {
    P* rm = running_mean ? running_mean + c * a.running_mean_stride : nullptr;
    P* rv = running_var ? running_var + c * a.running_var_stride : nullptr;
    double inv;
    if (a.train) {
      inv = bn_math::invstd(a.m2[c] / a.count, a.eps);
      if (rm) *rm = narrow_to<P>(bn_math::running_update(wide(*rm), a.mean[c], a.momentum));
      if (rv)
        *rv = narrow_to<P>(
            bn_math::running_var_update(wide(*rv), a.m2[c], 1.0 / (a.count - 1), a.momentum));
    } else {
      a.mean[c] = wide(*rm);
      inv = bn_math::invstd(wide(*rv), a.eps);
    }
    a.invstd[c] = inv;
    a.scale[c] = inv * (w ? wide(w[c]) : 1.0);
    a.shift[c] = b ? wide(b[c]) : 0.0;
  }
}

template <class T>
__global__ void elemt_kernel(const T* x, T* y, Dims d, const double* mean, const double* scale,
                             const double* shift) {
  using C = compute_t<T>;
  const int64_t numel = d.n * d.c * d.s;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = i / d.s % d.c;
    y[i] = T((static_cast<C>(x[i]) - static_cast<C>(mean[c])) * static_cast<C>(scale[c]) +
             static_cast<C>(shift[c]));
  }
}

template <class T>
__global__ void backward_reduce_kernel(const T* gy, const T* x, Dims d, const double* mean,
                                       double* sum_dy, double* sum_dy_xmu) {
  const int64_t m = d.n * d.s;
  for (int64_t c = blockIdx.x; c < d.c; c += gridDim.x) {
    const double mu = mean[c];
    double s1 = 0, s2 = 0;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
      const int64_t i = at(d, c, j);
      const double g = wide(gy[i]);
      s1 += g;
      s2 += g * (wide(x[i]) - mu);
    }
    s1 = reduce_cuda::block_sum(s1);
    s2 = reduce_cuda::block_sum(s2);
    if (threadIdx.x == 0) {
      sum_dy[c] = s1;
      sum_dy_xmu[c] = s2;
    }
  }
}

struct BackwardChannels {
  const double *invstd, *sum_dy, *sum_dy_xmu;  // sums null when not computed
  double *k, *a, *b;
  int64_t channels;
  double inv_m;
  bool train;
};

template <class P>
__global__ void backward_channels(BackwardChannels a, const P* w, P* gweight, P* gbias) {
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < a.channels;
       c += int64_t{gridDim.x} * blockDim.x) {
    const double sum_dy = a.sum_dy ? a.sum_dy[c] : 0.0;
    const double sum_dy_xhat = a.sum_dy_xmu ? a.sum_dy_xmu[c] * a.invstd[c] : 0.0;
    const bn_math::GradCoefs coefs = bn_math::grad_coefs(w ? wide(w[c]) : 1.0, a.invstd[c], sum_dy,
                                                         sum_dy_xhat, a.inv_m, a.train);
    a.k[c] = coefs.k;
    a.a[c] = coefs.a;
    a.b[c] = coefs.b;
    if (gweight) gweight[c] = narrow_to<P>(sum_dy_xhat);
    if (gbias) gbias[c] = narrow_to<P>(sum_dy);
  }
}

template <class T>
__global__ void backward_elemt_kernel(const T* gy, const T* x, T* gx, Dims d, const double* mean,
                                      const double* k, const double* a, const double* b) {
  using C = compute_t<T>;
  const int64_t numel = d.n * d.c * d.s;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = i / d.s % d.c;
    gx[i] = T((static_cast<C>(gy[i]) - static_cast<C>(a[c]) -
               (static_cast<C>(x[i]) - static_cast<C>(mean[c])) * static_cast<C>(b[c])) *
              static_cast<C>(k[c]));
  }
}

inline Dims dims_of(const Tensor& x) {
  Dims d{x.size(0), x.size(1), 1};
  for (int64_t i = 2; i < x.dim(); ++i) d.s *= x.size(i);
  return d;
}

// f(P{}) for the parameters' C++ type: f32 beside a 16-bit input (mixed mode), else T.
template <class T, class F>
void with_param_type(DType param_dtype, F f) {
  if constexpr (sizeof(T) == 2) {
    if (param_dtype == DType::f32) return f(float{});
  }
  f(T{});
}

template <class P>
P* data_or_null(const Tensor& t) {
  return t.defined() ? static_cast<P*>(t.data_ptr()) : nullptr;
}

inline int64_t stride_or_zero(const Tensor& t) {
  return t.defined() ? t.strides()[0] : 0;
}

}  // namespace bn_cuda

// mean, m2 ((C) f64) of x (contiguous, at least one value per channel).
inline void launch_bn_stats(const Tensor& x, const Tensor& mean, const Tensor& m2,
                            cudaStream_t stream) {
  const bn_cuda::Dims d = bn_cuda::dims_of(x);
  dispatch_floating(x.dtype(), "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(bn_cuda::stats_kernel<T>, dim3(cuda::lane_blocks(d.c)), dim3(cuda::kBlockThreads),
                 0, stream, static_cast<const T*>(x.data_ptr()), d, mean.data<double>(),
                 m2.data<double>());
  });
}

// y = (x − mean)·scale + shift; per-channel values (C) f64.
inline void launch_bn_elemt(const Tensor& x, const Tensor& y, const Tensor& mean,
                            const Tensor& scale, const Tensor& shift, cudaStream_t stream) {
  if (x.numel() == 0) return;
  dispatch_floating(x.dtype(), "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(bn_cuda::elemt_kernel<T>, dim3(cuda::grid_for(x.numel())),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                 static_cast<T*>(y.data_ptr()), bn_cuda::dims_of(x), mean.data<double>(),
                 scale.data<double>(), shift.data<double>());
  });
}

// sum_dy = Σ gy, sum_dy_xmu = Σ gy·(x − mean) per channel ((C) f64).
inline void launch_bn_backward_reduce(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                      const Tensor& sum_dy, const Tensor& sum_dy_xmu,
                                      cudaStream_t stream) {
  const bn_cuda::Dims d = bn_cuda::dims_of(x);
  dispatch_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(bn_cuda::backward_reduce_kernel<T>, dim3(cuda::lane_blocks(d.c)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<const T*>(x.data_ptr()), d, mean.data<double>(), sum_dy.data<double>(),
                 sum_dy_xmu.data<double>());
  });
}

// gx = (gy − a − (x − mean)·b)·k; per-channel values (C) f64.
inline void launch_bn_backward_elemt(const Tensor& gy, const Tensor& x, const Tensor& gx,
                                     const Tensor& mean, const Tensor& k, const Tensor& a,
                                     const Tensor& b, cudaStream_t stream) {
  if (x.numel() == 0) return;
  dispatch_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(bn_cuda::backward_elemt_kernel<T>, dim3(cuda::grid_for(x.numel())),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<const T*>(x.data_ptr()), static_cast<T*>(gx.data_ptr()),
                 bn_cuda::dims_of(x), mean.data<double>(), k.data<double>(), a.data<double>(),
                 b.data<double>());
  });
}

// batch_norm's forward (x contiguous) on x's device: y and the saved (C) f64 mean and invstd;
// in train the running stats, where given, are updated in place.
inline detail::BnForward launch_bn_forward(const Tensor& x, const Tensor& weight,
                                           const Tensor& bias, const Tensor& running_mean,
                                           const Tensor& running_var,
                                           const detail::BnConfig& config, cudaStream_t stream) {
  namespace bc = bn_cuda;
  const bc::Dims d = bc::dims_of(x);
  const TensorOptions f64{DType::f64, x.device()};
  detail::BnForward f{empty(x.shape(), {x.dtype(), x.device()}), empty({d.c}, f64),
                      empty({d.c}, f64), Tensor(), Tensor()};  // no relu: batch_norm.cpp
  const Tensor m2 = empty({d.c}, f64), scale = empty({d.c}, f64), shift = empty({d.c}, f64);
  const DType param_dtype = weight.defined()         ? weight.dtype()
                            : bias.defined()         ? bias.dtype()
                            : running_mean.defined() ? running_mean.dtype()
                            : running_var.defined()  ? running_var.dtype()
                                                     : x.dtype();
  if (config.train) launch_bn_stats(x, f.mean, m2, stream);
  dispatch_floating(x.dtype(), "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    const bc::ForwardChannels a{f.mean.data<double>(),
                                m2.data<double>(),
                                f.invstd.data<double>(),
                                scale.data<double>(),
                                shift.data<double>(),
                                d.c,
                                bc::stride_or_zero(running_mean),
                                bc::stride_or_zero(running_var),
                                static_cast<double>(d.n * d.s),
                                config.eps,
                                config.momentum,
                                config.train};
    bc::with_param_type<T>(param_dtype, [&](auto ptag) {
      using P = decltype(ptag);
      cuda::launch(bc::forward_channels<P>, dim3(cuda::grid_for(d.c)), dim3(cuda::kBlockThreads), 0,
                   stream, a, static_cast<const P*>(bc::data_or_null<P>(weight)),
                   static_cast<const P*>(bc::data_or_null<P>(bias)),
                   bc::data_or_null<P>(running_mean), bc::data_or_null<P>(running_var));
    });
  });
  launch_bn_elemt(x, f.y, f.mean, scale, shift, stream);
  return f;
}

// batch_norm's backward (gy, x contiguous; mean, invstd (C) f64) on x's device.
inline detail::BnBackward launch_bn_backward(const Tensor& gy, const Tensor& x,
                                             const Tensor& weight, const Tensor& mean,
                                             const Tensor& invstd, bool train,
                                             detail::BnWants wants, DType param_dtype,
                                             cudaStream_t stream) {
  namespace bc = bn_cuda;
  const bc::Dims d = bc::dims_of(x);
  const TensorOptions f64{DType::f64, x.device()};
  const bool sums = wants.weight || wants.bias || (train && wants.x);
  const Tensor sum_dy = sums ? empty({d.c}, f64) : Tensor();
  const Tensor sum_dy_xmu = sums ? empty({d.c}, f64) : Tensor();
  const Tensor k = empty({d.c}, f64), a = empty({d.c}, f64), b = empty({d.c}, f64);
  detail::BnBackward r;
  if (wants.x) r.gx = empty(x.shape(), {x.dtype(), x.device()});
  if (wants.weight) r.gweight = empty({d.c}, {param_dtype, x.device()});
  if (wants.bias) r.gbias = empty({d.c}, {param_dtype, x.device()});
  const int64_t count = d.n * d.s;
  if (sums) launch_bn_backward_reduce(gy, x, mean, sum_dy, sum_dy_xmu, stream);
  dispatch_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const bc::BackwardChannels ch{invstd.data<double>(),
                                  sums ? sum_dy.data<double>() : nullptr,
                                  sums ? sum_dy_xmu.data<double>() : nullptr,
                                  k.data<double>(),
                                  a.data<double>(),
                                  b.data<double>(),
                                  d.c,
                                  count > 0 ? 1.0 / static_cast<double>(count) : 0.0,
                                  train};
    bc::with_param_type<T>(param_dtype, [&](auto ptag) {
      using P = decltype(ptag);
      cuda::launch(bc::backward_channels<P>, dim3(cuda::grid_for(d.c)), dim3(cuda::kBlockThreads),
                   0, stream, ch, static_cast<const P*>(bc::data_or_null<P>(weight)),
                   bc::data_or_null<P>(r.gweight), bc::data_or_null<P>(r.gbias));
    });
  });
  if (wants.x) launch_bn_backward_elemt(gy, x, r.gx, mean, k, a, b, stream);
  return r;
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
