#pragma once
// The elementwise engine shared by every pointwise op: broadcasting, dtype and device checks,
// and the loops that apply a host/device functor: a CPU loop here, a grid-stride CUDA kernel in
// elementwise_kernels.cuh. Each op folder (ops/relu, ops/add, ...)
// holds only its functors and its backward node.
//
// A functor takes and returns the compute type C (float for f16/bf16/f32, double for f64):
//   struct ReluFn { template <class C> RG_HOST_DEVICE C operator()(C x) const { ... } };
// so the same math runs in the CPU loop here and in a grid-stride CUDA kernel.

#include <algorithm>
#include <array>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/dispatch.h"
#include "core/half_runs.h"
#include "core/strided_loop.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace rg {

// The broadcast of two shapes (numpy rules); throws naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

// Checks that all defined tensors share one device and one floating dtype; names `op`.
void check_same_float(std::string_view op, const std::vector<Tensor>& tensors);

// For ops whose kernels run on the CPU only so far: the standard "no kernel" error of
// dispatch_device (core/dispatch.h) when any tensor is elsewhere. An op that gains a CUDA kernel
// replaces this with dispatch_device<Kernels::cpu_and_cuda>.
void check_cpu(std::string_view op, const std::vector<Tensor>& tensors);

namespace detail {
inline constexpr int64_t kPointwiseGrain = 1 << 14;

// Strides of `t` broadcast to `shape` (0 where t has size 1 or is missing).
Shape broadcast_strides(const Tensor& t, const Shape& shape);

// The layout of a pointwise result, as PyTorch's TensorIterator keeps it: the format of the
// first input that has the result's whole shape (a channels-last activation plus a broadcast
// (1, C, 1, 1) bias stays channels-last), contiguous when none has.
template <std::size_t N>
MemoryFormat pointwise_format(const Shape& shape, const std::array<const Tensor*, N>& in) {
  for (const Tensor* t : in)
    if (t->shape() == shape) return t->suggest_memory_format();
  return MemoryFormat::contiguous;
}

// Whether every input has out's dense layout, so the kernels may index all of them flat.
template <std::size_t N>
bool flat_layout(const Tensor& out, const std::array<const Tensor*, N>& in) {
  if (!out.is_contiguous() && out.suggest_memory_format() == MemoryFormat::contiguous) return false;
  for (const Tensor* t : in)
    if (!same_dense_layout(out, *t)) return false;
  return true;
}
}  // namespace detail

// out[i] = f(in_0[i], ..., in_{N-1}[i]) over the broadcast shape of the inputs, on their device.
// Inputs must share a floating dtype and a device (checked by the caller with
// check_same_float); the result has that dtype.
template <class F, class... Ts>
Tensor pointwise(std::string_view op, F f, const Ts&... inputs);

// The kernels behind pointwise, one per backend: write f(inputs...) into `out`, which has the
// broadcast shape. The CPU loop is below; the CUDA one is in elementwise_kernels.cuh, built for
// each op's functors in its <op>_cuda.cu (RG_POINTWISE_CUDA).
template <class F, class... Ts>
void pointwise_into(OnCuda, std::string_view op, F f, const Tensor& out, const Ts&... inputs);

template <class F, class... Ts>
void pointwise_into(OnCpu, std::string_view op, F f, const Tensor& out, const Ts&... inputs) {
  constexpr std::size_t N = sizeof...(Ts);
  const std::array<const Tensor*, N> in{&inputs...};
  const Shape& shape = out.shape();
  const int64_t n = out.numel();
  const bool flat = detail::flat_layout(out, in);
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    T* o = static_cast<T*>(out.data_ptr());
    std::array<const T*, N> p;
    for (std::size_t k = 0; k < N; ++k) p[k] = static_cast<const T*>(in[k]->data_ptr());
    if constexpr (std::is_same_v<T, Half>) {
      if (flat) {
        // f16 data: blocks widened to f32 and narrowed back with the vectorised conversions
        // (core/half_runs.h), the functor running on plain f32 arrays in between. (bf16's
        // conversions are a shift and a rounding add, which the compiler vectorises in place.)
        parallel_for(n, detail::kPointwiseGrain, [&](int64_t b, int64_t e) {
          constexpr int64_t kBlock = 512;
          std::array<std::array<float, kBlock>, N> x;
          std::array<float, kBlock> y;
          for (int64_t i0 = b; i0 < e; i0 += kBlock) {
            const int64_t len = std::min(kBlock, e - i0);
            for (std::size_t k = 0; k < N; ++k) widen(p[k] + i0, x[k].data(), len);
            for (int64_t i = 0; i < len; ++i)
              y[i] = [&]<std::size_t... K>(std::index_sequence<K...>) {
                return f(x[K][i]...);
              }
            (std::make_index_sequence<N>{});
            narrow(y.data(), o + i0, len);
          }
        });
        return;
      }
    }
    if (flat) {
      parallel_for(n, detail::kPointwiseGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          o[i] = T([&]<std::size_t... K>(std::index_sequence<K...>) {
            return f(static_cast<C>(p[K][i])...);
          }(std::make_index_sequence<N>{}));
      });
      return;
    }
    std::array<Shape, N + 1> strides;
    strides[0] = out.strides();
    for (std::size_t k = 0; k < N; ++k) strides[k + 1] = detail::broadcast_strides(*in[k], shape);
    std::array<const Shape*, N + 1> sp;
    for (std::size_t k = 0; k <= N; ++k) sp[k] = &strides[k];
    parallel_for(n, detail::kPointwiseGrain, [&](int64_t b, int64_t e) {
      strided_loop<N + 1>(shape, sp, b, e, [&](const std::array<int64_t, N + 1>& off) {
        o[off[0]] = T([&]<std::size_t... K>(std::index_sequence<K...>) {
          return f(static_cast<C>(p[K][off[K + 1]])...);
        }(std::make_index_sequence<N>{}));
      });
    });
  });
}

template <class F, class... Ts>
Tensor pointwise(std::string_view op, F f, const Ts&... inputs) {
  const std::array<const Tensor*, sizeof...(Ts)> in{&inputs...};
  Shape shape = in[0]->shape();
  for (std::size_t k = 1; k < in.size(); ++k) shape = broadcast_shapes(shape, in[k]->shape(), op);
  Tensor out = empty(shape, {in[0]->dtype(), in[0]->device()}, detail::pointwise_format(shape, in));
  dispatch_device<Kernels::cpu_and_cuda>(
      op, out.device(), [&](auto on) { pointwise_into(on, op, f, out, inputs...); });
  return out;
}

}  // namespace rg
