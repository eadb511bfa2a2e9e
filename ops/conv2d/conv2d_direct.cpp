// Direct stride-1 convolution kernels (see conv2d_direct.h for the numbering trick).
//
// The micro-kernels use GCC/Clang vector extensions: one vector is 64 bytes (16 f32 or 8 f64
// lanes: one AVX-512 register; the compiler splits it into narrower registers on other CPUs),
// and `acc += x * w` compiles to a fused multiply-add. The register tiles keep ~24 of the 32
// vector registers as accumulators, so every loaded input vector feeds several FMAs:
//   forward          OR output channels × NV vectors of outputs, per tap k: NV loads of the
//                    padded image, OR broadcasts of the packed weight, OR·NV FMAs;
//   backward-weight  OR2 output channels × KR taps, per vector of outputs: OR2 loads of gy',
//                    KR loads of the padded image, OR2·KR FMAs.
#include "ops/conv2d/conv2d_direct.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"

// Vectors are passed between inlined helpers only; their ABI does not matter.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace rg::detail {
namespace {

template <class T>
struct Simd {
  typedef T V __attribute__((vector_size(64)));
  static constexpr int L = 64 / sizeof(T);  // lanes
};

template <class V, class T>
inline V loadu(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T, class V>
inline void storeu(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

// Keeps v in a register: without it GCC folds the load into each of the FMAs that use v, so
// one (unaligned) vector is loaded OR times.
template <class V>
inline void in_register([[maybe_unused]] V& v) {
#ifdef __AVX512F__
  asm("" : "+v"(v));
#endif
}

// Sum of the lanes in a fixed pairwise order (deterministic, and short dependency chains).
template <class T, class V>
inline T lane_sum(const V& v) {
  constexpr int L = Simd<T>::L;
  T lanes[L];
  std::memcpy(lanes, &v, sizeof v);
  for (int w = L / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) lanes[i] += lanes[i + w];
  return lanes[0];
}

int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

#ifdef __AVX512F__
constexpr bool kAvx512 = true;
#else
constexpr bool kAvx512 = false;
#endif

// Register tiles of the forward kernel: OR output channels × NV vectors of outputs.
struct ForwardTile {
  int OR, NV;
};
constexpr ForwardTile kForwardTiles[] = {{8, 3}, {6, 4}, {4, 5}};
// Backward-weight: OR2 output channels × KR taps.
constexpr int kOR2 = 4, kKR = 6;

// The phases (i·d mod s) that the kernel taps of one axis read, in increasing order.
std::vector<int64_t> used_phases(int64_t k, int64_t d, int64_t s) {
  std::vector<int64_t> used;
  for (int64_t a = 0; a < s; ++a)
    for (int64_t i = 0; i < k; ++i)
      if (i * d % s == a) {
        used.push_back(a);
        break;
      }
  return used;
}

// The flat padded numbering of one (image, group) — see conv2d_direct.h.
struct Layout {
  int64_t Hq, Wq, plane;  // one phase plane of the padded image
  // Phases read by some tap, per axis (a 1x1 stride-2 convolution reads only phase (0, 0)):
  // only those planes are stored, row phase by row phase.
  std::vector<int64_t> row_phases, col_phases;
  int64_t K;                 // taps: C·kH·kW
  int64_t Q;                 // (Ho − 1)·Wq + Wo outputs, junk columns included
  int64_t Qt;                // Q rounded up to a whole number of tiles
  int64_t xp_size;           // the stored planes + (Qt − Q) zeros, so whole tiles read in bounds
  std::vector<int64_t> off;  // K tap offsets, k = (c·kH + i)·kW + j as in the weight
  ForwardTile tile;

  template <class T>
  static Layout of(const DirectConv& g) {
    Layout l;
    l.Hq = (g.H + 2 * g.pH + g.sH - 1) / g.sH, l.Wq = (g.W + 2 * g.pW + g.sW - 1) / g.sW;
    l.plane = l.Hq * l.Wq;
    l.row_phases = used_phases(g.kH, g.dH, g.sH);
    l.col_phases = used_phases(g.kW, g.dW, g.sW);
    const auto nr = static_cast<int64_t>(l.row_phases.size());
    const auto nc = static_cast<int64_t>(l.col_phases.size());
    l.K = g.C * g.kH * g.kW;
    l.Q = (g.Ho - 1) * l.Wq + g.Wo;
    // The tile that wastes the least work on padding rows (o) and columns (q).
    int64_t best = -1;
    for (const ForwardTile& t : kForwardTiles) {
      const int64_t work = round_up(g.O, t.OR) * round_up(l.Q, t.NV * Simd<T>::L);
      if (best < 0 || work < best) best = work, l.tile = t;
    }
    // Both kernels read whole vectors: forward whole tiles, backward-weight whole vectors.
    l.Qt = round_up(l.Q, l.tile.NV * Simd<T>::L);
    l.xp_size = g.C * nr * nc * l.plane + (l.Qt - l.Q);
    // Tap (i, j) of output (ho, wo) reads padded pixel (ho·sH + i·dH, wo·sW + j·dW): row
    // ho + ⌊i·dH / sH⌋ of phase i·dH mod sH (columns likewise).
    auto index = [](const std::vector<int64_t>& v, int64_t a) {
      return static_cast<int64_t>(std::find(v.begin(), v.end(), a) - v.begin());
    };
    l.off.resize(static_cast<std::size_t>(l.K));
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t i = 0; i < g.kH; ++i)
        for (int64_t j = 0; j < g.kW; ++j) {
          const int64_t r = i * g.dH, s = j * g.dW;
          const int64_t phase =
              (c * nr + index(l.row_phases, r % g.sH)) * nc + index(l.col_phases, s % g.sW);
          l.off[static_cast<std::size_t>((c * g.kH + i) * g.kW + j)] =
              phase * l.plane + r / g.sH * l.Wq + s / g.sW;
        }
    return l;
  }
};

// dst[v] = padded row pixel v·S + b for v < Wq, from the image row src (W pixels, pW zeros on
// each side). S is the stride when known at compile time (the copy then vectorises), else 0.
template <int S, class T>
void phase_row(const DirectConv& g, int64_t Wq, const T* src, int64_t b, T* dst) {
  const int64_t sw = S > 0 ? S : g.sW;
  // Columns whose pixel lies inside the image: pW <= v·sw + b < pW + W.
  const int64_t lo = std::min(Wq, std::max<int64_t>(0, (g.pW - b + sw - 1) / sw));
  const int64_t hi = std::max(lo, std::min(Wq, (g.pW + g.W - b + sw - 1) / sw));
  std::fill(dst, dst + lo, T(0));
  const T* in = src + b - g.pW;
  for (int64_t v = lo; v < hi; ++v) dst[v] = in[v * sw];
  std::fill(dst + hi, dst + Wq, T(0));
}

// xp = the C channels of one (image, group) x: (C, H, W), zero-padded and split into phase
// planes (phase (a, b) holds padded pixels (u·sH + a, v·sW + b); only the used ones are
// stored), then the zero tail. With stride 1 there is one phase: the padded image.
template <class T>
void pad_image(const DirectConv& g, const Layout& l, const T* x, T* xp) {
  T* p = xp;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t a : l.row_phases)
      for (int64_t b : l.col_phases)
        for (int64_t u = 0; u < l.Hq; ++u, p += l.Wq) {
          const int64_t h = u * g.sH + a - g.pH;
          if (h < 0 || h >= g.H) {
            std::fill(p, p + l.Wq, T(0));
            continue;
          }
          const T* src = x + (c * g.H + h) * g.W;
          if (g.sW == 1) {
            std::fill(p, p + g.pW, T(0));
            std::memcpy(p + g.pW, src, static_cast<std::size_t>(g.W) * sizeof(T));
            std::fill(p + g.pW + g.W, p + l.Wq, T(0));
          } else if (g.sW == 2) {
            phase_row<2>(g, l.Wq, src, b, p);
          } else {
            phase_row<0>(g, l.Wq, src, b, p);
          }
        }
  std::fill(p, xp + l.xp_size, T(0));
}

// out (OR × NV·L, row stride ld) = wp (K × OR, packed) applied to the taps of xq.
template <class T, int OR, int NV>
void forward_tile(const T* xq, const int64_t* off, int64_t K, const T* wp, T* out, int64_t ld) {
  using V = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  V acc[OR][NV] = {};
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
  for (int r = 0; r < OR; ++r)
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
  switch (l.tile.NV) {
    case 3:
      return forward_image<T, 8, 3>(l, OB, xp, wp, ys);
    case 4:
      return forward_image<T, 6, 4>(l, OB, xp, wp, ys);
    default:
      return forward_image<T, 4, 5>(l, OB, xp, wp, ys);
  }
}

// gyp = one (image, group) of gy: (O, Ho, Wo) in the flat numbering, (OB2·OR2 × Qv): zero on
// the junk columns, past Q and on the padding rows, so they add nothing to gW.
template <class T>
void pad_gy(const DirectConv& g, const Layout& l, int64_t rows, int64_t Qv, const T* gy, T* gyp) {
  for (int64_t o = 0; o < rows; ++o) {
    T* dst = gyp + o * Qv;
    if (o >= g.O) {
      std::fill(dst, dst + Qv, T(0));
      continue;
    }
    for (int64_t h = 0; h < g.Ho; ++h) {
      std::memcpy(dst + h * l.Wq, gy + (o * g.Ho + h) * g.Wo,
                  static_cast<std::size_t>(g.Wo) * sizeof(T));
      std::fill(dst + h * l.Wq + g.Wo, dst + std::min((h + 1) * l.Wq, Qv), T(0));
    }
    std::fill(dst + l.Q, dst + Qv, T(0));
  }
}

// acc (OR × KR, row stride ldo) += Σ over b images, Σ_q gyp[r, q] · xp[off[c] + q]. Rows and
// taps past or_valid / kr_valid are computed (from zero rows / repeated taps) but dropped.
template <class T, int OR, int KR>
void weight_tile(const T* xp, int64_t xp_stride, const T* gyp, int64_t gy_stride, int64_t Qv,
                 int64_t b, const int64_t* off, int or_valid, int kr_valid, T* acc_out,
                 int64_t ldo) {
  using V = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  V acc[OR][KR] = {};
  for (int64_t i = 0; i < b; ++i) {
    const T* xi = xp + i * xp_stride;
    const T* gi = gyp + i * gy_stride;
    for (int64_t q = 0; q < Qv; q += L) {
      V gv[OR];
#pragma GCC unroll 8
      for (int r = 0; r < OR; ++r) gv[r] = loadu<V>(gi + r * Qv + q);
#pragma GCC unroll 8
      for (int c = 0; c < KR; ++c) {
        V xv = loadu<V>(xi + off[c] + q);
        in_register(xv);
#pragma GCC unroll 8
        for (int r = 0; r < OR; ++r) acc[r][c] += gv[r] * xv;
      }
    }
  }
  for (int r = 0; r < or_valid; ++r)
    for (int c = 0; c < kr_valid; ++c) acc_out[r * ldo + c] += lane_sum<T>(acc[r][c]);
}

// A per-thread scratch buffer of n elements, 64-byte aligned: rows of gy' and ys start on a
// cache line, so their vector loads and stores never straddle two lines.
template <class T>
T* thread_buffer(int which, std::size_t n) {
  // Reused across calls: fresh large buffers would be page-faulted (and zeroed) every time.
  thread_local std::vector<T> buffers[2];
  constexpr std::size_t pad = 64 / sizeof(T);
  std::vector<T>& b = buffers[which];
  if (b.size() < n + pad) b.resize(n + pad);
  const auto address = reinterpret_cast<std::uintptr_t>(b.data());
  return b.data() + (64 - address % 64) % 64 / sizeof(T);
}

}  // namespace

bool direct_conv_pays(const DirectConv& g, DirectKernel kernel) {
  // The tiles are sized for 32 vector registers of 64 bytes; with fewer or narrower ones they
  // spill (the kernels stay correct, and tested, everywhere).
  if (!kAvx512 || g.N == 0) return false;
  // Work wasted on junk columns (Wq/Wo − 1), on rounding q up to whole tiles (forward) or
  // vectors (backward-weight), and on the padding rows of the last output tile. Forward wins
  // up to 25 % of waste (8×8 images with padding 1); backward-weight, which also pays a lane
  // sum per tile, up to 12.5 %. Small images (4×4: 19 outputs for a 48-wide tile) lose.
  const Layout l = Layout::of<float>(g);
  const int64_t useful = g.O * g.Ho * g.Wo;
  if (kernel == DirectKernel::forward) return 5 * useful >= 4 * round_up(g.O, l.tile.OR) * l.Qt;
  // Backward-weight loops over one image's outputs at a time, then sums a thread's images
  // before each lane sum: it needs enough of both.
  const int64_t images = (g.N + num_threads() - 1) / num_threads();
  const int64_t Qv = round_up(l.Q, Simd<float>::L);
  return 9 * useful >= 8 * round_up(g.O, kOR2) * Qv && Qv >= 8 * Simd<float>::L &&
         images * Qv >= 64 * Simd<float>::L;
}

template <class T>
void direct_conv_forward(const DirectConv& g, const T* x, const T* w, const T* bias, T* y) {
  const Layout l = Layout::of<T>(g);
  const int OR = l.tile.OR;
  const int64_t OB = (g.O + OR - 1) / OR;
  // wp[grp][ob] = (K × OR): the weights of output channels ob·OR.., zero past O.
  std::vector<T> wp(static_cast<std::size_t>(g.G * OB * l.K * OR), T(0));
  for (int64_t grp = 0; grp < g.G; ++grp)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t k = 0; k < l.K; ++k)
        wp[static_cast<std::size_t>(((grp * OB + o / OR) * l.K + k) * OR + o % OR)] =
            w[(grp * g.O + o) * l.K + k];
  const int64_t x_group = g.C * g.H * g.W, y_plane = g.Ho * g.Wo;
  std::atomic<int64_t> next{0};
  const int64_t items = g.N * g.G;
  parallel_for(std::min<int64_t>(num_threads(), items), 1, [&](int64_t, int64_t) {
    T* xp = thread_buffer<T>(0, static_cast<std::size_t>(l.xp_size));
    T* ys = thread_buffer<T>(1, static_cast<std::size_t>(OB * OR * l.Qt));
    for (int64_t it; (it = next.fetch_add(1)) < items;) {
      const int64_t grp = it % g.G;
      pad_image(g, l, x + it * x_group, xp);
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

template <class T>
void direct_conv_backward_weight(const DirectConv& g, const T* gy, const T* x, T* gw) {
  const Layout l = Layout::of<T>(g);
  constexpr int L = Simd<T>::L;
  const int64_t Qv = round_up(l.Q, L);  // <= Qt: whole vectors stay inside xp
  const int64_t OB = (g.O + kOR2 - 1) / kOR2, KB = (l.K + kKR - 1) / kKR;
  const int64_t gy_size = OB * kOR2 * Qv;
  // Tap offsets padded to whole KR blocks by repeating the last tap (results dropped).
  std::vector<int64_t> off(l.off);
  off.resize(static_cast<std::size_t>(KB * kKR), l.off.back());
  // Images per pass over the tiles: enough outputs (256 vectors) that the lane sums at the end
  // of a tile are amortised, few enough that their padded images stay in L2 — every block of
  // OR2 output channels sweeps all of them again (gy' rows are read once per block).
  const int64_t chunk = std::clamp<int64_t>(
      (256 * L + Qv - 1) / Qv, 1,
      std::max<int64_t>(1, (512 << 10) / (l.xp_size * static_cast<int64_t>(sizeof(T)))));
  const int64_t size = g.G * g.O * l.K,
                parts = std::max<int64_t>(1, std::min<int64_t>(num_threads(), g.N));
  // Part 0 accumulates into gw itself, part p > 0 into partial p − 1; each part is a fixed
  // slice of the batch, summed in a fixed order: no dependence on thread timing.
  std::vector<T> partials(static_cast<std::size_t>((parts - 1) * size));
  const int64_t x_group = g.C * g.H * g.W, y_group = g.O * g.Ho * g.Wo;
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t part = p0; part < p1; ++part) {
      T* acc = part == 0 ? gw : partials.data() + (part - 1) * size;
      std::fill(acc, acc + size, T(0));
      const int64_t lo = part * g.N / parts, hi = (part + 1) * g.N / parts;
      T* xp = thread_buffer<T>(0, static_cast<std::size_t>(chunk * l.xp_size));
      T* gyp = thread_buffer<T>(1, static_cast<std::size_t>(chunk * gy_size));
      for (int64_t n0 = lo; n0 < hi; n0 += chunk) {
        const int64_t b = std::min(chunk, hi - n0);
        for (int64_t grp = 0; grp < g.G; ++grp) {
          for (int64_t i = 0; i < b; ++i) {
            const int64_t item = (n0 + i) * g.G + grp;
            pad_image(g, l, x + item * x_group, xp + i * l.xp_size);
            pad_gy(g, l, OB * kOR2, Qv, gy + item * y_group, gyp + i * gy_size);
          }
          T* acc_g = acc + grp * g.O * l.K;
          for (int64_t ob = 0; ob < OB; ++ob)
            for (int64_t kb = 0; kb < KB; ++kb)
              weight_tile<T, kOR2, kKR>(xp, l.xp_size, gyp + ob * kOR2 * Qv, gy_size, Qv, b,
                                        off.data() + kb * kKR,
                                        static_cast<int>(std::min<int64_t>(kOR2, g.O - ob * kOR2)),
                                        static_cast<int>(std::min<int64_t>(kKR, l.K - kb * kKR)),
                                        acc_g + ob * kOR2 * l.K + kb * kKR, l.K);
        }
      }
    }
  });
  if (parts == 1) return;
  // Fixed summation order (part 0, 1, 2, ...).
  parallel_for(size, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t k = 0; k + 1 < parts; ++k) {
      const T* p = partials.data() + k * size;
      for (int64_t i = b; i < e; ++i) gw[i] += p[i];
    }
  });
}

template void direct_conv_forward<float>(const DirectConv&, const float*, const float*,
                                         const float*, float*);
template void direct_conv_forward<double>(const DirectConv&, const double*, const double*,
                                          const double*, double*);

template void direct_conv_backward_weight<float>(const DirectConv&, const float*, const float*,
                                                 float*);
template void direct_conv_backward_weight<double>(const DirectConv&, const double*, const double*,
                                                  double*);

}  // namespace rg::detail
