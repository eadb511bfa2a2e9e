#pragma once
// batch_norm on the GPU, forward and backward, with no host round trip: every per-channel value
// stays in (C) f64 tensors on the device.
//   forward:  stats (train: blocks sum x − k and (x − k)² in f64 over parts of a channel, k a
//             value of the channel, as the CPU does; a thread per channel adds the parts)
//             -> a thread per channel: invstd, the running stats' update, scale = invstd·w and
//             shift = b (eval: from the running stats)
//             -> a thread per element: y = (x − mean)·scale + shift (batch_norm_relu,
//             batch_norm_gelu: relu(y), gelu(y), fused)
//   backward: blocks sum gy and gy·(x − mean) in f64 over parts of a channel, a thread per
//             channel adds the parts -> a thread per channel: the coefficients k, a, b
//             (bn_math::grad_coefs) and gweight, gbias
//             -> a thread per element: gx = (gy − a − (x − mean)·b)·k
//   The fused ops' backward reads gy through the activation's derivative in both passes, at the
//   value recomputed from x and the forward's scale and shift (nothing of the activation stored).
// Element passes compute in compute_t<T> (f32 for f32 and the 16-bit types), where the CPU uses
// f64 for f32 data: parity within device_parity_tolerance. Parameters and running stats are the
// input's dtype or, for a 16-bit input, f32 (the mixed mode).

#include "core/cuda/reduce_kernels.cuh"
#include "ops/batch_norm/batch_norm_kernels.h"
#include "ops/batch_norm/batch_norm_math.h"
#include "ops/batch_norm/batch_norm_rows_kernels.cuh"

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

// A channel's n·s values are summed by `parts` blocks, each over whole samples
// [part·per_part, (part + 1)·per_part): with few channels and many values (ResNet18's first
// stage: 64 channels of 131072 values) a block per channel would leave half an H100 idle. The
// parts' sums go to a (C, parts) f64 buffer that a thread per channel then adds in order: no
// atomics, the same sums in the same order on every run.
struct Split {
  int64_t parts = 1, per_part = 1;  // samples per part
};

inline Split split_for(const Dims& d) {
#if defined(__CUDACC__)
  const int64_t target_blocks = 1024, min_values = 4096;
#else
  const int64_t target_blocks = 8, min_values = 4;  // emulated: several parts even when tiny
#endif
  const int64_t by_blocks = target_blocks / (d.c > 0 ? d.c : 1);
  const int64_t by_values = d.n * d.s / min_values;
  int64_t parts = by_blocks < by_values ? by_blocks : by_values;
  parts = parts < 1 ? 1 : (parts < d.n ? parts : d.n);
  Split split;
  split.per_part = d.n > 0 ? (d.n + parts - 1) / parts : 1;
  split.parts = d.n > 0 ? (d.n + split.per_part - 1) / split.per_part : 1;
  return split;
}

// f(offset) for this thread's values of channel c in samples [n0, n1): the block's threads
// stride over them in memory order. Steps the (sample, position) pair instead of dividing
// each index: a 64-bit division per value costs more than the value's load.
template <class F>
__device__ inline void for_channel_values(const Dims& d, int64_t c, int64_t n0, int64_t n1, F f) {
  const int64_t step_samples = blockDim.x / d.s, step_pos = blockDim.x % d.s;
  int64_t sample = n0 + threadIdx.x / d.s, pos = threadIdx.x % d.s;
  while (sample < n1) {
    f((sample * d.c + c) * d.s + pos);
    sample += step_samples;
    pos += step_pos;
    if (pos >= d.s) {
      pos -= d.s;
      ++sample;
    }
  }
}

// The two sums a reduction adds per value.
struct TermPair {
  double first, second;
};

// Both reductions' blocks: for each work item w = c·parts + part, the block sums terms(c)(i)
// over channel c's values i in the part's samples, into s1_parts[w], s2_parts[w]. terms(c)
// reads what the channel needs once and returns the per-value function.
template <class Terms>
__device__ inline void part_sums(const Dims& d, const Split& split, Terms terms, double* s1_parts,
                                 double* s2_parts) {
  for (int64_t w = blockIdx.x; w < d.c * split.parts; w += gridDim.x) {
    const int64_t c = w / split.parts, part = w % split.parts;
    const int64_t n0 = part * split.per_part,
                  n1 = n0 + split.per_part < d.n ? n0 + split.per_part : d.n;
    const auto term = terms(c);
    double s1 = 0, s2 = 0;
    for_channel_values(d, c, n0, n1, [&](int64_t i) {
      const TermPair t = term(i);
      s1 += t.first;
      s2 += t.second;
    });
    s1 = reduce_cuda::block_sum(s1);
    s2 = reduce_cuda::block_sum(s2);
    if (threadIdx.x == 0) {
      s1_parts[w] = s1;
      s2_parts[w] = s2;
    }
  }
}

// Σ of channel c's parts, in order (the same sum on every run).
template <class Acc>
RG_HOST_DEVICE inline Acc sum_of_parts(const Acc* parts_sums, int64_t c, int64_t parts) {
  Acc total = 0;
  for (int64_t part = 0; part < parts; ++part) total += parts_sums[c * parts + part];
  return total;
}

// Part sums of channel c: Σ (x − k), Σ (x − k)² with k the channel's first value (the CPU's
// shift, which keeps the variance of a channel far from zero).
template <class T>
__global__ void stats_parts_kernel(const T* x, Dims d, Split split, double* s1_parts,
                                   double* s2_parts) {
  part_sums(
      d, split,
      [&](int64_t c) {
        const double k = wide(x[c * d.s]);
        return [x, k](int64_t i) {
          const double e = wide(x[i]) - k;
          return TermPair{e, e * e};
        };
      },
      s1_parts, s2_parts);
}

template <class T>
__global__ void stats_finish_kernel(const T* x, Dims d, int64_t parts, const double* s1_parts,
                                    const double* s2_parts, double* mean, double* m2) {
  const double count = static_cast<double>(d.n * d.s);
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < d.c;
       c += int64_t{gridDim.x} * blockDim.x) {
    const double s1 = sum_of_parts(s1_parts, c, parts), s2 = sum_of_parts(s2_parts, c, parts);
    mean[c] = wide(x[c * d.s]) + s1 / count;
    const double v = s2 - s1 * (s1 / count);
    m2[c] = v > 0 ? v : 0.0;
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

// The value before the fused ops' activation, (x − mean)·scale + shift in one fma: the forward
// and both backward passes compute it alike, so the backward's derivative is taken where the
// forward's activation was.
template <class C>
RG_HOST_DEVICE inline C affine(C x, double mean, double scale, double shift) {
  return bn_math::affine(x, static_cast<C>(mean), static_cast<C>(scale), static_cast<C>(shift));
}

// gy through the fused activation's derivative at the forward's value (gy without one).
template <class C>
RG_HOST_DEVICE inline C through_activation(C g, C x, const detail::BnActGrad& act, double mean,
                                           int64_t c) {
  if (act.act == detail::BnActivation::none) return g;
  return bn_math::activation_grad<C>(act.act, g, affine(x, mean, act.scale[c], act.shift[c]));
}

// The element passes find each value's channel by a division: in 32 bits (I = uint32_t) when
// the tensor has fewer than 2^31 values, a few times cheaper on a GPU than a 64-bit one.
template <class I>
struct ElementIndex {
  I numel, s, c;
  explicit ElementIndex(const Dims& d)
      : numel(static_cast<I>(d.n * d.c * d.s)), s(static_cast<I>(d.s)), c(static_cast<I>(d.c)) {}
};

// y = (x − mean)·scale + shift, with an activation act(·) (relu: NaN to 0, as the CPU's fused
// op).
template <class T, class I>
__global__ void elemt_kernel(const T* x, T* y, ElementIndex<I> e, const double* mean,
                             const double* scale, const double* shift, detail::BnActivation act) {
  using C = compute_t<T>;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < e.numel;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I c = i / e.s % e.c;
    const C v = affine(static_cast<C>(x[i]), mean[c], scale[c], shift[c]);
    y[i] = T(bn_math::activate<C>(act, v));
  }
}

// Part sums of channel c: Σ gy and Σ gy·(x − mean) (gy through `act` where it has one), split
// as the forward's stats.
template <class T>
__global__ void backward_reduce_parts_kernel(const T* gy, const T* x, Dims d, Split split,
                                             const double* mean, detail::BnActGrad act,
                                             double* s1_parts, double* s2_parts) {
  part_sums(
      d, split,
      [&](int64_t c) {
        const double mu = mean[c];
        return [gy, x, act, mu, c](int64_t i) {
          using C = compute_t<T>;
          const double g =
              through_activation(static_cast<C>(gy[i]), static_cast<C>(x[i]), act, mu, c);
          return TermPair{g, g * (wide(x[i]) - mu)};
        };
      },
      s1_parts, s2_parts);
}

// The batch counters += 1 (batch_norm_count_batch): one launch, where to(f64), add, to(i64) and
// a copy took four.
template <class I>
__global__ void count_kernel(I* counter, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    counter[i] += 1;
}

template <class Acc>
__global__ void sum_parts_kernel(int64_t channels, int64_t parts, const Acc* s1_parts,
                                 const Acc* s2_parts, Acc* s1, Acc* s2) {
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < channels;
       c += int64_t{gridDim.x} * blockDim.x) {
    s1[c] = sum_of_parts(s1_parts, c, parts);
    s2[c] = sum_of_parts(s2_parts, c, parts);
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

template <class T, class I>
__global__ void backward_elemt_kernel(const T* gy, const T* x, T* gx, ElementIndex<I> e,
                                      const double* mean, const double* k, const double* a,
                                      const double* b, detail::BnActGrad act) {
  using C = compute_t<T>;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < e.numel;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I c = i / e.s % e.c;
    const C xv = static_cast<C>(x[i]);
    const C g = through_activation(static_cast<C>(gy[i]), xv, act, mean[c], c);
    gx[i] = T((g - static_cast<C>(a[c]) - (xv - static_cast<C>(mean[c])) * static_cast<C>(b[c])) *
              static_cast<C>(k[c]));
  }
}

inline Dims dims_of(const Tensor& x) {
  Dims d{x.size(0), x.size(1), 1};
  for (int64_t i = 2; i < x.dim(); ++i) d.s *= x.size(i);
  return d;
}

// (N, C) input — channels-last activations run as their rows — is summed by the row kernels
// (batch_norm_rows_kernels.cuh), split their way.
inline bool takes_rows(const Dims& d) {
  return d.s == 1;
}

inline Split rows_split(const Dims& d) {
  const bn_rows::RowSplit r = bn_rows::split_rows(d.n, d.c);
  return {r.parts, r.per_part};
}

// x's dims, how its channels split, and the (C, parts) f64 sums the part kernels write.
struct PartSums {
  Dims d;
  Split split;
  Tensor s1, s2;
  explicit PartSums(const Tensor& x)
      : d(dims_of(x)),
        split(takes_rows(d) ? rows_split(d) : split_for(d)),
        s1(empty({d.c * split.parts}, {DType::f64, x.device()})),
        s2(empty({d.c * split.parts}, {DType::f64, x.device()})) {}
};

// f(ElementIndex<I>) with 32-bit indices where x's values allow (the grid-stride loop's index
// plus its stride then stays below 2^32), else 64-bit ones. Emulated, tensors past 64 values
// take the 64-bit path, so that the tests run both.
template <class F>
void with_element_index(const Tensor& x, F f) {
#if defined(__CUDACC__)
  constexpr int64_t kLimit32 = int64_t{1} << 31;
#else
  constexpr int64_t kLimit32 = 64;
#endif
  if (x.numel() < kLimit32) return f(ElementIndex<uint32_t>(dims_of(x)));
  f(ElementIndex<int64_t>(dims_of(x)));
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

// counter (contiguous i64) += 1.
inline void launch_bn_count(const Tensor& counter, cudaStream_t stream) {
  if (counter.numel() == 0) return;
  cuda::launch(bn_cuda::count_kernel<int64_t>, dim3(cuda::grid_for(counter.numel())),
               dim3(cuda::kBlockThreads), 0, stream, counter.data<int64_t>(), counter.numel());
}

// mean, m2 ((C) f64) of x (contiguous; zeros when x has no values).
inline void launch_bn_stats(const Tensor& x, const Tensor& mean, const Tensor& m2,
                            cudaStream_t stream) {
  if (x.numel() == 0) {  // no values (batch_norm_stats' empty shard): zeros
    fill_(mean, 0.0);
    fill_(m2, 0.0);
    return;
  }
  const bn_cuda::PartSums p(x);
  dispatch_floating(x.dtype(), "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x.data_ptr());
    if (bn_cuda::takes_rows(p.d)) {
      const bn_rows::RowSplit rs{p.split.parts, p.split.per_part};
      cuda::launch(bn_rows::stats_parts_kernel<T>, dim3(bn_rows::blocks_for(p.d.c, rs)),
                   dim3(cuda::kBlockThreads), 0, stream, xp, p.d.n, p.d.c, rs, p.s1.data<double>(),
                   p.s2.data<double>());
    } else {
      cuda::launch(bn_cuda::stats_parts_kernel<T>, dim3(cuda::lane_blocks(p.s1.numel())),
                   dim3(cuda::kBlockThreads), 0, stream, xp, p.d, p.split, p.s1.data<double>(),
                   p.s2.data<double>());
    }
    cuda::launch(bn_cuda::stats_finish_kernel<T>, dim3(cuda::grid_for(p.d.c)),
                 dim3(cuda::kBlockThreads), 0, stream, xp, p.d, p.split.parts, p.s1.data<double>(),
                 p.s2.data<double>(), mean.data<double>(), m2.data<double>());
  });
}

// y = (x − mean)·scale + shift (then `act`); per-channel values (C) f64.
inline void launch_bn_elemt(const Tensor& x, const Tensor& y, const Tensor& mean,
                            const Tensor& scale, const Tensor& shift, cudaStream_t stream,
                            detail::BnActivation act = detail::BnActivation::none) {
  if (x.numel() == 0) return;
  dispatch_floating(x.dtype(), "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    bn_cuda::with_element_index(x, [&](auto e) {
      using I = decltype(e.numel);
      cuda::launch(bn_cuda::elemt_kernel<T, I>, dim3(cuda::grid_for(x.numel())),
                   dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                   static_cast<T*>(y.data_ptr()), e, mean.data<double>(), scale.data<double>(),
                   shift.data<double>(), act);
    });
  });
}

// sum_dy = Σ gy, sum_dy_xmu = Σ gy·(x − mean) per channel ((C) f64); gy through `act`'s
// derivative where it has one (the fused ops' backward).
inline void launch_bn_backward_reduce(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                      const Tensor& sum_dy, const Tensor& sum_dy_xmu,
                                      cudaStream_t stream, detail::BnActGrad act = {}) {
  if (x.numel() == 0) {  // eval over no values: nothing to sum (and no plane to step over)
    fill_(sum_dy, 0.0);
    fill_(sum_dy_xmu, 0.0);
    return;
  }
  const bn_cuda::PartSums p(x);
  dispatch_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    if (bn_cuda::takes_rows(p.d)) {
      const bn_rows::RowSplit rs{p.split.parts, p.split.per_part};
      cuda::launch(bn_rows::backward_reduce_parts_kernel<T>, dim3(bn_rows::blocks_for(p.d.c, rs)),
                   dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                   static_cast<const T*>(x.data_ptr()), p.d.n, p.d.c, rs, mean.data<double>(), act,
                   p.s1.data<double>(), p.s2.data<double>());
      return;
    }
    cuda::launch(bn_cuda::backward_reduce_parts_kernel<T>, dim3(cuda::lane_blocks(p.s1.numel())),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<const T*>(x.data_ptr()), p.d, p.split, mean.data<double>(), act,
                 p.s1.data<double>(), p.s2.data<double>());
  });
  cuda::launch(bn_cuda::sum_parts_kernel<double>, dim3(cuda::grid_for(p.d.c)),
               dim3(cuda::kBlockThreads), 0, stream, p.d.c, p.split.parts, p.s1.data<double>(),
               p.s2.data<double>(), sum_dy.data<double>(), sum_dy_xmu.data<double>());
}

// gx = (gy − a − (x − mean)·b)·k; per-channel values (C) f64; gy through `act` as above.
inline void launch_bn_backward_elemt(const Tensor& gy, const Tensor& x, const Tensor& gx,
                                     const Tensor& mean, const Tensor& k, const Tensor& a,
                                     const Tensor& b, cudaStream_t stream,
                                     detail::BnActGrad act = {}) {
  if (x.numel() == 0) return;
  dispatch_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    bn_cuda::with_element_index(x, [&](auto e) {
      using I = decltype(e.numel);
      cuda::launch(bn_cuda::backward_elemt_kernel<T, I>, dim3(cuda::grid_for(x.numel())),
                   dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                   static_cast<const T*>(x.data_ptr()), static_cast<T*>(gx.data_ptr()), e,
                   mean.data<double>(), k.data<double>(), a.data<double>(), b.data<double>(), act);
    });
  });
}

// batch_norm's forward (x contiguous) on x's device: y and the saved (C) f64 mean and invstd;
// in train the running stats, where given, are updated in place. With an activation
// (config.act: batch_norm_relu, batch_norm_gelu), y = act(·) and f.scale, f.shift are what the
// backward recomputes the activation's input from.
inline detail::BnForward launch_bn_forward(const Tensor& x, const Tensor& weight,
                                           const Tensor& bias, const Tensor& running_mean,
                                           const Tensor& running_var,
                                           const detail::BnConfig& config, cudaStream_t stream) {
  namespace bc = bn_cuda;
  const bc::Dims d = bc::dims_of(x);
  const TensorOptions f64{DType::f64, x.device()};
  detail::BnForward f{empty(x.shape(), {x.dtype(), x.device()}), empty({d.c}, f64),
                      empty({d.c}, f64), empty({d.c}, f64), empty({d.c}, f64)};
  const Tensor m2 = empty({d.c}, f64), scale = f.scale, shift = f.shift;
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
  launch_bn_elemt(x, f.y, f.mean, scale, shift, stream, config.act);
  if (config.act == detail::BnActivation::none)
    f.scale = f.shift = Tensor();  // kept for the fused ops' backward only
  return f;
}

// batch_norm's backward (gy, x contiguous; mean, invstd (C) f64) on x's device; with `fused`
// (the activation and the forward's f.scale, f.shift) the fused op's.
inline detail::BnBackward launch_bn_backward(const Tensor& gy, const Tensor& x,
                                             const Tensor& weight, const Tensor& mean,
                                             const Tensor& invstd, bool train,
                                             detail::BnWants wants, DType param_dtype,
                                             cudaStream_t stream,
                                             const detail::BnActSaved& fused = {}) {
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
  const detail::BnActGrad act = detail::act_grad_of(fused);
  if (sums) launch_bn_backward_reduce(gy, x, mean, sum_dy, sum_dy_xmu, stream, act);
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
  if (wants.x) launch_bn_backward_elemt(gy, x, r.gx, mean, k, a, b, stream, act);
  return r;
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
