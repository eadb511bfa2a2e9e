#include "data/sampler.h"

#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace rg::data {

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, uint64_t epoch) {
  std::vector<int64_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), int64_t{0});
  for (int64_t i = n - 1; i > 0; --i) {
    const Philox4 r = philox4x32_10(static_cast<uint64_t>(i), epoch, seed);
    const uint64_t bits = static_cast<uint64_t>(r.v[0]) << 32 | r.v[1];
    // Multiply-shift maps 64 random bits onto [0, i]: no modulo bias worth measuring.
    const auto j = static_cast<int64_t>((static_cast<unsigned __int128>(bits) * (i + 1)) >> 64);
    std::swap(p[i], p[j]);
  }
  return p;
}

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  RG_CHECK(n >= 0, "SequentialSampler: size must be >= 0, got ", n);
}

std::vector<int64_t> SequentialSampler::indices() const {
  std::vector<int64_t> p(static_cast<std::size_t>(n_));
  std::iota(p.begin(), p.end(), int64_t{0});
  return p;
}

RandomSampler::RandomSampler(int64_t n, uint64_t seed) : n_(n), seed_(seed) {
  RG_CHECK(n >= 0, "RandomSampler: size must be >= 0, got ", n);
}

std::vector<int64_t> RandomSampler::indices() const {
  return random_permutation(n_, seed_, static_cast<uint64_t>(epoch_));
}

}  // namespace rg::data
