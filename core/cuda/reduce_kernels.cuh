#pragma once
// Sum reductions on the GPU: y = scale · Σ x over a set of dims, for the autograd engine's
// sum_to_shape and for the sum and mean ops. One block per output element (grid-stride over the
// outputs); its threads stride over the reduced elements, then a warp-shuffle and shared-memory
// tree combines them. Accumulates in float for f32 and the 16-bit types, in double for f64:
// a tree of partial sums keeps float's error near log2(n)·u rather than n·u.
//
// Suited to few outputs over many reduced elements (bias gradients, BatchNorm statistics, losses);
// a sum that keeps the innermost dim and reduces little would want lanes along that dim instead.

#include <string_view>
#include <vector>

#include "core/cuda/kernel.h"
#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace reduce_cuda {

inline constexpr int kMaxDims = 8;
inline constexpr unsigned kFullMask = 0xffffffffu;

// The input's dims split into the kept ones (in output order) and the reduced ones.
struct Geometry {
  int kept_dims = 0, reduced_dims = 0;
  int64_t kept_sizes[kMaxDims] = {}, kept_strides[kMaxDims] = {};
  int64_t reduced_sizes[kMaxDims] = {}, reduced_strides[kMaxDims] = {};
  int64_t outputs = 1, reduced = 1;
};

RG_HOST_DEVICE inline int64_t offset_of(int64_t index, int dims, const int64_t* sizes,
                                        const int64_t* strides) {
  int64_t offset = 0;
  for (int d = dims - 1; d >= 0; --d) {
    offset += index % sizes[d] * strides[d];
    index /= sizes[d];
  }
  return offset;
}

struct Plus {
  template <class Acc>
  RG_HOST_DEVICE Acc operator()(Acc a, Acc b) const {
    return a + b;
  }
};
struct Larger {
  template <class Acc>
  RG_HOST_DEVICE Acc operator()(Acc a, Acc b) const {
    return b > a ? b : a;
  }
};

// combine(v) over the block, valid in thread 0; `identity` fills the missing warps.
// blockDim.x must be a multiple of 32.
template <class Acc, class Combine>
__device__ Acc block_reduce(Acc v, Combine combine, Acc identity) {
  __shared__ Acc warp_parts[32];
  for (int offset = 16; offset > 0; offset /= 2)
    v = combine(v, __shfl_down_sync(kFullMask, v, offset));
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_parts[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_parts[lane] : identity;
    for (int offset = 16; offset > 0; offset /= 2)
      v = combine(v, __shfl_down_sync(kFullMask, v, offset));
  }
  __syncthreads();  // warp_parts is free again for the block's next output
  return v;
}

// The sum of v over the block, valid in thread 0.
template <class Acc>
__device__ Acc block_sum(Acc v) {
  return block_reduce(v, Plus{}, Acc(0));
}

// combine(v) over the block, returned to every thread.
template <class Acc, class Combine>
__device__ Acc block_all_reduce(Acc v, Combine combine, Acc identity) {
  __shared__ Acc result;
  v = block_reduce(v, combine, identity);
  if (threadIdx.x == 0) result = v;
  __syncthreads();
  v = result;
  __syncthreads();  // every thread has read it before the next call writes it
  return v;
}

template <class T, class Acc>
__global__ void sum_kernel(const T* in, T* out, Geometry g, double scale) {
  for (int64_t o = blockIdx.x; o < g.outputs; o += gridDim.x) {
    const int64_t base = offset_of(o, g.kept_dims, g.kept_sizes, g.kept_strides);
    Acc acc = 0;
    for (int64_t r = threadIdx.x; r < g.reduced; r += blockDim.x)
      acc += static_cast<Acc>(
          in[base + offset_of(r, g.reduced_dims, g.reduced_sizes, g.reduced_strides)]);
    acc = block_sum(acc);
    if (threadIdx.x == 0) out[o] = T(acc * static_cast<Acc>(scale));
  }
}

}  // namespace reduce_cuda

// out = scale · Σ in over the dims marked in `reduced` (one flag per dim of in); `out` is
// contiguous with the kept dims in order (sizes of 1 allowed). Device memory (host memory under
// the emulator). An empty reduction writes scale · 0.
inline void launch_sum(std::string_view op, const Tensor& in, const std::vector<bool>& reduced,
                       const Tensor& out, double scale, cudaStream_t stream) {
  namespace rc = reduce_cuda;
  RG_CHECK(out.is_contiguous() && reduced.size() == static_cast<std::size_t>(in.dim()), op,
           ": launch_sum needs a contiguous output and a flag per input dim");
  rc::Geometry g;
  int kept = 0, red = 0;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (in.shape()[d] == 1) continue;  // neither kept nor reduced: nothing to walk
    const bool r = reduced[d];
    RG_CHECK((r ? red : kept) < rc::kMaxDims, op, ": the CUDA reduction takes at most ",
             rc::kMaxDims, " kept and reduced dims, got ", in.describe());
    (r ? g.reduced_sizes[red] : g.kept_sizes[kept]) = in.shape()[d];
    (r ? g.reduced_strides[red++] : g.kept_strides[kept++]) = in.strides()[d];
    (r ? g.reduced : g.outputs) *= in.shape()[d];
  }
  g.kept_dims = kept;
  g.reduced_dims = red;
  RG_CHECK(g.outputs == out.numel(), op, ": output ", out.describe(), " does not hold the ",
           g.outputs, " kept elements of ", in.describe());
  if (g.outputs == 0) return;
  dispatch_floating(in.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using Acc = compute_t<T>;  // float for f32 and the 16-bit types, double for f64
    cuda::launch(rc::sum_kernel<T, Acc>, dim3(cuda::lane_blocks(g.outputs)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(in.data_ptr()),
                 static_cast<T*>(out.data_ptr()), g, scale);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
