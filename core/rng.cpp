#include "core/rng.h"

#include <cmath>
#include <numbers>

namespace rg {

Philox4 philox4x32_10(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) {
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

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

void manual_seed(uint64_t seed) {
  default_generator().manual_seed(seed);
}

float philox_uniform_f32(uint64_t seed, uint64_t offset, uint64_t i) {
  const Philox4 r = philox4x32_10(i, offset, seed);
  return static_cast<float>(r.v[0] >> 8) * 0x1.0p-24f;  // 24 bits: exactly representable, < 1
}

double philox_uniform_f64(uint64_t seed, uint64_t offset, uint64_t i) {
  const Philox4 r = philox4x32_10(i, offset, seed);
  const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32 | r.v[1]) >> 11;
  return static_cast<double>(bits) * 0x1.0p-53;
}

double philox_normal(uint64_t seed, uint64_t offset, uint64_t i) {
  const Philox4 r = philox4x32_10(i, offset, seed);
  const uint64_t a = (static_cast<uint64_t>(r.v[0]) << 32 | r.v[1]) >> 11;
  const uint64_t b = (static_cast<uint64_t>(r.v[2]) << 32 | r.v[3]) >> 11;
  const double u1 = (static_cast<double>(a) + 1.0) * 0x1.0p-53;  // (0, 1]: log stays finite
  const double u2 = static_cast<double>(b) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace rg
