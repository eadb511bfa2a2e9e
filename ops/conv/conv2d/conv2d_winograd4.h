#pragma once
// Winograd F(4×4, 3×3), internal to ops/conv/conv2d: the layout and the transforms that the forward
// (conv2d_winograd4.cpp) and the backward-weight (conv2d_winograd4_backward_weight.cpp) share.
// conv2d_winograd.h's scheme with 4×4 tiles of outputs, each from the 6×6 block of padded
// input under it: 36 positions ξ, so 36 multiplications per input channel for 16 outputs where
// F(2×2) needs 64 and the direct kernels 144. Along each axis, Toom-Cook on the points 0, 1,
// −1, 2, −1/2 and ∞ (Lavin & Gray's 0, ±1, ±2, ∞ with −2 turned into −1/2):
//   Bᵀ d = (2(d0 + d4) − 4d2 + 3a, 2(d4 − d1) − 5d2 − d3, 2(d1 + d4) + d2 − 5d3, 2e − a, 2a + e,
//           2(d1 + d5) − 4d3 − 3e),  with a = d1 − d3, e = d4 − d2,
//   G g  = (g0/2, −(g0 + g1 + g2)/6, (g0 − g1 + g2)/6, (g0 + 2g1 + 4g2)/30,
//           −4(4g0 − 2g1 + g2)/15, g2/2),
//   Aᵀ m = (m0 + m1 + m2 + m3 + m4, m1 − m2 + 2m3 − m4/2, m1 + m2 + 4m3 + m4/4,
//           m1 − m2 + 8m3 − m4/8 + m5).
// The larger constants cost accuracy. Lavin & Gray's Aᵀ has ±8 in its last row where −1/2 puts
// −1/8: on the parity test's shapes (tests/ops/conv2d_direct_test.cpp bounds it) F(4×4)'s worst
// f32 rounding against the sums' magnitudes fell from 71 to 28 u·scale, for a Bᵀ of 18
// operations instead of 14 (no measurable cost: 0.97-1.01 of the forward's time). In f32 on
// 32×32 images of 16 to 256 channels, against the f64 result (outputs up to 0.5): rms error
// 0.5-1.7e-7 (Lavin & Gray's points 0.8-2.6e-7) where F(2×2) has 1.3-4.0e-8, at worst
// 0.6-1.9e-6 (1.5-5.3e-6) where it has 0.8-3.0e-7 (throwaway measurement, AVX2): far below what
// f32 training notices, but not near the last bit.
//
// Rows hold ⌈Wo/4⌉ tiles: where Wo is not a multiple of 4 (airbench's 31, 15 and 7) each row's last
// tile reads zeros past the padding, its outputs past Wo are dropped and the backward-weight reads
// zeros for its output gradients there. Lanes are tiles. Where rows of 4×4 tiles fill whole vectors
// (⌈Wo/4⌉ a multiple of L: 32 and 64 wide on AVX2 in f32, or 31; "row units") a unit is L
// consecutive tiles of one row, and each (image, group) is padded and split into four column phases
// P_k[c][r][t] = padded pixel (r, 4t + k): the six input columns 4t .. 4t + 5 of tiles
// t .. t + L − 1 are the vectors P_0..P_3[t] and P_0, P_1[t + 1]. Where rows of tiles are shorter
// (16×16 or 15×15, 8×8 or 7×7, and 4×4 images: 4, 2 and 1 tiles; "packed units") L / TW images lie
// side by side in the lanes, a unit is one row of tiles of such a pack, and six planes per channel
// hold the six columns of each lane's tile, so every load is a whole vector. Then per block of B
// units (one register tile's: 2 with AVX2's 6×2 tile) the input transform into V (36 × C × B·L),
// per position ξ the GEMMs (forward_tile) of every block of OR output channels into M (36 × O ×
// B·L), and the output transform into y; the backward-weight stages the same V beside the
// transformed output gradients. Each lane is one tile of one image, computed alone: the forward's
// result does not depend on the thread count or the batch.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "ops/conv/conv2d/conv2d_winograd.h"

namespace rg::detail::direct {

constexpr int kXi4 = 36;  // positions ξ of the 6×6 transformed block
// Units per block: one register tile's (NV; 3 or 4 for the 4×3 and 3×4 tiles), so that V[ξ]
// (C × B·L) stays in L1 while U[ξ] streams past: 16 KB at 256 channels. Blocks of 4 units (32
// KB there) took 1.07-1.09× the time of 2 on airbench94's 256-channel 7×7 layer and ResNet18's
// 8×8 one, 1.03 at 128 channels, the same at 64 (forwards, AVX2, in-process alternation, 20
// pairs twice); whole training steps 0.954 (ResNet18) and 0.979 (airbench94) of blocks of 4
// (12 pairs).
constexpr int64_t kBlockUnits4 = 2;

// How one convolution is cut: tiles, units, chunks of images, the planes and the register tile.
struct Layout4 {
  int64_t TH, TW;       // tiles per column, per row: ⌈Ho/4⌉, ⌈Wo/4⌉
  bool packed;          // rows of tiles shorter than a vector: `pack` images side by side
  int64_t pack;         // packed: images per vector, L / TW
  int64_t units_row;    // row units: units per row of tiles, TW / L
  int64_t rows, cols;   // of one plane: 4·TH + 2 rows of TW + 1 (packed: of L)
  int64_t plane;        // rows · cols
  int64_t channel;      // planes of one channel: 4 (row units) or 6 (packed) planes
  int64_t d_off[6];     // where the six columns of a unit's tiles are, from its first plane
  int64_t images;       // per chunk: 1 (row units), or whole packs that fill a block
  int64_t lanes;        // L
  int64_t block_units;  // units per block: a whole number of register tiles
  ForwardTile tile;

  template <class T>
  static Layout4 of(const DirectConv& g) {
    constexpr int64_t L = Simd<T>::L;
    Layout4 l;
    l.TH = (g.Ho + 3) / 4, l.TW = (g.Wo + 3) / 4, l.lanes = L;
    l.packed = l.TW % L != 0;
    l.pack = l.packed ? L / l.TW : 1;
    l.units_row = l.packed ? 1 : l.TW / L;
    l.rows = 4 * l.TH + 2, l.cols = l.packed ? L : l.TW + 1;
    l.plane = l.rows * l.cols;
    l.channel = (l.packed ? 6 : 4) * l.plane;
    for (int k = 0; k < 6; ++k)
      l.d_off[k] = l.packed ? k * l.plane : k < 4 ? k * l.plane : (k - 4) * l.plane + 1;
    // As WinogradLayout: the tile that wastes least on padding channels and units, ties to the
    // squarest, none that needs more than AVX2's 16 vector registers.
    int64_t best = -1;
    for (int i : {1, 0, 2}) {
      const ForwardTile t = kForwardTiles[i];
      if (!kAvx512 && t.OR * t.NV + t.NV + 1 > 16) continue;
      const int64_t block = std::max<int64_t>(1, kBlockUnits4 / t.NV) * t.NV;
      const int64_t images = l.packed ? (block + l.TH - 1) / l.TH * l.pack : 1;
      // The units computed: each chunk's, its last block's rounded up to whole register tiles.
      const auto computed = [&](int64_t n) { return n ? round_up(l.units_of(n), t.NV) : 0; };
      const int64_t units = g.N / images * computed(images) + computed(g.N % images);
      const int64_t work = round_up(g.O, t.OR) * units;
      if (best < 0 || work < best)
        best = work, l.tile = t, l.block_units = block, l.images = images;
    }
    return l;
  }
  // Units of a chunk of n images.
  int64_t units_of(int64_t n) const { return packed ? (n + pack - 1) / pack * TH : TH * units_row; }
  // The planes of a chunk.
  int64_t planes_size(const DirectConv& g) const {
    return (packed ? images / pack : 1) * g.C * channel;
  }
  // Unit u's row of tiles; its first tile in that row (row units; packed: 0); the first image
  // of its pack, counted in the chunk (packed; row units: 0).
  int64_t tile_row(int64_t u) const { return packed ? u % TH : u / units_row; }
  int64_t first_tile(int64_t u) const { return packed ? 0 : u % units_row * lanes; }
  int64_t first_image(int64_t u) const { return packed ? u / TH * pack : 0; }
  // Where unit u's tiles start in the planes of channel 0.
  int64_t unit_offset(const DirectConv& g, int64_t u) const {
    return first_image(u) / pack * g.C * channel + 4 * tile_row(u) * cols + first_tile(u);
  }
};

// Row r of the padded channel c of an image (image row r − pH) into row, from its column pW on
// (the padding columns around stay zero between calls on one row_buffer); false for the padding
// rows.
template <class T>
bool padded_row(const DirectConv& g, const T* image, int64_t c, int64_t r, T* row) {
  const int64_t h = r - g.pH;
  if (h < 0 || h >= g.H) return false;
  copy_row(image + (c * g.H + h) * g.W, g.W, row + g.pW);
  return true;
}

// A zeroed row buffer for padded_row: Wo + 4 = W + 2·pW + 2 padded columns, and a vector more.
template <class T>
T* row_buffer(const DirectConv& g) {
  thread_local std::vector<T> buffer;
  const auto n = static_cast<std::size_t>(g.Wo + 4 + Simd<T>::L);
  T* row = aligned(buffer, n);
  std::fill(row, row + n, T(0));
  return row;
}

// Row units: the four column phases of the C channels of one (image, group) x.
template <class T>
void split_phases(const DirectConv& g, const Layout4& l, const T* x, T* planes) {
  using Vec = typename Simd<T>::V;
  constexpr int64_t L = Simd<T>::L;
  constexpr auto lanes = std::make_index_sequence<L>{};
  T* row = row_buffer<T>(g);
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t r = 0; r < l.rows; ++r) {
      T* p = planes + c * l.channel + r * l.cols;  // + k·plane for phase k
      if (!padded_row(g, x, c, r, row)) {
        for (int k = 0; k < 4; ++k) std::fill(p + k * l.plane, p + k * l.plane + l.cols, T(0));
        continue;
      }
      // 4·L pixels (L tiles) at a time: the phases are lanes k, k + 4, .. of four vectors.
      int64_t t = 0;
      for (; t + L <= l.cols; t += L) {
        const T* s = row + 4 * t;
        const Vec v0 = loadu<Vec>(s), v1 = loadu<Vec>(s + L), v2 = loadu<Vec>(s + 2 * L),
                  v3 = loadu<Vec>(s + 3 * L);
        const Vec e01 = deinterleave<Vec, 0>(v0, v1, lanes);
        const Vec o01 = deinterleave<Vec, 1>(v0, v1, lanes);
        const Vec e23 = deinterleave<Vec, 0>(v2, v3, lanes);
        const Vec o23 = deinterleave<Vec, 1>(v2, v3, lanes);
        storeu(p + t, deinterleave<Vec, 0>(e01, e23, lanes));
        storeu(p + l.plane + t, deinterleave<Vec, 0>(o01, o23, lanes));
        storeu(p + 2 * l.plane + t, deinterleave<Vec, 1>(e01, e23, lanes));
        storeu(p + 3 * l.plane + t, deinterleave<Vec, 1>(o01, o23, lanes));
      }
      for (; t < l.cols; ++t)
        for (int k = 0; k < 4; ++k) p[k * l.plane + t] = row[4 * t + k];
    }
}

// p[k·plane + t] = row[4t + k] for the TW tiles t of one padded row (row: 4·TW + 4 values) and
// the six columns k of each: four and two tiles (15×15 or 16×16, 7×7 or 8×8 images in f32 on
// AVX2) by transposing the row's groups of four pixels, where a move per value cost airbench94
// 2-3 % of its training step.
template <class T>
void split_row(const T* row, int64_t TW, T* p, int64_t plane) {
  typedef T V4 __attribute__((vector_size(4 * sizeof(T))));
  const auto group = [&](int t) { return loadu<V4>(row + 4 * t); };
  const auto store_half = [&](int k, const V4& v, int half) {  // two tiles' column k
    std::memcpy(p + k * plane, reinterpret_cast<const T*>(&v) + 2 * half, 2 * sizeof(T));
  };
  if (TW == 2) {
    const V4 r0 = group(0), r1 = group(1), r2 = group(2);
    const V4 c01 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5);  // columns 0 and 1
    const V4 c23 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7);
    const V4 c45 = __builtin_shufflevector(r1, r2, 0, 4, 1, 5);  // columns 0 and 1 one tile on
    for (int half = 0; half < 2; ++half) {
      store_half(half, c01, half), store_half(2 + half, c23, half);
      store_half(4 + half, c45, half);
    }
    return;
  }
  if (TW == 4) {
    const V4 r0 = group(0), r1 = group(1), r2 = group(2), r3 = group(3), r4 = group(4);
    const V4 a = __builtin_shufflevector(r0, r1, 0, 4, 1, 5),
             b = __builtin_shufflevector(r2, r3, 0, 4, 1, 5);
    const V4 c = __builtin_shufflevector(r0, r1, 2, 6, 3, 7),
             d = __builtin_shufflevector(r2, r3, 2, 6, 3, 7);
    const V4 e = __builtin_shufflevector(r1, r2, 0, 4, 1, 5),
             f = __builtin_shufflevector(r3, r4, 0, 4, 1, 5);
    const V4 columns[6] = {
        __builtin_shufflevector(a, b, 0, 1, 4, 5), __builtin_shufflevector(a, b, 2, 3, 6, 7),
        __builtin_shufflevector(c, d, 0, 1, 4, 5), __builtin_shufflevector(c, d, 2, 3, 6, 7),
        __builtin_shufflevector(e, f, 0, 1, 4, 5), __builtin_shufflevector(e, f, 2, 3, 6, 7)};
    for (int k = 0; k < 6; ++k) storeu(p + k * plane, columns[k]);
    return;
  }
  for (int64_t t = 0; t < TW; ++t)
    for (int k = 0; k < 6; ++k) p[k * plane + t] = row[4 * t + k];
}

// Packed units: the six column planes of the C channels of n images (x: the first, images
// x_image apart) in packs of l.pack, lane (i mod pack)·TW + t holding tile t of image i; the
// lanes of the images past n are zeros.
template <class T>
void split_packed(const DirectConv& g, const Layout4& l, const T* x, int64_t x_image, int64_t n,
                  T* planes) {
  T* row = row_buffer<T>(g);
  const int64_t packs = (n + l.pack - 1) / l.pack;
  for (int64_t i = n; i < packs * l.pack; ++i)  // the last pack's missing images
    for (int64_t c = 0; c < g.C; ++c)
      for (int k = 0; k < 6; ++k)
        for (int64_t r = 0; r < l.rows; ++r) {
          T* p = planes + (i / l.pack * g.C + c) * l.channel + k * l.plane + r * l.cols;
          std::fill(p + i % l.pack * l.TW, p + (i % l.pack + 1) * l.TW, T(0));
        }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < g.C; ++c) {
      T* p = planes + (i / l.pack * g.C + c) * l.channel + i % l.pack * l.TW;
      for (int64_t r = 0; r < l.rows; ++r, p += l.cols) {
        if (!padded_row(g, x + i * x_image, c, r, row)) {
          for (int k = 0; k < 6; ++k) std::fill(p + k * l.plane, p + k * l.plane + l.TW, T(0));
          continue;
        }
        split_row(row, l.TW, p, l.plane);
      }
    }
}

// The planes of a chunk of n images (x: the first, images x_image apart), either layout.
template <class T>
void stage_planes(const DirectConv& g, const Layout4& l, const T* x, int64_t x_image, int64_t n,
                  T* planes) {
  if (l.packed)
    split_packed(g, l, x, x_image, n, planes);
  else
    split_phases(g, l, x, planes);
}

// Fails unless the F(4×4) kernels compute g.
inline void check_winograd4(const DirectConv& g, const char* kernel) {
  RG_CHECK(winograd4_applies(g), "conv2d: the Winograd F(4x4, 3x3) ", kernel,
           " computes 3x3 kernels with stride 1 and no dilation on outputs whose width, rounded "
           "up to a multiple of 4, divides or is a multiple of ",
           4 * Simd<float>::L, ", got ", g.kH, "x", g.kW, " stride ", g.sH, "x", g.sW, " dilation ",
           g.dH, "x", g.dW, " on ", g.Ho, "x", g.Wo, " outputs");
}

// Bᵀ along six vectors.
template <class Vec, class T>
[[gnu::always_inline]] inline void bt6(const Vec (&d)[6], Vec (&o)[6]) {
  const T two(2), three(3), four(4), five(5);
  const Vec a = d[1] - d[3], e = d[4] - d[2];
  o[0] = two * (d[0] + d[4]) - four * d[2] + three * a;
  o[1] = two * (d[4] - d[1]) - five * d[2] - d[3];
  o[2] = two * (d[1] + d[4]) + d[2] - five * d[3];
  o[3] = two * e - a;
  o[4] = two * a + e;
  o[5] = two * (d[1] + d[5]) - four * d[3] - three * e;
}

// Aᵀ along six vectors: four outputs.
template <class Vec, class T>
[[gnu::always_inline]] inline void at6(const Vec (&m)[6], Vec (&o)[4]) {
  const Vec s = m[1] + m[2], t = m[1] - m[2];
  o[0] = m[0] + s + m[3] + m[4];
  o[1] = t + T(2) * m[3] - T(0.5) * m[4];
  o[2] = s + T(4) * m[3] + T(0.25) * m[4];
  o[3] = t + T(8) * m[3] - T(0.125) * m[4] + m[5];
}

// V[ξ][c] at v + ξ·xi_stride + c·c_stride, L lanes = Bᵀ d B of unit `unit`, every channel.
template <class T>
void input_transform(const DirectConv& g, const Layout4& l, const T* planes, int64_t unit, T* v,
                     int64_t c_stride, int64_t xi_stride) {
  using Vec = typename Simd<T>::V;
  const T* base = planes + l.unit_offset(g, unit);
  for (int64_t c = 0; c < g.C; ++c) {
    const T* p0 = base + c * l.channel;
    Vec rows[6][6];  // Bᵀ along each input row
#pragma GCC unroll 6
    for (int r = 0; r < 6; ++r) {
      Vec d[6];
#pragma GCC unroll 6
      for (int k = 0; k < 6; ++k) d[k] = loadu<Vec>(p0 + r * l.cols + l.d_off[k]);
      bt6<Vec, T>(d, rows[r]);
    }
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j) {  // Bᵀ down the columns
      const Vec col[6] = {rows[0][j], rows[1][j], rows[2][j], rows[3][j], rows[4][j], rows[5][j]};
      Vec o[6];
      bt6<Vec, T>(col, o);
#pragma GCC unroll 6
      for (int i = 0; i < 6; ++i) storeu(v + (6 * i + j) * xi_stride + c * c_stride, o[i]);
    }
  }
}

}  // namespace rg::detail::direct
