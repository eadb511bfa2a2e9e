#pragma once
// max on the GPU. Lanes along `dim` (outer, size, inner): a thread walks its lane when lanes
// are many and short or strided (inner > 1), a block takes a long contiguous row (and the whole
// tensor for max(x)): each thread keeps its first maximum, then the block agrees on the
// NaN-propagating maximum and on the smallest index holding it — the CPU's tie and NaN rules.
// Backward: a thread per element of gx, which gets gy where it is its lane's argmax (max(x,
// dim)), or gy / count where it equals the maximum (max(x); count found by a block first).

#include <cstdint>

#include "core/cuda/reduce_kernels.cuh"
#include "ops/max/max_functors.h"
#include "ops/reduction/reduction.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace max_cuda {

inline constexpr int64_t kBlockLaneSize = 256;

struct NanLarger {  // the block's maximum: NaN wins, then the larger value
  template <class C>
  RG_HOST_DEVICE C operator()(C a, C b) const {
    return max_beats(b, a) ? b : a;
  }
};
struct Smaller {
  template <class I>
  RG_HOST_DEVICE I operator()(I a, I b) const {
    return b < a ? b : a;
  }
};

template <class T, class C>
__global__ void along_thread_per_lane(const T* x, T* values, int64_t* indices, Lanes l) {
  for (int64_t n = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; n < l.outer * l.inner;
       n += int64_t{gridDim.x} * blockDim.x) {
    const T* xl = x + n / l.inner * l.size * l.inner + n % l.inner;
    C best = static_cast<C>(xl[0]);
    int64_t arg = 0;
    for (int64_t c = 1; c < l.size; ++c) {
      const C v = static_cast<C>(xl[c * l.inner]);
      if (max_beats(v, best)) best = v, arg = c;
    }
    values[n] = T(best);
    indices[n] = arg;
  }
}

// inner == 1: lane n is row n. indices may be null (max(x) needs no index).
template <class T, class C>
__global__ void along_block_per_lane(const T* x, T* values, int64_t* indices, Lanes l) {
  for (int64_t n = blockIdx.x; n < l.outer; n += gridDim.x) {
    const T* xr = x + n * l.size;
    // Threads visit their columns in increasing order, so each keeps its first maximum. A
    // thread without columns (a row shorter than the block) offers element 0, a real one.
    C best = static_cast<C>(xr[0]);
    long long arg = 0;
    for (int64_t c = threadIdx.x; c < l.size; c += blockDim.x) {
      const C v = static_cast<C>(xr[c]);
      if (c == int64_t{threadIdx.x} || max_beats(v, best)) best = v, arg = c;
    }
    const C m = reduce_cuda::block_all_reduce(best, NanLarger{}, best);
    // The first index of m: NaN matches NaN; a thread without it offers l.size.
    const bool holds = (best == m) || (best != best && m != m);
    const long long first = reduce_cuda::block_reduce(holds ? arg : static_cast<long long>(l.size),
                                                      Smaller{}, static_cast<long long>(l.size));
    if (threadIdx.x == 0) {
      values[n] = T(m);
      if (indices) indices[n] = first;
    }
  }
}

// *count = the number of elements of x equal to *m (one block).
template <class T, class C>
__global__ void count_equal(const T* x, const T* m, int64_t numel, long long* count) {
  const C target = static_cast<C>(*m);
  long long k = 0;
  for (int64_t i = threadIdx.x; i < numel; i += blockDim.x) k += static_cast<C>(x[i]) == target;
  k = reduce_cuda::block_reduce(k, reduce_cuda::Plus{}, 0LL);
  if (threadIdx.x == 0) *count = k;
}

template <class T, class C>
__global__ void all_backward(const T* gy, const T* x, const T* m, const long long* count, T* gx,
                             int64_t numel) {
  const double inv = *count > 0 ? 1.0 / static_cast<double>(*count) : 0.0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < numel;
       i += int64_t{gridDim.x} * blockDim.x)
    gx[i] = T(MaxAllGradFn{inv}(static_cast<C>(*gy), static_cast<C>(x[i]), static_cast<C>(*m)));
}

template <class T>
__global__ void along_backward(const T* gy, const int64_t* indices, T* gx, Lanes l) {
  const int64_t elements = l.outer * l.size * l.inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < elements;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = e / l.inner % l.size, n = e / (l.size * l.inner) * l.inner + e % l.inner;
    gx[e] = indices[n] == c ? gy[n] : T(0.0f);
  }
}

template <class T>
void launch_lanes(const T* x, T* values, int64_t* indices, const Lanes& l, cudaStream_t stream) {
  using C = compute_t<T>;
  if (l.inner == 1 && (l.size >= kBlockLaneSize || !indices)) {
    cuda::launch(along_block_per_lane<T, C>, dim3(cuda::lane_blocks(l.outer)),
                 dim3(cuda::kBlockThreads), 0, stream, x, values, indices, l);
  } else {
    cuda::launch(along_thread_per_lane<T, C>, dim3(cuda::grid_for(l.count())),
                 dim3(cuda::kBlockThreads), 0, stream, x, values, indices, l);
  }
}

}  // namespace max_cuda

// values, indices (contiguous, l.count() elements) of x (contiguous) along the lanes l.
inline void launch_max_along(const Tensor& x, const Tensor& values, const Tensor& indices,
                             const Lanes& l, cudaStream_t stream) {
  if (l.count() == 0) return;
  dispatch_floating(x.dtype(), "max", [&](auto tag) {
    using T = decltype(tag);
    max_cuda::launch_lanes(static_cast<const T*>(x.data_ptr()), static_cast<T*>(values.data_ptr()),
                           indices.data<int64_t>(), l, stream);
  });
}

// y (0-d) = the maximum of x (contiguous, numel > 0): one block.
inline void launch_max_all(const Tensor& x, const Tensor& y, cudaStream_t stream) {
  dispatch_floating(x.dtype(), "max", [&](auto tag) {
    using T = decltype(tag);
    max_cuda::launch_lanes(static_cast<const T*>(x.data_ptr()), static_cast<T*>(y.data_ptr()),
                           static_cast<int64_t*>(nullptr), Lanes{1, x.numel(), 1}, stream);
  });
}

// gx of y = max(x): gy (0-d) shared evenly among the elements of x (contiguous) equal to y.
inline void launch_max_all_backward(const Tensor& gy, const Tensor& x, const Tensor& y,
                                    const Tensor& gx, cudaStream_t stream) {
  const Tensor count = empty({}, {DType::i64, x.device()});
  auto* pc = reinterpret_cast<long long*>(count.data<int64_t>());
  dispatch_floating(x.dtype(), "max_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* py = static_cast<const T*>(y.data_ptr());
    cuda::launch(max_cuda::count_equal<T, C>, dim3(1), dim3(cuda::kBlockThreads), 0, stream, px, py,
                 x.numel(), pc);
    cuda::launch(max_cuda::all_backward<T, C>, dim3(cuda::grid_for(x.numel())),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()), px, py,
                 static_cast<const long long*>(pc), static_cast<T*>(gx.data_ptr()), x.numel());
  });
}

// gx (contiguous, the lanes l) of max(x, dim) from gy and indices (contiguous, l.count()).
inline void launch_max_along_backward(const Tensor& gy, const Tensor& indices, const Tensor& gx,
                                      const Lanes& l, cudaStream_t stream) {
  if (gx.numel() == 0) return;
  dispatch_floating(gx.dtype(), "max_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(max_cuda::along_backward<T>, dim3(cuda::grid_for(gx.numel())),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 indices.data<int64_t>(), static_cast<T*>(gx.data_ptr()), l);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
