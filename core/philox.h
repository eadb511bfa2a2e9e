#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) and the
// f32 uniform drawn from it, as host/device functions: the CPU ops (core/rng.cpp, dropout) and the
// CUDA kernels (dropout_kernels.cuh) run this very code, so a GPU draw equals the CPU's bit for
// bit for the same (seed, offset, i). Only integer arithmetic and one exact conversion to float:
// nothing a compiler may contract or reorder.

#include <cstdint>

#include "core/macros.h"

namespace rg {

// Philox4x32-10 block: four 32-bit outputs for a 128-bit counter and 64-bit key.
struct Philox4 {
  uint32_t v[4];
};

RG_HOST_DEVICE inline Philox4 philox4x32_10(uint64_t counter_lo, uint64_t counter_hi,
                                            uint64_t key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c[4] = {static_cast<uint32_t>(counter_lo), static_cast<uint32_t>(counter_lo >> 32),
                   static_cast<uint32_t>(counter_hi), static_cast<uint32_t>(counter_hi >> 32)};
  uint32_t k[2] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c[0] = hi1 ^ c[1] ^ k[0];
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k[1];
    c[3] = lo0;
    k[0] += kW0;
    k[1] += kW1;
  }
  return {{c[0], c[1], c[2], c[3]}};
}

// Element i of the draw at `offset`: uniform in [0, 1) with 24 random bits (exactly
// representable in float, so the value is the same on every device).
RG_HOST_DEVICE inline float philox_uniform_f32(uint64_t seed, uint64_t offset, uint64_t i) {
  const Philox4 r = philox4x32_10(i, offset, seed);
  return static_cast<float>(r.v[0] >> 8) * 0x1.0p-24f;
}

}  // namespace rg
