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
inline namespace RG_KERNEL_BUILD {
namespace elementwise_cuda {

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

// Operand 0 is the output, 1..N the inputs; strides in elements, 0 on broadcast dims.
template <class T, class F, int N>
__global__ void strided_kernel(F f, T* out, Inputs<T, N> in, cuda::StridedGeometry<N + 1> g,
                               int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t offset[N + 1];
    cuda::strided_offsets(i, g, offset);
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
  const bool flat = detail::flat_layout(out, in);
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
    std::array<Shape, N + 1> strides;
    strides[0] = out.strides();
    for (int k = 0; k < N; ++k) strides[k + 1] = detail::broadcast_strides(*in[k], out.shape());
    const auto g = cuda::strided_geometry<N + 1>(op, out.shape(), strides);
    cuda::launch(ec::strided_kernel<T, F, N>, dim3(blocks), dim3(cuda::kBlockThreads), 0, stream, f,
                 o, ptrs, g, n);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
