#pragma once
// The training step on the GPU, each a single multi-tensor launch over all parameters
// (optim/multi_tensor.cuh): the SGD and AdamW updates, the loss scaler's fused unscale and
// found-inf check, gradient clipping (partial norms per chunk, one reduction, one scaling) and
// airbench94's Lookahead (averages and weights, parameters and BatchNorm statistics at once).
// The per-element math is optim/update_math.h, the CPU loops' own; nvcc compiles this with
// --fmad=false, so f32 results equal the CPU's bit for bit.
//
// Launchers take contiguous tensors on one device (the CPU in the emulated tests) and a stream.

#include <cmath>
#include <vector>

#include "core/cuda/reduce_kernels.cuh"
#include "optim/multi_tensor.cuh"
#include "optim/update_items.h"
#include "optim/update_math.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace optim_cuda {

using multi_tensor::Slot;

struct SgdOp {
  template <class T>
  __device__ void run(const Slot<detail::SgdScalars>& s, int64_t begin, int64_t end,
                      int64_t) const {
    using C = compute_t<T>;
    const detail::SgdCoeffs<C> c = detail::sgd_coeffs<C>(s.scalars);
    T* p = static_cast<T*>(s.ptr[0]);
    const T* g = static_cast<const T*>(s.ptr[1]);
    T* b = static_cast<T*>(s.ptr[2]);
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x)
      detail::sgd_element(p, g, b, k, c);
  }
};

struct AdamWOp {
  template <class T>
  __device__ void run(const Slot<detail::AdamWScalars>& s, int64_t begin, int64_t end,
                      int64_t) const {
    using C = compute_t<T>;
    const detail::AdamWCoeffs<C> c = detail::adamw_coeffs<C>(s.scalars);
    T* p = static_cast<T*>(s.ptr[0]);
    const T* g = static_cast<const T*>(s.ptr[1]);
    T* m = static_cast<T*>(s.ptr[2]);
    T* v = static_cast<T*>(s.ptr[3]);
    T* x = static_cast<T*>(s.ptr[4]);
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x)
      detail::adamw_element(p, g, m, v, x, k, c);
  }
};

struct UnscaleScalars {
  double inv_scale;
};

// flag: the smallest list index whose gradient held inf/NaN (initialised to the list's size).
struct UnscaleOp {
  long long* flag;
  template <class T>
  __device__ void run(const Slot<UnscaleScalars>& s, int64_t begin, int64_t end, int64_t) const {
    using C = compute_t<T>;
    const C inv = static_cast<C>(s.scalars.inv_scale);
    T* g = static_cast<T*>(s.ptr[0]);
    bool bad = false;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x)
      bad = detail::unscale_element(g, k, inv) || bad;
    if (bad) atomicMin(flag, static_cast<long long>(s.index));  // once per thread, not element
  }
};

struct NormScalars {
  double unused;  // every gradient shares the norm's order
};

// Σ |g|ᵖ, or max |g| (p = ∞), in double: the combine of a chunk's elements and of the partials.
struct NormCombine {
  bool max;
  __device__ double operator()(double a, double b) const {
    return max ? detail::norm_max(a, b) : a + b;
  }
};

// partials[c] ← chunk c's Σ |g|ᵖ (or max |g|).
struct NormPartialOp {
  double p;
  double* partials;
  template <class T>
  __device__ void run(const Slot<NormScalars>& s, int64_t begin, int64_t end, int64_t c) const {
    using C = compute_t<T>;
    const T* g = static_cast<const T*>(s.ptr[0]);
    const NormCombine combine{p == INFINITY};
    double acc = 0;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
      const double a = std::fabs(static_cast<double>(static_cast<C>(g[k])));
      acc = combine.max ? detail::norm_max(acc, a) : acc + detail::norm_term(a, p);
    }
    acc = reduce_cuda::block_reduce(acc, combine, 0.0);
    if (threadIdx.x == 0) partials[c] = acc;
  }
};

// One block: norm ← the p-norm from n partials; with coef, coef ← max_norm / (norm + 1e-6) when
// that clips (finite norm, coefficient < 1), else 1 (gradients left alone, as on the CPU).
// (A template only so that a header may define it: Acc is double.)
template <class Acc>
__global__ void finish_norm_kernel(const Acc* partials, int64_t n, double p, Acc* norm,
                                   double max_norm, Acc* coef) {
  const NormCombine combine{p == INFINITY};
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = combine(acc, partials[i]);
  acc = reduce_cuda::block_reduce(acc, combine, 0.0);
  if (threadIdx.x == 0) {
    const double total = detail::norm_finish(acc, p);
    *norm = total;
    if (coef) {
      const double c = max_norm / (total + 1e-6);
      *coef = (total - total == 0 && c < 1) ? c : 1.0;
    }
  }
}

// g ← g · coef when coef < 1 (read on the device: no host round trip).
struct ScaleOp {
  const double* coef;
  template <class T>
  __device__ void run(const Slot<NormScalars>& s, int64_t begin, int64_t end, int64_t) const {
    const double c = *coef;
    if (!(c < 1)) return;
    using C = compute_t<T>;
    T* g = static_cast<T*>(s.ptr[0]);
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x)
      detail::scale_element(g, k, static_cast<C>(c));
  }
};

struct LookaheadScalars {
  double unused;  // every tensor shares the step's weight
};

// a ← a + w·(t − a), t ← a (update_math.h), w = 1 − decay.
struct LookaheadOp {
  double weight;
  template <class T>
  __device__ void run(const Slot<LookaheadScalars>& s, int64_t begin, int64_t end, int64_t) const {
    using C = compute_t<T>;
    const C w = static_cast<C>(weight);
    T* t = static_cast<T*>(s.ptr[0]);
    T* a = static_cast<T*>(s.ptr[1]);
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x)
      detail::lookahead_element(t, a, k, w);
  }
};

inline Device device_of(const std::vector<Tensor>& tensors) {
  return tensors.front().device();
}

}  // namespace optim_cuda

// ---- kernel launchers
// ----------------------------------------------------------------------------

// One fused SGD step over every item.
inline void launch_sgd(const std::vector<detail::SgdItem>& items, cudaStream_t stream) {
  if (items.empty()) return;
  multi_tensor::Table<detail::SgdScalars> table;
  for (const auto& it : items) table.add({it.param, it.grad, it.buffer}, it.index, it.scalars);
  multi_tensor::apply(table, items.front().param.device(), optim_cuda::SgdOp{}, stream);
}

// One fused AdamW step over every item.
inline void launch_adamw(const std::vector<detail::AdamWItem>& items, cudaStream_t stream) {
  if (items.empty()) return;
  multi_tensor::Table<detail::AdamWScalars> table;
  for (const auto& it : items)
    table.add({it.param, it.grad, it.exp_avg, it.exp_avg_sq, it.max_exp_avg_sq}, it.index,
              it.scalars);
  multi_tensor::apply(table, items.front().param.device(), optim_cuda::AdamWOp{}, stream);
}

// Lookahead::update over every item (tensors and averages on one device) in one launch: 33
// tensors of airbench94 took 5 launches each (sub, mul, add, two copies) before.
inline void launch_lookahead(const std::vector<detail::LookaheadItem>& items, double decay,
                             cudaStream_t stream) {
  if (items.empty()) return;
  multi_tensor::Table<optim_cuda::LookaheadScalars> table;
  for (std::size_t i = 0; i < items.size(); ++i)
    table.add({items[i].tensor, items[i].average}, static_cast<int64_t>(i), {0});
  multi_tensor::apply(table, items.front().tensor.device(), optim_cuda::LookaheadOp{1 - decay},
                      stream);
}

// grads[i] ← grads[i] · inv_scale; flag (one i64 on the grads' device) ← min(flag, indices[i])
// for every gradient that held inf/NaN. The caller fills flag beforehand.
inline void launch_unscale(const std::vector<Tensor>& grads, const std::vector<int64_t>& indices,
                           double inv_scale, const Tensor& flag, cudaStream_t stream) {
  if (grads.empty()) return;
  multi_tensor::Table<optim_cuda::UnscaleScalars> table;
  for (std::size_t i = 0; i < grads.size(); ++i) table.add({grads[i]}, indices[i], {inv_scale});
  multi_tensor::apply(table, optim_cuda::device_of(grads),
                      optim_cuda::UnscaleOp{static_cast<long long*>(flag.data_ptr())}, stream);
}

// norm (one f64) ← the p-norm of all grads; with a defined coef (one f64), coef ← the clipping
// coefficient for max_norm (1 when no clipping is due). Two launches: partials, then one block.
inline void launch_total_norm(const std::vector<Tensor>& grads, const Device& device, double p,
                              const Tensor& norm, double max_norm, const Tensor& coef,
                              cudaStream_t stream) {
  multi_tensor::Table<optim_cuda::NormScalars> table;
  for (std::size_t i = 0; i < grads.size(); ++i)
    table.add({grads[i]}, static_cast<int64_t>(i), {0});
  const Tensor partials = empty({table.chunks() > 0 ? table.chunks() : 1}, {DType::f64, device});
  multi_tensor::apply(table, device,
                      optim_cuda::NormPartialOp{p, static_cast<double*>(partials.data_ptr())},
                      stream);
  cuda::launch(optim_cuda::finish_norm_kernel<double>, dim3(1), dim3(cuda::kBlockThreads), 0,
               stream, static_cast<const double*>(partials.data_ptr()), table.chunks(), p,
               static_cast<double*>(norm.data_ptr()), max_norm,
               coef.defined() ? static_cast<double*>(coef.data_ptr()) : nullptr);
}

// grads ← grads · coef where coef (one f64 on the grads' device) is < 1.
inline void launch_scale(const std::vector<Tensor>& grads, const Tensor& coef,
                         cudaStream_t stream) {
  if (grads.empty()) return;
  multi_tensor::Table<optim_cuda::NormScalars> table;
  for (std::size_t i = 0; i < grads.size(); ++i)
    table.add({grads[i]}, static_cast<int64_t>(i), {0});
  multi_tensor::apply(table, optim_cuda::device_of(grads),
                      optim_cuda::ScaleOp{static_cast<const double*>(coef.data_ptr())}, stream);
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
