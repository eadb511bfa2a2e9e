#pragma once
// Sum reductions on the GPU: y = scale · Σ x over a set of dims, for the autograd engine's
// sum_to_shape and for the sum and mean ops. Accumulates in float for f32 and the 16-bit types,
// in double for f64: a tree of partial sums keeps float's error near log2(n)·u rather than n·u.
//
// Many outputs: one block per output element (grid-stride over the outputs); its threads stride
// over the reduced elements, then a warp-shuffle and shared-memory tree combines them.
// Few outputs over many reduced elements (a convolution's bias gradient: Σ over N, H, W of
// (N, C, H, W), C blocks on a GPU of 132 SMs): each output's reduced elements are cut into
// `parts` ranges, a block sums each range into a buffer of partial sums, and a second launch adds
// each output's parts, in order. No atomics: the same input gives the same bits on every run.
//
// Either way a thread walks the reduced index r = row · inner + col (inner: the innermost reduced
// dim, after merging dims that are contiguous to each other) by adding to (row, col) rather than
// dividing r per element: a 64-bit division costs dozens of instructions, more than the load.
//
// A sum that keeps the innermost dim and reduces little (a linear bias over a batch) would want
// lanes along that dim instead.

#include <algorithm>
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

// index < Π sizes. The outermost dim takes what is left of the index without a division.
RG_HOST_DEVICE inline int64_t offset_of(int64_t index, int dims, const int64_t* sizes,
                                        const int64_t* strides) {
  int64_t offset = 0;
  for (int d = dims - 1; d > 0; --d) {
    offset += index % sizes[d] * strides[d];
    index /= sizes[d];
  }
  return dims > 0 ? offset + index * strides[0] : offset;
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

// Σ in[offset of r] over this thread's reduced indices r in [begin, end): begin + threadIdx.x,
// then every blockDim.x. `in` points at the output's first element.
template <class T, class Acc>
__device__ Acc thread_sum(const T* in, const Geometry& g, int64_t begin, int64_t end) {
  if (end <= begin) return Acc(0);       // also an empty reduced dim, whose size would divide below
  const int outer = g.reduced_dims - 1;  // dims above the innermost reduced one
  const int64_t inner = outer >= 0 ? g.reduced_sizes[outer] : 1;
  const int64_t inner_stride = outer >= 0 ? g.reduced_strides[outer] : 0;
  const int64_t step = blockDim.x, step_rows = step / inner, step_cols = step % inner;
  int64_t r = begin + threadIdx.x, row = r / inner, col = r % inner;
  Acc acc = 0;
  for (; r < end; r += step) {
    acc += static_cast<Acc>(
        in[offset_of(row, outer, g.reduced_sizes, g.reduced_strides) + col * inner_stride]);
    row += step_rows;
    col += step_cols;
    if (col >= inner) col -= inner, ++row;
  }
  return acc;
}

// out[o] = scale · Σ in over output o's reduced elements, a block per output. In and Out differ
// in the second stage of a split sum (float parts, T outputs).
template <class In, class Out, class Acc>
__global__ void sum_kernel(const In* in, Out* out, Geometry g, double scale) {
  for (int64_t o = blockIdx.x; o < g.outputs; o += gridDim.x) {
    const In* base = in + offset_of(o, g.kept_dims, g.kept_sizes, g.kept_strides);
    const Acc acc = block_sum(thread_sum<In, Acc>(base, g, 0, g.reduced));
    if (threadIdx.x == 0) out[o] = Out(acc * static_cast<Acc>(scale));
  }
}

// The first stage of a split sum: block b sums part p = b % parts of output o = b / parts, the
// reduced indices [p · chunk, (p + 1) · chunk), into parts_out[b].
template <class T, class Acc>
__global__ void sum_parts_kernel(const T* in, Acc* parts_out, Geometry g, int64_t parts,
                                 int64_t chunk) {
  for (int64_t b = blockIdx.x; b < g.outputs * parts; b += gridDim.x) {
    const int64_t o = b / parts, begin = b % parts * chunk;
    const int64_t end = begin + chunk < g.reduced ? begin + chunk : g.reduced;
    const T* base = in + offset_of(o, g.kept_dims, g.kept_sizes, g.kept_strides);
    const Acc acc = block_sum(thread_sum<T, Acc>(base, g, begin, end));
    if (threadIdx.x == 0) parts_out[b] = acc;
  }
}

// How a sum is cut: `parts` ranges of `chunk` reduced indices per output (the last may be
// shorter; none is empty). parts == 1: one block per output, no second stage.
struct Split {
  int64_t parts = 1, chunk = 0;
};

// `parts` ranges (at most `reduced`, at least 1) of equal length but the last.
inline Split split_in(int64_t reduced, int64_t parts) {
  parts = std::max<int64_t>(1, std::min(parts, reduced));
  const int64_t chunk = (reduced + parts - 1) / parts;
  return {reduced > 0 ? (reduced + chunk - 1) / chunk : 1, chunk};
}

// Enough blocks to fill the device (`blocks_wanted`, from cuda::grid_for) when the outputs alone
// are fewer, but no part shorter than `min_chunk`: below that the partial sums cost more than
// they spread.
inline Split split_for(int64_t outputs, int64_t reduced, int64_t blocks_wanted, int64_t min_chunk) {
  if (outputs <= 0 || outputs >= blocks_wanted || reduced < 2 * min_chunk) return {1, reduced};
  const int64_t parts = std::min((blocks_wanted + outputs - 1) / outputs, reduced / min_chunk);
  return split_in(reduced, parts);
}

// Merges neighbours of one list (kept or reduced) that are contiguous to each other: (N, H, W)
// of a contiguous (N, C, H, W) becomes (N, H·W), whose inner walk is then a row of H·W.
inline int merge_contiguous(int dims, int64_t* sizes, int64_t* strides) {
  int merged = 0;
  for (int d = 0; d < dims; ++d) {
    if (merged > 0 && strides[merged - 1] == sizes[d] * strides[d]) {
      sizes[merged - 1] *= sizes[d];
      strides[merged - 1] = strides[d];
    } else {
      sizes[merged] = sizes[d];
      strides[merged++] = strides[d];
    }
  }
  return merged;
}

// The geometry of summing `in` over the dims flagged in `reduced`; names `op` when there are
// too many dims or `out` is not the kept elements.
inline Geometry sum_geometry(std::string_view op, const Tensor& in,
                             const std::vector<bool>& reduced, const Tensor& out) {
  RG_CHECK(out.is_contiguous() && reduced.size() == static_cast<std::size_t>(in.dim()), op,
           ": launch_sum needs a contiguous output and a flag per input dim");
  Geometry g;
  int kept = 0, red = 0;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (in.shape()[d] == 1) continue;  // neither kept nor reduced: nothing to walk
    const bool r = reduced[d];
    RG_CHECK((r ? red : kept) < kMaxDims, op, ": the CUDA reduction takes at most ", kMaxDims,
             " kept and reduced dims, got ", in.describe());
    (r ? g.reduced_sizes[red] : g.kept_sizes[kept]) = in.shape()[d];
    (r ? g.reduced_strides[red++] : g.kept_strides[kept++]) = in.strides()[d];
    (r ? g.reduced : g.outputs) *= in.shape()[d];
  }
  g.kept_dims = merge_contiguous(kept, g.kept_sizes, g.kept_strides);
  g.reduced_dims = merge_contiguous(red, g.reduced_sizes, g.reduced_strides);
  RG_CHECK(g.outputs == out.numel(), op, ": output ", out.describe(), " does not hold the ",
           g.outputs, " kept elements of ", in.describe());
  return g;
}

// The split launch_sum makes on this build: on a GPU, a part per block of a full grid with
// each thread summing at least 8 elements; emulated, a few blocks (cuda::grid_for).
inline Split planned_split(const Geometry& g) {
  return split_for(g.outputs, g.reduced, cuda::grid_for(g.outputs * g.reduced),
                   8 * int64_t{cuda::kBlockThreads});
}

}  // namespace reduce_cuda

// out = scale · Σ in over the dims marked in `reduced` (one flag per dim of in); `out` is
// contiguous with the kept dims in order (sizes of 1 allowed). Device memory (host memory under
// the emulator). An empty reduction writes scale · 0. `parts` > 0 cuts each output's reduced
// elements into that many parts (tests of the split path); 0: reduce_cuda::planned_split.
inline void launch_sum(std::string_view op, const Tensor& in, const std::vector<bool>& reduced,
                       const Tensor& out, double scale, cudaStream_t stream, int64_t parts = 0) {
  namespace rc = reduce_cuda;
  RG_CHECK(parts >= 0, op, ": launch_sum's parts must be >= 0, got ", parts);
  const rc::Geometry g = rc::sum_geometry(op, in, reduced, out);
  if (g.outputs == 0) return;
  const rc::Split split = parts > 0 ? rc::split_in(g.reduced, parts) : rc::planned_split(g);
  dispatch_floating(in.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using Acc = compute_t<T>;  // float for f32 and the 16-bit types, double for f64
    const T* x = static_cast<const T*>(in.data_ptr());
    T* y = static_cast<T*>(out.data_ptr());
    if (split.parts == 1) {
      cuda::launch(rc::sum_kernel<T, T, Acc>, dim3(cuda::lane_blocks(g.outputs)),
                   dim3(cuda::kBlockThreads), 0, stream, x, y, g, scale);
      return;
    }
    // (outputs, parts) partial sums, then each output's row of them in order. The buffer is
    // freed in stream order, after the second launch has read it.
    const Tensor partial = empty({g.outputs * split.parts}, {dtype_of<Acc>::value, out.device()});
    Acc* p = static_cast<Acc*>(partial.data_ptr());
    cuda::launch(rc::sum_parts_kernel<T, Acc>, dim3(cuda::lane_blocks(g.outputs * split.parts)),
                 dim3(cuda::kBlockThreads), 0, stream, x, p, g, split.parts, split.chunk);
    rc::Geometry rows;
    rows.kept_dims = rows.reduced_dims = 1;
    rows.kept_sizes[0] = rows.outputs = g.outputs;
    rows.kept_strides[0] = split.parts;
    rows.reduced_sizes[0] = rows.reduced = split.parts;
    rows.reduced_strides[0] = 1;
    cuda::launch(rc::sum_kernel<Acc, T, Acc>, dim3(cuda::lane_blocks(g.outputs)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const Acc*>(p), y, rows, scale);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
