// The direct backward-weight over padded images, vectorised over output channels (see
// conv2d_direct_common.h).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct_common.h"

namespace rg::detail {
namespace direct {
namespace {

// out (KR rows of stride Op, NV·L channels) += Σ over b images, Σ over the valid outputs
// (ho, wo) of xp[off[c] + ho·Wq + wo] · gyt[ho·Wo + wo, channels]. Taps past kr_valid are
// computed (repeated taps) but dropped.
template <class T, int KR, int NV>
void channel_weight_tile(const DirectConv& g, const Layout& l, const T* xp, const T* gyt,
                         int64_t Op, int64_t b, const int64_t* off, int kr_valid, T* out) {
  using V = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  V acc[KR][NV] = {};
  const int64_t P = g.Ho * g.Wo;
  for (int64_t i = 0; i < b; ++i) {
    const T* xi = xp + i * l.xp_size;
    for (int64_t ho = 0; ho < g.Ho; ++ho) {
      const T* xr[KR];
#pragma GCC unroll 8
      for (int c = 0; c < KR; ++c) xr[c] = xi + off[c] + ho * l.Wq;
      const T* gr = gyt + (i * P + ho * g.Wo) * Op;
      for (int64_t wo = 0; wo < g.Wo; ++wo, gr += Op) {
        V gv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) gv[v] = loadu<V>(gr + v * L);
        broadcast_fmas(acc, gv, xr, wo);
      }
    }
  }
  for (int c = 0; c < kr_valid; ++c)
    for (int v = 0; v < NV; ++v)
      storeu(out + c * Op + v * L, loadu<V>(out + c * Op + v * L) + acc[c][v]);
}

// gwt (K × Op) += the tiles of b images (xp, gyt) for every tap block and channel block.
template <class T, int KR, int NV>
void channel_weight_chunk(const DirectConv& g, const Layout& l, const T* xp, const T* gyt,
                          int64_t Op, int64_t b, const int64_t* off, T* gwt) {
  constexpr int64_t CW = NV * Simd<T>::L;
  const int64_t KB = (l.K + KR - 1) / KR;
  for (int64_t ob = 0; ob < Op / CW; ++ob)
    for (int64_t kb = 0; kb < KB; ++kb)
      channel_weight_tile<T, KR, NV>(g, l, xp, gyt + ob * CW, Op, b, off + kb * KR,
                                     static_cast<int>(std::min<int64_t>(KR, l.K - kb * KR)),
                                     gwt + kb * KR * Op + ob * CW);
}
}  // namespace

// Backward-weight vectorised over output channels: gwt (K × Op) per thread part, then
// gw (O × K) = Σ_parts gwtᵀ in a fixed order.
template <class T>
void backward_weight_padded_images(const DirectConv& g, const T* gy, const T* x, T* gw) {
  const Layout l = Layout::of<T>(g);
  const ChannelTile t = channel_tile<T>(g.O);
  const int64_t Op = round_up(g.O, t.NV * Simd<T>::L), P = g.Ho * g.Wo;
  const int64_t KB = (l.K + t.KR - 1) / t.KR;
  std::vector<int64_t> off(l.off);
  off.resize(static_cast<std::size_t>(KB * t.KR), l.off.back());
  // Several small images per pass over the tiles, so that adding a tile's accumulators into
  // gwt (K × Op: megabytes for 512 channels) stays a small cost.
  const int64_t chunk = images_per_pass<T>(g, l);
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads(), g.N));
  const int64_t part_size = g.G * l.K * Op;
  T* gwt = shared_buffer<T, Shared::sums>(static_cast<std::size_t>(parts * part_size));
  const int64_t x_group = g.C * g.H * g.W, y_group = g.O * P;
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    std::fill(gwt + p0 * part_size, gwt + p1 * part_size, T(0));  // each part by its thread
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t lo = part * g.N / parts, hi = (part + 1) * g.N / parts;
      PaddedImages<T>& images = PaddedImages<T>::get(g, l, chunk);
      const T* xp = images.image(0);
      T* gyt = thread_buffer<T>(static_cast<std::size_t>(chunk * P * Op));
      for (int64_t n0 = lo; n0 < hi; n0 += chunk) {
        const int64_t b = std::min(chunk, hi - n0);
        for (int64_t grp = 0; grp < g.G; ++grp) {
          for (int64_t i = 0; i < b; ++i) {
            const int64_t item = (n0 + i) * g.G + grp;
            images.pad(g, l, x + item * x_group, i);
            transpose_gy(g.O, P, Op, gy + item * y_group, gyt + i * P * Op);
          }
          T* out = gwt + part * part_size + grp * l.K * Op;
          with_channel_tile(t, [&]<int KR, int NV>() {
            channel_weight_chunk<T, KR, NV>(g, l, xp, gyt, Op, b, off.data(), out);
          });
        }
      }
    }
  });
  // gw[grp, o, k] = Σ_part gwt[part, grp, k, o], parts in order.
  parallel_for(g.G * g.O, std::max<int64_t>(1, 4096 / l.K), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t grp = r / g.O, o = r % g.O;
      for (int64_t k = 0; k < l.K; ++k) {
        const T* src = gwt + (grp * l.K + k) * Op + o;
        T sum = src[0];
        for (int64_t part = 1; part < parts; ++part) sum += src[part * part_size];
        gw[r * l.K + k] = sum;
      }
    }
  });
}

template void backward_weight_padded_images<float>(const DirectConv&, const float*, const float*,
                                                   float*);
template void backward_weight_padded_images<double>(const DirectConv&, const double*, const double*,
                                                    double*);

}  // namespace direct
}  // namespace rg::detail
