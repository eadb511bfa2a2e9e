// The Winograd F(4×4, 3×3) forward (see conv2d_winograd4.h).
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_winograd4.h"

namespace rg::detail::direct {
namespace {

// The outputs of the unit's tiles of the O output channels = Aᵀ M A (+ bias), m at the unit's
// slot, rows ld apart per channel, ξ xi_stride apart: output row a of each channel (those
// inside) as 4·L values in lane order, to put(o, a, values).
template <class T, class Put>
void output_transform(const Layout4& l, int64_t Ho, const T* m, int64_t xi_stride, int64_t ld,
                      int64_t unit, int64_t O, const T* bias, Put&& put) {
  using Vec = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  constexpr auto lanes = std::make_index_sequence<L>{};
  const int64_t th = l.tile_row(unit);
  for (int64_t o = 0; o < O; ++o) {
    const T* mo = m + o * ld;
    Vec cols[4][6];  // Aᵀ down each column j of M
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j) {
      Vec col[6];
#pragma GCC unroll 6
      for (int i = 0; i < 6; ++i) col[i] = loadu<Vec>(mo + (6 * i + j) * xi_stride);
      Vec out[4];
      at6<Vec, T>(col, out);
      for (int a = 0; a < 4; ++a) cols[a][j] = out[a];
    }
    const T b = bias ? bias[o] : T(0);
    for (int a = 0; a < 4 && 4 * th + a < Ho; ++a) {
      Vec yv[4];  // Aᵀ along output row a: columns 4t + 0 .. 3 of the unit's tiles t
      at6<Vec, T>(cols[a], yv);
      for (Vec& e : yv) e += b;
      // Lanes in column order: each tile's four outputs side by side.
      const Vec e_lo = interleave<Vec, false>(yv[0], yv[2], lanes);
      const Vec e_hi = interleave<Vec, true>(yv[0], yv[2], lanes);
      const Vec f_lo = interleave<Vec, false>(yv[1], yv[3], lanes);
      const Vec f_hi = interleave<Vec, true>(yv[1], yv[3], lanes);
      const Vec row[4] = {
          interleave<Vec, false>(e_lo, f_lo, lanes), interleave<Vec, true>(e_lo, f_lo, lanes),
          interleave<Vec, false>(e_hi, f_hi, lanes), interleave<Vec, true>(e_hi, f_hi, lanes)};
      put(o, 4 * th + a, row);
    }
  }
}

// G applied to three values (see conv2d_winograd4.h), the shared sum first.
template <class V>
[[gnu::always_inline]] inline void g6(const V& k0, const V& k1, const V& k2, V (&out)[6]) {
  const V e = k0 + k2;
  out[0] = k0 * 0.5;
  out[1] = (e + k1) * (-1.0 / 6);
  out[2] = (e - k1) * (1.0 / 6);
  out[3] = (k0 + 2.0 * k1 + 4.0 * k2) * (1.0 / 30);
  out[4] = (4.0 * k0 - 2.0 * k1 + k2) * (-4.0 / 15);
  out[5] = k2 * 0.5;
}

// U = G g Gᵀ of every kernel (see transformed_kernels), in f64 (G's fractions are not exact in
// f32) and rounded once.
template <class T>
const T* transform_kernels4(const DirectConv& g, int OR, const T* w) {
  using Vd = typename Simd<double>::V;
  return transformed_kernels<kXi4, double>(g, OR, w, [](const Vd(&k)[9], Vd(&t)[kXi4]) {
    Vd rows[3][6];  // G g down each kernel column
    for (int j = 0; j < 3; ++j) g6(k[j], k[3 + j], k[6 + j], rows[j]);
    for (int i = 0; i < 6; ++i) {
      Vd row[6];  // (G g Gᵀ)[i][·]
      g6(rows[0][i], rows[1][i], rows[2][i], row);
      for (int j = 0; j < 6; ++j) t[6 * i + j] = row[j];
    }
  });
}

// The forward's V holds each channel's 36 positions together (V[ξ][c] at row c·kChannelStride4
// + ξ, rows of B·L lanes), where the backward-weight's holds each position's C channels together:
// the input transform then writes 36 vectors in a row per channel instead of 36 streams. One
// row more per channel, 37 in all, so that a position's C rows (a 64-byte line each with AVX2's
// 6×2 tile in f32) fall in every set of the 64-set L1 (36 rows apart they fell in 16 sets, 128
// lines, and at 128 channels evicted each other: 1.00-1.07× the time of position-major V
// there). Against position-major V (AVX2, in-process alternation, 20-24 pairs): 0.93-0.94 of
// the time on 64-channel layers (ResNet18's 32×32, airbench94's 15×15), 0.96 on airbench94's
// 64→256 15×15 and 256-channel 7×7, 0.98-1.0 on the others; the same results.
constexpr int64_t kChannelStride4 = kXi4 + 1;

// One chunk of n images of one group (x, y: the first image's, images x_image, y_image
// apart): its planes, then every block of units: V, the 36 GEMMs into M and the outputs.
template <class T, int OR, int NV>
void winograd4_chunk(const DirectConv& g, const Layout4& l, const T* x, int64_t x_image, int64_t n,
                     const T* u, const int64_t* off, const T* bias, T* planes, T* v, T* m, T* y,
                     int64_t y_image) {
  using Vec = typename Simd<T>::V;
  constexpr int64_t L = Simd<T>::L;
  const int64_t ld = l.block_units * L, OB = (g.O + OR - 1) / OR;
  const int64_t units = l.units_of(n);
  stage_planes(g, l, x, x_image, n, planes);
  for (int64_t u0 = 0; u0 < units; u0 += l.block_units) {
    const int64_t n_units = std::min(l.block_units, units - u0);
    for (int64_t s = 0; s < n_units; ++s)
      input_transform(g, l, planes, u0 + s, v + s * L, kChannelStride4 * ld, ld);
    // Per position ξ the GEMMs of every block of output channels, so that V[ξ] (C × B·L) stays in
    // L1 while U[ξ] streams past once per block: M holds all O channels' 36 positions (0.6 MB at
    // 256 channels). Blocks of OR channels outermost instead re-read all of V per block, from L3
    // once V outgrew L2 (measured with blocks of 4 units: 36 · C · 4·L, past 128 channels):
    // 1.06-1.13× slower on ResNet18's 32×32, 16×16 and 8×8 layers, the same on its 4×4 one
    // (throwaway alternation, 15 rounds).
    for (int xi = 0; xi < kXi4; ++xi)
      for (int64_t ob = 0; ob < OB; ++ob)
        for (int64_t s = 0; s < n_units; s += NV)
          forward_tile<T, OR, NV>(v + xi * ld + s * L, off, g.C, u + (xi * OB + ob) * g.C * OR,
                                  m + (xi * OB + ob) * OR * ld + s * L, ld);
    for (int64_t s = 0; s < n_units; ++s) {
      const int64_t unit = u0 + s;
      if (!l.packed) {  // the row's 4·L outputs at the unit's columns, those inside
        const int64_t x0 = 4 * l.first_tile(unit), width = std::min(4 * L, g.Wo - x0);
        output_transform(l, g.Ho, m + s * L, OB * OR * ld, ld, unit, g.O, bias,
                         [&](int64_t o, int64_t h, const Vec(&row)[4]) {
                           T* out = y + (o * g.Ho + h) * g.Wo + x0;
                           if (width == 4 * L) {
                             for (int k = 0; k < 4; ++k) storeu(out + k * L, row[k]);
                             return;
                           }
                           alignas(64) T values[4 * L];
                           for (int k = 0; k < 4; ++k) storeu(values + k * L, row[k]);
                           copy_row(values, width, out);
                         });
        continue;
      }
      // Packed: the 4·L outputs are one row of each image of the pack, 4·TW apart (the first
      // Wo of each inside); where Wo is whole vectors (8×8 and 16×16 images in f32) each
      // vector is stored where it goes.
      const int64_t i0 = l.first_image(unit), images = std::min(l.pack, n - i0);
      output_transform(l, g.Ho, m + s * L, OB * OR * ld, ld, unit, g.O, bias,
                       [&](int64_t o, int64_t h, const Vec(&row)[4]) {
                         T* out = y + i0 * y_image + (o * g.Ho + h) * g.Wo;
                         if (g.Wo % L == 0) {
                           for (int64_t k = 0; k < 4 && k * L < images * g.Wo; ++k)
                             storeu(out + k * L / g.Wo * y_image + k * L % g.Wo, row[k]);
                           return;
                         }
                         alignas(64) T values[4 * L];
                         for (int k = 0; k < 4; ++k) storeu(values + k * L, row[k]);
                         for (int64_t i = 0; i < images; ++i)
                           copy_row(values + i * 4 * l.TW, g.Wo, out + i * y_image);
                       });
    }
  }
}

}  // namespace

template <class T>
void forward_winograd4(const DirectConv& g, const T* x, const T* w, const T* bias, T* y) {
  check_winograd4(g, "forward");
  constexpr int64_t L = Simd<T>::L;
  const Layout4 l = Layout4::of<T>(g);
  const int OR = l.tile.OR;
  const int64_t ld = l.block_units * L, OB = (g.O + OR - 1) / OR;
  const T* u = transform_kernels4(g, OR, w);
  std::vector<int64_t> off(static_cast<std::size_t>(g.C));  // the "taps" of V[ξ]: its rows
  for (int64_t c = 0; c < g.C; ++c) off[static_cast<std::size_t>(c)] = c * kChannelStride4 * ld;
  const int64_t planes_size = round_up(l.planes_size(g), 16);  // V on a cache line
  const int64_t v_size = kChannelStride4 * g.C * ld, m_size = kXi4 * OB * OR * ld;
  const auto buffer = static_cast<std::size_t>(planes_size + v_size + m_size);
  const int64_t x_image = g.G * g.C * g.H * g.W, y_image = g.G * g.O * g.Ho * g.Wo;
  const int64_t chunks = (g.N + l.images - 1) / l.images;
  parallel_claim(
      chunks * g.G,
      [&] {
        T* in = thread_buffer<T>(buffer);
        // A last block's padding units read slots of V that it did not write (their columns
        // of M are dropped): left from an earlier block, or zero, not uninitialised memory.
        std::fill(in + planes_size, in + planes_size + v_size, T(0));
        return in;
      },
      [&](int64_t item, T* in) {
        const int64_t grp = item % g.G, n0 = item / g.G * l.images;
        const int64_t n = std::min(l.images, g.N - n0);
        const T* ug = u + grp * kXi4 * OB * g.C * OR;
        const T* bg = bias ? bias + grp * g.O : nullptr;
        const T* xc = x + n0 * x_image + grp * g.C * g.H * g.W;
        T* yc = y + n0 * y_image + grp * g.O * g.Ho * g.Wo;
        with_forward_tile(l.tile, [&]<int TR, int TV>() {
          winograd4_chunk<T, TR, TV>(g, l, xc, x_image, n, ug, off.data(), bg, in, in + planes_size,
                                     in + planes_size + v_size, yc, y_image);
        });
      });
}

template void forward_winograd4<float>(const DirectConv&, const float*, const float*, const float*,
                                       float*);
template void forward_winograd4<double>(const DirectConv&, const double*, const double*,
                                        const double*, double*);

}  // namespace rg::detail::direct
