#pragma once
// batch_norm's per-channel sums over (M, C) rows on the GPU: the layout of a channels-last
// activation seen as its N·H·W rows of C channels (batch_norm_channels_last.h), and of any
// (N, C) input. The plane kernels of batch_norm_kernels.cuh give a block one channel, whose values
// in rows sit C apart: a warp's 32 loads would touch 32 memory sectors for 32 values. Here a
// block covers 32 neighbouring channels (one per lane of a warp: each warp load is one run of a
// row) times kRowLanes rows at a time, over a part of the rows:
//   block (tile, part): thread (row lane r, channel lane l) sums channel tile·32 + l over rows
//   part·per_part + r, + kRowLanes, ...; the row lanes' sums are added in shared memory, in
//   lane order, into (C, parts) f64 buffers — the layout batch_norm_kernels.cuh's per-channel
//   kernels (stats_finish_kernel, sum_parts_kernel) add up, in order: no atomics, the same sums
//   on every run.
// The terms summed are the plane kernels' exactly: Σ (x − k), Σ (x − k)² with k the channel's
// first value (row 0); Σ gy and Σ gy·(x − mean), gy through the fused activation's derivative.

#include "core/cuda/kernel.h"
#include "ops/batch_norm/batch_norm_kernels.h"
#include "ops/batch_norm/batch_norm_math.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace bn_rows {

inline constexpr int kChannelLanes = 32;
inline constexpr int kRowLanes = cuda::kBlockThreads / kChannelLanes;  // 8 on a GPU, 2 emulated

// How the rows split into parts: per_part rows each (the last may have fewer).
struct RowSplit {
  int64_t parts = 1, per_part = 1;
};

RG_HOST_DEVICE inline int64_t tiles_of(int64_t channels) {
  return (channels + kChannelLanes - 1) / kChannelLanes;
}

// Enough (tile, part) blocks to fill a GPU, each summing at least a few hundred rows (the
// emulator: a few blocks, several parts even for tiny inputs, so the tests cross parts).
inline RowSplit split_rows(int64_t rows, int64_t channels) {
#if defined(__CUDACC__)
  const int64_t target_blocks = 1024, min_rows = 256;
#else
  const int64_t target_blocks = 6, min_rows = 3;
#endif
  const int64_t by_blocks = target_blocks / tiles_of(channels);
  const int64_t by_rows = rows / min_rows;
  int64_t parts = by_blocks < by_rows ? by_blocks : by_rows;
  parts = parts < 1 ? 1 : (parts < rows ? parts : rows);
  RowSplit s;
  s.per_part = rows > 0 ? (rows + parts - 1) / parts : 1;
  s.parts = rows > 0 ? (rows + s.per_part - 1) / s.per_part : 1;
  return s;
}

inline unsigned blocks_for(int64_t channels, const RowSplit& s) {
  return cuda::lane_blocks(tiles_of(channels) * s.parts);
}

template <class T>
RG_HOST_DEVICE inline double wide(T v) {
  return static_cast<double>(static_cast<compute_t<T>>(v));
}

struct TermPair {
  double first, second;
};

// For each (tile, part) of the grid-stride loop: Σ terms(c)(offset) over channel c's values in
// the part's rows, into s1_parts[c·parts + part], s2_parts likewise. blockDim.x must be
// kChannelLanes · kRowLanes.
template <class Terms>
__device__ inline void part_sums(int64_t rows, int64_t channels, RowSplit split, Terms terms,
                                 double* s1_parts, double* s2_parts) {
  __shared__ double lane_s1[kRowLanes][kChannelLanes];
  __shared__ double lane_s2[kRowLanes][kChannelLanes];
  const int lane = static_cast<int>(threadIdx.x) % kChannelLanes;
  const int row_lane = static_cast<int>(threadIdx.x) / kChannelLanes;
  const int64_t tiles = tiles_of(channels);
  for (int64_t w = blockIdx.x; w < tiles * split.parts; w += gridDim.x) {
    const int64_t tile = w % tiles, part = w / tiles;
    const int64_t c = tile * kChannelLanes + lane;
    const int64_t r0 = part * split.per_part;
    const int64_t r1 = r0 + split.per_part < rows ? r0 + split.per_part : rows;
    double s1 = 0, s2 = 0;
    if (c < channels) {
      const auto term = terms(c);
      for (int64_t r = r0 + row_lane; r < r1; r += kRowLanes) {
        const TermPair t = term(r * channels + c);
        s1 += t.first;
        s2 += t.second;
      }
    }
    lane_s1[row_lane][lane] = s1;
    lane_s2[row_lane][lane] = s2;
    __syncthreads();
    if (row_lane == 0 && c < channels) {
      double t1 = 0, t2 = 0;
      for (int k = 0; k < kRowLanes; ++k) {
        t1 += lane_s1[k][lane];
        t2 += lane_s2[k][lane];
      }
      s1_parts[c * split.parts + part] = t1;
      s2_parts[c * split.parts + part] = t2;
    }
    __syncthreads();  // the lanes' sums are read before the next item writes them
  }
}

// Σ (x − k), Σ (x − k)², k = x[0, c].
template <class T>
__global__ void stats_parts_kernel(const T* x, int64_t rows, int64_t channels, RowSplit split,
                                   double* s1_parts, double* s2_parts) {
  part_sums(
      rows, channels, split,
      [&](int64_t c) {
        const double k = wide(x[c]);
        return [x, k](int64_t i) {
          const double e = wide(x[i]) - k;
          return TermPair{e, e * e};
        };
      },
      s1_parts, s2_parts);
}

// Σ gy, Σ gy·(x − mean), gy through the fused activation's derivative (batch_norm_relu's mask,
// batch_norm_gelu's gelu'; gy itself without one) at the value recomputed from x with the
// forward's one-fma affine, as the plane kernels' through_activation does.
template <class T>
__global__ void backward_reduce_parts_kernel(const T* gy, const T* x, int64_t rows,
                                             int64_t channels, RowSplit split, const double* mean,
                                             detail::BnActGrad act, double* s1_parts,
                                             double* s2_parts) {
  part_sums(
      rows, channels, split,
      [&](int64_t c) {
        const double mu = mean[c];
        const double scale = act.scale ? act.scale[c] : 0.0;
        const double shift = act.shift ? act.shift[c] : 0.0;
        const detail::BnActivation kind = act.act;
        return [gy, x, mu, scale, shift, kind](int64_t i) {
          using C = compute_t<T>;
          C g = static_cast<C>(gy[i]);
          if (kind != detail::BnActivation::none)
            g = bn_math::activation_grad<C>(
                kind, g,
                bn_math::affine(static_cast<C>(x[i]), static_cast<C>(mu), static_cast<C>(scale),
                                static_cast<C>(shift)));
          const auto gd = static_cast<double>(g);
          return TermPair{gd, gd * (wide(x[i]) - mu)};
        };
      },
      s1_parts, s2_parts);
}

}  // namespace bn_rows
}  // namespace RG_KERNEL_BUILD
}  // namespace rg
