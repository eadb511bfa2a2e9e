// Winograd F(2×2, 3×3) for 3×3 stride-1 convolutions (see conv2d_direct_common.h).
//
// Each 2×2 block of outputs ("tile") of one output channel is computed from the 4×4 block of
// padded input under it with 16 multiplications per input channel instead of 36:
//   V = Bᵀ d B   (the input tile d, per channel),   U = G g Gᵀ   (the 3×3 kernel g),
//   M[ξ] = Σ_c U[ξ][o, c] · V[ξ][c]   for each of the 16 positions ξ = (i, j) of the 4×4 block,
//   y = Aᵀ M A   (the 2×2 outputs),
// with, along each axis (Lavin & Gray, "Fast algorithms for convolutional neural networks"):
//   Bᵀ d = (d0 − d2, d1 + d2, d2 − d1, d1 − d3),
//   G g  = (g0, (g0 + g1 + g2)/2, (g0 − g1 + g2)/2, g2),
//   Aᵀ m = (m0 + m1 + m2, m1 − m2 − m3).
// The 16 sums over c are 16 GEMMs: 2.25 times fewer multiply-adds than the direct kernels, for
// the price of the transforms (a few adds per value, on blocks that stay in the caches).
//
// Layout. Tiles are vectorised along a row of tiles: a "unit" is L consecutive tiles of one
// tile row (rows of tiles are padded to whole units; padding tiles are computed and dropped).
// Each image's channels are first padded and split into even and odd columns (E, Od): the four
// columns 2t .. 2t + 3 of tiles t .. t + L − 1 are then the vectors E[t], Od[t], E[t + 1] and
// Od[t + 1]. Per block of NV units of one image (NV·L tiles): V (16 × C × NV·L, ~100 KB for 64
// channels: L2) by the input transform; then per block of OR output channels the forward's
// register tile (forward_tile: OR channels × NV vectors of tiles, summing over the C "taps" c of
// V[ξ]) for each ξ into M (16 × OR × NV·L, 6 KB: L1), and the output transform of M into y.
// U is read once per block.
//
// Results per image do not depend on the thread count (threads take whole images).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/conv2d/conv2d_direct_common.h"

namespace rg::detail::direct {
namespace {

constexpr int kXi = 16;  // positions ξ of the 4×4 transformed block

// The sizes of one (image, group) in tiles and units.
struct WinogradLayout {
  int64_t TH, TW;      // tiles per column, per row: ⌈Ho/2⌉, ⌈Wo/2⌉
  int64_t units_row;   // units per row of tiles: ⌈TW/L⌉
  int64_t rows, cols;  // the even and odd column planes: 2·TH + 2 rows of units_row·L + 1
  int64_t plane;       // rows · cols
  ForwardTile tile;

  template <class T>
  static WinogradLayout of(const DirectConv& g) {
    constexpr int64_t L = Simd<T>::L;
    WinogradLayout w;
    w.TH = (g.Ho + 1) / 2, w.TW = (g.Wo + 1) / 2;
    w.units_row = (w.TW + L - 1) / L;
    w.rows = 2 * w.TH + 2, w.cols = w.units_row * L + 1;
    w.plane = w.rows * w.cols;
    // The tile that wastes the least on padding channels and padding units; ties go to the
    // squarest tile (the fewest loads per FMA).
    const int64_t units = w.TH * w.units_row;
    int64_t best = -1;
    for (int i : {1, 0, 2}) {
      const ForwardTile t = kForwardTiles[i];
      const int64_t work = round_up(g.O, t.OR) * round_up(units, t.NV);
      if (best < 0 || work < best) best = work, w.tile = t;
    }
    return w;
  }
};

// U[ξ][ob][c][r] = (G g Gᵀ)[ξ] of the kernel of output channel ob·OR + r and input channel c
// of one group: zero past O.
template <class T>
std::vector<T> transform_kernels(const DirectConv& g, int OR, const T* w) {
  const int64_t OB = (g.O + OR - 1) / OR, per_xi = OB * g.C * OR;
  std::vector<T> u(static_cast<std::size_t>(g.G * kXi * per_xi), T(0));
  for (int64_t grp = 0; grp < g.G; ++grp)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t c = 0; c < g.C; ++c) {
        const T* k = w + ((grp * g.O + o) * g.C + c) * 9;
        T rows[4][3];  // G g: along the kernel's rows
        for (int j = 0; j < 3; ++j) {
          rows[0][j] = k[j];
          rows[1][j] = (k[j] + k[3 + j] + k[6 + j]) / 2;
          rows[2][j] = (k[j] - k[3 + j] + k[6 + j]) / 2;
          rows[3][j] = k[6 + j];
        }
        for (int i = 0; i < 4; ++i) {
          const T* r = rows[i];
          const T t[4] = {r[0], (r[0] + r[1] + r[2]) / 2, (r[0] - r[1] + r[2]) / 2, r[2]};
          for (int j = 0; j < 4; ++j)
            u[static_cast<std::size_t>(grp * kXi * per_xi + (i * 4 + j) * per_xi +
                                       ((o / OR) * g.C + c) * OR + o % OR)] = t[j];
        }
      }
  return u;
}

// E and Od planes of the C channels of one (image, group) x: E[c][r][t] = padded pixel
// (r, 2t), Od[c][r][t] = (r, 2t + 1); zero outside the image.
template <class T>
void split_columns(const DirectConv& g, const WinogradLayout& wl, const T* x, T* eo) {
  for (int64_t c = 0; c < g.C; ++c) {
    T* e = eo + 2 * c * wl.plane;
    T* od = e + wl.plane;
    for (int64_t r = 0; r < wl.rows; ++r, e += wl.cols, od += wl.cols) {
      const int64_t h = r - g.pH;
      if (h < 0 || h >= g.H) {
        std::fill(e, e + wl.cols, T(0));
        std::fill(od, od + wl.cols, T(0));
        continue;
      }
      // Padded column p is image column p − pW: inside for both 2t and 2t + 1 when t is in
      // [lo, hi).
      const T* src = x + (c * g.H + h) * g.W;
      const int64_t lo = std::min(wl.cols, (g.pW + 1) / 2);
      const int64_t hi = std::max(lo, std::min(wl.cols, (g.W + g.pW) / 2));
      auto pixel = [&](int64_t p) { return p >= g.pW && p < g.W + g.pW ? src[p - g.pW] : T(0); };
      for (int64_t t = 0; t < lo; ++t) e[t] = pixel(2 * t), od[t] = pixel(2 * t + 1);
      for (int64_t t = lo; t < hi; ++t) e[t] = src[2 * t - g.pW], od[t] = src[2 * t + 1 - g.pW];
      for (int64_t t = hi; t < wl.cols; ++t) e[t] = pixel(2 * t), od[t] = pixel(2 * t + 1);
    }
  }
}

// V[ξ][c][slot·L ..] = Bᵀ d B for the L tiles of unit (th, t0) of every channel; V rows are
// ld apart.
template <class T>
void transform_inputs(const DirectConv& g, const WinogradLayout& wl, const T* eo, int64_t th,
                      int64_t t0, T* v, int64_t ld) {
  using Vec = typename Simd<T>::V;
  for (int64_t c = 0; c < g.C; ++c) {
    const T* e = eo + 2 * c * wl.plane + 2 * th * wl.cols + t0;
    const T* od = e + wl.plane;
    Vec row[4][4];  // Bᵀ along each of the 4 input rows
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const Vec e0 = loadu<Vec>(e + r * wl.cols), e1 = loadu<Vec>(e + r * wl.cols + 1);
      const Vec o0 = loadu<Vec>(od + r * wl.cols), o1 = loadu<Vec>(od + r * wl.cols + 1);
      row[r][0] = e0 - e1;
      row[r][1] = o0 + e1;
      row[r][2] = e1 - o0;
      row[r][3] = o0 - o1;
    }
    T* out = v + c * ld;
    const int64_t xi_stride = g.C * ld;
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {  // Bᵀ down the columns
      storeu(out + j * xi_stride, row[0][j] - row[2][j]);
      storeu(out + (4 + j) * xi_stride, row[1][j] + row[2][j]);
      storeu(out + (8 + j) * xi_stride, row[2][j] - row[1][j]);
      storeu(out + (12 + j) * xi_stride, row[1][j] - row[3][j]);
    }
  }
}

// The lanes of even and odd interleaved: the first half (upper = false) or the second.
template <class V, bool upper, std::size_t... I>
inline V interleave(const V& even, const V& odd, std::index_sequence<I...>) {
  constexpr int L = sizeof...(I);
  return __builtin_shufflevector(
      even, odd, ((upper ? L / 2 : 0) + static_cast<int>(I) / 2 + (I % 2 ? L : 0))...);
}

// y rows 2·th, 2·th + 1 at columns 2·t0 .. of output channels [o0, o1) (+ bias) = Aᵀ M A for
// the unit in slot `slot` of M: M[ξ][o − o0] rows of ld, ξ xi_stride apart.
template <class T>
void transform_outputs(const DirectConv& g, const T* m, int64_t xi_stride, int64_t ld, int64_t slot,
                       int64_t th, int64_t t0, int64_t o0, int64_t o1, const T* bias, T* y) {
  using Vec = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  const int64_t y_plane = g.Ho * g.Wo;
  const int64_t w0 = 2 * t0, valid = std::min<int64_t>(2 * L, g.Wo - w0);
  for (int64_t o = o0; o < o1; ++o) {
    const T* mo = m + (o - o0) * ld + slot * L;
    Vec s[4][2];  // Aᵀ along each row i of M
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const Vec m0 = loadu<Vec>(mo + (4 * i) * xi_stride);
      const Vec m1 = loadu<Vec>(mo + (4 * i + 1) * xi_stride);
      const Vec m2 = loadu<Vec>(mo + (4 * i + 2) * xi_stride);
      const Vec m3 = loadu<Vec>(mo + (4 * i + 3) * xi_stride);
      s[i][0] = m0 + m1 + m2;
      s[i][1] = m1 - m2 - m3;
    }
    const T b = bias ? bias[o] : T(0);
    for (int a = 0; a < 2 && 2 * th + a < g.Ho; ++a) {
      // Aᵀ down the columns: output row 2·th + a, even (b = 0) and odd (b = 1) columns.
      Vec even = a == 0 ? s[0][0] + s[1][0] + s[2][0] : s[1][0] - s[2][0] - s[3][0];
      Vec odd = a == 0 ? s[0][1] + s[1][1] + s[2][1] : s[1][1] - s[2][1] - s[3][1];
      even += b;
      odd += b;
      T* out = y + o * y_plane + (2 * th + a) * g.Wo + w0;
      const Vec lo = interleave<Vec, false>(even, odd, std::make_index_sequence<L>{});
      const Vec hi = interleave<Vec, true>(even, odd, std::make_index_sequence<L>{});
      if (valid == 2 * L) {
        storeu(out, lo);
        storeu(out + L, hi);
        continue;
      }
      T row[2 * L];
      storeu(row, lo);
      storeu(row + L, hi);
      std::copy(row, row + valid, out);
    }
  }
}

template <class T, int OR, int NV>
void winograd_image(const DirectConv& g, const WinogradLayout& wl, const T* eo, const T* u,
                    const int64_t* off, const T* bias, T* v, T* m, T* y) {
  constexpr int64_t L = Simd<T>::L, ld = NV * L;
  const int64_t OB = (g.O + OR - 1) / OR, units = wl.TH * wl.units_row;
  for (int64_t u0 = 0; u0 < units; u0 += NV) {
    const int64_t n_units = std::min<int64_t>(NV, units - u0);
    for (int64_t s = 0; s < n_units; ++s) {
      const int64_t unit = u0 + s;
      transform_inputs(g, wl, eo, unit / wl.units_row, unit % wl.units_row * L, v + s * L, ld);
    }
    for (int64_t ob = 0; ob < OB; ++ob) {
      for (int xi = 0; xi < kXi; ++xi)
        forward_tile<T, OR, NV>(v + xi * g.C * ld, off, g.C, u + (xi * OB + ob) * g.C * OR,
                                m + xi * OR * ld, ld);
      for (int64_t s = 0; s < n_units; ++s) {
        const int64_t unit = u0 + s;
        transform_outputs(g, m, OR * ld, ld, s, unit / wl.units_row, unit % wl.units_row * L,
                          ob * OR, std::min(g.O, (ob + 1) * OR), bias, y);
      }
    }
  }
}

}  // namespace

template <class T>
void forward_winograd(const DirectConv& g, const T* x, const T* w, const T* bias, T* y) {
  RG_CHECK(winograd_applies(g),
           "conv2d: the Winograd forward computes 3x3 kernels with stride 1 "
           "and no dilation, got ",
           g.kH, "x", g.kW, " stride ", g.sH, "x", g.sW, " dilation ", g.dH, "x", g.dW);
  const WinogradLayout wl = WinogradLayout::of<T>(g);
  const int OR = wl.tile.OR;
  const int64_t OB = (g.O + OR - 1) / OR, ld = wl.tile.NV * Simd<T>::L;
  const std::vector<T> u = transform_kernels(g, OR, w);
  std::vector<int64_t> off(static_cast<std::size_t>(g.C));  // the "taps" of V[ξ]: its rows
  for (int64_t c = 0; c < g.C; ++c) off[static_cast<std::size_t>(c)] = c * ld;
  const int64_t x_group = g.C * g.H * g.W, y_group = g.O * g.Ho * g.Wo;
  const auto eo_size = static_cast<std::size_t>(2 * g.C * wl.plane);
  const auto vm_size = static_cast<std::size_t>(kXi * (g.C + OR) * ld);
  const int64_t v_at = round_up(static_cast<int64_t>(eo_size), 16);  // V on a cache line
  std::atomic<int64_t> next{0};
  const int64_t items = g.N * g.G;
  parallel_for(std::min<int64_t>(num_threads(), items), 1, [&](int64_t, int64_t) {
    T* eo = thread_buffer<T>(static_cast<std::size_t>(v_at) + vm_size);
    T* v = eo + v_at;
    T* m = v + kXi * g.C * ld;
    // The last block's padding units read slots of V that it did not write (their columns of
    // M are dropped): left from an earlier block, or zero, not uninitialised memory.
    std::fill(v, m, T(0));
    for (int64_t it; (it = next.fetch_add(1)) < items;) {
      const int64_t grp = it % g.G;
      split_columns(g, wl, x + it * x_group, eo);
      with_forward_tile(wl.tile, [&]<int TR, int TV>() {
        winograd_image<T, TR, TV>(g, wl, eo, u.data() + grp * kXi * OB * g.C * OR, off.data(),
                                  bias ? bias + grp * g.O : nullptr, v, m, y + it * y_group);
      });
    }
  });
}

template void forward_winograd<float>(const DirectConv&, const float*, const float*, const float*,
                                      float*);
template void forward_winograd<double>(const DirectConv&, const double*, const double*,
                                       const double*, double*);

}  // namespace rg::detail::direct
