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

// All output channels of one (image, group): ys (OB·OR × Qt) from xp.
template <class T, int OR, int NV>
void forward_image(const Layout& l, int64_t OB, const T* xp, const T* wp, T* ys) {
  constexpr int64_t TW = NV * Simd<T>::L;
  for (int64_t ob = 0; ob < OB; ++ob)
    for (int64_t q = 0; q < l.Qt; q += TW)
      forward_tile<T, OR, NV>(xp + q, l.off.data(), l.K, wp + ob * l.K * OR,
                              ys + ob * OR * l.Qt + q, l.Qt);
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
      with_forward_tile(l.tile, [&]<int TR, int TV>() {
        forward_image<T, TR, TV>(l, OB, xp, wp.data() + grp * OB * l.K * OR, ys);
      });
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
