#pragma once
// AVX-512 helpers of the tile kernels (conv2d_tiles_amx.cpp, conv2d_tiles_avx512.cpp): the
// exact f32 → bf16 rounding and the store of a block of outputs. Compiled for AVX-512 by GCC's
// target attribute, whatever the build's -march: include this only in files whose callers
// check cpu_isa() first.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns "__Y may be used uninitialized" inside avx512fintrin.h (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "core/cpu_features.h"
#include "ops/conv2d/conv2d_tiles_layout.h"

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
