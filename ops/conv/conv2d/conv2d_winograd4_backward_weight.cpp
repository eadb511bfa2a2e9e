// The Winograd F(4×4, 3×3) backward-weight (see conv2d_winograd4.h): the adjoint of its
// forward, as conv2d_winograd_backward_weight.cpp is of F(2×2)'s:
//   gU[ξ][c, o] = Σ_tiles V[ξ][c] · GY[ξ][o],   GY = A gy Aᵀ  (the 4×4 output gradient of the
//                                                             tile, spread over the 6×6 block)
//   gW = Gᵀ gU G,
// with, along each axis, A y = (y0, y0 + y1 + y2 + y3, y0 − y1 + y2 − y3, y0 + 2y1 + 4y2 + 8y3,
// y0 − y1/2 + y2/4 − y3/8, y3) and Gᵀ u = (u0/2 + (u2 − u1)/6 + u3/30 − 16u4/15,
// −(u1 + u2)/6 + u3/15 + 8u4/15, (u2 − u1)/6 + 2u3/15 − 4u4/15 + u5/2). The 36 sums over the
// tiles are 36 GEMMs (weight_gemms, F(2×2)'s register tile).
//
// Per block of units: V by the forward's input transform, GY transposed to (ξ, tile, output
// channel) in L × L register blocks; then the block's GEMMs add into gU. The batch's chunks
// are summed in kWeightParts parts, each into a gU of its own and claimed by whichever thread
// is free (per_part_weight_sums, F(2×2)'s too: the result does not depend on the thread count
// up to that many threads), and the parts are added in order when gU is transformed into gW. Wide
// layers (shared sums): the threads stage each block together and split its 36 GEMMs by ξ
// into one gU, each position's sums in one thread.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_winograd4.h"
#include "ops/conv/conv2d/conv2d_winograd_weight_sums.h"

namespace rg::detail::direct {
namespace {

// With shared sums, blocks of whole chunks of about 128 tiles: each block reads and writes gU
// (36 · C · O) once. Against F(2×2)'s backward-weight (AVX2, same alternation, 8-12 pairs):
// 32, 96, 128 and 192 tiles on ResNet18's 256-channel 8×8 layer 1.09, 0.78-0.86, 0.69-0.80
// and 0.79; on its 512-channel 4×4 one 1.00, 0.89-0.94, 0.77-0.81 and 0.84; on the 128-channel
// 16×16 one 96 and 128 tiles 0.84-0.98 and 0.81-0.92, 192-224 tiles 0.94-1.04 (noisy).
constexpr int64_t kSharedTiles4 = 128;

// A along four vectors: six.
template <class Vec, class T>
[[gnu::always_inline]] inline void a6(const Vec (&y)[4], Vec (&o)[6]) {
  const Vec even = y[0] + y[2], odd = y[1] + y[3];
  o[0] = y[0];
  o[1] = even + odd;
  o[2] = even - odd;
  o[3] = y[0] + T(4) * y[2] + (T(2) * y[1] + T(8) * y[3]);
  o[4] = y[0] + T(0.25) * y[2] - (T(0.5) * y[1] + T(0.125) * y[3]);
  o[5] = y[3];
}

// gyv[a][b] = gy (o, 4·th + a, 4·t + b) for the unit's tiles (lanes); zero past the outputs and
// in the lanes of missing images. gy: the chunk's first image, n images y_image apart.
template <class T>
void output_grads(const DirectConv& g, const Layout4& l, const T* gy, int64_t y_image, int64_t n,
                  int64_t unit, int64_t o, typename Simd<T>::V (&gyv)[4][4]) {
  using Vec = typename Simd<T>::V;
  constexpr int64_t L = Simd<T>::L;
  constexpr auto lanes = std::make_index_sequence<L>{};
  const int64_t th = l.tile_row(unit);
  for (int a = 0; a < 4; ++a) {
    const int64_t h = 4 * th + a;
    // The 4·L outputs of the unit's tiles in lane order, zeroed only where read: zeroing it
    // for every row (a rep stos) cost 1-5 % of the backward-weight (AVX2, in-process
    // alternation).
    alignas(64) T row[4 * L];
    const T* at[4] = {row, row + L, row + 2 * L, row + 3 * L};  // where each vector is read
    const int64_t i0 = l.first_image(unit), images = std::min(l.pack, n - i0);
    const T* src = h < g.Ho ? gy + i0 * y_image + (o * g.Ho + h) * g.Wo : nullptr;
    const int64_t x0 = 4 * l.first_tile(unit);
    if (h < g.Ho && !l.packed && x0 + 4 * L <= g.Wo) {
      for (int k = 0; k < 4; ++k) at[k] = src + x0 + k * L;
    } else if (h < g.Ho && !l.packed) {  // a row's last tile reaching past Wo
      std::fill(row, row + 4 * L, T(0));
      copy_row(src + x0, g.Wo - x0, row);
    } else if (h < g.Ho && g.Wo % L == 0) {  // one row of each image, whole vectors each
      if (images * g.Wo < 4 * L) std::fill(row, row + 4 * L, T(0));  // missing images
      for (int64_t k = 0; k < 4 && k * L < images * g.Wo; ++k)
        at[k] = src + k * L / g.Wo * y_image + k * L % g.Wo;
    } else {  // one row of each image of the pack, 4·TW apart, or a row past the outputs
      std::fill(row, row + 4 * L, T(0));
      for (int64_t i = 0; i < images && h < g.Ho; ++i)
        copy_row(src + i * y_image, g.Wo, row + i * 4 * l.TW);
    }
    const Vec v0 = loadu<Vec>(at[0]), v1 = loadu<Vec>(at[1]), v2 = loadu<Vec>(at[2]),
              v3 = loadu<Vec>(at[3]);
    const Vec e01 = deinterleave<Vec, 0>(v0, v1, lanes), o01 = deinterleave<Vec, 1>(v0, v1, lanes);
    const Vec e23 = deinterleave<Vec, 0>(v2, v3, lanes), o23 = deinterleave<Vec, 1>(v2, v3, lanes);
    gyv[a][0] = deinterleave<Vec, 0>(e01, e23, lanes);
    gyv[a][1] = deinterleave<Vec, 0>(o01, o23, lanes);
    gyv[a][2] = deinterleave<Vec, 1>(e01, e23, lanes);
    gyv[a][3] = deinterleave<Vec, 1>(o01, o23, lanes);
  }
}

// gyt[ξ][slot·L + t][o] = (A gy Aᵀ)[ξ] of the unit's tile t and output channel o, for every o of
// Op (zero past O); tile rows Op apart, ξ xi_stride apart.
template <class T>
void transform_grads(const DirectConv& g, const Layout4& l, const T* gy, int64_t y_image, int64_t n,
                     int64_t unit, int64_t Op, T* gyt, int64_t xi_stride) {
  using Vec = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  alignas(64) T block[kXi4][L][L];  // [ξ][o][t] for L output channels, then transposed
  for (int64_t o0 = 0; o0 < Op; o0 += L) {
    for (int r = 0; r < L; ++r) {
      Vec gyv[4][4] = {};
      if (o0 + r < g.O) output_grads(g, l, gy, y_image, n, unit, o0 + r, gyv);
      Vec rows[4][6];  // A along each output row a
      for (int a = 0; a < 4; ++a) a6<Vec, T>(gyv[a], rows[a]);
#pragma GCC unroll 6
      for (int j = 0; j < 6; ++j) {  // A down the columns
        const Vec col[4] = {rows[0][j], rows[1][j], rows[2][j], rows[3][j]};
        Vec out[6];
        a6<Vec, T>(col, out);
        for (int i = 0; i < 6; ++i) storeu(block[6 * i + j][r], out[i]);
      }
    }
    for (int xi = 0; xi < kXi4; ++xi)
      transpose_block(&block[xi][0][0], L, gyt + xi * xi_stride + o0, Op);
  }
}

// gw (O × C × 3 × 3 of one group) = Gᵀ gU G, gU = Σ_parts (36 × C × Op), parts in order; a
// vector of L output channels at a time, so that gU is read along its rows.
template <class T>
void transform_weight_grads(const DirectConv& g, const T* gu, int64_t parts, int64_t part_size,
                            int64_t Op, T* gw) {
  using Vec = typename Simd<T>::V;
  constexpr int64_t L = Simd<T>::L;
  // Gᵀ along six vectors: three.
  auto gt = [](const Vec(&u)[6], Vec(&k)[3]) {
    const T sixth = T(1) / T(6);
    const Vec d = (u[2] - u[1]) * sixth;
    k[0] = u[0] * T(0.5) + d + u[3] * (T(1) / T(30)) - u[4] * (T(16) / T(15));
    k[1] = (u[1] + u[2]) * -sixth + u[3] * (T(1) / T(15)) + u[4] * (T(8) / T(15));
    k[2] = d + u[3] * (T(2) / T(15)) - u[4] * (T(4) / T(15)) + u[5] * T(0.5);
  };
  parallel_for(g.C, 4, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t o0 = 0; o0 < g.O; o0 += L) {
        Vec u[6][6];
        for (int xi = 0; xi < kXi4; ++xi)
          u[xi / 6][xi % 6] = summed_parts(gu + (xi * g.C + c) * Op + o0, parts, part_size);
        Vec rows[3][6];  // Gᵀ down the columns
        for (int j = 0; j < 6; ++j) {
          const Vec col[6] = {u[0][j], u[1][j], u[2][j], u[3][j], u[4][j], u[5][j]};
          Vec k[3];
          gt(col, k);
          for (int i = 0; i < 3; ++i) rows[i][j] = k[i];
        }
        alignas(64) T k[9][L];
        for (int i = 0; i < 3; ++i) {  // Gᵀ along the rows
          Vec out[3];
          gt(rows[i], out);
          for (int j = 0; j < 3; ++j) storeu(k[3 * i + j], out[j]);
        }
        for (int64_t o = o0; o < std::min(o0 + L, g.O); ++o)
          for (int i = 0; i < 9; ++i) gw[(o * g.C + c) * 9 + i] = k[i][o - o0];
      }
  });
}

// Wide layers (shared sums): as F(2×2)'s, all threads stage each block of whole chunks (V and
// GY of about kSharedTiles4 tiles), then split its 36 GEMMs by ξ into the one gU.
template <class T>
void backward_weight_shared_sums4(const DirectConv& g, const Layout4& l, const ChannelTile& ct,
                                  int64_t Op, const T* gy, const T* x, T* gw) {
  constexpr int64_t L = Simd<T>::L;
  const int64_t chunks = (g.N + l.images - 1) / l.images, chunk_units = l.units_of(l.images);
  const int64_t x_image = g.G * g.C * g.H * g.W, y_image = g.G * g.O * g.Ho * g.Wo;
  const auto images = [&](int64_t chunk) { return std::min(l.images, g.N - chunk * l.images); };
  const T* gu = shared_weight_sums<kXi4, T>(
      g, ct, Op, chunks, chunk_units, std::max<int64_t>(1, kSharedTiles4 / (chunk_units * L)),
      static_cast<std::size_t>(l.planes_size(g)),
      [&](int64_t grp, int64_t chunk, int64_t k, T* planes, T* v, T* gyt, int64_t ld) {
        const int64_t n0 = chunk * l.images, n = images(chunk);
        const T* gyc = gy + n0 * y_image + grp * g.O * g.Ho * g.Wo;
        stage_planes(g, l, x + n0 * x_image + grp * g.C * g.H * g.W, x_image, n, planes);
        for (int64_t u = 0; u < l.units_of(n); ++u) {
          const int64_t slot = k * chunk_units + u;
          input_transform(g, l, planes, u, v + slot * L, ld, g.C * ld);
          transform_grads(g, l, gyc, y_image, n, u, Op, gyt + slot * L * Op, ld * Op);
        }
      },
      [&](int64_t chunk) { return l.units_of(images(chunk)); });
  for (int64_t grp = 0; grp < g.G; ++grp)
    transform_weight_grads(g, gu + grp * kXi4 * g.C * Op, 1, 0, Op, gw + grp * g.O * g.C * 9);
}

}  // namespace

template <class T>
void backward_weight_winograd4(const DirectConv& g, const T* gy, const T* x, T* gw,
                               bool shared_sums) {
  check_winograd4(g, "backward-weight");
  constexpr int64_t L = Simd<T>::L;
  const Layout4 l = Layout4::of<T>(g);
  // gU's rows: the output channels, padded to whole register tiles.
  const ChannelTile ct = channel_tile<T>(g.O);
  const int64_t Op = round_up(g.O, ct.NV * L);
  if (shared_sums) return backward_weight_shared_sums4(g, l, ct, Op, gy, x, gw);
  // Per-part sums (kWeightBlockUnits, per_part_weight_sums): with blocks of 8 units instead of
  // 4 the 128-channel 16×16 layer took 1.13 of F(2×2)'s time against 0.99 (its staging then
  // outgrows L2; it takes the shared sums).
  const int64_t x_image = g.G * g.C * g.H * g.W, y_image = g.G * g.O * g.Ho * g.Wo;
  int64_t parts = 0;
  const T* gu = per_part_weight_sums<kXi4, T>(
      g, ct, Op, (g.N + l.images - 1) / l.images, l.planes_size(g), parts,
      [&](int64_t grp, int64_t chunk, T* planes, auto& block) {
        const int64_t n0 = chunk * l.images, n = std::min(l.images, g.N - n0);
        const T* gyc = gy + n0 * y_image + grp * g.O * g.Ho * g.Wo;
        stage_planes(g, l, x + n0 * x_image + grp * g.C * g.H * g.W, x_image, n, planes);
        block.add(l.units_of(n), [&](int64_t u, T* v, T* gyt, int64_t ld) {
          input_transform(g, l, planes, u, v, ld, g.C * ld);
          transform_grads(g, l, gyc, y_image, n, u, Op, gyt, ld * Op);
        });
      });
  const int64_t part_size = g.G * kXi4 * g.C * Op;
  for (int64_t grp = 0; grp < g.G; ++grp)
    transform_weight_grads(g, gu + grp * kXi4 * g.C * Op, parts, part_size, Op,
                           gw + grp * g.O * g.C * 9);
}

template void backward_weight_winograd4<float>(const DirectConv&, const float*, const float*,
                                               float*, bool);
template void backward_weight_winograd4<double>(const DirectConv&, const double*, const double*,
                                                double*, bool);

}  // namespace rg::detail::direct
