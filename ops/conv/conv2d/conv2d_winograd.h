#pragma once
// Winograd F(2×2, 3×3) for 3×3 stride-1 convolutions, internal to ops/conv/conv2d: the layout and
// the transforms that the forward (conv2d_winograd.cpp) and the backward-weight
// (conv2d_winograd_backward_weight.cpp) share.
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
// Layout. Tiles are vectorised in "units" of L tiles (one per lane):
// - RowUnits, where rows of tiles fill whole vectors (32×32, 16×16, 31×31, 15×15 images on
//   AVX2): L consecutive tiles of one row. Each image's channels are first padded and split
//   into even and odd columns (E, Od): the four columns 2t .. 2t + 3 of tiles t .. t + L − 1 are
//   then the vectors E[t], Od[t], E[t + 1] and Od[t + 1].
// - TileLists, for smaller images (8×8: 4 tiles a row): any L tiles of a chunk of a few images,
//   numbered (image, row, column); lanes gather their 4×4 inputs from padded planes and scatter
//   their 2×2 outputs (a few scalar moves per lane and channel, against 16·O multiply-adds).
// The sources also gather the output gradient of their tiles for the backward-weight.
// The forward, per block of NV units (NV·L tiles): V (16 × C × NV·L, ~100 KB for 64 channels:
// L2) by the input transform; then per block of OR output channels the forward's register tile
// (forward_tile: OR channels × NV vectors of tiles, summing over the C "taps" c of V[ξ]) for
// each ξ into M (16 × OR × NV·L, 6 KB: L1), and the output transform of M into y. U is read
// once per block. Its results do not depend on the thread count (threads take whole images,
// or whole chunks).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct_common.h"

namespace rg::detail::direct {

constexpr int kXi = 16;  // positions ξ of the 4×4 transformed block

// How one convolution is cut into tiles, units and blocks.
struct WinogradLayout {
  int64_t TH, TW;      // tiles per column, per row of one image: ⌈Ho/2⌉, ⌈Wo/2⌉
  bool row_units;      // rows of tiles fill whole vectors (RowUnits), or not (TileLists)
  int64_t units_row;   // RowUnits: units per row of tiles, TW/L
  int64_t rows, cols;  // RowUnits: the even and odd column planes, 2·TH + 2 rows of TW + 1
  int64_t plane;       // rows · cols
  int64_t images;      // TileLists: images per chunk (RowUnits: 1)
  int64_t lanes;       // tiles per unit: L
  ForwardTile tile;

  template <class T>
  static WinogradLayout of(const DirectConv& g) {
    constexpr int64_t L = Simd<T>::L;
    WinogradLayout w;
    w.TH = (g.Ho + 1) / 2, w.TW = (g.Wo + 1) / 2;
    w.row_units = w.TW % L == 0;
    w.units_row = w.TW / L;
    w.rows = 2 * w.TH + 2, w.cols = w.TW + 1;
    w.plane = w.rows * w.cols;
    w.lanes = L;
    // The tile that wastes the least on padding channels and padding units, per image; ties
    // go to the squarest. Not AVX2's 3 × 4: its 12 accumulators, 4 vectors of V and a
    // broadcast need 17 registers, and on ResNet18's 128-channel 16×16 layer it took 1.5 times
    // as long as 6 × 2 (the tile that wastes least there).
    int64_t best = -1;
    for (int i : {1, 0, 2}) {
      const ForwardTile t = kForwardTiles[i];
      if (!kAvx512 && t.OR * t.NV + t.NV + 1 > 16) continue;
      const int64_t images = w.row_units ? 1 : chunk_images(w.TH * w.TW, t.NV * L);
      const int64_t units = w.units_of(images);
      const int64_t work = round_up(g.O, t.OR) * round_up(units, t.NV) / images;
      if (best < 0 || work < best) best = work, w.tile = t, w.images = images;
    }
    return w;
  }

  // Units of a chunk of n images (RowUnits: of its one image).
  int64_t units_of(int64_t n) const {
    return row_units ? TH * units_row : (n * TH * TW + lanes - 1) / lanes;
  }
  // Chunks of the batch, and the units of one (the last chunk may hold fewer images).
  int64_t chunks(const DirectConv& g) const { return (g.N + images - 1) / images; }
  int64_t units(const DirectConv& g, int64_t chunk) const {
    return units_of(std::min(images, g.N - chunk * images));
  }

  // Elements of the padded input of one chunk (RowUnits: E and Od of one image).
  int64_t input_size(const DirectConv& g) const {
    return row_units ? 2 * g.C * plane : images * g.C * (2 * TH + 2) * (2 * TW + 2);
  }

  // Images per chunk of TileLists: whole blocks of tiles where at most 16 images make them.
  static int64_t chunk_images(int64_t per_image, int64_t block) {
    const int64_t whole = std::lcm(per_image, block) / per_image;
    return whole <= 16 ? whole : std::max<int64_t>(1, block / per_image);
  }
};

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

// Bᵀ along one input row of L tiles: d0 .. d3 its four columns.
template <class Vec>
[[gnu::always_inline]] inline void bt_row(const Vec& d0, const Vec& d1, const Vec& d2,
                                          const Vec& d3, Vec (&out)[4]) {
  out[0] = d0 - d2;
  out[1] = d1 + d2;
  out[2] = d2 - d1;
  out[3] = d1 - d3;
}

// V[ξ] (rows xi_stride apart) = Bᵀ down the columns of the row-transformed input rows.
template <class T, class Vec>
[[gnu::always_inline]] inline void store_bt_columns(const Vec (&row)[4][4], T* out,
                                                    int64_t xi_stride) {
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    storeu(out + j * xi_stride, row[0][j] - row[2][j]);
    storeu(out + (4 + j) * xi_stride, row[1][j] + row[2][j]);
    storeu(out + (8 + j) * xi_stride, row[2][j] - row[1][j]);
    storeu(out + (12 + j) * xi_stride, row[1][j] - row[3][j]);
  }
}

// yv[a][b] = (Aᵀ M A)[a][b] for L tiles, M[ξ] loaded from m (rows xi_stride apart), + bias.
template <class T, class Vec>
[[gnu::always_inline]] inline void at_m_a(const T* m, int64_t xi_stride, T bias, Vec (&yv)[2][2]) {
  Vec s[4][2];  // Aᵀ along each row i of M
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const Vec m0 = loadu<Vec>(m + (4 * i) * xi_stride);
    const Vec m1 = loadu<Vec>(m + (4 * i + 1) * xi_stride);
    const Vec m2 = loadu<Vec>(m + (4 * i + 2) * xi_stride);
    const Vec m3 = loadu<Vec>(m + (4 * i + 3) * xi_stride);
    s[i][0] = m0 + m1 + m2;
    s[i][1] = m1 - m2 - m3;
  }
#pragma GCC unroll 2
  for (int b = 0; b < 2; ++b) {  // Aᵀ down the columns
    yv[0][b] = s[0][b] + s[1][b] + s[2][b] + bias;
    yv[1][b] = s[1][b] - s[2][b] - s[3][b] + bias;
  }
}

// The lanes of even and odd interleaved: the first half (upper = false) or the second.
template <class V, bool upper, std::size_t... I>
inline V interleave(const V& even, const V& odd, std::index_sequence<I...>) {
  constexpr int L = sizeof...(I);
  return __builtin_shufflevector(
      even, odd, ((upper ? L / 2 : 0) + static_cast<int>(I) / 2 + (I % 2 ? L : 0))...);
}

// Lanes b, b + 2, b + 4, .. of the 2L lanes of lo and hi: the even (b = 0) or odd columns.
template <class V, int b, std::size_t... I>
inline V deinterleave(const V& lo, const V& hi, std::index_sequence<I...>) {
  return __builtin_shufflevector(lo, hi, (2 * static_cast<int>(I) + b)...);
}

// Units of L consecutive tiles of one row of tiles of one (image, group), read from its even
// and odd column planes eo, written to its y (forward) or read from its gy (backward-weight).
template <class T>
struct RowUnits {
  using Vec = typename Simd<T>::V;
  static constexpr int L = Simd<T>::L;
  const DirectConv& g;
  const WinogradLayout& wl;
  const T* eo;
  T* y;                   // the forward's output
  const T* gy = nullptr;  // the backward-weight's output gradient

  // gyv[a][b] = gy (o, 2·th + a, 2·t + b) for the unit's L tiles t; zero past the outputs.
  void output_grads(int64_t unit, int64_t o, Vec (&gyv)[2][2]) const {
    const int64_t th = unit / wl.units_row, w0 = unit % wl.units_row * 2 * L;
    const int64_t valid = std::min<int64_t>(2 * L, g.Wo - w0);
    // The next unit's rows of this channel: gy is read one unit of every channel at a time,
    // too many streams for the hardware prefetcher (the loads below missed the caches).
    const int64_t next = unit + 1, nth = next / wl.units_row, nw0 = next % wl.units_row * 2 * L;
    for (int a = 0; a < 2 && 2 * nth + a < g.Ho; ++a)
      __builtin_prefetch(gy + (o * g.Ho + 2 * nth + a) * g.Wo + nw0);
    for (int a = 0; a < 2; ++a) {
      const T* p = gy + (o * g.Ho + 2 * th + a) * g.Wo + w0;
      Vec lo{}, hi{};
      if (valid == 2 * L && 2 * th + a < g.Ho) {
        lo = loadu<Vec>(p), hi = loadu<Vec>(p + L);
      } else if (2 * th + a < g.Ho) {  // the last columns, or the row past the outputs: zeros
        alignas(64) T row[2 * L] = {};
        copy_row(p, valid, row);
        lo = loadu<Vec>(row), hi = loadu<Vec>(row + L);
      }
      gyv[a][0] = deinterleave<Vec, 0>(lo, hi, std::make_index_sequence<L>{});
      gyv[a][1] = deinterleave<Vec, 1>(lo, hi, std::make_index_sequence<L>{});
    }
  }

  // V[ξ][c][slot·L ..] (v at the slot; rows ld apart) = Bᵀ d B of every channel.
  void inputs(int64_t unit, T* v, int64_t ld) const {
    const int64_t th = unit / wl.units_row, t0 = unit % wl.units_row * L;
    for (int64_t c = 0; c < g.C; ++c) {
      const T* e = eo + 2 * c * wl.plane + 2 * th * wl.cols + t0;
      const T* od = e + wl.plane;
      Vec row[4][4];
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r)
        bt_row(loadu<Vec>(e + r * wl.cols), loadu<Vec>(od + r * wl.cols),
               loadu<Vec>(e + r * wl.cols + 1), loadu<Vec>(od + r * wl.cols + 1), row[r]);
      store_bt_columns(row, v + c * ld, g.C * ld);
    }
  }

  // y rows 2·th, 2·th + 1 at columns 2·t0 .. of output channels [o0, o1) = Aᵀ M A (+ bias):
  // m at the unit's slot, rows ld apart per channel, ξ xi_stride apart.
  void outputs(const T* m, int64_t xi_stride, int64_t ld, int64_t unit, int64_t o0, int64_t o1,
               const T* bias) const {
    const int64_t th = unit / wl.units_row, w0 = unit % wl.units_row * 2 * L;
    const int64_t valid = std::min<int64_t>(2 * L, g.Wo - w0);
    for (int64_t o = o0; o < o1; ++o) {
      Vec yv[2][2];
      at_m_a(m + (o - o0) * ld, xi_stride, bias ? bias[o] : T(0), yv);
      for (int a = 0; a < 2 && 2 * th + a < g.Ho; ++a) {
        T* out = y + (o * g.Ho + 2 * th + a) * g.Wo + w0;
        const Vec lo = interleave<Vec, false>(yv[a][0], yv[a][1], std::make_index_sequence<L>{});
        const Vec hi = interleave<Vec, true>(yv[a][0], yv[a][1], std::make_index_sequence<L>{});
        if (valid == 2 * L) {
          storeu(out, lo);
          storeu(out + L, hi);
          continue;
        }
        T row[2 * L];
        storeu(row, lo);
        storeu(row + L, hi);
        copy_row(row, valid, out);
      }
    }
  }
};

// Units of any L tiles of a chunk of images of one group, numbered (image, th, t): for small
// images, whose rows of tiles are shorter than a vector. Each image's channels are padded into
// planes of (2·TH + 2) × (2·TW + 2) (xp); lanes gather their 4×4 inputs and scatter their
// 2×2 outputs (or gather their output gradients).
template <class T>
struct TileLists {
  using Vec = typename Simd<T>::V;
  static constexpr int L = Simd<T>::L;
  const DirectConv& g;
  const WinogradLayout& wl;
  const T* xp;
  int64_t tiles;  // in the chunk
  T* y;           // the forward's output: the chunk's first image, this group
  int64_t y_image;
  const T* gy = nullptr;  // the backward-weight's output gradient, as y

  // gyv[a][b] = gy (o, 2·th + a, 2·t + b) of the unit's tiles; zero past the outputs and for
  // lanes past the last tile.
  void output_grads(int64_t unit, int64_t o, Vec (&gyv)[2][2]) const {
    alignas(64) T d[2][2][L] = {};
    const int lanes = static_cast<int>(std::min<int64_t>(L, tiles - unit * L));
    for (int lane = 0; lane < lanes; ++lane) {
      int64_t i, th, t;
      tile(unit * L + lane, i, th, t);
      const T* p = gy + i * y_image + (o * g.Ho + 2 * th) * g.Wo + 2 * t;
      for (int a = 0; a < 2 && 2 * th + a < g.Ho; ++a)
        for (int b = 0; b < 2 && 2 * t + b < g.Wo; ++b) d[a][b][lane] = p[a * g.Wo + b];
    }
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) gyv[a][b] = loadu<Vec>(d[a][b]);
  }

  int64_t rows() const { return 2 * wl.TH + 2; }
  int64_t cols() const { return 2 * wl.TW + 2; }
  int64_t image_size() const { return g.C * rows() * cols(); }
  // Tile j of the chunk: image, tile row, tile column (the tiles past the last: the last).
  void tile(int64_t j, int64_t& i, int64_t& th, int64_t& t) const {
    j = std::min(j, tiles - 1);
    t = j % wl.TW, th = j / wl.TW % wl.TH, i = j / (wl.TW * wl.TH);
  }

  void inputs(int64_t unit, T* v, int64_t ld) const {
    int64_t base[L];
    for (int lane = 0; lane < L; ++lane) {
      int64_t i, th, t;
      tile(unit * L + lane, i, th, t);
      base[lane] = i * image_size() + 2 * th * cols() + 2 * t;
    }
    const int64_t plane = rows() * cols();
    for (int64_t c = 0; c < g.C; ++c) {
      alignas(64) T d[16][L];  // the 16 inputs, lane by lane
      for (int lane = 0; lane < L; ++lane) {
        const T* p = xp + base[lane] + c * plane;
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
          for (int s = 0; s < 4; ++s) d[4 * r + s][lane] = p[r * cols() + s];
      }
      Vec row[4][4];
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r)
        bt_row(loadu<Vec>(d[4 * r]), loadu<Vec>(d[4 * r + 1]), loadu<Vec>(d[4 * r + 2]),
               loadu<Vec>(d[4 * r + 3]), row[r]);
      store_bt_columns(row, v + c * ld, g.C * ld);
    }
  }

  void outputs(const T* m, int64_t xi_stride, int64_t ld, int64_t unit, int64_t o0, int64_t o1,
               const T* bias) const {
    const int lanes = static_cast<int>(std::min<int64_t>(L, tiles - unit * L));
    for (int64_t o = o0; o < o1; ++o) {
      Vec yv[2][2];
      at_m_a(m + (o - o0) * ld, xi_stride, bias ? bias[o] : T(0), yv);
      alignas(64) T out[2][2][L];
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) storeu(out[a][b], yv[a][b]);
      for (int lane = 0; lane < lanes; ++lane) {
        int64_t i, th, t;
        tile(unit * L + lane, i, th, t);
        T* yo = y + i * y_image + (o * g.Ho + 2 * th) * g.Wo + 2 * t;
        for (int a = 0; a < 2 && 2 * th + a < g.Ho; ++a)
          for (int b = 0; b < 2 && 2 * t + b < g.Wo; ++b) yo[a * g.Wo + b] = out[a][b][lane];
      }
    }
  }
};

// xp = the chunk's b images of one group, each channel zero-padded to TileLists' planes.
template <class T>
void pad_tile_planes(const DirectConv& g, const TileLists<T>& src, const T* x, int64_t x_image,
                     int64_t b, T* xp) {
  const int64_t rows = src.rows(), cols = src.cols();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t c = 0; c < g.C; ++c) {
      T* p = xp + i * src.image_size() + c * rows * cols;
      std::fill(p, p + rows * cols, T(0));
      const T* image = x + i * x_image + c * g.H * g.W;
      for (int64_t h = 0; h < g.H && h + g.pH < rows; ++h) {
        const int64_t n = std::min(g.W, cols - g.pW);
        copy_row(image + h * g.W, n, p + (h + g.pH) * cols + g.pW);
      }
    }
}

// U[grp][ξ][ob][c][r] for ξ < XI = transform(k, t) (F(2×2)'s and F(4×4)'s kernel transforms),
// into the shared weights buffer: k the nine taps of the 3×3 kernels of output channel ob·OR + r
// and input channels c .. c + lanes − 1 of group grp (zero past O), in the lanes of vectors of
// Compute, and t their XI transforms, each rounded to T once; the threads take blocks of OR
// channels. Input channels side by side in vectors: ResNet18's 512-channel layers have 262,144
// kernels, and one at a time F(4×4)'s transform (in f64) took as long as its GEMMs.
template <int XI, class Compute, class T, class Transform>
const T* transformed_kernels(const DirectConv& g, int OR, const T* w, Transform&& transform) {
  using V = typename Simd<Compute>::V;
  constexpr int64_t Lc = Simd<Compute>::L;
  const int64_t OB = (g.O + OR - 1) / OR, per_xi = OB * g.C * OR;
  T* u = shared_buffer<T, Shared::weights>(static_cast<std::size_t>(g.G * XI * per_xi));
  parallel_for(g.G * OB, copy_grain(XI * g.C * OR), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t grp = b / OB, ob = b % OB;
      T* ub = u + grp * XI * per_xi + ob * g.C * OR;  // + ξ·per_xi + c·OR + r
      for (int64_t c0 = 0; c0 < g.C; c0 += Lc)
        for (int64_t r = 0; r < OR; ++r) {
          const int64_t o = ob * OR + r, lanes = std::min(Lc, g.C - c0);
          V k[9] = {};  // tap j of the kernels of channels c0 + lane
          if (o < g.O)
            for (int64_t lane = 0; lane < lanes; ++lane)
              for (int j = 0; j < 9; ++j)
                k[j][lane] = static_cast<Compute>(w[((grp * g.O + o) * g.C + c0 + lane) * 9 + j]);
          V t[XI];
          transform(k, t);
          for (int xi = 0; xi < XI; ++xi)
            for (int64_t lane = 0; lane < lanes; ++lane)
              ub[xi * per_xi + (c0 + lane) * OR + r] = static_cast<T>(t[xi][lane]);
        }
    }
  });
  return u;
}

// Fails unless the Winograd kernels compute g.
inline void check_winograd(const DirectConv& g, const char* kernel) {
  RG_CHECK(winograd_applies(g), "conv2d: the Winograd ", kernel,
           " computes 3x3 kernels with stride 1 and no dilation, got ", g.kH, "x", g.kW, " stride ",
           g.sH, "x", g.sW, " dilation ", g.dH, "x", g.dW);
}

// Pads chunk `chunk` of group grp of x (N, G·C, H, W) into `in` (wl.input_size elements) and
// calls f(source, units) with its units; the source writes y or reads gy (N, G·O, Ho, Wo), the
// one of them that is not null.
template <class T, class F>
void with_units(const DirectConv& g, const WinogradLayout& wl, const T* x, int64_t chunk,
                int64_t grp, T* in, T* y, const T* gy, F&& f) {
  const int64_t x_group = g.C * g.H * g.W, y_group = g.O * g.Ho * g.Wo;
  const int64_t n0 = chunk * wl.images, item = n0 * g.G + grp;  // the chunk's first image
  T* yi = y ? y + item * y_group : nullptr;
  const T* gyi = gy ? gy + item * y_group : nullptr;
  if (wl.row_units) {
    split_columns(g, wl, x + item * x_group, in);
    f(RowUnits<T>{g, wl, in, yi, gyi}, wl.units(g, chunk));
    return;
  }
  const int64_t b = std::min(wl.images, g.N - n0), tiles = b * wl.TH * wl.TW;
  const TileLists<T> src{g, wl, in, tiles, yi, g.G * y_group, gyi};
  pad_tile_planes(g, src, x + item * x_group, g.G * x_group, b, in);
  f(src, wl.units(g, chunk));
}

}  // namespace rg::detail::direct
