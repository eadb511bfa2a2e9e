#pragma once
// The Winograd backward-weights' sums, internal to ops/conv/conv2d, shared by F(2×2)'s
// (conv2d_winograd_backward_weight.cpp) and F(4×4)'s (conv2d_winograd4_backward_weight.cpp):
// gU[ξ][c][o] = Σ_tiles V[ξ][c] · GY[ξ][o], position by position — the GEMMs' register tile
// (weight_gemms), the staging of units into blocks (WeightBlock), and the two ways of splitting
// the batch among the threads: sums per part (per_part_weight_sums) or one set shared by the
// threads, its positions split among them (shared_weight_sums).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_winograd.h"

namespace rg::detail::direct {

// Σ_p src[p · part_size ..] over the parts of the backward-weights' sums, one vector, in order.
template <class T>
typename Simd<T>::V summed_parts(const T* src, int64_t parts, int64_t part_size) {
  using Vec = typename Simd<T>::V;
  Vec sum = loadu<Vec>(src);
  for (int64_t p = 1; p < parts; ++p) sum += loadu<Vec>(src + p * part_size);
  return sum;
}

// The backward-weights' GEMMs (F(2×2)'s and F(4×4)'s): gu[ξ][c][o] += Σ_{t < tiles} v[ξ][c][t] ·
// gyt[ξ][t][o] for ξ in [xi0, xi1) of a block (v rows ld apart, ξ C·ld apart; gyt rows Op
// apart, ξ ld·Op apart): the register tile holds KR input channels × NV vectors of output
// channels; per tile NV loads of gyt, KR broadcasts of v.
template <class T, int KR, int NV>
void weight_gemms(const DirectConv& g, const T* v, const T* gyt, int64_t ld, int64_t Op,
                  int64_t tiles, T* gu, int64_t xi0 = 0, int64_t xi1 = kXi) {
  using Vec = typename Simd<T>::V;
  constexpr int L = Simd<T>::L, CW = NV * L;
  for (int64_t xi = xi0; xi < xi1; ++xi) {
    const T* vx = v + xi * g.C * ld;
    const T* gx = gyt + xi * ld * Op;
    T* ux = gu + xi * g.C * Op;
    // Blocks of output channels outermost: their columns of GY (tiles × CW) stay in L1 while
    // V's rows stream past (a broadcast per multiply-add row), where input channels outermost
    // re-read all of GY[ξ] from L2 per block of KR rows (two vectors per row). 1.04-1.11× faster
    // on ResNet18's 32×32 to 4×4 layers and airbench94's 256-channel 7×7 one, the same on 64→64
    // and 64→256 15×15 (AVX2, in-process alternation, 12 pairs; a whole ResNet18 step: within
    // the noise, 0.997 over 16 pairs); same sums, same order.
    for (int64_t ob = 0; ob < Op; ob += CW)
      for (int64_t c0 = 0; c0 < g.C; c0 += KR) {
        const T* xr[KR];
        for (int r = 0; r < KR; ++r) xr[r] = vx + std::min<int64_t>(c0 + r, g.C - 1) * ld;
        const int rows = static_cast<int>(std::min<int64_t>(KR, g.C - c0));
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

// Units (L tiles each) per block of the per-part sums. The register tile's sums go to gU once
// per block: with F(2×2), 8 units took 0.91 and 0.92 of the time of 4 on ResNet18's 32×32 and
// 8×8 layers, 16 about the same as 8, 2 units 1.18 and 1.12; with F(4×4) on its 64-channel
// 32×32 layer 8 units ran in 0.74-0.75 of F(2×2)'s time where 4 ran in 0.77-0.80 (AVX2, the
// in-process alternation of conv2d_direct_rules.cpp).
constexpr int64_t kWeightBlockUnits = 8;

// Parts of the batch with sums of their own (per-part sums): enough that the threads balance
// to within a small part of the layer, few enough that adding the parts up stays cheap
// (ResNet18's 128-channel layer: 1 MB of F(2×2) sums a part).
constexpr int64_t kWeightParts = 8;

// Stages units from consecutive chunks into one block of kWeightBlockUnits and adds the block's
// XI GEMMs into gu when it is full: add(units, stage) calls stage(u, v, gyt, ld) for each unit
// u, v and gyt its slot of V (rows ld apart) and of GY (rows Op apart, ξ ld·Op apart). Each
// flush reads and writes all of gu, and on small images a chunk holds few units (4×4 and 8×8
// images: 2 with F(2×2)), so blocks span chunks.
template <int XI, class T, int KR, int NV>
class WeightBlock {
 public:
  static constexpr int64_t L = Simd<T>::L, kLd = kWeightBlockUnits * L;

  WeightBlock(const DirectConv& g, int64_t Op, T* v, T* gyt, T* gu)
      : g_(g), Op_(Op), v_(v), gyt_(gyt), gu_(gu) {}

  template <class StageUnit>
  void add(int64_t units, StageUnit&& stage) {
    for (int64_t u = 0; u < units; ++u) {
      stage(u, v_ + filled_ * L, gyt_ + filled_ * L * Op_, kLd);
      if (++filled_ == kWeightBlockUnits) flush();
    }
  }

  void flush() {
    if (filled_ > 0) weight_gemms<T, KR, NV>(g_, v_, gyt_, kLd, Op_, filled_ * L, gu_, 0, XI);
    filled_ = 0;
  }

 private:
  const DirectConv& g_;
  int64_t Op_;
  T *v_, *gyt_, *gu_;
  int64_t filled_ = 0;
};

// The per-part backward-weight's sums (F(2×2)'s and F(4×4)'s narrow layers, XI positions): the
// batch's chunks in `parts` parts (kWeightParts, or one per thread where there are more), each
// summed into a gU of its own (XI × C × Op per group) and claimed by whichever thread is free:
// with one part per thread, the thread whose core ran slower (these cores' speed drifts) left
// the other idle for 3-15 ms a call in ResNet18's step (perf, AVX2). The sums do not depend on
// the thread count up to kWeightParts. stage(grp, chunk, in, block) stages a chunk's units
// through block.add (in: the thread's buffer of in_size, before its V and GY). Returns the
// parts' gU, part_size = G · XI · C · Op apart.
template <int XI, class T, class Stage>
T* per_part_weight_sums(const DirectConv& g, const ChannelTile& ct, int64_t Op, int64_t chunks,
                        int64_t in_size, int64_t& parts, Stage&& stage) {
  constexpr int64_t L = Simd<T>::L, ld = kWeightBlockUnits * L;
  const int64_t v_at = round_up(in_size, 16), gyt_at = v_at + round_up(XI * g.C * ld, 16);
  const auto buffer = static_cast<std::size_t>(gyt_at + XI * ld * Op);
  parts = std::min<int64_t>(std::max<int64_t>(kWeightParts, num_threads()), chunks);
  const int64_t group_size = XI * g.C * Op, part_size = g.G * group_size, n_parts = parts;
  T* gu = shared_buffer<T, Shared::sums>(static_cast<std::size_t>(parts * part_size));
  parallel_claim(
      parts, [&] { return thread_buffer<T>(buffer); },
      [&](int64_t part, T* in) {
        T* sums = gu + part * part_size;
        std::fill(sums, sums + part_size, T(0));
        for (int64_t grp = 0; grp < g.G; ++grp)
          with_channel_tile(ct, [&]<int KR, int NV>() {
            WeightBlock<XI, T, KR, NV> block(g, Op, in + v_at, in + gyt_at,
                                             sums + grp * group_size);
            for (int64_t chunk = part * chunks / n_parts; chunk < (part + 1) * chunks / n_parts;
                 ++chunk)
              stage(grp, chunk, in, block);
            block.flush();
          });
      });
  return gu;
}

// The shared-sums backward-weight's sums (F(2×2)'s and F(4×4)'s, XI positions): gU (XI × C ×
// Op per group, zeroed first), summed per group over blocks of block_chunks chunks (the last
// may be short). The threads stage each block's chunks together, stage(grp, chunk, k, in, v,
// gyt, ld) putting chunk k of the block into the slots from k · chunk_units on (in: a thread
// buffer of in_size), then split its XI GEMMs by ξ, each position's sums in one thread; units(
// chunk) is the units of a chunk. The staging is the caller's own: thread_buffer holds the
// workers' inputs, and the caller is one.
template <int XI, class T, class Stage, class Units>
T* shared_weight_sums(const DirectConv& g, const ChannelTile& ct, int64_t Op, int64_t chunks,
                      int64_t chunk_units, int64_t block_chunks, std::size_t in_size, Stage&& stage,
                      Units&& units) {
  constexpr int64_t L = Simd<T>::L;
  const int64_t ld = block_chunks * chunk_units * L;
  thread_local std::vector<T> staging;
  T* v = aligned(staging, static_cast<std::size_t>(XI * g.C * ld + XI * ld * Op));
  T* gyt = v + XI * g.C * ld;
  const int64_t group_size = XI * g.C * Op;
  T* gu = shared_buffer<T, Shared::sums>(static_cast<std::size_t>(g.G * group_size));
  parallel_for(g.G * XI * g.C, copy_grain(Op),
               [&](int64_t r0, int64_t r1) { std::fill(gu + r0 * Op, gu + r1 * Op, T(0)); });
  for (int64_t grp = 0; grp < g.G; ++grp)
    for (int64_t b0 = 0; b0 < chunks; b0 += block_chunks) {
      const int64_t b1 = std::min(chunks, b0 + block_chunks);
      parallel_claim(
          b1 - b0, [&] { return thread_buffer<T>(in_size); },
          [&](int64_t k, T* in) { stage(grp, b0 + k, k, in, v, gyt, ld); });
      // The last chunk may hold fewer units: its slots past them are stale, so only the units
      // written are summed (a chunk's missing lanes are zeros).
      const int64_t tiles = ((b1 - b0 - 1) * chunk_units + units(b1 - 1)) * L;
      parallel_claim(
          XI, [] { return 0; },
          [&](int64_t xi, int) {
            with_channel_tile(ct, [&]<int KR, int NV>() {
              weight_gemms<T, KR, NV>(g, v, gyt, ld, Op, tiles, gu + grp * group_size, xi, xi + 1);
            });
          });
    }
  return gu;
}

}  // namespace rg::detail::direct
