// The Winograd F(2×2, 3×3) forward (see conv2d_winograd.h).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_winograd.h"

namespace rg::detail::direct {
namespace {

// U = G g Gᵀ of every kernel (see transformed_kernels), in T: G's halves are exact.
template <class T>
const T* transform_kernels(const DirectConv& g, int OR, const T* w) {
  using V = typename Simd<T>::V;
  return transformed_kernels<kXi, T>(g, OR, w, [](const V(&k)[9], V(&t)[kXi]) {
    V rows[4][3];  // G g: along the kernel's rows
    for (int j = 0; j < 3; ++j) {
      rows[0][j] = k[j];
      rows[1][j] = (k[j] + k[3 + j] + k[6 + j]) / T(2);
      rows[2][j] = (k[j] - k[3 + j] + k[6 + j]) / T(2);
      rows[3][j] = k[6 + j];
    }
    for (int i = 0; i < 4; ++i) {
      const V(&q)[3] = rows[i];
      t[4 * i] = q[0], t[4 * i + 1] = (q[0] + q[1] + q[2]) / T(2);
      t[4 * i + 2] = (q[0] - q[1] + q[2]) / T(2), t[4 * i + 3] = q[2];
    }
  });
}

// Every block of NV units: inputs into V, then per block of OR output channels the 16 GEMMs
// into M and the outputs.
template <class T, int OR, int NV, class Source>
void winograd_units(const DirectConv& g, int64_t units, const Source& src, const T* u,
                    const int64_t* off, const T* bias, T* v, T* m) {
  constexpr int64_t L = Simd<T>::L, ld = NV * L;
  const int64_t OB = (g.O + OR - 1) / OR;
  for (int64_t u0 = 0; u0 < units; u0 += NV) {
    const int64_t n_units = std::min<int64_t>(NV, units - u0);
    for (int64_t s = 0; s < n_units; ++s) src.inputs(u0 + s, v + s * L, ld);
    for (int64_t ob = 0; ob < OB; ++ob) {
      for (int xi = 0; xi < kXi; ++xi)
        forward_tile<T, OR, NV>(v + xi * g.C * ld, off, g.C, u + (xi * OB + ob) * g.C * OR,
                                m + xi * OR * ld, ld);
      for (int64_t s = 0; s < n_units; ++s)
        src.outputs(m + s * L, OR * ld, ld, u0 + s, ob * OR, std::min(g.O, (ob + 1) * OR), bias);
    }
  }
}

}  // namespace

template <class T>
void forward_winograd(const DirectConv& g, const T* x, const T* w, const T* bias, T* y) {
  check_winograd(g, "forward");
  constexpr int64_t L = Simd<T>::L;
  const WinogradLayout wl = WinogradLayout::of<T>(g);
  const int OR = wl.tile.OR;
  const int64_t OB = (g.O + OR - 1) / OR, ld = wl.tile.NV * L;
  const T* u = transform_kernels(g, OR, w);
  std::vector<int64_t> off(static_cast<std::size_t>(g.C));  // the "taps" of V[ξ]: its rows
  for (int64_t c = 0; c < g.C; ++c) off[static_cast<std::size_t>(c)] = c * ld;
  const int64_t v_at = round_up(wl.input_size(g), 16);  // V on a cache line
  const auto buffer = static_cast<std::size_t>(v_at + kXi * (g.C + OR) * ld);
  parallel_claim(
      wl.chunks(g) * g.G,
      [&] {
        T* in = thread_buffer<T>(buffer);
        // The last block's padding units read slots of V that it did not write (their columns
        // of M are dropped): left from an earlier block, or zero, not uninitialised memory.
        std::fill(in + v_at, in + v_at + kXi * g.C * ld, T(0));
        return in;
      },
      [&](int64_t it, T* in) {
        T* v = in + v_at;
        T* m = v + kXi * g.C * ld;
        const int64_t grp = it % g.G;
        const T* ug = u + grp * kXi * OB * g.C * OR;
        const T* bg = bias ? bias + grp * g.O : nullptr;
        with_forward_tile(wl.tile, [&]<int TR, int TV>() {
          with_units(g, wl, x, it / g.G, grp, in, y, static_cast<const T*>(nullptr),
                     [&](const auto& src, int64_t units) {
                       winograd_units<T, TR, TV>(g, units, src, ug, off.data(), bg, v, m);
                     });
        });
      });
}

template void forward_winograd<float>(const DirectConv&, const float*, const float*, const float*,
                                      float*);
template void forward_winograd<double>(const DirectConv&, const double*, const double*,
                                       const double*, double*);

}  // namespace rg::detail::direct
