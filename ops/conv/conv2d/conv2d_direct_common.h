#pragma once
// The pieces the direct convolution kernels share (internal to ops/conv/conv2d): vector types, the
// register tile shapes, the padded phase-plane layout of conv2d_direct.h, per-thread buffers,
// the in-register block transpose and the packing of weights into blocks of output channels.
//
// The micro-kernels use GCC/Clang vector extensions: one vector is one register of the widest
// vector unit (64 bytes, 16 f32, with AVX-512; 32 bytes, 8 f32, otherwise: AVX2, or split by
// the compiler into narrower registers), and `acc += x * w` compiles to a fused multiply-add.
// The register tiles keep three quarters of the vector registers (24 of AVX-512's 32, 12 of
// AVX2's 16) as accumulators, so every loaded value feeds several FMAs:
//   forward          OR output channels × NV vectors of outputs q; per tap k: NV loads of
//                    the padded image, OR broadcasts of the packed weight, OR·NV FMAs
//                    (conv2d_direct_by_outputs.cpp);
//   forward by       (small images, AVX2) R listed outputs × NV vectors of output channels;
//   channels         per tap: NV loads of the packed weight, R broadcasts of the padded image,
//                    R·NV FMAs; valid outputs only, of several images per pass
//                    (conv2d_direct_by_channels.cpp);
//   Winograd         (3×3 stride 1, AVX2) the forward's tile as the 16 GEMMs of F(2×2, 3×3):
//                    OR output channels × NV vectors of 2×2 output tiles, summing over the
//                    input channels of the transformed input (conv2d_winograd.cpp); its
//                    backward-weight the backward-weight's tile over transformed tiles
//                    (conv2d_winograd_backward_weight.cpp);
//   strided          the forward's tile on gy: OR channels of gx × NV vectors of positions of
//   backward-data    one phase of gx; per tap (o, i, j) of that phase: NV loads of the padded
//                    gy, OR broadcasts of the packed weight (conv2d_direct_backward_data.cpp);
//   backward-weight  KR taps × NV vectors of output channels; per output (ho, wo): NV loads of
//                    gy transposed to (position, channel), KR broadcasts of the padded image,
//                    KR·NV FMAs. Vectorised over channels, it visits only the valid outputs
//                    (no junk columns) and needs no horizontal sums
//                    (conv2d_direct_backward_weight.cpp); for small images the same tile over
//                    rows of taps gathered across the batch
//                    (conv2d_direct_backward_weight_rows.cpp).
// Which kernel runs where is decided in conv2d_direct_rules.cpp.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct.h"

// Vectors are passed between inlined helpers only; their ABI does not matter.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace rg::detail::direct {

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

// dst[0, n) = src[0, n) for ranges that do not overlap, in vectors of L lanes (the last one
// overlapping the one before) or, below L, of fewer: the rows of small images (31, 15, 7 and 3
// wide), where a call to memmove cost more than the copy.
template <class T, int64_t L = Simd<T>::L>
inline void copy_row(const T* src, int64_t n, T* dst) {
  if constexpr (L > 1) {
    if (n < L) return copy_row<T, L / 2>(src, n, dst);
  } else if (n == 0) {
    return;
  }
  typedef T V __attribute__((vector_size(L * sizeof(T))));
  for (int64_t i = 0; i + L < n; i += L) storeu(dst + i, loadu<V>(src + i));
  storeu(dst + n - L, loadu<V>(src + n - L));
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

inline int64_t round_up(int64_t n, int64_t m) {
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
              "with_forward_tile tells the tiles apart by NV");
// Calls f.template operator()<OR, NV>() with the sizes of t, one of kForwardTiles, as
// compile-time constants.
template <class F>
void with_forward_tile(const ForwardTile& t, F&& f) {
  constexpr ForwardTile t0 = kForwardTiles[0], t1 = kForwardTiles[1], t2 = kForwardTiles[2];
  if (t.NV == t0.NV)
    f.template operator()<t0.OR, t0.NV>();
  else if (t.NV == t1.NV)
    f.template operator()<t1.OR, t1.NV>();
  else
    f.template operator()<t2.OR, t2.NV>();
}

// The forward's register tile (conv2d_direct_by_outputs.cpp; also the strided backward-data's,
// conv2d_direct_backward_data.cpp):
// out (OR × NV·L, row stride ld) (+)= wp (K × OR, packed) applied to the taps of xq.
template <class T, int OR, int NV>
void forward_tile(const T* xq, const int64_t* off, int64_t K, const T* wp, T* out, int64_t ld,
                  bool accumulate = false) {
  using V = typename Simd<T>::V;
  constexpr int L = Simd<T>::L;
  // Every loop over the tile is unrolled, so that acc lives in registers only (a rolled loop
  // makes GCC keep it in memory: a memset before, a store and reload after).
  V acc[OR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < OR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = accumulate ? loadu<V>(out + r * ld + v * L) : V{};
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

// The phases (i·d mod s) that the kernel taps of one axis read, in increasing order.
inline std::vector<int64_t> used_phases(int64_t k, int64_t d, int64_t s) {
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

// Backward-weight tiles: KR taps × NV vectors of output channels, by the number of output channels
// (at most one vector, two, more); as for the forward, KR·NV accumulators + NV + 1 within the
// registers.
struct ChannelTile {
  int KR, NV;
};
constexpr ChannelTile kChannelTiles[] = {kAvx512 ? ChannelTile{8, 1} : ChannelTile{12, 1},
                                         kAvx512 ? ChannelTile{8, 2} : ChannelTile{6, 2},
                                         kAvx512 ? ChannelTile{6, 4} : ChannelTile{6, 2}};
static_assert(kChannelTiles[0].NV != kChannelTiles[1].NV &&
                  (kChannelTiles[1].NV != kChannelTiles[2].NV ||
                   kChannelTiles[1].KR == kChannelTiles[2].KR),
              "with_channel_tile tells the tiles apart by NV");
template <class T>
ChannelTile channel_tile(int64_t O) {
  constexpr int L = Simd<T>::L;
  return kChannelTiles[O <= L ? 0 : O <= 2 * L ? 1 : 2];
}
// Calls f.template operator()<KR, NV>() with the sizes of t, one of kChannelTiles, as
// compile-time constants (the tile functions are instantiated per tile).
template <class F>
void with_channel_tile(const ChannelTile& t, F&& f) {
  constexpr ChannelTile t0 = kChannelTiles[0], t1 = kChannelTiles[1], t2 = kChannelTiles[2];
  if (t.NV == t0.NV)
    f.template operator()<t0.KR, t0.NV>();
  else if (t.NV == t1.NV)
    f.template operator()<t1.KR, t1.NV>();
  else
    f.template operator()<t2.KR, t2.NV>();
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

// gyt (P × Op) = gy (O × P: one image and group, or O ≤ Op of its channels) transposed, in
// L × L blocks; channels O.. of each row are zero.
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

// ---- Forward vectorised over output channels (conv2d_direct_by_channels.cpp) ----
// R listed outputs × kChannelVectors vectors of output channels.
constexpr int kPositionTile = 6;
constexpr int kChannelVectors = kAvx512 ? 4 : 2;

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

// Images padded and computed per pass of a kernel over its tiles: enough for 128 outputs, in
// padded images of at most 512 KB together (every block of output channels sweeps them again).
template <class T>
int64_t images_per_pass(const DirectConv& g, const Layout& l) {
  const int64_t outputs = g.Ho * g.Wo;
  const int64_t fit = (512 << 10) / (l.xp_size * static_cast<int64_t>(sizeof(T)));
  return std::clamp<int64_t>((128 + outputs - 1) / outputs, 1, std::max<int64_t>(1, fit));
}

// The calling thread's buffers for what all the threads of one call share (thread_buffer is each
// thread's own scratch, the caller's included): its weights, packed or transformed, and its
// sums of weight gradients. Valid until the thread's next call that takes the same one. Reused
// across calls like thread_buffer: ResNet18's transformed 512-channel Winograd kernels and
// their gradients' sums are 16 MB each, which a fresh vector page-faulted and zeroed on one
// thread, the other one idle, every call.
enum class Shared { weights, sums };
template <class T, Shared kind>
T* shared_buffer(std::size_t n) {
  thread_local std::vector<T> buffer;
  return aligned(buffer, n);
}

// The parallel_for grain for items of `size` elements each that are only copied, transformed
// or zeroed (weights packed, sums cleared): ~32K elements a share, so that small layers, done
// in microseconds, are not handed to a sleeping thread.
inline int64_t copy_grain(int64_t size) {
  return std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, size));
}

// The weights w (G·O, K) packed as [group][block of `block` output channels] (K × block)
// matrices, zero past O, into the shared weights buffer: what a tile vectorised or unrolled over
// output channels reads.
template <class T>
const T* pack_weight_blocks(const DirectConv& g, int64_t K, int64_t block, const T* w) {
  const int64_t blocks = (g.O + block - 1) / block;
  T* packed = shared_buffer<T, Shared::weights>(static_cast<std::size_t>(g.G * blocks * K * block));
  parallel_for(g.G * blocks, copy_grain(K * block), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      T* dst = packed + b * K * block;
      const int64_t grp = b / blocks, o0 = b % blocks * block;
      for (int64_t r = 0; r < block; ++r) {
        const int64_t o = o0 + r;
        const T* src = o < g.O ? w + (grp * g.O + o) * K : nullptr;
        for (int64_t k = 0; k < K; ++k) dst[k * block + r] = src ? src[k] : T(0);
      }
    }
  });
  return packed;
}

// The forwards (direct_conv_forward picks one).
template <class T>
void forward_by_outputs(const DirectConv& g, const T* x, const T* w, const T* bias, T* y);
template <class T>
void forward_by_channels(const DirectConv& g, const T* x, const T* w, const T* bias, T* y);
template <class T>
void forward_winograd(const DirectConv& g, const T* x, const T* w, const T* bias, T* y);
template <class T>
void forward_winograd4(const DirectConv& g, const T* x, const T* w, const T* bias, T* y);
// The backward-weights (direct_conv_backward_weight picks one). Winograd's threads sum their
// parts of the batch into sums of their own (shared_sums false), or split the 16 (F(4×4): 36)
// positions ξ of one shared set of sums (true).
template <class T>
void backward_weight_padded_images(const DirectConv& g, const T* gy, const T* x, T* gw);
template <class T>
void backward_weight_gathered_rows(const DirectConv& g, const T* gy, const T* x, T* gw);
template <class T>
void backward_weight_winograd(const DirectConv& g, const T* gy, const T* x, T* gw,
                              bool shared_sums);
template <class T>
void backward_weight_winograd4(const DirectConv& g, const T* gy, const T* x, T* gw,
                               bool shared_sums);

}  // namespace rg::detail::direct
