#pragma once
// Contiguous runs of 16-bit floats to and from f32, vectorised: the F16C / AVX-512
// instructions for f16 where the CPU has them, loops the compiler vectorises for bf16. They
// round exactly as Half(float) and BFloat16(float) do (round to nearest even; NaN stays NaN),
// at a fraction of the cost of the scalar conversions — which is what a 16-bit kernel on the
// CPU spends its time on. Defined in a .cpp so that headers stay free of intrinsics.

#include <cstdint>

#include "core/half.h"

namespace rg {

void widen(const Half* in, float* out, int64_t n);
void widen(const BFloat16* in, float* out, int64_t n);
void narrow(const float* in, Half* out, int64_t n);
void narrow(const float* in, BFloat16* out, int64_t n);

}  // namespace rg
