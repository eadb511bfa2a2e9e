// The direct forward vectorised over output channels, for small images (see
// conv2d_direct_common.h). The forward by outputs computes whole vectors of outputs q, junk
// columns and tile padding included: on 7×7, 4×4 or 3×3 images that is a quarter to a half of
// its work. This one is the backward-weight's layout turned round: R outputs (any positions,
// listed) × NV vectors of output channels; per tap: NV loads of the packed weight, R broadcasts
// of the padded image, R·NV FMAs. It computes only valid outputs (and whole vectors of channels).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct_common.h"

namespace rg::detail::direct {
namespace {

// out (R rows of stride ld, NV·L channels) (+)= Σ_{k0 <= k < k1} wt[k, ·] · xp[off[k] + pos[r]].
template <class T, int R, int NV>
void channel_forward_tile(const T* xp, const int64_t* pos, const int64_t* off, int64_t k0,
                          int64_t k1, const T* wt, T* out, int64_t ld, bool accumulate) {
  using V = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  V acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = accumulate ? loadu<V>(out + r * ld + v * L) : V{};
  const T* xr[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) xr[r] = xp + pos[r];
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t o = off[k];
    const T* wk = wt + k * NV * L;
    V wv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) wv[v] = loadu<V>(wk + v * L);
    broadcast_fmas(acc, wv, xr, o);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) storeu(out + r * ld + v * L, acc[r][v]);
}

// The positions q = i·xp_size + ho·Wq + wo of the valid outputs of b padded images, padded
// with the last one to whole tiles.
std::vector<int64_t> output_positions(const DirectConv& g, const Layout& l, int64_t b) {
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < b; ++i)
    for (int64_t ho = 0; ho < g.Ho; ++ho)
      for (int64_t wo = 0; wo < g.Wo; ++wo) pos.push_back(i * l.xp_size + ho * l.Wq + wo);
  pos.resize(static_cast<std::size_t>(round_up(b * g.Ho * g.Wo, kPositionTile)), pos.back());
  return pos;
}

// y (O × P, plus bias) = ys (P × Op) transposed: L × L blocks in registers, then the edges.
template <class T>
void transpose_out(int64_t O, int64_t P, int64_t Op, const T* ys, const T* bias, T* y) {
  constexpr int64_t L = Simd<T>::L;
  const int64_t O_blocks = O / L * L, P_blocks = P / L * L;
  for (int64_t o = 0; o < O_blocks; o += L)
    for (int64_t p = 0; p < P_blocks; p += L)
      transpose_block(ys + p * Op + o, Op, y + o * P + p, P);
  for (int64_t o = 0; o < O; ++o) {
    const int64_t p0 = o < O_blocks ? P_blocks : 0;
    for (int64_t p = p0; p < P; ++p) y[o * P + p] = ys[p * Op + o];
  }
  if (!bias) return;
  for (int64_t o = 0; o < O; ++o)
    for (int64_t p = 0; p < P; ++p) y[o * P + p] += bias[o];
}

}  // namespace

template <class T>
void forward_by_channels(const DirectConv& g, const T* x, const T* w, const T* bias, T* y) {
  constexpr int R = kPositionTile, NV = kChannelVectors;
  constexpr int64_t CW = NV * Simd<T>::L;
  const Layout l = Layout::of<T>(g);
  const int64_t OB = (g.O + CW - 1) / CW, Op = OB * CW, P = g.Ho * g.Wo;
  const T* wt = pack_weight_blocks(g, l.K, CW, w);
  // Taps per pass: 16 KB of packed weights, which stay in L1 while every position tile uses
  // them. Small images are taken several at a time, or each block of weights would be read
  // from memory for a few tiles only (512 channels of 4×4: 9 MB of weights for 3 tiles per
  // image).
  const int64_t k_chunk = std::max<int64_t>(1, (16 << 10) / (CW * int64_t{sizeof(T)}));
  const int64_t B = images_per_pass<T>(g, l);
  const int64_t batches = (g.N + B - 1) / B, items = batches * g.G;
  const int64_t x_group = g.C * g.H * g.W, y_group = g.O * P;
  auto make_scratch = [&] {
    return std::pair{&PaddedImages<T>::get(g, l, B),
                     thread_buffer<T>(static_cast<std::size_t>(round_up(B * P, R) * Op))};
  };
  parallel_claim(items, make_scratch, [&](int64_t it, const auto& scratch) {
    PaddedImages<T>* const images = scratch.first;
    T* const ys = scratch.second;
    const T* xp = images->image(0);
    const int64_t grp = it % g.G, n0 = it / g.G * B, b = std::min(B, g.N - n0);
    for (int64_t i = 0; i < b; ++i) images->pad(g, l, x + ((n0 + i) * g.G + grp) * x_group, i);
    const std::vector<int64_t> pos = output_positions(g, l, b);
    const auto Pp = static_cast<int64_t>(pos.size());
    const T* wg = wt + grp * OB * l.K * CW;
    for (int64_t k0 = 0; k0 < l.K; k0 += k_chunk) {
      const int64_t k1 = std::min(l.K, k0 + k_chunk);
      for (int64_t ob = 0; ob < OB; ++ob)
        for (int64_t r0 = 0; r0 < Pp; r0 += R)
          channel_forward_tile<T, R, NV>(xp, pos.data() + r0, l.off.data(), k0, k1,
                                         wg + ob * l.K * CW, ys + r0 * Op + ob * CW, Op, k0 > 0);
    }
    for (int64_t i = 0; i < b; ++i)
      transpose_out(g.O, P, Op, ys + i * P * Op, bias ? bias + grp * g.O : nullptr,
                    y + ((n0 + i) * g.G + grp) * y_group);
  });
}

template void forward_by_channels<float>(const DirectConv&, const float*, const float*,
                                         const float*, float*);
template void forward_by_channels<double>(const DirectConv&, const double*, const double*,
                                          const double*, double*);

}  // namespace rg::detail::direct
