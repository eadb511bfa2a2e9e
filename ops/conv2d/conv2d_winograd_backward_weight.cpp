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
#include "ops/conv2d/conv2d_winograd.h"

namespace rg::detail::direct {
namespace {

// Units (L tiles each) per block. The register tile's sums go to gU once per block: 8 units
// took 0.91 and 0.92 of the time of 4 on ResNet18's 32×32 and 8×8 layers, 16 about the same
// as 8, 2 units 1.18 and 1.12 (AVX2, the same in-process alternation as in conv2d_direct.cpp).
constexpr int64_t kBlockUnits = 8;

// Parts of the batch with sums of their own (per-part sums): enough that the threads balance
// to within a small part of the layer, few enough that adding the parts up stays cheap (ResNet18's
// 128-channel layer: 1 MB of sums a part).
constexpr int64_t kWeightParts = 8;

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

// Stages units from consecutive chunks into one block of kBlockUnits and adds the block's 16
// GEMMs into gu when it is full. Each flush reads and writes all of gu, and on small images a
// chunk holds few units (4×4 and 8×8 images: 2), so blocks span chunks.
template <class T, int KR, int NV>
class WeightBlock {
 public:
  WeightBlock(const DirectConv& g, int64_t Op, T* v, T* gyt, T* gu)
      : g_(g), Op_(Op), v_(v), gyt_(gyt), gu_(gu) {}

  template <class Source>
  void add(const Source& src, int64_t units) {
    for (int64_t u = 0; u < units; ++u) {
      stage_unit(g_, src, u, filled_, kLd, Op_, v_, gyt_);
      if (++filled_ == kBlockUnits) flush();
    }
  }

  void flush() {
    if (filled_ > 0) weight_gemms<T, KR, NV>(g_, v_, gyt_, kLd, Op_, filled_ * L, gu_);
    filled_ = 0;
  }

 private:
  static constexpr int64_t L = Simd<T>::L, kLd = kBlockUnits * L;
  const DirectConv& g_;
  int64_t Op_;
  T *v_, *gyt_, *gu_;
  int64_t filled_ = 0;
};

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
  const int64_t ld = kBlockUnits * L;
  const int64_t v_at = round_up(wl.input_size(g), 16), gyt_at = v_at + round_up(kXi * g.C * ld, 16);
  const auto buffer = static_cast<std::size_t>(gyt_at + kXi * ld * Op);
  // The batch's chunks in kWeightParts parts (one per thread where there are more), each summed
  // into a gU of its own and claimed by whichever thread is free: with one part per thread, the
  // thread whose core ran slower (these cores' speed drifts) left the other idle for 3-15 ms a
  // call in ResNet18's step (perf, AVX2). The sums do not depend on the thread count up to
  // kWeightParts.
  const int64_t chunks = wl.chunks(g);
  const int64_t parts = std::min<int64_t>(std::max<int64_t>(kWeightParts, num_threads()), chunks);
  const int64_t group_size = kXi * g.C * Op, part_size = g.G * group_size;
  T* gu = shared_buffer<T, Shared::sums>(static_cast<std::size_t>(parts * part_size));
  parallel_claim(
      parts, [&] { return thread_buffer<T>(buffer); },
      [&](int64_t part, T* in) {
        T* sums = gu + part * part_size;
        std::fill(sums, sums + part_size, T(0));
        for (int64_t grp = 0; grp < g.G; ++grp)
          with_channel_tile(ct, [&]<int KR, int NV>() {
            WeightBlock<T, KR, NV> block(g, Op, in + v_at, in + gyt_at, sums + grp * group_size);
            for (int64_t chunk = part * chunks / parts; chunk < (part + 1) * chunks / parts;
                 ++chunk)
              with_units(g, wl, x, chunk, grp, in, static_cast<T*>(nullptr), gy,
                         [&](const auto& src, int64_t units) { block.add(src, units); });
            block.flush();
          });
      });
  for (int64_t grp = 0; grp < g.G; ++grp)
    transform_weight_grads(g, gu + grp * group_size, parts, part_size, Op,
                           gw + grp * g.O * g.C * 9);
}

template void backward_weight_winograd<float>(const DirectConv&, const float*, const float*, float*,
                                              bool);
template void backward_weight_winograd<double>(const DirectConv&, const double*, const double*,
                                               double*, bool);

}  // namespace rg::detail::direct
