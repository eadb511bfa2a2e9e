#include "core/rng.h"

#include <cmath>
#include <numbers>

namespace rg {

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

void manual_seed(uint64_t seed) {
  default_generator().manual_seed(seed);
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
