#pragma once
// AVX-512 helpers of the tile kernels (conv2d_tiles_amx.cpp, conv2d_tiles_avx512.cpp): the
// exact f32 → bf16 rounding and the store of a block of outputs. Compiled for AVX-512 by GCC's
// target attribute, whatever the build's -march: include this only in files whose callers
// check cpu_isa() first.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns "__Y may be used uninitialized" inside avx512fintrin.h (GCC bug 105593); under
// -fsanitize=thread (scripts/tsan_kernels.sh) the same self-initialised __Y is "is used
// uninitialized".
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "core/cpu_features.h"
#include "ops/conv/conv2d/conv2d_tiles_layout.h"

namespace rg::detail::tiles {

// 16 f32 → 16 bf16 (in the low halves of 32-bit lanes, packed to 16 bits), as
// detail::float_to_bfloat16_bits: round to nearest even on the 16 dropped bits, NaN → quiet
// NaN of the same sign and top payload. vcvtneps2bf16 would flush denormals to zero; this
// keeps core/half.h's rule for every input (tests/ops/conv2d_tiles_test.cpp checks it bit for
// bit).
RG_TARGET_AVX512 inline __m256i round_to_bf16(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i high = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb)), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                _mm512_set1_epi32(0x7F800000));
  r = _mm512_mask_or_epi32(r, nan, high, _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(r);
}

// 32 f32 (lo, then hi) → 32 bf16 by the same rule. vcvtne2ps2bf16 rounds exactly so (round to
// nearest even, a NaN becomes (its top half) | 0x40) except that it flushes f32 denormals to
// zero: vectors holding one take round_to_bf16 instead (the tile products never give one: they
// flush them too; a bias can).
RG_TARGET_AVX512_BF16 inline __m512i round_pair_to_bf16(__m512 lo, __m512 hi) {
  if (_mm512_fpclass_ps_mask(lo, 0x20) | _mm512_fpclass_ps_mask(hi, 0x20)) [[unlikely]]
    return _mm512_inserti64x4(_mm512_castsi256_si512(round_to_bf16(lo)), round_to_bf16(hi), 1);
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

// rows[r] (16 rows of 16 32-bit values) → column m of them in out + m·out_stride (32-bit
// units): the 16 × 16 transpose, in four shuffle stages.
RG_TARGET_AVX512 inline void transpose_16x16_epi32(const __m512i (&rows)[16], uint32_t* out,
                                                   int64_t out_stride) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(rows[2 * i], rows[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(rows[2 * i], rows[2 * i + 1]);
  }
  // u[4i + j], 128-bit lane L: rows 4i..4i+3 at column 4L + j.
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);  // lanes 0, 2 of each
    const __m512i w0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);  // lanes 1, 3
    const __m512i v1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
    const __m512i w1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
    _mm512_storeu_si512(out + (0 + j) * out_stride, _mm512_shuffle_i32x4(v0, v1, 0x88));
    _mm512_storeu_si512(out + (4 + j) * out_stride, _mm512_shuffle_i32x4(w0, w1, 0x88));
    _mm512_storeu_si512(out + (8 + j) * out_stride, _mm512_shuffle_i32x4(v0, v1, 0xDD));
    _mm512_storeu_si512(out + (12 + j) * out_stride, _mm512_shuffle_i32x4(w0, w1, 0xDD));
  }
}

// out[o·32 + q] = in[q·32 + o]: a block's sums from (position, output channel) to (output
// channel, position), four 16 × 16 transposes.
RG_TARGET_AVX512 inline void transpose_32x32(const float* in, float* out) {
  for (int bi = 0; bi < 2; ++bi)
    for (int bj = 0; bj < 2; ++bj) {
      __m512i rows[16];
      for (int r = 0; r < 16; ++r)
        rows[r] = _mm512_castps_si512(_mm512_loadu_ps(in + (bi * 16 + r) * 32 + bj * 16));
      transpose_16x16_epi32(rows, reinterpret_cast<uint32_t*>(out + (bj * 16) * 32 + bi * 16), 32);
    }
}

// Writes the valid outputs of rows [0, rows) of a block: stage is rows × 32 f32 (row r =
// output channel o0 + r, columns = the block's 32 positions), bias[r] is added, and each
// segment's positions go, compressed, to their run of its image's channel plane.
RG_TARGET_AVX512_BF16 inline void store_block(const float* stage, int64_t rows, const float* bias,
                                              const OutSegment* seg, const OutSegment* seg_end,
                                              int64_t images, int64_t O, int64_t o0, int64_t P,
                                              uint16_t* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 b = _mm512_set1_ps(bias[r]);
    const __m512i v = round_pair_to_bf16(_mm512_add_ps(_mm512_loadu_ps(stage + r * 32), b),
                                         _mm512_add_ps(_mm512_loadu_ps(stage + r * 32 + 16), b));
    for (const OutSegment* s = seg; s != seg_end; ++s) {
      if (s->image >= images) break;  // the last chunk's missing images
      uint16_t* dst = y + (s->image * O + o0 + r) * P + s->dst;
      const __mmask32 keep = s->count == 32 ? ~__mmask32{0} : (__mmask32{1} << s->count) - 1;
      _mm512_mask_storeu_epi16(dst, keep, _mm512_maskz_compress_epi16(s->mask, v));
    }
  }
}

}  // namespace rg::detail::tiles
