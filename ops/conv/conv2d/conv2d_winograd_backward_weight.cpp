// The Winograd F(2×2, 3×3) backward-weight (see conv2d_winograd.h). It is the adjoint of the
// forward: with y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A per tile,
//   gU[ξ][c, o] = Σ_tiles V[ξ][c] · GY[ξ][o],   GY = A gy Aᵀ  (the 2×2 output gradient of the
//                                                             tile, spread over the 4×4 block)
//   gW = Gᵀ gU G,
// with, along each axis, A gy = (y0, y0 + y1, y0 − y1, −y1) and Gᵀ u = (u0 + (u1 + u2)/2,
// (u1 − u2)/2, (u1 + u2)/2 + u3). The 16 sums over the tiles are 16 GEMMs (C × tiles) · (tiles ×
// O), 2.25 times fewer multiply-adds than the direct kernels.
//
// Per block of units (from one chunk of images or several): V by the forward's input
// transform, GY transposed to (ξ, tile, output channel) in L × L register blocks, then the
// backward-weight's register tile (KR input channels × NV vectors of output channels; per tile
// NV loads of GY, KR broadcasts of V) adds the block into gU. Narrow layers: each thread sums a
// fixed part of the batch into a gU of its own, and the parts are added in order. Wide layers
// (shared sums): the threads stage each block together and split its 16 GEMMs by ξ, so there
// is one gU. Either way gU is then transformed into gW.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_winograd_weight_sums.h"

namespace rg::detail::direct {
namespace {

// With shared sums, blocks of whole chunks whose staged V and GY take about 4 MB: staging 1,
// 2 and 8 MB took 1.37, 1.50 and 1.02 times as long on ResNet18's 512-channel 4×4 layer, 1.36,
// 1.39 and 1.29 times on its 256-channel 8×8 layer (10 pairs each, noisy).
constexpr int64_t kSharedStagingBytes = 4 << 20;

// gyt[ξ][slot·L + t][o] = (A gy Aᵀ)[ξ] of tile t of the unit and output channel o, for every o
// of Op (zero past O); tile rows are Op apart, ξ xi_stride apart.
template <class T, class Source>
void transform_grads(const DirectConv& g, const Source& src, int64_t unit, int64_t Op, T* gyt,
                     int64_t xi_stride) {
  using Vec = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  alignas(64) T block[kXi][L][L];  // [ξ][o][t] for L output channels, then transposed
  for (int64_t o0 = 0; o0 < Op; o0 += L) {
    for (int r = 0; r < L; ++r) {
      Vec gyv[2][2] = {};
      if (o0 + r < g.O) src.output_grads(unit, o0 + r, gyv);
      Vec row[2][4];  // A along each output row a
      for (int a = 0; a < 2; ++a) {
        row[a][0] = gyv[a][0];
        row[a][1] = gyv[a][0] + gyv[a][1];
        row[a][2] = gyv[a][0] - gyv[a][1];
        row[a][3] = -gyv[a][1];
      }
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {  // A down the columns
        storeu(block[j][r], row[0][j]);
        storeu(block[4 + j][r], row[0][j] + row[1][j]);
        storeu(block[8 + j][r], row[0][j] - row[1][j]);
        storeu(block[12 + j][r], -row[1][j]);
      }
    }
    for (int xi = 0; xi < kXi; ++xi)
      transpose_block(&block[xi][0][0], L, gyt + xi * xi_stride + o0, Op);
  }
}

// Unit `unit` of a source into slot `slot` of a block of staged units: V (rows ld apart) and
// GY (rows Op apart, ξ ld·Op apart).
template <class T, class Source>
void stage_unit(const DirectConv& g, const Source& src, int64_t unit, int64_t slot, int64_t ld,
                int64_t Op, T* v, T* gyt) {
  constexpr int64_t L = Simd<T>::L;
  src.inputs(unit, v + slot * L, ld);
  transform_grads(g, src, unit, Op, gyt + slot * L * Op, ld * Op);
}

// gw (O × C × 3 × 3 of one group) = Gᵀ gU G, gU = Σ_parts (16 × C × Op), parts in order. A
// vector of L output channels at a time, so that gU is read along its rows: read channel by
// channel (16 · parts loads Op apart per weight), it missed the caches and took a third of the
// 512-channel 4×4 layer's time.
template <class T>
void transform_weight_grads(const DirectConv& g, const T* gu, int64_t parts, int64_t part_size,
                            int64_t Op, T* gw) {
  using Vec = typename Simd<T>::V;
  constexpr int64_t L = Simd<T>::L;
  const T half = T(0.5);
  parallel_for(g.C, 4, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t o0 = 0; o0 < g.O; o0 += L) {
        Vec u[4][4];
        for (int xi = 0; xi < kXi; ++xi)
          u[xi / 4][xi % 4] = summed_parts(gu + (xi * g.C + c) * Op + o0, parts, part_size);
        Vec rows[3][4];  // Gᵀ down the columns
        for (int j = 0; j < 4; ++j) {
          rows[0][j] = u[0][j] + (u[1][j] + u[2][j]) * half;
          rows[1][j] = (u[1][j] - u[2][j]) * half;
          rows[2][j] = (u[1][j] + u[2][j]) * half + u[3][j];
        }
        alignas(64) T k[9][L];
        for (int i = 0; i < 3; ++i) {  // Gᵀ along the rows
          const Vec* r = rows[i];
          storeu(k[3 * i], r[0] + (r[1] + r[2]) * half);
          storeu(k[3 * i + 1], (r[1] - r[2]) * half);
          storeu(k[3 * i + 2], (r[1] + r[2]) * half + r[3]);
        }
        for (int64_t o = o0; o < std::min(o0 + L, g.O); ++o)
          for (int i = 0; i < 9; ++i) gw[(o * g.C + c) * 9 + i] = k[i][o - o0];
      }
  });
}

// Wide layers (16 · C · O sums of a MB and more): the threads share one gU and split its 16 GEMMs
// instead of the batch. Each block of whole chunks is transformed by all threads into shared
// staging, then each thread adds its positions ξ of the block into gU: no per-thread copies of
// gU to add up, and each flush reads and writes gU once for the whole block rather than once per
// thread's part.
template <class T>
void backward_weight_shared_sums(const DirectConv& g, const WinogradLayout& wl,
                                 const ChannelTile& ct, int64_t Op, const T* gy, const T* x,
                                 T* gw) {
  constexpr int64_t L = Simd<T>::L;
  // Units of a whole chunk (the last may hold fewer), and whole chunks per block.
  const int64_t chunk_units = wl.units_of(wl.images);
  const int64_t block_chunks = std::max<int64_t>(
      1, kSharedStagingBytes / int64_t{sizeof(T)} / (kXi * (g.C + Op) * chunk_units * L));
  const T* gu = shared_weight_sums<kXi, T>(
      g, ct, Op, wl.chunks(g), chunk_units, block_chunks,
      static_cast<std::size_t>(wl.input_size(g)),
      [&](int64_t grp, int64_t chunk, int64_t k, T* in, T* v, T* gyt, int64_t ld) {
        with_units(g, wl, x, chunk, grp, in, static_cast<T*>(nullptr), gy,
                   [&](const auto& src, int64_t units) {
                     for (int64_t u = 0; u < units; ++u)
                       stage_unit(g, src, u, k * chunk_units + u, ld, Op, v, gyt);
                   });
      },
      [&](int64_t chunk) { return wl.units(g, chunk); });
  for (int64_t grp = 0; grp < g.G; ++grp)
    transform_weight_grads(g, gu + grp * kXi * g.C * Op, 1, 0, Op, gw + grp * g.O * g.C * 9);
}

}  // namespace

template <class T>
void backward_weight_winograd(const DirectConv& g, const T* gy, const T* x, T* gw,
                              bool shared_sums) {
  check_winograd(g, "backward-weight");
  constexpr int64_t L = Simd<T>::L;
  const WinogradLayout wl = WinogradLayout::of<T>(g);
  // gU's rows: the output channels, padded to whole register tiles.
  const ChannelTile ct = channel_tile<T>(g.O);
  const int64_t Op = round_up(g.O, ct.NV * L);
  if (shared_sums) return backward_weight_shared_sums(g, wl, ct, Op, gy, x, gw);
  int64_t parts = 0;
  const T* gu = per_part_weight_sums<kXi, T>(
      g, ct, Op, wl.chunks(g), wl.input_size(g), parts,
      [&](int64_t grp, int64_t chunk, T* in, auto& block) {
        with_units(g, wl, x, chunk, grp, in, static_cast<T*>(nullptr), gy,
                   [&](const auto& src, int64_t units) {
                     block.add(units, [&](int64_t u, T* v, T* gyt, int64_t ld) {
                       src.inputs(u, v, ld);
                       transform_grads(g, src, u, Op, gyt, ld * Op);
                     });
                   });
      });
  const int64_t part_size = g.G * kXi * g.C * Op;
  for (int64_t grp = 0; grp < g.G; ++grp)
    transform_weight_grads(g, gu + grp * kXi * g.C * Op, parts, part_size, Op,
                           gw + grp * g.O * g.C * 9);
}

template void backward_weight_winograd<float>(const DirectConv&, const float*, const float*, float*,
                                              bool);
template void backward_weight_winograd<double>(const DirectConv&, const double*, const double*,
                                               double*, bool);

}  // namespace rg::detail::direct
