// The direct forward vectorised along the outputs q (see conv2d_direct_common.h): for images
// large enough that the junk columns and tile padding stay a small part of the work
// (direct_forward_kind in conv2d_direct_rules.cpp draws the line).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct_common.h"

namespace rg::detail::direct {
namespace {

// All output channels of one (image, group): ys (OB·OR × Qt) from xp.
template <class T, int OR, int NV>
void forward_image(const Layout& l, int64_t OB, int64_t k_chunk, const T* xp, const T* wp, T* ys) {
  constexpr int64_t TW = NV * Simd<T>::L;
  for (int64_t ob = 0; ob < OB; ++ob)
    for (int64_t k0 = 0; k0 < l.K; k0 += k_chunk) {
      const int64_t k = std::min(k_chunk, l.K - k0);
      for (int64_t q = 0; q < l.Qt; q += TW)
        forward_tile<T, OR, NV>(xp + q, l.off.data() + k0, k, wp + (ob * l.K + k0) * OR,
                                ys + ob * OR * l.Qt + q, l.Qt, k0 > 0);
    }
}

// Taps per pass over the outputs. A tile's taps read a few rows of every input channel, and
// the next tile mostly the same rows: they stay in L1 between tiles if the channels of one
// pass fit in ~12 KB (all 64 channels of a 32×32 layer, ~34 KB with the weights, did not).
// Measured on AVX2 (one process, 16 pairs of calls with and without, each side first in half
// of them; medians of the pairs' ratios): 64→64 32×32 8 % faster, 128→128 16×16 4 %, the
// stride-2 layers unchanged; on 8×8 images (3 tiles each, little to reuse) 2-3 % slower, so
// not there. AVX-512 takes whole passes (not measured there).
template <class T>
int64_t forward_k_chunk(const DirectConv& g, const Layout& l) {
  const int64_t TW = l.tile.NV * Simd<T>::L;
  if (kAvx512 || l.Qt / TW < 8) return l.K;
  const int64_t rows = (g.kH - 1) * g.dH + 1 + (TW + l.Wq - 1) / l.Wq;
  const auto planes = static_cast<int64_t>(l.row_phases.size() * l.col_phases.size());
  const int64_t per_channel = rows * l.Wq * planes * int64_t{sizeof(T)};
  const int64_t channels = std::max<int64_t>(1, (12 << 10) / per_channel);
  return std::min(l.K, channels * g.kH * g.kW);
}

}  // namespace

template <class T>
void forward_by_outputs(const DirectConv& g, const T* x, const T* w, const T* bias, T* y) {
  const Layout l = Layout::of<T>(g);
  const int OR = l.tile.OR;
  const int64_t OB = (g.O + OR - 1) / OR;
  const T* wp = pack_weight_blocks(g, l.K, OR, w);
  const int64_t x_group = g.C * g.H * g.W, y_plane = g.Ho * g.Wo;
  const int64_t k_chunk = forward_k_chunk<T>(g, l);
  auto make_scratch = [&] {
    return std::pair{&PaddedImages<T>::get(g, l, 1),
                     thread_buffer<T>(static_cast<std::size_t>(OB * OR * l.Qt))};
  };
  parallel_claim(g.N * g.G, make_scratch, [&](int64_t it, const auto& scratch) {
    PaddedImages<T>* const images = scratch.first;
    T* const ys = scratch.second;
    const T* xp = images->image(0);
    const int64_t grp = it % g.G;
    images->pad(g, l, x + it * x_group, 0);
    with_forward_tile(l.tile, [&]<int TR, int TV>() {
      forward_image<T, TR, TV>(l, OB, k_chunk, xp, wp + grp * OB * l.K * OR, ys);
    });
    for (int64_t o = 0; o < g.O; ++o) {
      T* yo = y + (it * g.O + o) * y_plane;
      const T* src = ys + o * l.Qt;
      const T b = bias ? bias[grp * g.O + o] : T(0);
      for (int64_t h = 0; h < g.Ho; ++h)
        for (int64_t wo = 0; wo < g.Wo; ++wo) yo[h * g.Wo + wo] = src[h * l.Wq + wo] + b;
    }
  });
}

template void forward_by_outputs<float>(const DirectConv&, const float*, const float*, const float*,
                                        float*);
template void forward_by_outputs<double>(const DirectConv&, const double*, const double*,
                                         const double*, double*);

}  // namespace rg::detail::direct
