// The AVX512-BF16 kernels of the tile convolutions (conv2d_tiles.h), for CPUs with vdpbf16ps
// but no AMX (AMD Zen 4 and 5; Intel Cooper Lake lacks VBMI2 and is not taken): the same
// packed layouts as the AMX kernels, a tile row being one zmm register. vdpbf16ps adds to each of
// 16 f32 lanes the two products of a pair of bf16 — a pair of channels (forward) or of positions
// (backward-weight) — so one operand is a vector of 16 pairs read in place and the other a
// pair broadcast to every lane.
//   forward          8 positions × 2 vectors of 16 output channels: 16 accumulators; per pair
//                    of channels 2 loads of the weights' VNNI rows, 8 broadcast pairs of the
//                    channels-last input.
//   backward-weight  8 output channels × 2 vectors of 16 channels; per pair of positions 2
//                    loads of x's position pairs, 8 broadcast pairs of gy.
// Every function here runs only where cpu_isa() >= CpuIsa::avx512_bf16.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/conv/conv2d/conv2d_tiles_vector.h"

namespace rg::detail::tiles {
namespace {

RG_TARGET_AVX512_BF16 inline __m512 dot_pairs(__m512 acc, __m512i pairs, __m512i bcast) {
  return _mm512_dpbf16_ps(acc, (__m512bh)pairs, (__m512bh)bcast);
}

RG_TARGET_AVX512_BF16 inline __m512i broadcast_pair(const uint16_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

constexpr int kRows = 8;  // output channels (forward) or channels (backward-weight) per pass

}  // namespace

namespace {
// The one-tap forward (see one_tap): 8 output channels × 2 vectors of 16 positions; per pair of
// channels 2 loads of the pair plane, 8 broadcast weight pairs (pack_weight_rows' rows).
RG_TARGET_AVX512_BF16 void forward_one_tap_avx512_bf16(const ForwardChunk& c) {
  const TileConv& g = *c.g;
  const Layout& l = *c.l;
  const int64_t KB = l.KB, per_o_block = KB * 512;
  const int64_t blocks = (c.images * l.Hs * l.Ws + kPositionBlock - 1) / kPositionBlock;
  alignas(64) float stage[32 * 32];
  for (int64_t k = 0; k < blocks; ++k) {
    const OutSegment* seg = c.out->segments.data() + c.out->begin[k];
    const OutSegment* seg_end = c.out->segments.data() + c.out->begin[k + 1];
    if (seg == seg_end) continue;
    const uint16_t* bk = c.input + k * kPositionBlock * 2;
    for (int64_t op = 0; op < l.Op / 32; ++op) {
      for (int64_t sub = 0; sub < 32 / kRows; ++sub) {
        const int64_t o_first = op * 32 + sub * kRows;
        const uint16_t* wb = c.weights + (o_first / 16) * per_o_block + (o_first % 16) * 32;
        __m512 acc[kRows][2];
        for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
        for (int64_t kb = 0; kb < KB; ++kb) {
          const uint16_t* wt = wb + kb * 512;
          const uint16_t* b = bk + kb * 16 * l.plane * 2;
          for (int k2 = 0; k2 < 16; ++k2) {
            const __m512i x0 = _mm512_loadu_si512(b + k2 * l.plane * 2);
            const __m512i x1 = _mm512_loadu_si512(b + k2 * l.plane * 2 + 32);
#pragma GCC unroll 8
            for (int r = 0; r < kRows; ++r) {
              const __m512i w = broadcast_pair(wt + r * 32 + 2 * k2);
              acc[r][0] = dot_pairs(acc[r][0], x0, w);
              acc[r][1] = dot_pairs(acc[r][1], x1, w);
            }
          }
        }
        for (int r = 0; r < kRows; ++r) {
          _mm512_storeu_ps(stage + (sub * kRows + r) * 32, acc[r][0]);
          _mm512_storeu_ps(stage + (sub * kRows + r) * 32 + 16, acc[r][1]);
        }
      }
      const int64_t o0 = op * 32;
      store_block(stage, std::min<int64_t>(32, g.O - o0), c.bias + o0, seg, seg_end, c.images, g.O,
                  o0, g.Ho * g.Wo, c.y);
    }
  }
}
}  // namespace

RG_TARGET_AVX512_BF16 void forward_chunk_avx512_bf16(const ForwardChunk& c) {
  if (one_tap(*c.l)) return forward_one_tap_avx512_bf16(c);
  const TileConv& g = *c.g;
  const Layout& l = *c.l;
  const int64_t Cp = l.Cp, T = l.T, KB = l.KB;
  const int64_t per_o_block = T * KB * 512;
  std::vector<const uint16_t*> tap(static_cast<std::size_t>(T));
  for (int64_t t = 0; t < T; ++t)
    tap[static_cast<std::size_t>(t)] = c.input + (l.tap_phase[t] * l.plane + l.tap_shift[t]) * Cp;
  const int64_t blocks = (c.images * l.Hs * l.Ws + kPositionBlock - 1) / kPositionBlock;
  alignas(64) float by_position[32 * 32], by_channel[32 * 32];
  for (int64_t k = 0; k < blocks; ++k) {
    const OutSegment* seg = c.out->segments.data() + c.out->begin[k];
    const OutSegment* seg_end = c.out->segments.data() + c.out->begin[k + 1];
    if (seg == seg_end) continue;
    const int64_t q0 = k * kPositionBlock;
    for (int64_t op = 0; op < l.Op / 32; ++op) {
      const uint16_t* b0 = c.weights + 2 * op * per_o_block;
      const uint16_t* b1 = b0 + per_o_block;
      for (int64_t sub = 0; sub < kPositionBlock / kRows; ++sub) {
        // Rows: positions q0 + sub·8 + r; vectors: output channels op·32 + 16·v...
        __m512 acc[kRows][2];
        for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
        for (int64_t t = 0; t < T; ++t) {
          const uint16_t* at = tap[static_cast<std::size_t>(t)] + (q0 + sub * kRows) * Cp;
          for (int64_t kb = 0; kb < KB; ++kb) {
            const int64_t w = (t * KB + kb) * 512;
            for (int kp = 0; kp < 16; ++kp) {
              const __m512i w0 = _mm512_loadu_si512(b0 + w + kp * 32);
              const __m512i w1 = _mm512_loadu_si512(b1 + w + kp * 32);
#pragma GCC unroll 8
              for (int r = 0; r < kRows; ++r) {
                const __m512i x = broadcast_pair(at + r * Cp + kb * 32 + 2 * kp);
                acc[r][0] = dot_pairs(acc[r][0], w0, x);
                acc[r][1] = dot_pairs(acc[r][1], w1, x);
              }
            }
          }
        }
        for (int r = 0; r < kRows; ++r) {
          _mm512_storeu_ps(by_position + (sub * kRows + r) * 32, acc[r][0]);
          _mm512_storeu_ps(by_position + (sub * kRows + r) * 32 + 16, acc[r][1]);
        }
      }
      transpose_32x32(by_position, by_channel);
      const int64_t o0 = op * 32;
      store_block(by_channel, std::min<int64_t>(32, g.O - o0), c.bias + o0, seg, seg_end, c.images,
                  g.O, o0, g.Ho * g.Wo, c.y);
    }
  }
}

RG_TARGET_AVX512_BF16 void backward_weight_chunk_avx512_bf16(const WeightChunk& c) {
  const Layout& l = *c.l;
  const int64_t Cp = l.Cp, Op = l.Op;
  const int64_t steps = (c.images * l.Hs * l.Ws + kPositionBlock - 1) / kPositionBlock;
  const int64_t Qb = steps * kPositionBlock, pairs = Qb / 2;
  for (int64_t t = 0; t < l.T; ++t) {
    const uint16_t* xt = tap_pairs(c, t);
    for (int64_t o0 = 0; o0 < Op; o0 += kRows) {
      for (int64_t cb = 0; cb < Cp; cb += 32) {
        // Row r, vector v: output channel o0 + r, channels cb + 16·v...
        float* out = c.acc + (t * Op + o0) * Cp + cb;
        __m512 acc[kRows][2];
        for (int r = 0; r < kRows; ++r)
          for (int v = 0; v < 2; ++v)
            acc[r][v] = c.first ? _mm512_setzero_ps() : _mm512_loadu_ps(out + r * Cp + 16 * v);
        const uint16_t* gy = c.gy + o0 * Qb;
        for (int64_t p = 0; p < pairs; ++p) {
          const __m512i x0 = _mm512_loadu_si512(xt + (p * Cp + cb) * 2);
          const __m512i x1 = _mm512_loadu_si512(xt + (p * Cp + cb) * 2 + 32);
#pragma GCC unroll 8
          for (int r = 0; r < kRows; ++r) {
            const __m512i gp = broadcast_pair(gy + r * Qb + 2 * p);
            acc[r][0] = dot_pairs(acc[r][0], x0, gp);
            acc[r][1] = dot_pairs(acc[r][1], x1, gp);
          }
        }
        for (int r = 0; r < kRows; ++r)
          for (int v = 0; v < 2; ++v) _mm512_storeu_ps(out + r * Cp + 16 * v, acc[r][v]);
      }
    }
  }
}

RG_TARGET_AVX512_BF16 void round_to_bf16_kernels(const float* in, BFloat16* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 32) {
    const int64_t k = std::min<int64_t>(32, n - i);
    const __mmask16 lo = static_cast<__mmask16>(k >= 16 ? 0xFFFF : (1u << k) - 1);
    const __mmask16 hi = static_cast<__mmask16>(k >= 32  ? 0xFFFF
                                                : k > 16 ? (1u << (k - 16)) - 1
                                                         : 0);
    const __m512i v = round_pair_to_bf16(_mm512_maskz_loadu_ps(lo, in + i),
                                         _mm512_maskz_loadu_ps(hi, in + i + 16));
    _mm512_mask_storeu_epi16(out + i, static_cast<__mmask32>((uint64_t{1} << k) - 1), v);
  }
}

}  // namespace rg::detail::tiles
