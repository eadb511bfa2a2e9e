// Depthwise convolutions of small planes, vectorised over channels (conv2d_grouped.h): planes
// narrower than a vector (MobileNetV2's 8×8 and 4×4 stages) waste most lanes of a vector along
// their rows, so here a vector holds one pixel of L channels instead. The planes of L channels
// are interleaved into a padded buffer (pixel (r, q) of lane c at (r · cols + q) · L + c), every
// tap is one vector load and one FMA with that tap's weights of the L channels, and the results
// are written back to their planes. Backward-data is the same correlation over gy interleaved
// with zeros between its pixels (as in conv2d_grouped.cpp), backward-weight one block of L
// channels per thread over the batch. Sums run in tap order, and over the batch in image order:
// the results do not depend on the thread count.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct_common.h"
#include "ops/conv/conv2d/conv2d_grouped.h"

namespace rg::detail {
namespace {
using direct::loadu;
using direct::Simd;

// A padded buffer of L interleaved planes, rows × cols pixels.
struct LaneBuffer {
  int64_t rows, cols;
  int64_t size(int64_t L) const { return rows * cols * L; }
};

// Where tap (i, j) of a pixel lies in a buffer of b's width, relative to the pixel.
template <class T>
std::vector<int64_t> tap_offsets(const DirectConv& g, const LaneBuffer& b) {
  constexpr int64_t L = Simd<T>::L;
  std::vector<int64_t> off;
  for (int64_t i = 0; i < g.kH; ++i)
    for (int64_t j = 0; j < g.kW; ++j) off.push_back((i * g.dH * b.cols + j * g.dW) * L);
  return off;
}

// Zeroes buf, then copies `lanes` planes (H × W each, `stride` apart) into it, pixel (h, w) at
// row r0 + h·rs, column q0 + w·cs; pixels that fall outside the buffer are left out (they reach
// no output).
template <class T>
void interleave(const T* src, int64_t stride, int64_t lanes, int64_t H, int64_t W,
                const LaneBuffer& b, int64_t r0, int64_t q0, int64_t rs, int64_t cs, T* buf) {
  constexpr int64_t L = Simd<T>::L;
  std::fill(buf, buf + b.size(L), T(0));
  for (int64_t c = 0; c < lanes; ++c)
    for (int64_t h = 0; h < H && r0 + h * rs < b.rows; ++h)
      for (int64_t w = 0; w < W && q0 + w * cs < b.cols; ++w)
        buf[((r0 + h * rs) * b.cols + q0 + w * cs) * L + c] = src[c * stride + h * W + w];
}

// The taps' weights of the channel blocks, one vector per (block, tap), zero past G channels;
// flipped (tap K − 1 − k) for backward-data.
template <class T>
std::vector<typename Simd<T>::V> lane_weights(const DirectConv& g, const T* w, bool flipped) {
  constexpr int64_t L = Simd<T>::L;
  const int64_t K = g.kH * g.kW, blocks = (g.G + L - 1) / L;
  std::vector<typename Simd<T>::V> wv(static_cast<std::size_t>(blocks * K));
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < L; ++c) {
        const int64_t ch = b * L + c;
        wv[static_cast<std::size_t>(b * K + k)][c] =
            ch < g.G ? w[ch * K + (flipped ? K - 1 - k : k)] : T(0);
      }
  return wv;
}

// out (Ho × Wo planes of `lanes` channels, `stride` apart) = bias + Σ_k wv[k] · the tap k of buf,
// output (ho, wo) reading pixel (r0 + ho·rs, q0 + wo·cs) + tap k's offset.
template <class T>
void correlate_lanes(const LaneBuffer& b, const T* buf, const std::vector<int64_t>& off,
                     const typename Simd<T>::V* wv, typename Simd<T>::V bias, int64_t Ho,
                     int64_t Wo, int64_t r0, int64_t q0, int64_t rs, int64_t cs, int64_t lanes,
                     int64_t stride, T* out) {
  using V = typename Simd<T>::V;
  constexpr int64_t L = Simd<T>::L, R = 4;
  const auto K = static_cast<int64_t>(off.size());
  for (int64_t ho = 0; ho < Ho; ++ho)
    for (int64_t wo = 0; wo < Wo; wo += R) {
      const int64_t n = std::min(R, Wo - wo);
      const T* at[R];
      for (int64_t r = 0; r < R; ++r)
        at[r] = buf + ((r0 + ho * rs) * b.cols + q0 + (wo + std::min(r, n - 1)) * cs) * L;
      V acc[R] = {bias, bias, bias, bias};
      for (int64_t k = 0; k < K; ++k)
#pragma GCC unroll 4
        for (int64_t r = 0; r < R; ++r) acc[r] += wv[k] * loadu<V>(at[r] + off[k]);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < lanes; ++c) out[c * stride + ho * Wo + wo + r] = acc[r][c];
    }
}

}  // namespace

bool depthwise_by_lanes(const DirectConv& g) {
  return g.C == 1 && g.O == 1 && g.G > 1 && g.Wo < 8;
}

template <class T>
void depthwise_lanes_forward(const DirectConv& g, const T* x, const T* w, const T* bias, T* y) {
  using V = typename Simd<T>::V;
  constexpr int64_t L = Simd<T>::L;
  const LaneBuffer b{g.H + 2 * g.pH, g.W + 2 * g.pW};
  const std::vector<int64_t> off = tap_offsets<T>(g, b);
  const auto wv = lane_weights(g, w, false);
  const int64_t K = g.kH * g.kW, blocks = (g.G + L - 1) / L;
  parallel_for(g.N * blocks, 1, [&](int64_t begin, int64_t end) {
    T* buf = direct::thread_buffer<T>(static_cast<std::size_t>(b.size(L)));
    for (int64_t it = begin; it < end; ++it) {
      const int64_t n = it / blocks, blk = it % blocks, c0 = blk * L;
      const int64_t lanes = std::min(L, g.G - c0);
      interleave(x + (n * g.G + c0) * g.H * g.W, g.H * g.W, lanes, g.H, g.W, b, g.pH, g.pW, 1, 1,
                 buf);
      V bv{};
      for (int64_t c = 0; bias && c < lanes; ++c) bv[c] = bias[c0 + c];
      correlate_lanes(b, buf, off, wv.data() + blk * K, bv, g.Ho, g.Wo, 0, 0, g.sH, g.sW, lanes,
                      g.Ho * g.Wo, y + (n * g.G + c0) * g.Ho * g.Wo);
    }
  });
}

template <class T>
void depthwise_lanes_backward_data(const DirectConv& g, const T* gy, const T* w, T* gx) {
  constexpr int64_t L = Simd<T>::L;
  const int64_t Eh = (g.kH - 1) * g.dH, Ew = (g.kW - 1) * g.dW;
  const LaneBuffer b{g.H + g.pH + Eh, g.W + g.pW + Ew};
  const std::vector<int64_t> off = tap_offsets<T>(g, b);
  const auto wv = lane_weights(g, w, true);
  const int64_t K = g.kH * g.kW, blocks = (g.G + L - 1) / L;
  parallel_for(g.N * blocks, 1, [&](int64_t begin, int64_t end) {
    T* buf = direct::thread_buffer<T>(static_cast<std::size_t>(b.size(L)));
    for (int64_t it = begin; it < end; ++it) {
      const int64_t n = it / blocks, blk = it % blocks, c0 = blk * L;
      const int64_t lanes = std::min(L, g.G - c0);
      interleave(gy + (n * g.G + c0) * g.Ho * g.Wo, g.Ho * g.Wo, lanes, g.Ho, g.Wo, b, Eh, Ew, g.sH,
                 g.sW, buf);
      correlate_lanes(b, buf, off, wv.data() + blk * K, typename Simd<T>::V{}, g.H, g.W, g.pH, g.pW,
                      1, 1, lanes, g.H * g.W, gx + (n * g.G + c0) * g.H * g.W);
    }
  });
}

template <class T>
void depthwise_lanes_backward_weight(const DirectConv& g, const T* gy, const T* x, T* gw) {
  using V = typename Simd<T>::V;
  constexpr int64_t L = Simd<T>::L;
  const LaneBuffer b{g.H + 2 * g.pH, g.W + 2 * g.pW}, gb{g.Ho, g.Wo};
  const std::vector<int64_t> off = tap_offsets<T>(g, b);
  const int64_t K = g.kH * g.kW, blocks = (g.G + L - 1) / L;
  // One thread per block of L channels sums its weights over the whole batch, image by image.
  parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
    T* buf = direct::thread_buffer<T>(static_cast<std::size_t>(b.size(L) + gb.size(L)));
    T* gbuf = buf + b.size(L);
    std::vector<V> acc(static_cast<std::size_t>(K));
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t c0 = blk * L, lanes = std::min(L, g.G - c0);
      std::fill(acc.begin(), acc.end(), V{});
      for (int64_t n = 0; n < g.N; ++n) {
        interleave(x + (n * g.G + c0) * g.H * g.W, g.H * g.W, lanes, g.H, g.W, b, g.pH, g.pW, 1, 1,
                   buf);
        interleave(gy + (n * g.G + c0) * g.Ho * g.Wo, g.Ho * g.Wo, lanes, g.Ho, g.Wo, gb, 0, 0, 1,
                   1, gbuf);
        for (int64_t ho = 0; ho < g.Ho; ++ho)
          for (int64_t wo = 0; wo < g.Wo; ++wo) {
            const V gv = loadu<V>(gbuf + (ho * g.Wo + wo) * L);
            const T* at = buf + (ho * g.sH * b.cols + wo * g.sW) * L;
            for (int64_t k = 0; k < K; ++k)
              acc[static_cast<std::size_t>(k)] += gv * loadu<V>(at + off[k]);
          }
      }
      for (int64_t c = 0; c < lanes; ++c)
        for (int64_t k = 0; k < K; ++k) gw[(c0 + c) * K + k] = acc[static_cast<std::size_t>(k)][c];
    }
  });
}

#define RG_DEPTHWISE_LANES(T)                                                                 \
  template void depthwise_lanes_forward(const DirectConv&, const T*, const T*, const T*, T*); \
  template void depthwise_lanes_backward_data(const DirectConv&, const T*, const T*, T*);     \
  template void depthwise_lanes_backward_weight(const DirectConv&, const T*, const T*, T*);
RG_DEPTHWISE_LANES(float)
RG_DEPTHWISE_LANES(double)
#undef RG_DEPTHWISE_LANES

}  // namespace rg::detail
