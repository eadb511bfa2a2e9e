// Grouped convolutions of few channels per group (conv2d_grouped.h): one register tile of
// output channels × output vectors over padded planes, forward and backward-data alike.
#include "ops/conv/conv2d/conv2d_grouped.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct_common.h"

namespace rg::detail {
namespace {
using direct::round_up;

template <class T, int L>
struct Lanes {
  typedef T V __attribute__((vector_size(L * sizeof(T))));
};
template <class V, class T>
[[gnu::always_inline]] inline V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Calls f.template operator()<L>() with the widest vector (at most the build's) whose lanes the
// output rows fill: 4×4 planes take 4 f32 lanes, 8×8 ones 8, 16 wide and more 16 (AVX-512).
template <class T, class F>
void with_lanes(int64_t width, F&& f) {
  constexpr int kMax = direct::Simd<T>::L;
  if (kMax >= 16 && width >= 16)
    f.template operator()<kMax >= 16 ? 16 : kMax>();
  else if (kMax >= 8 && width >= 8)
    f.template operator()<kMax >= 8 ? 8 : kMax>();
  else if (kMax >= 4 && width >= 4)
    f.template operator()<kMax >= 4 ? 4 : kMax>();
  else
    f.template operator()<kMax >= 2 ? 2 : kMax>();
}

// Where a correlation reads and writes: `planes` input planes of `plane` elements each in a
// buffer; output vector v (row ho, columns wo..wo+L−1 of an Ho × Wo plane) sums, over every
// input plane c and tap k, weight(o, c, k) · buffer[c·plane + base[v] + off[k] + lane].
struct Plan {
  int64_t Ho, Wo, plane;
  std::vector<int64_t> off;             // per tap
  std::vector<int64_t> base, out;       // per output vector: where it reads, where it is written
  std::vector<int64_t> lanes;           // per output vector: how many of its lanes are outputs
  std::vector<int64_t> whole, partial;  // the vectors whose lanes are all outputs, the others
};

// The output vectors of an Ho × Wo plane in rows of L, row ho reading from ho · row_step + first.
template <int L>
void list_vectors(Plan& p, int64_t row_step, int64_t first) {
  for (int64_t ho = 0; ho < p.Ho; ++ho)
    for (int64_t wo = 0; wo < p.Wo; wo += L) {
      p.base.push_back(ho * row_step + first + wo);
      p.out.push_back(ho * p.Wo + wo);
      p.lanes.push_back(std::min<int64_t>(L, p.Wo - wo));
      (p.lanes.back() == L ? p.whole : p.partial).push_back(static_cast<int64_t>(p.out.size()) - 1);
    }
}

// The forward's (and backward-weight's) view of x: each plane padded and split into sW phase
// planes of Hp × Q; pixel (h, w) at pixel_at[w] + (h + pH) · Q.
struct PaddedInput {
  Plan plan;
  int64_t Hp, Q;
  std::vector<int64_t> pixel_at;

  template <int L>
  static PaddedInput of(const DirectConv& g) {
    PaddedInput p;
    p.Hp = g.H + 2 * g.pH;
    const int64_t Wp = g.W + 2 * g.pW;
    p.Q = std::max(round_up(g.Wo, L) + (g.kW - 1) * g.dW / g.sW, (Wp + g.sW - 1) / g.sW);
    p.plan = {g.Ho, g.Wo, g.sW * p.Hp * p.Q, {}, {}, {}, {}, {}, {}};
    for (int64_t i = 0; i < g.kH; ++i)
      for (int64_t j = 0; j < g.kW; ++j) {
        const int64_t col = j * g.dW;
        p.plan.off.push_back((col % g.sW) * p.Hp * p.Q + i * g.dH * p.Q + col / g.sW);
      }
    list_vectors<L>(p.plan, g.sH * p.Q, 0);
    for (int64_t w = 0; w < g.W; ++w) {
      const int64_t col = w + g.pW;
      p.pixel_at.push_back((col % g.sW) * p.Hp * p.Q + g.pH * p.Q + col / g.sW);
    }
    return p;
  }

  // Copies `planes` planes of x (H × W each, contiguous) into buf.
  template <class T>
  void fill(const DirectConv& g, const T* x, int64_t planes, T* buf) const {
    std::fill(buf, buf + planes * plan.plane, T(0));
    for (int64_t c = 0; c < planes; ++c)
      for (int64_t h = 0; h < g.H; ++h) {
        const T* row = x + (c * g.H + h) * g.W;
        T* dst = buf + c * plan.plane + h * Q;
        if (g.sW == 1)
          std::memcpy(dst + pixel_at[0], row, static_cast<std::size_t>(g.W) * sizeof(T));
        else if (g.sW == 2)  // a constant stride: the compiler deinterleaves with vectors
          split_phases<2>(g, row, dst);
        else
          for (int64_t w = 0; w < g.W; ++w) dst[pixel_at[w]] = row[w];
      }
  }
  // Phase r of the padded row holds its columns v·S + r: the pixels w = v·S + r − pW.
  template <int S, class T>
  void split_phases(const DirectConv& g, const T* row, T* dst) const {
    for (int r = 0; r < S; ++r) {
      const int64_t first = (g.pW - r + S - 1) / S;   // the first v with a pixel
      const int64_t last = (g.W - 1 + g.pW - r) / S;  // the last
      T* phase = dst + r * Hp * Q + g.pH * Q;
      const T* src = row + r - g.pW;
      for (int64_t v = first; v <= last; ++v) phase[v] = src[v * S];
    }
  }
};

// Backward-data's view of gy: each plane with sH − 1 and sW − 1 zeros between its pixels,
// padded by E = d·(k − 1) before, in planes of Hz × Qz; gx (ih, iw) is the stride-1
// correlation of these planes with the flipped kernel, reading from (ih + pH, iw + pW). (So an
// infinite weight times an inserted zero makes a NaN where the sum over the real products has an
// inf: as the forward's does with its padding. Weights are finite in any run that trains.)
struct DilatedGradient {
  Plan plan;
  int64_t Hz, Qz, Eh, Ew;

  template <int L>
  static DilatedGradient of(const DirectConv& g) {
    DilatedGradient z;
    z.Eh = (g.kH - 1) * g.dH, z.Ew = (g.kW - 1) * g.dW;
    z.Hz = g.H + g.pH + z.Eh;
    z.Qz = round_up(g.W, L) + g.pW + z.Ew;
    z.plan = {g.H, g.W, z.Hz * z.Qz, {}, {}, {}, {}, {}, {}};
    for (int64_t i = 0; i < g.kH; ++i)
      for (int64_t j = 0; j < g.kW; ++j) z.plan.off.push_back(i * g.dH * z.Qz + j * g.dW);
    list_vectors<L>(z.plan, z.Qz, g.pH * z.Qz + g.pW);
    return z;
  }

  // Copies `planes` planes of gy (Ho × Wo each) into buf. Rows and columns of gy past the
  // planes' ends (paddings wider than d·(k − 1)) reach no pixel of gx: left out.
  template <class T>
  void fill(const DirectConv& g, const T* gy, int64_t planes, T* buf) const {
    std::fill(buf, buf + planes * plan.plane, T(0));
    for (int64_t c = 0; c < planes; ++c)
      for (int64_t ho = 0; ho < g.Ho && ho * g.sH + Eh < Hz; ++ho) {
        const T* row = gy + (c * g.Ho + ho) * g.Wo;
        T* dst = buf + c * plan.plane + (ho * g.sH + Eh) * Qz + Ew;
        for (int64_t wo = 0; wo < g.Wo && wo * g.sW + Ew < Qz; ++wo) dst[wo * g.sW] = row[wo];
      }
  }
};

// out[o] (+ bias[o]) for OR output planes from Cin padded planes, R output vectors at a time:
// weights w[o · Cin · K + c · K + k].
template <class T, int L, int OR, int R>
void correlate_block(const Plan& p, int64_t Cin, const T* buf, const T* w, const T* bias, T* out) {
  using V = typename Lanes<T, L>::V;
  const auto K = static_cast<int64_t>(p.off.size());
  const auto vectors = static_cast<int64_t>(p.base.size());
  const int64_t out_plane = p.Ho * p.Wo;
  for (int64_t v0 = 0; v0 < vectors; v0 += R) {
    int64_t at[R];
    for (int r = 0; r < R; ++r) at[r] = p.base[std::min(v0 + r, vectors - 1)];
    V acc[OR][R];
    for (int o = 0; o < OR; ++o)
      for (int r = 0; r < R; ++r) acc[o][r] = V{} + (bias ? bias[o] : T(0));
    for (int64_t c = 0; c < Cin; ++c) {
      const T* src = buf + c * p.plane;
      const T* wc = w + c * K;
      for (int64_t k = 0; k < K; ++k) {
        V xv[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) xv[r] = load<V>(src + at[r] + p.off[k]);
#pragma GCC unroll 8
        for (int o = 0; o < OR; ++o) {
          const T wv = wc[o * Cin * K + k];
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) acc[o][r] += wv * xv[r];
        }
      }
    }
    for (int r = 0; r < R && v0 + r < vectors; ++r) {
      const int64_t v = v0 + r;
      for (int o = 0; o < OR; ++o) {
        T lanes[L];
        std::memcpy(lanes, &acc[o][r], sizeof lanes);
        // Lanes past Wo read padding or the next row's pixels: dropped.
        std::copy(lanes, lanes + p.lanes[v], out + o * out_plane + p.out[v]);
      }
    }
  }
}

// All Cout output planes, in blocks of four channels (then one by one) × two vectors, or for a
// single channel (depthwise) eight vectors: eight accumulators, enough to hide the FMA latency.
template <class T, int L>
void correlate(const Plan& p, int64_t Cin, int64_t Cout, const T* buf, const T* w, const T* bias,
               T* out) {
  const int64_t K = static_cast<int64_t>(p.off.size()), out_plane = p.Ho * p.Wo;
  int64_t o = 0;
  for (; o + 4 <= Cout; o += 4)
    correlate_block<T, L, 4, 2>(p, Cin, buf, w + o * Cin * K, bias ? bias + o : nullptr,
                                out + o * out_plane);
  for (; o < Cout; ++o)
    correlate_block<T, L, 1, 8>(p, Cin, buf, w + o * Cin * K, bias ? bias + o : nullptr,
                                out + o * out_plane);
}

// sums[k] += Σ over the outputs of the gy plane · tap k of the padded plane, for every tap at
// once (K accumulators: each gy vector loaded once for K FMAs); whole vectors only, the lanes of
// each row's last partial vector one by one (no product with a pixel no output reads: 0 · inf
// would be a NaN the convolution does not have). KC: K as a constant, or 0 for any K.
template <class T, int L, int KC>
void weight_sums(const Plan& p, const T* gy, const T* src, T* sums) {
  using V = typename Lanes<T, L>::V;
  const int64_t K = KC > 0 ? KC : static_cast<int64_t>(p.off.size());
  constexpr int kSlots = KC > 0 ? KC : 1;
  const int64_t* off = p.off.data();
  auto add_lanes = [&](const V& acc) {
    T lanes[L];
    std::memcpy(lanes, &acc, sizeof lanes);
    T sum = 0;
    for (int l = 0; l < L; ++l) sum += lanes[l];
    return sum;
  };
  if constexpr (KC > 0) {
    V acc[kSlots] = {};
    for (const int64_t v : p.whole) {
      const V gv = load<V>(gy + p.out[v]);
      const T* at = src + p.base[v];
#pragma GCC unroll 32
      for (int k = 0; k < KC; ++k) acc[k] += gv * load<V>(at + off[k]);
    }
    for (int k = 0; k < KC; ++k) sums[k] += add_lanes(acc[k]);
  } else {
    for (int64_t k = 0; k < K; ++k) {
      V acc{};
      for (const int64_t v : p.whole)
        acc += load<V>(gy + p.out[v]) * load<V>(src + p.base[v] + off[k]);
      sums[k] += add_lanes(acc);
    }
  }
  for (int64_t k = 0; k < K; ++k) {
    T tail = 0;
    for (const int64_t v : p.partial)
      for (int64_t l = 0; l < p.lanes[v]; ++l)
        tail += gy[p.out[v] + l] * src[p.base[v] + off[k] + l];
    sums[k] += tail;
  }
}

// weight_sums with K as a constant for 1×1, 3×3 and 5×5 kernels.
template <class T, int L>
void weight_sums_any(const Plan& p, const T* gy, const T* src, T* sums) {
  switch (p.off.size()) {
    case 1:
      return weight_sums<T, L, 1>(p, gy, src, sums);
    case 9:
      return weight_sums<T, L, 9>(p, gy, src, sums);
    case 25:
      return weight_sums<T, L, 25>(p, gy, src, sums);
    default:
      return weight_sums<T, L, 0>(p, gy, src, sums);
  }
}

}  // namespace

bool grouped_direct_pays(const DirectConv& g, DirectKernel kernel) {
  if (g.G == 1) return false;
  if (g.C == 1) return true;
  const int64_t most = kernel == DirectKernel::backward_weight ? 8 : 4;
  return g.Ho * g.Wo >= 16 * 16 && g.C <= most && g.O <= most;
}

template <class T>
void grouped_forward(const DirectConv& g, const T* x, const T* w, const T* bias, T* y) {
  if (depthwise_by_lanes(g)) return depthwise_lanes_forward(g, x, w, bias, y);
  with_lanes<T>(g.Wo, [&]<int L>() {
    const PaddedInput in = PaddedInput::of<L>(g);
    const int64_t K = g.kH * g.kW, x_group = g.C * g.H * g.W, y_group = g.O * g.Ho * g.Wo;
    parallel_for(g.N * g.G, 1, [&](int64_t begin, int64_t end) {
      T* buf = direct::thread_buffer<T>(static_cast<std::size_t>(g.C * in.plan.plane));
      for (int64_t it = begin; it < end; ++it) {  // it = n·G + group
        const int64_t grp = it % g.G;
        in.fill(g, x + it * x_group, g.C, buf);
        correlate<T, L>(in.plan, g.C, g.O, buf, w + grp * g.O * g.C * K,
                        bias ? bias + grp * g.O : nullptr, y + it * y_group);
      }
    });
  });
}

template <class T>
void grouped_backward_data(const DirectConv& g, const T* gy, const T* w, T* gx) {
  if (depthwise_by_lanes(g)) return depthwise_lanes_backward_data(g, gy, w, gx);
  const int64_t K = g.kH * g.kW;
  // The flipped kernel with the channels' roles exchanged: wf[grp][c][o][K − 1 − k] = w[o][c][k].
  std::vector<T> wf(static_cast<std::size_t>(g.G * g.C * g.O * K));
  for (int64_t grp = 0; grp < g.G; ++grp)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t c = 0; c < g.C; ++c)
        for (int64_t k = 0; k < K; ++k)
          wf[static_cast<std::size_t>(((grp * g.C + c) * g.O + o) * K + K - 1 - k)] =
              w[((grp * g.O + o) * g.C + c) * K + k];
  with_lanes<T>(g.W, [&]<int L>() {
    const DilatedGradient z = DilatedGradient::of<L>(g);
    const int64_t x_group = g.C * g.H * g.W, y_group = g.O * g.Ho * g.Wo;
    parallel_for(g.N * g.G, 1, [&](int64_t begin, int64_t end) {
      T* buf = direct::thread_buffer<T>(static_cast<std::size_t>(g.O * z.plan.plane));
      for (int64_t it = begin; it < end; ++it) {
        const int64_t grp = it % g.G;
        z.fill(g, gy + it * y_group, g.O, buf);
        correlate<T, L>(z.plan, g.O, g.C, buf, wf.data() + grp * g.C * g.O * K, nullptr,
                        gx + it * x_group);
      }
    });
  });
}

template <class T>
void grouped_backward_weight(const DirectConv& g, const T* gy, const T* x, T* gw) {
  if (depthwise_by_lanes(g)) return depthwise_lanes_backward_weight(g, gy, x, gw);
  with_lanes<T>(g.Wo, [&]<int L>() {
    const PaddedInput in = PaddedInput::of<L>(g);
    const int64_t K = g.kH * g.kW, x_group = g.C * g.H * g.W, y_plane = g.Ho * g.Wo;
    // One thread per group sums its O·C·K weights over the whole batch, image by image.
    parallel_for(g.G, 1, [&](int64_t begin, int64_t end) {
      T* buf = direct::thread_buffer<T>(static_cast<std::size_t>(g.C * in.plan.plane));
      for (int64_t grp = begin; grp < end; ++grp) {
        T* sums = gw + grp * g.O * g.C * K;
        std::fill(sums, sums + g.O * g.C * K, T(0));
        for (int64_t n = 0; n < g.N; ++n) {
          in.fill(g, x + (n * g.G + grp) * x_group, g.C, buf);
          for (int64_t o = 0; o < g.O; ++o) {
            const T* plane = gy + ((n * g.G + grp) * g.O + o) * y_plane;
            for (int64_t c = 0; c < g.C; ++c)
              weight_sums_any<T, L>(in.plan, plane, buf + c * in.plan.plane,
                                    sums + (o * g.C + c) * K);
          }
        }
      }
    });
  });
}

#define RG_GROUPED_KERNELS(T)                                                         \
  template void grouped_forward(const DirectConv&, const T*, const T*, const T*, T*); \
  template void grouped_backward_data(const DirectConv&, const T*, const T*, T*);     \
  template void grouped_backward_weight(const DirectConv&, const T*, const T*, T*);
RG_GROUPED_KERNELS(float)
RG_GROUPED_KERNELS(double)
#undef RG_GROUPED_KERNELS

}  // namespace rg::detail
