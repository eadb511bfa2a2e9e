// The packers of the tile convolutions (conv2d_tiles_layout.h). They run only where the tile
// kernels do (AVX512-BF16 or AMX machines), so the row packers are written for AVX-512 (GCC's
// target attribute); the weight packer is plain C++.
//
// Cost: each packer writes its layout once per chunk, which the kernels then read T·KB times;
// with the tile instructions' speed that single pass is still a sizeable part of a call (the
// interleave of pair planes and the transpose of gy are vectorised for that reason: a scalar
// loop took 0.25-0.35 of the kernels' own time on ResNet18's layers).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_tiles_vector.h"

namespace rg::detail::tiles {
namespace {

// For each column X of a phase plane row: the input column it holds, or -1 (padding).
std::vector<int64_t> column_sources(const TileConv& g, const Layout& l, int64_t phase_w) {
  std::vector<int64_t> src(static_cast<std::size_t>(l.Ws), -1);
  for (int64_t X = 0; X < l.Ws; ++X) {
    const int64_t padded = l.shared ? X : X * g.sW + phase_w;
    const int64_t w = padded - g.pad_left;
    if (w >= 0 && w % g.up_w == 0 && w / g.up_w < g.W)
      src[static_cast<std::size_t>(X)] = w / g.up_w;
  }
  return src;
}

// For each row R < b·Hs of a phase plane: the offset of the input row it holds within a
// channel of the chunk (image·C·H·W + h·W, the channel added by the caller), or -1 (padding).
std::vector<int64_t> row_sources(const TileConv& g, const Layout& l, int64_t b, int64_t phase_h) {
  std::vector<int64_t> src(static_cast<std::size_t>(b * l.Hs), -1);
  for (int64_t R = 0; R < b * l.Hs; ++R) {
    const int64_t image = R / l.Hs, Yq = R % l.Hs;
    const int64_t padded = l.shared ? Yq : Yq * g.sH + phase_h;
    const int64_t h = padded - g.pad_top;
    if (h >= 0 && h % g.up_h == 0 && h / g.up_h < g.H)
      src[static_cast<std::size_t>(R)] = image * g.C * g.H * g.W + h / g.up_h * g.W;
  }
  return src;
}

// Where a plane row's columns hold input columns first, first + 1, ... (n of them) at columns
// start, start + 1, ... (stride 1, no inserted zeros): start, else -1.
struct Run {
  int64_t start = -1, first = 0, n = 0;
};
Run contiguous_run(const std::vector<int64_t>& src) {
  Run r;
  for (std::size_t X = 0; X < src.size(); ++X) {
    if (src[X] < 0) continue;
    if (r.start < 0) {
      r.start = static_cast<int64_t>(X);
      r.first = src[X];
    } else if (src[X] != r.first + r.n || static_cast<int64_t>(X) != r.start + r.n) {
      return Run{};
    }
    ++r.n;
  }
  return r;
}

__mmask32 first_lanes(int64_t n) {
  return static_cast<__mmask32>((uint64_t{1} << n) - 1);
}

// dst[0, n) = 0, in vectors (rows are short: a libc call per row cost more than the row).
RG_TARGET_AVX512 inline void zero(uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) _mm512_storeu_si512(dst + i, _mm512_setzero_si512());
  if (i < n) _mm512_mask_storeu_epi16(dst + i, first_lanes(n - i), _mm512_setzero_si512());
}

// dst[0, n) = src[0, n).
RG_TARGET_AVX512 inline void copy(const uint16_t* src, int64_t n, uint16_t* dst) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) _mm512_storeu_si512(dst + i, _mm512_loadu_si512(src + i));
  if (i < n)
    _mm512_mask_storeu_epi16(dst + i, first_lanes(n - i),
                             _mm512_maskz_loadu_epi16(first_lanes(n - i), src + i));
}

// dst[2k] = a[k], dst[2k + 1] = b[k] (0 where b is null), k < n.
RG_TARGET_AVX512 inline void interleave(const uint16_t* a, const uint16_t* b, int64_t n,
                                        uint16_t* dst) {
  alignas(64) static constexpr uint16_t kLow[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                    37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                    11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr uint16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                     53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                     27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i low = _mm512_load_si512(kLow), high = _mm512_load_si512(kHigh);
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    const __m512i va = _mm512_loadu_si512(a + k);
    const __m512i vb = b ? _mm512_loadu_si512(b + k) : _mm512_setzero_si512();
    _mm512_storeu_si512(dst + 2 * k, _mm512_permutex2var_epi16(va, low, vb));
    _mm512_storeu_si512(dst + 2 * k + 32, _mm512_permutex2var_epi16(va, high, vb));
  }
  if (k == n) return;
  const int64_t rest = n - k;  // 1..31 pairs: 2..62 values
  const __m512i va = _mm512_maskz_loadu_epi16(first_lanes(rest), a + k);
  const __m512i vb =
      b ? _mm512_maskz_loadu_epi16(first_lanes(rest), b + k) : _mm512_setzero_si512();
  const int64_t first = std::min<int64_t>(32, 2 * rest), second = 2 * rest - first;
  _mm512_mask_storeu_epi16(dst + 2 * k, first_lanes(first), _mm512_permutex2var_epi16(va, low, vb));
  if (second > 0)
    _mm512_mask_storeu_epi16(dst + 2 * k + 32, first_lanes(second),
                             _mm512_permutex2var_epi16(va, high, vb));
}

}  // namespace

RG_TARGET_AVX512 void pack_pair_planes(const TileConv& g, const Layout& l, const uint16_t* x,
                                       int64_t n0, int64_t b, uint16_t* out) {
  const int64_t HW = g.H * g.W, CP = l.Cp / 2, used = b * l.Hs * l.Ws;
  x += n0 * g.C * HW;
  for (int64_t ph = 0; ph < l.phases_h; ++ph) {
    const std::vector<int64_t> rows = row_sources(g, l, b, ph);
    for (int64_t pw = 0; pw < l.phases_w; ++pw) {
      if (!l.phase_used[static_cast<std::size_t>(ph * l.phases_w + pw)]) continue;
      const std::vector<int64_t> cols = column_sources(g, l, pw);
      const Run run = contiguous_run(cols);
      for (int64_t cp = 0; cp < CP; ++cp) {
        uint16_t* plane = out + ((ph * l.phases_w + pw) * CP + cp) * l.plane * 2;
        const int64_t c0 = 2 * cp, c1 = 2 * cp + 1;
        if (c0 >= g.C) {
          zero(plane, l.plane * 2);
          continue;
        }
        for (int64_t R = 0; R < b * l.Hs; ++R) {
          uint16_t* dst = plane + R * l.Ws * 2;
          const int64_t src = rows[static_cast<std::size_t>(R)];
          if (src < 0) {
            zero(dst, l.Ws * 2);
            continue;
          }
          const uint16_t* r0 = x + c0 * HW + src;
          const uint16_t* r1 = c1 < g.C ? r0 + HW : nullptr;
          if (run.start >= 0) {
            zero(dst, run.start * 2);
            interleave(r0 + run.first, r1 ? r1 + run.first : nullptr, run.n, dst + run.start * 2);
            zero(dst + (run.start + run.n) * 2, (l.Ws - run.start - run.n) * 2);
            continue;
          }
          for (int64_t X = 0; X < l.Ws; ++X) {
            const int64_t w = cols[static_cast<std::size_t>(X)];
            dst[2 * X] = w >= 0 ? r0[w] : 0;
            dst[2 * X + 1] = w >= 0 && r1 ? r1[w] : 0;
          }
        }
        zero(plane + used * 2, (l.plane - used) * 2);
      }
    }
  }
}

RG_TARGET_AVX512 void pack_plain_planes(const TileConv& g, const Layout& l, const uint16_t* x,
                                        int64_t n0, int64_t b, int64_t channels, uint16_t* out) {
  const int64_t HW = g.H * g.W, used = b * l.Hs * l.Ws;
  x += n0 * g.C * HW;
  for (int64_t ph = 0; ph < l.phases_h; ++ph) {
    const std::vector<int64_t> rows = row_sources(g, l, b, ph);
    for (int64_t pw = 0; pw < l.phases_w; ++pw) {
      if (!l.phase_used[static_cast<std::size_t>(ph * l.phases_w + pw)]) continue;
      const std::vector<int64_t> cols = column_sources(g, l, pw);
      const Run run = contiguous_run(cols);
      for (int64_t c = 0; c < channels; ++c) {
        uint16_t* plane = out + ((ph * l.phases_w + pw) * l.Cp + c) * l.plane;
        if (c >= g.C) {
          zero(plane, l.plane);
          continue;
        }
        for (int64_t R = 0; R < b * l.Hs; ++R) {
          uint16_t* dst = plane + R * l.Ws;
          const int64_t src = rows[static_cast<std::size_t>(R)];
          if (src < 0) {
            zero(dst, l.Ws);
            continue;
          }
          const uint16_t* row = x + c * HW + src;
          if (run.start >= 0) {
            zero(dst, run.start);
            copy(row + run.first, run.n, dst + run.start);
            zero(dst + run.start + run.n, l.Ws - run.start - run.n);
            continue;
          }
          for (int64_t X = 0; X < l.Ws; ++X) {
            const int64_t w = cols[static_cast<std::size_t>(X)];
            dst[X] = w >= 0 ? row[w] : 0;
          }
        }
        zero(plane + used, l.plane - used);
      }
    }
  }
}

namespace {
// The source plane (channel c of `planes`, at its tap's phase and shift) of folded channel v.
const uint16_t* folded_source(const Layout& source, const uint16_t* planes, int64_t v) {
  const int64_t c = v / source.T, t = v % source.T;
  return planes + (source.tap_phase[t] * source.Cp + c) * source.plane + source.tap_shift[t];
}
}  // namespace

RG_TARGET_AVX512 void pack_folded_pairs(const Layout& source, const Layout& l,
                                        const uint16_t* planes, int64_t b, uint16_t* out) {
  const int64_t used = round_up(b * l.Hs * l.Ws, kPositionBlock);
  for (int64_t cp = 0; cp < l.Cp / 2; ++cp) {
    uint16_t* dst = out + cp * l.plane * 2;
    const int64_t v0 = 2 * cp, v1 = 2 * cp + 1;
    if (v0 >= l.channels)
      zero(dst, used * 2);
    else
      interleave(folded_source(source, planes, v0),
                 v1 < l.channels ? folded_source(source, planes, v1) : nullptr, used, dst);
    zero(dst + used * 2, (l.plane - used) * 2);  // never read by the kernels: kept defined
  }
}

RG_TARGET_AVX512 void pack_folded_plain(const Layout& source, const Layout& l,
                                        const uint16_t* planes, int64_t b, uint16_t* out) {
  const int64_t used = round_up(b * l.Hs * l.Ws, kPositionBlock);
  for (int64_t v = 0; v < l.Cp; ++v) {
    uint16_t* dst = out + v * l.plane;
    if (v >= l.channels)
      zero(dst, used);
    else
      copy(folded_source(source, planes, v), used, dst);
    zero(dst + used, l.plane - used);  // read by the odd pairs' transposes only
  }
}

RG_TARGET_AVX512 void pack_gy_plain(const TileConv& g, const Layout& l, const uint16_t* gy,
                                    int64_t n0, int64_t b, uint16_t* out) {
  const int64_t Qb = round_up(b * l.Hs * l.Ws, kPositionBlock), P = g.Ho * g.Wo;
  for (int64_t o = 0; o < l.Op; ++o) {
    uint16_t* row = out + o * Qb;
    if (o >= g.O) {
      zero(row, Qb);
      continue;
    }
    for (int64_t image = 0; image < b; ++image) {
      const uint16_t* src = gy + ((n0 + image) * g.O + o) * P;
      uint16_t* dst = row + image * l.Hs * l.Ws;
      for (int64_t ho = 0; ho < g.Ho; ++ho) {
        copy(src + ho * g.Wo, g.Wo, dst + ho * l.Ws);
        zero(dst + ho * l.Ws + g.Wo, l.Ws - g.Wo);
      }
      zero(dst + g.Ho * l.Ws, (l.Hs - g.Ho) * l.Ws);
    }
    zero(row + b * l.Hs * l.Ws, Qb - b * l.Hs * l.Ws);
  }
}

RG_TARGET_AVX512 void transpose_pair_planes(const Layout& l, const uint16_t* pairs, uint16_t* out) {
  const int64_t CP = l.Cp / 2;
  for (int64_t ph = 0; ph < l.phases(); ++ph) {
    if (!l.phase_used[static_cast<std::size_t>(ph)]) continue;
    for (int64_t pos = 0; pos < l.plane; pos += 16)
      for (int64_t cp = 0; cp < CP; cp += 16) {
        __m512i rows[16];
        for (int r = 0; r < 16; ++r)
          rows[r] = _mm512_loadu_si512(pairs + ((ph * CP + cp + r) * l.plane + pos) * 2);
        transpose_16x16_epi32(
            rows, reinterpret_cast<uint32_t*>(out + (ph * l.plane + pos) * l.Cp + cp * 2), CP);
      }
  }
}

RG_TARGET_AVX512 void transpose_plain_planes(const Layout& l, const uint16_t* plain, uint16_t* even,
                                             uint16_t* odd) {
  const int64_t half = l.plane / 2;
  for (int64_t ph = 0; ph < l.phases(); ++ph) {
    if (!l.phase_used[static_cast<std::size_t>(ph)]) continue;
    for (int64_t pair = 0; pair < half; pair += 16)
      for (int64_t c = 0; c < l.Cp; c += 16) {
        const uint16_t* src = plain + (ph * l.Cp + c) * l.plane + 2 * pair;
        const int64_t at = ((ph * half + pair) * l.Cp + c) * 2;
        __m512i rows[16];
        for (int r = 0; r < 16; ++r) rows[r] = _mm512_loadu_si512(src + r * l.plane);
        transpose_16x16_epi32(rows, reinterpret_cast<uint32_t*>(even + at), l.Cp);
        // Pairs starting one position later (the last reads one value past its plane: into
        // the next plane, or the buffer's slack, for a pair no tap reads).
        if (!odd) continue;
        for (int r = 0; r < 16; ++r) rows[r] = _mm512_loadu_si512(src + r * l.plane + 1);
        transpose_16x16_epi32(rows, reinterpret_cast<uint32_t*>(odd + at), l.Cp);
      }
  }
}

namespace {
// The tiles of output-channel block ob from staging (see pack_weights): each tile is the
// transpose of 16 rows (output channels) × 16 pairs of channels.
RG_TARGET_AVX512 void pack_weight_tiles(const TileConv& g, const Layout& l, const uint16_t* staging,
                                        int64_t ob, uint16_t* out) {
  const int64_t O = g.O, C = l.channels;
  for (int64_t t = 0; t < l.T; ++t)
    for (int64_t kb = 0; kb < l.KB; ++kb) {
      const int64_t c0 = kb * 32, n = std::clamp<int64_t>(C - c0, 0, 32);
      __m512i rows[16];
      for (int64_t o = 0; o < 16; ++o)
        rows[o] = ob * 16 + o < O ? _mm512_maskz_loadu_epi16(
                                        first_lanes(n), staging + (t * O + ob * 16 + o) * C + c0)
                                  : _mm512_setzero_si512();
      transpose_16x16_epi32(
          rows, reinterpret_cast<uint32_t*>(out + ((ob * l.T + t) * l.KB + kb) * 512), 16);
    }
}
}  // namespace

void pack_weights(const TileConv& g, const Layout& l, const uint16_t* w, WeightOrder order,
                  uint16_t* staging, uint16_t* out) {
  const int64_t OB = l.Op / 16, O = g.O, C = l.channels;
  const int64_t Cg = g.C, Tg = g.kH * g.kW;
  // staging[(t·O + o)·C + c] = W[o, c, t] over the kernels' taps and channels (folded: t = 0,
  // c = channel·Tg + tap), so that a tile's 16 output channels read 32 consecutive channels
  // each. By rows o: the reads of w for one o touch Cg lines that the next o reads again
  // (flipped) or one contiguous row (as is).
  parallel_for(O, 1, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < Tg; ++t) {
          const uint16_t v = order == WeightOrder::as_is ? w[(o * Cg + c) * Tg + t]
                                                         : w[(c * O + o) * Tg + (Tg - 1 - t)];
          staging[l.folded ? o * C + c * Tg + t : (t * O + o) * C + c] = v;
        }
  });
  if (one_tap(l)) return pack_weight_rows(g, l, staging, out);
  parallel_for(OB, 1, [&](int64_t ob0, int64_t ob1) {
    for (int64_t ob = ob0; ob < ob1; ++ob) pack_weight_tiles(g, l, staging, ob, out);
  });
}

namespace {
RG_TARGET_AVX512 void pack_weight_row_tiles(const TileConv& g, const Layout& l,
                                            const uint16_t* staging, int64_t ob, uint16_t* out) {
  const int64_t C = l.channels;
  for (int64_t kb = 0; kb < l.KB; ++kb) {
    const int64_t c0 = kb * 32, n = std::clamp<int64_t>(C - c0, 0, 32);
    for (int64_t o = 0; o < 16; ++o) {
      const int64_t oo = ob * 16 + o;
      const __m512i row = oo < g.O ? _mm512_maskz_loadu_epi16(first_lanes(n), staging + oo * C + c0)
                                   : _mm512_setzero_si512();
      _mm512_storeu_si512(out + (ob * l.KB + kb) * 512 + o * 32, row);
    }
  }
}
}  // namespace

void pack_weight_rows(const TileConv& g, const Layout& l, const uint16_t* staging, uint16_t* out) {
  parallel_for(l.Op / 16, 1, [&](int64_t ob0, int64_t ob1) {
    for (int64_t ob = ob0; ob < ob1; ++ob) pack_weight_row_tiles(g, l, staging, ob, out);
  });
}

}  // namespace rg::detail::tiles
