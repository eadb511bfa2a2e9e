#include "core/half_runs.h"

#if defined(__AVX512F__)
// GCC 12 warns "__Y may be used uninitialized" inside its own avx512fintrin.h for the half
// conversions (_mm512_undefined_*, GCC bug 105593): a false positive, silenced for this file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace rg {

void widen(const Half* in, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i,
                     _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
#endif
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

void narrow(const float* in, Half* out, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) out[i] = Half(in[i]);
}

void widen(const BFloat16* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = detail::bfloat16_bits_to_float(in[i].bits);
}

void narrow(const float* in, BFloat16* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i].bits = detail::float_to_bfloat16_bits(in[i]);
}

}  // namespace rg
