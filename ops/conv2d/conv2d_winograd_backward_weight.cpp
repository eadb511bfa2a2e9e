// The Winograd F(2×2, 3×3) backward-weight (see conv2d_winograd.h). It is the adjoint of the
// forward: with y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A per tile,
//   gU[ξ][c, o] = Σ_tiles V[ξ][c] · GY[ξ][o],   GY = A gy Aᵀ  (the 2×2 output gradient of the
//                                                             tile, spread over the 4×4 block)
//   gW = Gᵀ gU G,
// with, along each axis, A gy = (y0, y0 + y1, y0 − y1, −y1) and Gᵀ u = (u0 + (u1 + u2)/2,
// (u1 − u2)/2, (u1 + u2)/2 + u3). The 16 sums over the tiles are 16 GEMMs (C × tiles) · (tiles ×
// O), 2.25 times fewer multiply-adds than the direct kernels.
//
// Per block of kBlockUnits units: V by the forward's input transform, GY transposed to
// (ξ, tile, output channel) in L × L register blocks, then the backward-weight's register tile
// (KR input channels × NV vectors of output channels; per tile NV loads of GY, KR broadcasts of
// V) adds the block into this thread's gU. Each thread sums a fixed part of the batch; the parts
// are added in order, then transformed into gW.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv2d/conv2d_winograd.h"

namespace rg::detail::direct {
namespace {

// Units (L tiles each) per block. The register tile's sums go to gU once per block: 8 units
// took 0.91 and 0.92 of the time of 4 on ResNet18's 32×32 and 8×8 layers, 16 about the same
// as 8, 2 units 1.18 and 1.12 (AVX2, the same in-process alternation as in conv2d_direct.cpp).
constexpr int64_t kBlockUnits = 8;

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

// gu[ξ][c][o] += Σ_{t < tiles} v[ξ][c][t] · gyt[ξ][t][o] for the block (v rows ld apart, ξ
// C·ld apart; gyt rows Op apart, ξ ld·Op apart).
template <class T, int KR, int NV>
void weight_gemms(const DirectConv& g, const T* v, const T* gyt, int64_t ld, int64_t Op,
                  int64_t tiles, T* gu) {
  using Vec = typename Simd<T>::V;
  constexpr int L = Simd<T>::L, CW = NV * L;
  for (int xi = 0; xi < kXi; ++xi) {
    const T* vx = v + xi * g.C * ld;
    const T* gx = gyt + xi * ld * Op;
    T* ux = gu + xi * g.C * Op;
    for (int64_t c0 = 0; c0 < g.C; c0 += KR) {
      const T* xr[KR];
      for (int r = 0; r < KR; ++r) xr[r] = vx + std::min<int64_t>(c0 + r, g.C - 1) * ld;
      const int rows = static_cast<int>(std::min<int64_t>(KR, g.C - c0));
      for (int64_t ob = 0; ob < Op; ob += CW) {
        Vec acc[KR][NV] = {};
        const T* gr = gx + ob;
        for (int64_t t = 0; t < tiles; ++t, gr += Op) {
          Vec gv[NV];
#pragma GCC unroll 8
          for (int k = 0; k < NV; ++k) gv[k] = loadu<Vec>(gr + k * L);
          broadcast_fmas(acc, gv, xr, t);
        }
        T* out = ux + c0 * Op + ob;
        for (int r = 0; r < rows; ++r)
          for (int k = 0; k < NV; ++k)
            storeu(out + r * Op + k * L, loadu<Vec>(out + r * Op + k * L) + acc[r][k]);
      }
    }
  }
}

// gu (16 × C × Op) += the units of one source, block by block.
template <class T, int KR, int NV, class Source>
void weight_units(const DirectConv& g, int64_t units, const Source& src, int64_t Op, T* v, T* gyt,
                  T* gu) {
  constexpr int64_t L = Simd<T>::L, ld = kBlockUnits * L;
  for (int64_t u0 = 0; u0 < units; u0 += kBlockUnits) {
    const int64_t n_units = std::min(kBlockUnits, units - u0);
    for (int64_t s = 0; s < n_units; ++s) {
      src.inputs(u0 + s, v + s * L, ld);
      transform_grads(g, src, u0 + s, Op, gyt + s * L * Op, ld * Op);
    }
    weight_gemms<T, KR, NV>(g, v, gyt, ld, Op, n_units * L, gu);
  }
}

// gw (O × C × 3 × 3 of one group) = Gᵀ gU G, gU = Σ_parts (16 × C × Op), parts in order.
template <class T>
void transform_weight_grads(const DirectConv& g, const T* gu, int64_t parts, int64_t part_size,
                            int64_t Op, T* gw) {
  parallel_for(g.O, 8, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t c = 0; c < g.C; ++c) {
        T u[4][4];
        for (int xi = 0; xi < kXi; ++xi) {
          const T* src = gu + (xi * g.C + c) * Op + o;
          T sum = src[0];
          for (int64_t p = 1; p < parts; ++p) sum += src[p * part_size];
          u[xi / 4][xi % 4] = sum;
        }
        T rows[3][4];  // Gᵀ down the columns
        for (int j = 0; j < 4; ++j) {
          rows[0][j] = u[0][j] + (u[1][j] + u[2][j]) / 2;
          rows[1][j] = (u[1][j] - u[2][j]) / 2;
          rows[2][j] = (u[1][j] + u[2][j]) / 2 + u[3][j];
        }
        T* k = gw + (o * g.C + c) * 9;
        for (int i = 0; i < 3; ++i) {  // Gᵀ along the rows
          const T* r = rows[i];
          k[3 * i] = r[0] + (r[1] + r[2]) / 2;
          k[3 * i + 1] = (r[1] - r[2]) / 2;
          k[3 * i + 2] = (r[1] + r[2]) / 2 + r[3];
        }
      }
  });
}

}  // namespace

template <class T>
void backward_weight_winograd(const DirectConv& g, const T* gy, const T* x, T* gw) {
  check_winograd(g, "backward-weight");
  constexpr int64_t L = Simd<T>::L;
  const WinogradLayout wl = WinogradLayout::of<T>(g);
  const ChannelTile ct = channel_tile<T>(g.O);
  const int64_t Op = round_up(g.O, ct.NV * L), ld = kBlockUnits * L;
  const int64_t v_at = round_up(wl.input_size(g), 16), gyt_at = v_at + round_up(kXi * g.C * ld, 16);
  const auto buffer = static_cast<std::size_t>(gyt_at + kXi * ld * Op);
  const int64_t chunks = (g.N + wl.images - 1) / wl.images;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads(), chunks));
  const int64_t group_size = kXi * g.C * Op, part_size = g.G * group_size;
  std::vector<T> gu(static_cast<std::size_t>(parts * part_size), T(0));
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    T* in = thread_buffer<T>(buffer);
    T* v = in + v_at;
    T* gyt = in + gyt_at;
    for (int64_t part = p0; part < p1; ++part)
      for (int64_t chunk = part * chunks / parts; chunk < (part + 1) * chunks / parts; ++chunk)
        for (int64_t grp = 0; grp < g.G; ++grp) {
          T* gug = gu.data() + part * part_size + grp * group_size;
          with_channel_tile(ct, [&]<int KR, int NV>() {
            with_units(g, wl, x, chunk, grp, in, static_cast<T*>(nullptr), gy,
                       [&](const auto& src, int64_t units) {
                         weight_units<T, KR, NV>(g, units, src, Op, v, gyt, gug);
                       });
          });
        }
  });
  for (int64_t grp = 0; grp < g.G; ++grp)
    transform_weight_grads(g, gu.data() + grp * group_size, parts, part_size, Op,
                           gw + grp * g.O * g.C * 9);
}

template void backward_weight_winograd<float>(const DirectConv&, const float*, const float*,
                                              float*);
template void backward_weight_winograd<double>(const DirectConv&, const double*, const double*,
                                               double*);

}  // namespace rg::detail::direct
