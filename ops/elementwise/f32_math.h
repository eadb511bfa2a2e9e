#pragma once
// erf and exp of f32 on the host, written so that GCC vectorises the loops that call them. glibc's
// erff and expf are scalar calls that keep a loop scalar: in a profile of airbench94 training
// (gelu after every conv) __erff alone was 6 % of a step. Here each branch of the math is
// computed and the answer selected, with no call, no branch and no table lookup, so that -O3
// -march=native turns gelu's loops into packed (ymm) code.
//
// Accuracy, measured over every f32 against double libm: both are within 1 ulp of the correctly
// rounded f32 result (real-valued worst cases: erf 1.24 ulp near x = 1.005 with GCC's FMA
// contraction under -march=native, 1.49 near 1.02 without; exp 1.01 and 0.99). exp of a NaN is
// NaN, below −103.97 (where it rounds to 0) exactly +0, above 88.72 inf; erf is odd (−0 included)
// and exactly ±1 beyond 3.926 (correctly rounded: 3.920). tests/ops/f32_math_test.cpp samples
// the same checks. The polynomial coefficients come from tools/fit_erf.py (minimax fits, rounded
// to f32).
//
// pointwise_erf / pointwise_exp are what functors call: these for float on the host; std::erf and
// std::exp for double (gradcheck runs in f64 and needs libm's accuracy) and on a CUDA device
// (CUDA's own erff and expf, which the GPU runs lane-parallel anyway).

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/macros.h"

namespace rg {
namespace f32_math {
namespace detail {

// From tools/fit_erf.py. exp(r) ≈ 1 + r + r²·q(r) for |r| ≤ ln2/2.
inline constexpr float kExpQ[] = {0.49999994f, 0.166665211f, 0.0416682623f, 0.0083686728f,
                                  0.00138209946f};
// erf(x) ≈ x + x·h(x²) for 0 ≤ x < 1.
inline constexpr float kErfSmallH[] = {0.128379166f,   -0.37612626f,  0.112835787f,
                                       -0.0268533472f, 0.0051871622f, -0.00079978531f,
                                       7.80690316e-05f};
// erf(x) ≈ 1 − exp(−x²)·R(x) for 1 ≤ x ≤ 4 (R is erfc(x)·exp(x²), smooth, ≈ 1/(x√π) far out).
inline constexpr float kErfLargeR[] = {0.992258847f,  -1.07984471f,    0.862721086f,
                                       -0.518860877f, 0.230571315f,    -0.0727594942f,
                                       0.0153023833f, -0.00191182154f, 0.000106844753f};

template <std::size_t N>
inline float horner(const float (&c)[N], float t) {
  float acc = c[N - 1];
  for (std::size_t k = N - 1; k-- > 0;) acc = c[k] + t * acc;
  return acc;
}

// c ? a : b as bit masks. A ?: (or std::min) is control flow to GCC: it sinks each branch's math
// into the branch and threads the clamped paths with constants, and with -ftrapping-math (the
// default) it then refuses to if-convert the loop ("control flow in loop": not vectorised).
inline float select(bool c, float a, float b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<std::uint32_t>(a) & mask) |
                              (std::bit_cast<std::uint32_t>(b) & ~mask));
}

inline float power_of_two(std::int32_t e) {  // 2^e for a normal exponent, −126 ≤ e ≤ 127
  return std::bit_cast<float>(static_cast<std::uint32_t>(e + 127) << 23);
}

}  // namespace detail

inline float exp(float x) {
  // Outside [−104, 89] exp is 0 or inf in f32 anyway; the clamp keeps n small enough for the
  // shifter trick and the two scale factors below. A NaN fails both comparisons and stays.
  x = detail::select(x < -104.0f, -104.0f, x);
  x = detail::select(x > 89.0f, 89.0f, x);
  // n = round(x/ln2): adding 1.5·2^23 rounds x·log2(e) to an integer held in the low mantissa bits.
  constexpr float kShifter = 0x1.8p23f;
  const float shifted = x * 1.44269502f + kShifter;
  const float n = shifted - kShifter;
  const auto n_int = static_cast<std::int32_t>(std::bit_cast<std::uint32_t>(shifted) -
                                               std::bit_cast<std::uint32_t>(kShifter));
  // r = x − n·ln2 in two steps (Cody–Waite): ln2's high part has 15 significant bits, so for
  // |n| ≤ 150 its product with n, and x minus that product, are exact.
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-06f;
  const float exp_r = 1.0f + (r + (r * r) * detail::horner(detail::kExpQ, r));
  // 2^n as two normal factors (n is in [−150, 128]): the last product overflows to inf, or
  // rounds into the denormals, once and correctly — which a single float 2^n could not express.
  const std::int32_t half_n = n_int >> 1;
  return exp_r * detail::power_of_two(half_n) * detail::power_of_two(n_int - half_n);
}

inline float erf(float x) {
  const float a = std::fabs(x);
  // Below 1: x + x·h(x²) keeps x exact, so the rounding is confined to the small correction.
  const float below_one = a + a * detail::horner(detail::kErfSmallH, a * a);
  // From 1: 1 − erfc(x), erfc ≤ 0.16 there. Clamped at 4, where erf already rounds to 1
  // (erfc(4) = 1.5e-8, under half the spacing of floats below 1), so R and x² stay finite.
  const float clamped = detail::select(a > 4.0f, 4.0f, a);
  const float from_one =
      1.0f - f32_math::exp(-(clamped * clamped)) * detail::horner(detail::kErfLargeR, clamped);
  // A NaN fails a < 1 and takes from_one, NaN too (the clamp's comparison failed as well).
  return std::copysign(detail::select(a < 1.0f, below_one, from_one), x);
}

}  // namespace f32_math

template <class C>
RG_HOST_DEVICE C pointwise_erf(C x) {
#if defined(__CUDA_ARCH__)
  return std::erf(x);
#else
  if constexpr (std::is_same_v<C, float>) {
    return f32_math::erf(x);
  } else {
    return std::erf(x);
  }
#endif
}

template <class C>
RG_HOST_DEVICE C pointwise_exp(C x) {
#if defined(__CUDA_ARCH__)
  return std::exp(x);
#else
  if constexpr (std::is_same_v<C, float>) {
    return f32_math::exp(x);
  } else {
    return std::exp(x);
  }
#endif
}

}  // namespace rg
