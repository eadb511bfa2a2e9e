// The direct forward vectorised along the outputs q (see conv2d_direct_common.h): for images
// large enough that the junk columns and tile padding stay a small part of the work
// (direct_forward_kind in conv2d_direct.cpp draws the line).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv2d/conv2d_direct_common.h"

namespace rg::detail::direct {
namespace {

// out (OR × NV·L, row stride ld) = wp (K × OR, packed) applied to the taps of xq.
template <class T, int OR, int NV>
void forward_tile(const T* xq, const int64_t* off, int64_t K, const T* wp, T* out, int64_t ld) {
  using V = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  // Every loop over the tile is unrolled, so that acc lives in registers only (a rolled loop
  // makes GCC keep it in memory: a memset before, a store and reload after).
  V acc[OR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < OR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  for (int64_t k = 0; k < K; ++k) {
    const T* p = xq + off[k];
    V xv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) xv[v] = loadu<V>(p + v * L);
    const T* wk = wp + k * OR;
#pragma GCC unroll 8
    for (int r = 0; r < OR; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] += xv[v] * wk[r];
  }
#pragma GCC unroll 8
  for (int r = 0; r < OR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) storeu(out + r * ld + v * L, acc[r][v]);
}

// All output channels of one (image, group): ys (OB·OR × Qt) from xp.
template <class T, int OR, int NV>
void forward_image(const Layout& l, int64_t OB, const T* xp, const T* wp, T* ys) {
  constexpr int64_t TW = NV * Simd<T>::L;
  for (int64_t ob = 0; ob < OB; ++ob)
    for (int64_t q = 0; q < l.Qt; q += TW)
      forward_tile<T, OR, NV>(xp + q, l.off.data(), l.K, wp + ob * l.K * OR,
                              ys + ob * OR * l.Qt + q, l.Qt);
}

template <class T>
void forward_image(const Layout& l, int64_t OB, const T* xp, const T* wp, T* ys) {
  constexpr ForwardTile t0 = kForwardTiles[0], t1 = kForwardTiles[1], t2 = kForwardTiles[2];
  if (l.tile.NV == t0.NV) return forward_image<T, t0.OR, t0.NV>(l, OB, xp, wp, ys);
  if (l.tile.NV == t1.NV) return forward_image<T, t1.OR, t1.NV>(l, OB, xp, wp, ys);
  return forward_image<T, t2.OR, t2.NV>(l, OB, xp, wp, ys);
}

}  // namespace

template <class T>
void forward_by_outputs(const DirectConv& g, const T* x, const T* w, const T* bias, T* y) {
  const Layout l = Layout::of<T>(g);
  const int OR = l.tile.OR;
  const int64_t OB = (g.O + OR - 1) / OR;
  const std::vector<T> wp = pack_weight_blocks(g, l.K, OR, w);
  const int64_t x_group = g.C * g.H * g.W, y_plane = g.Ho * g.Wo;
  std::atomic<int64_t> next{0};
  const int64_t items = g.N * g.G;
  parallel_for(std::min<int64_t>(num_threads(), items), 1, [&](int64_t, int64_t) {
    PaddedImages<T>& images = PaddedImages<T>::get(g, l, 1);
    const T* xp = images.image(0);
    T* ys = thread_buffer<T>(static_cast<std::size_t>(OB * OR * l.Qt));
    for (int64_t it; (it = next.fetch_add(1)) < items;) {
      const int64_t grp = it % g.G;
      images.pad(g, l, x + it * x_group, 0);
      forward_image(l, OB, xp, wp.data() + grp * OB * l.K * OR, ys);
      for (int64_t o = 0; o < g.O; ++o) {
        T* yo = y + (it * g.O + o) * y_plane;
        const T* src = ys + o * l.Qt;
        const T b = bias ? bias[grp * g.O + o] : T(0);
        for (int64_t h = 0; h < g.Ho; ++h)
          for (int64_t wo = 0; wo < g.Wo; ++wo) yo[h * g.Wo + wo] = src[h * l.Wq + wo] + b;
      }
    }
  });
}

template void forward_by_outputs<float>(const DirectConv&, const float*, const float*, const float*,
                                        float*);
template void forward_by_outputs<double>(const DirectConv&, const double*, const double*,
                                         const double*, double*);

}  // namespace rg::detail::direct
