#pragma once
// Half (IEEE binary16) and BFloat16 storage types. Conversions from float and double round to
// nearest even; arithmetic happens in float. Everything is RG_HOST_DEVICE so CUDA kernels use
// the very same conversions that the CPU tests check.

#include <cstdint>
#include <cstring>

#include "core/macros.h"

namespace rg {

namespace detail {
RG_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
RG_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds a double to float with "round to odd": truncate, then set the last mantissa bit if
// anything was lost. A later round-to-nearest-even to 16 bits then gives the correctly rounded
// result; converting double -> float -> half directly would round twice and could be off by one.
RG_HOST_DEVICE inline float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) != d && d == d) {
    uint32_t b = float_bits(f);
    const double af = f < 0 ? -static_cast<double>(f) : static_cast<double>(f);
    const double ad = d < 0 ? -d : d;
    if (af > ad) b -= 1;  // rounded away from zero: step back towards zero
    b |= 1u;
    f = bits_float(b);
  }
  return f;
}

// IEEE half <-> float, after Maratyszcza's FP16 library: exact, round-to-nearest-even,
// correct for subnormals, infinities and NaN.
RG_HOST_DEVICE inline uint16_t float_to_half_bits(float f) {
  const float scale_to_inf = 0x1.0p+112f;
  const float scale_to_zero = 0x1.0p-110f;
  const float af = f < 0 ? -f : f;
  float base = (af * scale_to_inf) * scale_to_zero;
  const uint32_t w = float_bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = bits_float((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = float_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

RG_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = 0x1.0p-112f;
  const float normalized = bits_float((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float magic_bias = 0.5f;
  const float denormalized = bits_float((two_w >> 17) | magic_mask) - magic_bias;
  const uint32_t denormalized_cutoff = 1u << 27;
  const uint32_t result =
      sign | (two_w < denormalized_cutoff ? float_bits(denormalized) : float_bits(normalized));
  return bits_float(result);
}

RG_HOST_DEVICE inline uint16_t float_to_bfloat16_bits(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7FFFu + ((u >> 16) & 1u);                    // round half to even on the 16 dropped bits
  return static_cast<uint16_t>(u >> 16);
}

RG_HOST_DEVICE inline float bfloat16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}
}  // namespace detail

struct Half {
  uint16_t bits = 0;
  Half() = default;
  RG_HOST_DEVICE Half(float f) : bits(detail::float_to_half_bits(f)) {}
  RG_HOST_DEVICE Half(double d)
      : bits(detail::float_to_half_bits(detail::double_to_float_round_odd(d))) {}
  RG_HOST_DEVICE operator float() const { return detail::half_bits_to_float(bits); }
  RG_HOST_DEVICE static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  RG_HOST_DEVICE BFloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}
  RG_HOST_DEVICE BFloat16(double d)
      : bits(detail::float_to_bfloat16_bits(detail::double_to_float_round_odd(d))) {}
  RG_HOST_DEVICE operator float() const { return detail::bfloat16_bits_to_float(bits); }
  RG_HOST_DEVICE static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

}  // namespace rg
