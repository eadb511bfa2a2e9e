// The direct backward-weight for small images, over gathered rows (see conv2d_direct_common.h).
//
// With 4×4 outputs the kernel over padded images (conv2d_direct_backward_weight.cpp) adds its
// K × O sums into memory every 128 outputs, and for 512 channels those sums are 9 MB: the
// memory traffic, not the FMAs, sets its speed (and im2col + GEMM's, ~55 GFLOP/s on AVX2).
// Here a register tile runs over ~1024 positions (whole images) before its sums go to memory:
//   gyb    gy of the whole batch, packed per block of CW = NV·L output channels as
//          (N·Ho·Wo positions × CW): one contiguous stream per tile;
//   rows   a block of taps k of the im2col matrix over a chunk of images, (taps × positions),
//          gathered by the thread that owns the block (zeros where a tap reads the padding);
//   tile   gW[o, k] for KR taps × CW channels += Σ_q rows[k, q] · gyb[q, o], in registers.
// A chunk's rows (≤ 192 KB) and one block of its gy (64 KB for f32) stay in L2 while every
// tile of the block reads them; gy is read once per block of taps. Threads split the taps, not
// the batch: no partial sums to add, and each gW value is summed in the order of q, whatever
// the thread count.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct_common.h"

namespace rg::detail {
namespace direct {
namespace {

// gyb[grp, block, q, lane] = gy[n, grp·O + block·CW + lane, p] for q = n·P + p; zeros past O.
template <class T>
void pack_gy(const DirectConv& g, int64_t CW, const T* gy, T* gyb) {
  const int64_t P = g.Ho * g.Wo, Q = g.N * P, blocks = round_up(g.O, CW) / CW;
  parallel_for(g.N * g.G, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t n = item / g.G, grp = item % g.G;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        T* dst = gyb + ((grp * blocks + blk) * Q + n * P) * CW;
        const int64_t lanes = std::min(CW, g.O - blk * CW);
        const T* src = gy + ((n * g.G + grp) * g.O + blk * CW) * P;
        transpose_gy(lanes, P, CW, src, dst);
      }
    }
  });
}

// rows[r, q] = the padded input that tap k0 + r of group grp reads for output q = (n, ho, wo),
// n in [n0, n0 + nb), q counted from n0. Each image's channel is padded once into `plane` (its
// zero border written once), and every tap of the block on that channel copies its window from
// there, without bounds checks: a valid output's taps stay inside the padded plane.
template <class T>
void gather_rows(const DirectConv& g, const T* x, int64_t grp, int64_t k0, int64_t rows_n,
                 int64_t n0, int64_t nb, T* rows) {
  const int64_t P = g.Ho * g.Wo, Qc = nb * P, taps = g.kH * g.kW;
  const int64_t Hp = g.H + 2 * g.pH, Wp = g.W + 2 * g.pW;
  std::vector<T> plane(static_cast<std::size_t>(Hp * Wp), T(0));
  const int64_t c0 = k0 / taps, c1 = (k0 + rows_n - 1) / taps;
  for (int64_t n = 0; n < nb; ++n)
    for (int64_t c = c0; c <= c1; ++c) {
      const T* image = x + (((n0 + n) * g.G + grp) * g.C + c) * g.H * g.W;
      for (int64_t h = 0; h < g.H; ++h)
        copy_row(image + h * g.W, g.W, plane.data() + (h + g.pH) * Wp + g.pW);
      const int64_t k_end = std::min(k0 + rows_n, (c + 1) * taps);
      for (int64_t k = std::max(k0, c * taps); k < k_end; ++k) {
        const int64_t i = k / g.kW % g.kH, j = k % g.kW;
        T* out = rows + (k - k0) * Qc + n * P;
        for (int64_t ho = 0; ho < g.Ho; ++ho, out += g.Wo) {
          const T* src = plane.data() + (ho * g.sH + i * g.dH) * Wp + j * g.dW;
          for (int64_t wo = 0; wo < g.Wo; ++wo) out[wo] = src[wo * g.sW];
        }
      }
    }
}

// Positions summed in registers before the sum is added into the tile's total: one chain of
// 2560 f32 FMAs (a test's shape) ended 2e-5 from the exact sum, past the tolerance that the
// padded-image kernel (a chain per 128 outputs) meets; two levels stay within it.
constexpr int64_t kPositionsPerSum = 256;
// Positions per chunk of images (rounded down to whole images, at least one).
constexpr int64_t kChunkPositions = 1024;

// gw[o, r] (+)= Σ_q rows[r, q] · gyb[q, o] over the Qc positions of a chunk, for r < kr_valid,
// o < o_valid: `=` for the first chunk, `+=` after. Rows past kr_valid repeat the last one
// (computed, dropped).
template <class T, int KR, int NV>
void rows_tile(int64_t Qc, int64_t K, const T* rows, int kr_valid, const T* gyb, int o_valid,
               bool first_chunk, T* gw) {
  using V = typename Simd<T>::V;
  constexpr int L = Simd<T>::L, CW = NV * L;
  const T* xr[KR];
  for (int r = 0; r < KR; ++r) xr[r] = rows + std::min(r, kr_valid - 1) * Qc;
  V total[KR][NV] = {};
  for (int64_t q0 = 0; q0 < Qc; q0 += kPositionsPerSum) {
    V acc[KR][NV] = {};
    const int64_t q1 = std::min(Qc, q0 + kPositionsPerSum);
    for (int64_t q = q0; q < q1; ++q) {
      V gv[NV];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) gv[v] = loadu<V>(gyb + q * CW + v * L);
      broadcast_fmas(acc, gv, xr, q);
    }
    for (int r = 0; r < KR; ++r)
      for (int v = 0; v < NV; ++v) total[r][v] += acc[r][v];
  }
  T tile[KR][CW];
  for (int r = 0; r < KR; ++r)
    for (int v = 0; v < NV; ++v) storeu(&tile[r][v * L], total[r][v]);
  for (int o = 0; o < o_valid; ++o)
    for (int r = 0; r < kr_valid; ++r)
      gw[o * K + r] = (first_chunk ? T(0) : gw[o * K + r]) + tile[r][o];
}

// Every tile of a block of rows_n taps over one chunk: gyb is the chunk's first position in
// the packing of the group (blocks of channels Q·CW apart).
template <class T, int KR, int NV>
void rows_block(const DirectConv& g, int64_t K, const T* rows, int64_t rows_n, int64_t Qc,
                const T* gyb, bool first_chunk, T* gw) {
  constexpr int64_t CW = NV * Simd<T>::L;
  const int64_t Q = g.N * g.Ho * g.Wo, blocks = round_up(g.O, CW) / CW;
  for (int64_t blk = 0; blk < blocks; ++blk)
    for (int64_t r = 0; r < rows_n; r += KR)
      rows_tile<T, KR, NV>(Qc, K, rows + r * Qc,
                           static_cast<int>(std::min<int64_t>(KR, rows_n - r)), gyb + blk * Q * CW,
                           static_cast<int>(std::min<int64_t>(CW, g.O - blk * CW)), first_chunk,
                           gw + blk * CW * K + r);
}

}  // namespace

template <class T>
void backward_weight_gathered_rows(const DirectConv& g, const T* gy, const T* x, T* gw) {
  const ChannelTile t = channel_tile<T>(g.O);
  const int64_t CW = t.NV * Simd<T>::L, Op = round_up(g.O, CW);
  const int64_t P = g.Ho * g.Wo, Q = g.N * P, K = g.C * g.kH * g.kW;
  std::unique_ptr<T[]> gyb(new T[static_cast<std::size_t>(g.G * Op * Q)]);
  pack_gy(g, CW, gy, gyb.get());
  // Chunks of whole images, ~1024 positions; blocks of taps whose rows over a chunk fill at
  // most 192 KB, at most 8 tiles tall.
  const int64_t images = std::max<int64_t>(1, kChunkPositions / P);
  const int64_t fit = (192 << 10) / static_cast<int64_t>(sizeof(T)) / (images * P);
  const int64_t block = std::clamp<int64_t>(fit / t.KR, 1, 8) * t.KR;
  const int64_t k_blocks = (K + block - 1) / block;
  parallel_claim(
      g.G * k_blocks,
      [&] { return thread_buffer<T>(static_cast<std::size_t>(block * images * P)); },
      [&](int64_t b, T* rows) {
        const int64_t grp = b / k_blocks, k0 = b % k_blocks * block;
        const int64_t rows_n = std::min(block, K - k0);
        for (int64_t n0 = 0; n0 < g.N; n0 += images) {
          const int64_t nb = std::min(images, g.N - n0);
          gather_rows(g, x, grp, k0, rows_n, n0, nb, rows);
          const T* gyg = gyb.get() + grp * Op * Q + n0 * P * CW;
          T* out = gw + grp * g.O * K + k0;
          with_channel_tile(t, [&]<int KR, int NV>() {
            rows_block<T, KR, NV>(g, K, rows, rows_n, nb * P, gyg, n0 == 0, out);
          });
        }
      });
}

template void backward_weight_gathered_rows<float>(const DirectConv&, const float*, const float*,
                                                   float*);
template void backward_weight_gathered_rows<double>(const DirectConv&, const double*, const double*,
                                                    double*);

}  // namespace direct
}  // namespace rg::detail
