#pragma once
// The CUDA side of the elementwise engine: one grid-stride kernel that applies an op's
// RG_HOST_DEVICE functor — the very functor the CPU loop in elementwise.h applies — with a
// contiguous fast path and a strided/broadcasting path. nvcc builds it in each op's
// <op>_cuda.cu; the tests build it with the host compiler and run it through the emulator.

#include <array>
#include <string_view>

#include "core/cuda/kernel.h"
#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace elementwise_cuda {

// Tensors of more dimensions are refused with a clear error; ringgrad's largest are 5-D.
inline constexpr int kMaxDims = 8;

// Operand 0 is the output, 1..N the inputs; strides in elements, 0 on broadcast dims.
template <int kOperands>
struct Geometry {
  int dims = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kOperands][kMaxDims] = {};
};

template <class T, int N>
struct Inputs {
  const T* p[N > 0 ? N : 1];
};

// f over the inputs at element offsets `at`, in the compute type, rounded once to T.
template <class T, class F, int N, int... K>
RG_HOST_DEVICE T apply(const F& f, const Inputs<T, N>& in, const int64_t* at,
                       std::integer_sequence<int, K...>) {
  using C = compute_t<T>;
  return T(f(static_cast<C>(in.p[K][at[K]])...));
}

template <class T, class F, int N>
__global__ void contiguous_kernel(F f, T* out, Inputs<T, N> in, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t at[N > 0 ? N : 1];
    for (int k = 0; k < N; ++k) at[k] = i;
    out[i] = apply<T, F, N>(f, in, at, std::make_integer_sequence<int, N>{});
  }
}

template <class T, class F, int N>
__global__ void strided_kernel(F f, T* out, Inputs<T, N> in, Geometry<N + 1> g, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // Row-major coordinates of element i, turned into each operand's offset.
    int64_t offset[N + 1] = {};
    int64_t rest = i;
    for (int d = g.dims - 1; d >= 0; --d) {
      const int64_t coord = rest % g.sizes[d];
      rest /= g.sizes[d];
      for (int k = 0; k <= N; ++k) offset[k] += coord * g.strides[k][d];
    }
    out[offset[0]] = apply<T, F, N>(f, in, offset + 1, std::make_integer_sequence<int, N>{});
  }
}

}  // namespace elementwise_cuda

// Launches out = f(inputs...) on `stream`: `out` has the broadcast shape; every tensor's data
// must be device memory (host memory under the emulator).
template <class F, class... Ts>
void launch_pointwise(std::string_view op, F f, const Tensor& out, cudaStream_t stream,
                      const Ts&... inputs) {
  namespace ec = elementwise_cuda;
  constexpr int N = sizeof...(Ts);
  const std::array<const Tensor*, N> in{&inputs...};
  const int64_t n = out.numel();
  if (n == 0) return;
  bool flat = out.is_contiguous();
  for (const Tensor* t : in) flat = flat && t->shape() == out.shape() && t->is_contiguous();
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    ec::Inputs<T, N> ptrs{};
    for (int k = 0; k < N; ++k) ptrs.p[k] = static_cast<const T*>(in[k]->data_ptr());
    T* o = static_cast<T*>(out.data_ptr());
    const unsigned blocks = cuda::grid_for(n);
    if (flat) {
      cuda::launch(ec::contiguous_kernel<T, F, N>, dim3(blocks), dim3(cuda::kBlockThreads), 0,
                   stream, f, o, ptrs, n);
      return;
    }
    RG_CHECK(out.dim() <= ec::kMaxDims, op, ": the CUDA kernel takes at most ", ec::kMaxDims,
             " dims for strided or broadcast operands, got ", out.describe());
    ec::Geometry<N + 1> g;
    g.dims = static_cast<int>(out.dim());
    for (int d = 0; d < g.dims; ++d) {
      g.sizes[d] = out.shape()[d];
      g.strides[0][d] = out.strides()[d];
    }
    for (int k = 0; k < N; ++k) {
      const Shape strides = detail::broadcast_strides(*in[k], out.shape());
      for (int d = 0; d < g.dims; ++d) g.strides[k + 1][d] = strides[d];
    }
    cuda::launch(ec::strided_kernel<T, F, N>, dim3(blocks), dim3(cuda::kBlockThreads), 0, stream, f,
                 o, ptrs, g, n);
  });
}

}  // namespace rg
