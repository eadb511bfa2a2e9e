// Direct convolution kernels (see conv2d_direct.h for the numbering trick).
//
// The micro-kernels use GCC/Clang vector extensions: one vector is one register of the widest
// vector unit (64 bytes, 16 f32, with AVX-512; 32 bytes, 8 f32, otherwise: AVX2, or split by
// the compiler into narrower registers), and `acc += x * w` compiles to a fused multiply-add.
// The register tiles keep three quarters of the vector registers (24 of AVX-512's 32, 12 of
// AVX2's 16) as accumulators, so every loaded value feeds several FMAs:
//   forward          OR output channels × NV vectors of outputs q; per tap k: NV loads of
//                    the padded image, OR broadcasts of the packed weight, OR·NV FMAs;
//   forward by       (small images, AVX2) R listed outputs × NV vectors of output channels;
//   channels         per tap: NV loads of the packed weight, R broadcasts of the padded image,
//                    R·NV FMAs; valid outputs only, of several images per pass;
//   backward-weight  KR taps × NV vectors of output channels; per output (ho, wo): NV loads of
//                    gy transposed to (position, channel), KR broadcasts of the padded image,
//                    KR·NV FMAs. Vectorised over channels, it visits only the valid outputs
//                    (no junk columns) and needs no horizontal sums.
#include "ops/conv2d/conv2d_direct.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/thread_pool.h"

// Vectors are passed between inlined helpers only; their ABI does not matter.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace rg::detail {
namespace {

#ifdef __AVX512F__
constexpr bool kAvx512 = true;
#else
constexpr bool kAvx512 = false;
#endif
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
constexpr bool kFmaVectors = true;  // the register tiles below fit
#else
constexpr bool kFmaVectors = false;
#endif
constexpr int kVectorBytes = kAvx512 ? 64 : 32;

template <class T>
struct Simd {
  typedef T V __attribute__((vector_size(kVectorBytes)));
  static constexpr int L = kVectorBytes / sizeof(T);  // lanes
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

// acc[r][v] += vec[v] · src[r][at] for every r < R, v < NV: R broadcasts, R·NV FMAs (the inner
// step of the two kernels vectorised over output channels).
template <int R, int NV, class V, class T>
[[gnu::always_inline]] inline void broadcast_fmas(V (&acc)[R][NV], const V (&vec)[NV],
                                                  const T* const (&src)[R], int64_t at) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const T xs = src[r][at];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] += vec[v] * xs;
  }
}

int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

// Register tiles of the forward kernel: OR output channels × NV vectors of outputs, OR·NV
// accumulators plus NV image vectors and a broadcast weight within the registers.
struct ForwardTile {
  int OR, NV;
};
constexpr ForwardTile kForwardTiles[] = {kAvx512 ? ForwardTile{8, 3} : ForwardTile{6, 2},
                                         kAvx512 ? ForwardTile{6, 4} : ForwardTile{4, 3},
                                         kAvx512 ? ForwardTile{4, 5} : ForwardTile{3, 4}};
static_assert(kForwardTiles[0].NV != kForwardTiles[1].NV &&
                  kForwardTiles[1].NV != kForwardTiles[2].NV &&
                  kForwardTiles[0].NV != kForwardTiles[2].NV,
              "forward_image tells the tiles apart by NV");

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
  int64_t xp_size;           // the stored planes + zeros, so that whole tiles read in bounds
  std::vector<int64_t> off;  // K tap offsets, k = (c·kH + i)·kW + j as in the weight
  ForwardTile tile;

  template <class T>
  static Layout of(const DirectConv& g) {
    Layout l;
    l.Hq = (g.H + 2 * g.pH + g.sH - 1) / g.sH, l.Wq = (g.W + 2 * g.pW + g.sW - 1) / g.sW;
    // Stride 1: the pW zeros before a row also serve as the right padding of the row above
    // (the taps of its last outputs run pW past its pixels, into them): rows of W + pW, and
    // (kW − 1)·dW − pW junk columns per row instead of (kW − 1)·dW (1 instead of 2 for 3x3).
    // (With padding wider than the kernel, Wo > W + pW: outputs past W + pW then share their
    // q with the first outputs of the next row, but all of those read only padding: both 0.)
    if (g.sW == 1) l.Wq = g.W + g.pW;
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
    // Zeros after the last plane: the last row's taps run pW past it (stride 1), whole tiles
    // run Qt − Q past the last output.
    l.xp_size = g.C * nr * nc * l.plane + (l.Qt - l.Q) + g.pW;
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
// each side); the zeros only when !borders_ready. S is the stride when known at compile time
// (the copy then vectorises), else 0.
template <int S, class T>
void phase_row(const DirectConv& g, int64_t Wq, const T* src, int64_t b, T* dst,
               bool borders_ready) {
  const int64_t sw = S > 0 ? S : g.sW;
  // Columns whose pixel lies inside the image: pW <= v·sw + b < pW + W.
  const int64_t lo = std::min(Wq, std::max<int64_t>(0, (g.pW - b + sw - 1) / sw));
  const int64_t hi = std::max(lo, std::min(Wq, (g.pW + g.W - b + sw - 1) / sw));
  const T* in = src + b - g.pW;
  for (int64_t v = lo; v < hi; ++v) dst[v] = in[v * sw];
  if (borders_ready) return;
  std::fill(dst, dst + lo, T(0));
  std::fill(dst + hi, dst + Wq, T(0));
}

// xp = the C channels of one (image, group) x: (C, H, W), zero-padded and split into phase
// planes (phase (a, b) holds padded pixels (u·sH + a, v·sW + b); only the used ones are
// stored), then the zero tail. With stride 1 there is one phase: the padded image.
// The zeros sit at the same places for every image of a convolution: with borders_ready (xp
// holds a previous image of the same layout) only the pixels are copied.
template <class T>
void pad_image(const DirectConv& g, const Layout& l, const T* x, T* xp, bool borders_ready) {
  T* p = xp;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t a : l.row_phases)
      for (int64_t b : l.col_phases)
        for (int64_t u = 0; u < l.Hq; ++u, p += l.Wq) {
          const int64_t h = u * g.sH + a - g.pH;
          if (h < 0 || h >= g.H) {
            if (!borders_ready) std::fill(p, p + l.Wq, T(0));
            continue;
          }
          const T* src = x + (c * g.H + h) * g.W;
          if (g.sW == 1) {
            phase_row<1>(g, l.Wq, src, b, p, borders_ready);
          } else if (g.sW == 2) {
            phase_row<2>(g, l.Wq, src, b, p, borders_ready);
          } else {
            phase_row<0>(g, l.Wq, src, b, p, borders_ready);
          }
        }
  if (!borders_ready) std::fill(p, xp + l.xp_size, T(0));
}

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

// Tiles: KR taps × NV vectors of output channels, by the number of output channels (at most
// one vector, two, more); as for the forward, KR·NV accumulators + NV + 1 within the registers.
struct ChannelTile {
  int KR, NV;
};
constexpr ChannelTile kChannelTiles[] = {kAvx512 ? ChannelTile{8, 1} : ChannelTile{12, 1},
                                         kAvx512 ? ChannelTile{8, 2} : ChannelTile{6, 2},
                                         kAvx512 ? ChannelTile{6, 4} : ChannelTile{6, 2}};
static_assert(kChannelTiles[0].NV != kChannelTiles[1].NV &&
                  (kChannelTiles[1].NV != kChannelTiles[2].NV ||
                   kChannelTiles[1].KR == kChannelTiles[2].KR),
              "direct_conv_backward_weight tells the tiles apart by NV");
template <class T>
ChannelTile channel_tile(int64_t O) {
  constexpr int L = Simd<T>::L;
  return kChannelTiles[O <= L ? 0 : O <= 2 * L ? 1 : 2];
}

// Transposes an L × L block (L = lanes) in registers: log2(L) butterfly stages; the stage of
// half-width B swaps the off-diagonal B × B blocks of every 2B × 2B block, row i with row i + B
// (64 shuffles for 16 × 16 floats instead of 256 scalar loads and stores).
constexpr int butterfly_index(int L, int B, bool upper, int i) {
  const int base = i / (2 * B) * 2 * B + (upper ? B : 0), p = i % (2 * B);
  return p < B ? base + p : L + base + p - B;
}
template <class V, int L, int B, bool upper, std::size_t... I>
inline V butterfly(const V& a, const V& b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, butterfly_index(L, B, upper, static_cast<int>(I))...);
}
template <class T>
void transpose_block(const T* in, int64_t ldi, T* out, int64_t ldo) {
  using V = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  V r[L];
  for (int i = 0; i < L; ++i) r[i] = loadu<V>(in + i * ldi);
  [&]<int... B>(std::integer_sequence<int, B...>) {
    auto stage = [&]<int H>(std::integral_constant<int, H>) {
      for (int i = 0; i < L; ++i) {
        if (i & H) continue;
        const V a = r[i], b = r[i + H];
        r[i] = butterfly<V, L, H, false>(a, b, std::make_index_sequence<L>{});
        r[i + H] = butterfly<V, L, H, true>(a, b, std::make_index_sequence<L>{});
      }
    };
    (stage(std::integral_constant<int, (L >> (B + 1))>{}), ...);
  }
  (std::make_integer_sequence<int, std::countr_zero(static_cast<unsigned>(L))>{});
  for (int i = 0; i < L; ++i) storeu(out + i * ldo, r[i]);
}

// gyt (P × Op) = gy of one (image, group), (O × P), transposed; channels O.. are zero.
template <class T>
void transpose_gy(int64_t O, int64_t P, int64_t Op, const T* gy, T* gyt) {
  constexpr int64_t L = Simd<T>::L;
  const int64_t O_blocks = O / L * L, P_blocks = P / L * L;
  for (int64_t o = 0; o < O_blocks; o += L)
    for (int64_t p = 0; p < P_blocks; p += L)
      transpose_block(gy + o * P + p, P, gyt + p * Op + o, Op);
  for (int64_t o = 0; o < O; ++o) {  // the edges
    const int64_t p0 = o < O_blocks ? P_blocks : 0;
    for (int64_t p = p0; p < P; ++p) gyt[p * Op + o] = gy[o * P + p];
  }
  for (int64_t p = 0; p < P; ++p) std::fill(gyt + p * Op + O, gyt + (p + 1) * Op, T(0));
}

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

// A per-thread scratch buffer of n elements, 64-byte aligned: rows of gy transposed and ys
// start on a cache line, so their vector loads and stores never straddle two lines.
// Reused across calls: fresh large buffers would be page-faulted (and zeroed) every time.
template <class T>
T* aligned(std::vector<T>& b, std::size_t n) {
  constexpr std::size_t pad = 64 / sizeof(T);
  if (b.size() < n + pad) b.resize(n + pad);
  const auto address = reinterpret_cast<std::uintptr_t>(b.data());
  return b.data() + (64 - address % 64) % 64 / sizeof(T);
}
template <class T>
T* thread_buffer(std::size_t n) {
  thread_local std::vector<T> buffer;
  return aligned(buffer, n);
}

// This thread's buffer of padded images (see pad_image): it remembers the layout it last held
// and for how many images its zeros are in place.
template <class T>
class PaddedImages {
 public:
  // Room for `images` padded images of layout l.
  static PaddedImages& get(const DirectConv& g, const Layout& l, int64_t images) {
    thread_local PaddedImages buffer;
    std::vector<int64_t> key{g.C, g.H, g.W, g.pH, g.pW, g.sH, g.sW, l.xp_size, -1};
    key.insert(key.end(), l.row_phases.begin(), l.row_phases.end());
    key.push_back(-1);
    key.insert(key.end(), l.col_phases.begin(), l.col_phases.end());
    T* before = buffer.data_.data();
    buffer.base_ = aligned(buffer.data_, static_cast<std::size_t>(images * l.xp_size));
    if (key != buffer.key_ || buffer.data_.data() != before) buffer.ready_ = 0;
    buffer.key_ = std::move(key);
    return buffer;
  }
  T* image(int64_t i) const { return base_ + i * l_size(); }
  // Pads image i of x into its place.
  void pad(const DirectConv& g, const Layout& l, const T* x, int64_t i) {
    pad_image(g, l, x, base_ + i * l.xp_size, i < ready_);
    ready_ = std::max(ready_, i + 1);
  }

 private:
  int64_t l_size() const { return key_[7]; }
  std::vector<T> data_;
  T* base_ = nullptr;
  std::vector<int64_t> key_;  // the geometry, the padded size and the stored phases
  int64_t ready_ = 0;         // images 0..ready_ − 1 have their zeros in place
};

// ---- Forward vectorised over output channels, for small images ----
// The forward above computes whole vectors of outputs q, junk columns and tile padding
// included: on 7×7, 4×4 or 3×3 images that is a quarter to a half of its work. This one is the
// backward-weight's layout turned round: R outputs (any positions, listed) × NV vectors of
// output channels; per tap: NV loads of the packed weight, R broadcasts of the padded image,
// R·NV FMAs. It computes only valid outputs (and whole vectors of channels).
constexpr int kPositionTile = 6;
constexpr int kChannelVectors = kAvx512 ? 4 : 2;

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

template <class T>
void forward_by_channels(const DirectConv& g, const T* x, const T* w, const T* bias, T* y) {
  constexpr int R = kPositionTile, NV = kChannelVectors;
  constexpr int64_t CW = NV * Simd<T>::L;
  const Layout l = Layout::of<T>(g);
  const int64_t OB = (g.O + CW - 1) / CW, Op = OB * CW, P = g.Ho * g.Wo;
  // wt[grp][ob] = (K × CW): the weights of output channels ob·CW.., zero past O.
  std::vector<T> wt(static_cast<std::size_t>(g.G * OB * l.K * CW), T(0));
  for (int64_t grp = 0; grp < g.G; ++grp)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t k = 0; k < l.K; ++k)
        wt[static_cast<std::size_t>(((grp * OB + o / CW) * l.K + k) * CW + o % CW)] =
            w[(grp * g.O + o) * l.K + k];
  // Taps per pass: 16 KB of packed weights, which stay in L1 while every position tile uses
  // them. Small images are taken several at a time (at least 128 outputs, padded images of
  // at most 512 KB), or each block of weights would be read from memory for a few tiles only
  // (512 channels of 4×4: 9 MB of weights for 3 tiles per image).
  const int64_t k_chunk = std::max<int64_t>(1, (16 << 10) / (CW * int64_t{sizeof(T)}));
  const int64_t B = std::clamp<int64_t>(
      (128 + P - 1) / P, 1,
      std::max<int64_t>(1, (512 << 10) / (l.xp_size * static_cast<int64_t>(sizeof(T)))));
  const int64_t batches = (g.N + B - 1) / B, items = batches * g.G;
  const int64_t x_group = g.C * g.H * g.W, y_group = g.O * P;
  std::atomic<int64_t> next{0};
  parallel_for(std::min<int64_t>(num_threads(), items), 1, [&](int64_t, int64_t) {
    PaddedImages<T>& images = PaddedImages<T>::get(g, l, B);
    const T* xp = images.image(0);
    T* ys = thread_buffer<T>(static_cast<std::size_t>(round_up(B * P, R) * Op));
    for (int64_t it; (it = next.fetch_add(1)) < items;) {
      const int64_t grp = it % g.G, n0 = it / g.G * B, b = std::min(B, g.N - n0);
      for (int64_t i = 0; i < b; ++i) images.pad(g, l, x + ((n0 + i) * g.G + grp) * x_group, i);
      const std::vector<int64_t> pos = output_positions(g, l, b);
      const auto Pp = static_cast<int64_t>(pos.size());
      const T* wg = wt.data() + grp * OB * l.K * CW;
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
    }
  });
}

}  // namespace

namespace {
// The work of each forward, in output-channel × output slots computed (useful or not):
// by outputs, the junk columns, q rounded up to whole tiles and the padding rows of the last
// output tile; by channels, the channels rounded up to whole vectors and the outputs to a
// whole number of tiles.
int64_t forward_work(const DirectConv& g, DirectForward kind) {
  if (kind == DirectForward::by_outputs) {
    const Layout l = Layout::of<float>(g);
    return round_up(g.O, l.tile.OR) * l.Qt;
  }
  return round_up(g.O, kChannelVectors * Simd<float>::L) * round_up(g.Ho * g.Wo, kPositionTile);
}
}  // namespace

DirectForward direct_forward_kind(const DirectConv& g) {
  // By outputs wins up to 25 % of waste (8×8 images with padding 1: on AVX2 it also beat by
  // channels there, measured); on smaller images (4×4: 19 outputs for a tile 48 wide with
  // AVX-512, 32 with AVX2) by channels takes over. Only on AVX2: on AVX-512 by channels has
  // not been measured, and those small images stay on im2col + GEMM (144 GFLOP/s there).
  const bool outputs_pay = 5 * g.O * g.Ho * g.Wo >= 4 * forward_work(g, DirectForward::by_outputs);
  return outputs_pay || kAvx512 ? DirectForward::by_outputs : DirectForward::by_channels;
}

bool direct_conv_pays(const DirectConv& g, DirectKernel kernel) {
  // The tiles are sized for the vector registers of AVX-512 or AVX2 with FMA; on other CPUs
  // they spill (the kernels stay correct, and tested, everywhere).
  if (!kFmaVectors || g.N == 0) return false;
  const int64_t useful = g.O * g.Ho * g.Wo;
  if (kernel == DirectKernel::forward) {
    // By outputs up to 25 % of waste (above); by channels up to a third: 3×3 images, 9
    // outputs in 12 slots, still ran 1.8-2.3× faster than im2col + GEMM (airbench94's
    // 256-channel layers, AVX2); 7×7 ~1.8×, ResNet18's 4×4 stage ~1.5×.
    const DirectForward kind = direct_forward_kind(g);
    return kind == DirectForward::by_outputs ? 5 * useful >= 4 * forward_work(g, kind)
                                             : 4 * useful >= 3 * forward_work(g, kind);
  }
  // Backward-weight wastes only the channel padding, but transposes gy: one move per K/L
  // FMAs, too many for 1x1 kernels (measured slower than im2col + GEMM there). With AVX2 and
  // outputs under 8×8 it loses where the K × Op sums, read and written once per pass over the
  // tiles (every 128 outputs), outgrow the caches: ResNet18's 4×4 stage (9 MB of sums: ~0.7×
  // im2col + GEMM, measured); airbench94's 7×7 and 3×3 layers (2.4 MB) ran 1.2-1.6× faster.
  if (!kAvx512 && g.Ho * g.Wo < 64) {
    const int64_t sums =
        g.C * g.kH * g.kW * round_up(g.O, channel_tile<float>(g.O).NV * Simd<float>::L);
    if (sums > (1 << 20)) return false;
  }
  const ChannelTile t = channel_tile<float>(g.O);
  return g.kH * g.kW > 1 && 4 * g.O >= 3 * round_up(g.O, t.NV * Simd<float>::L);
}

template <class T>
void direct_conv_forward(const DirectConv& g, const T* x, const T* w, const T* bias, T* y,
                         DirectForward kind) {
  if (kind == DirectForward::by_channels) return forward_by_channels(g, x, w, bias, y);
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

// Backward-weight vectorised over output channels: gwt (K × Op) per thread part, then
// gw (O × K) = Σ_parts gwtᵀ in a fixed order.
template <class T>
void direct_conv_backward_weight(const DirectConv& g, const T* gy, const T* x, T* gw) {
  const Layout l = Layout::of<T>(g);
  const ChannelTile t = channel_tile<T>(g.O);
  const int64_t Op = round_up(g.O, t.NV * Simd<T>::L), P = g.Ho * g.Wo;
  const int64_t KB = (l.K + t.KR - 1) / t.KR;
  std::vector<int64_t> off(l.off);
  off.resize(static_cast<std::size_t>(KB * t.KR), l.off.back());
  // Images per pass over the tiles: at least 128 outputs, so that adding a tile's accumulators
  // into gwt (K × Op: megabytes for 512 channels) stays a small cost, and padded images of at
  // most 512 KB, which every block of output channels sweeps again.
  const int64_t chunk = std::clamp<int64_t>(
      (128 + P - 1) / P, 1,
      std::max<int64_t>(1, (512 << 10) / (l.xp_size * static_cast<int64_t>(sizeof(T)))));
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads(), g.N));
  const int64_t part_size = g.G * l.K * Op;
  std::vector<T> gwt(static_cast<std::size_t>(parts * part_size), T(0));
  const int64_t x_group = g.C * g.H * g.W, y_group = g.O * P;
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
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
          T* out = gwt.data() + part * part_size + grp * l.K * Op;
          constexpr ChannelTile t0 = kChannelTiles[0], t1 = kChannelTiles[1];
          constexpr ChannelTile t2 = kChannelTiles[2];
          if (t.NV == t0.NV)
            channel_weight_chunk<T, t0.KR, t0.NV>(g, l, xp, gyt, Op, b, off.data(), out);
          else if (t.NV == t1.NV)
            channel_weight_chunk<T, t1.KR, t1.NV>(g, l, xp, gyt, Op, b, off.data(), out);
          else
            channel_weight_chunk<T, t2.KR, t2.NV>(g, l, xp, gyt, Op, b, off.data(), out);
        }
      }
    }
  });
  // gw[grp, o, k] = Σ_part gwt[part, grp, k, o], parts in order.
  parallel_for(g.G * g.O, std::max<int64_t>(1, 4096 / l.K), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t grp = r / g.O, o = r % g.O;
      for (int64_t k = 0; k < l.K; ++k) {
        const T* src = gwt.data() + (grp * l.K + k) * Op + o;
        T sum = src[0];
        for (int64_t part = 1; part < parts; ++part) sum += src[part * part_size];
        gw[r * l.K + k] = sum;
      }
    }
  });
}

template void direct_conv_forward<float>(const DirectConv&, const float*, const float*,
                                         const float*, float*, DirectForward);
template void direct_conv_forward<double>(const DirectConv&, const double*, const double*,
                                          const double*, double*, DirectForward);

template void direct_conv_backward_weight<float>(const DirectConv&, const float*, const float*,
                                                 float*);
template void direct_conv_backward_weight<double>(const DirectConv&, const double*, const double*,
                                                  double*);

}  // namespace rg::detail
