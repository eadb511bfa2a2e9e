#pragma once
// The model zoo's parity values without stored weights: every state entry, the input and the
// projection vectors are drawn from a formula of the entry's name and the element's index, which
// tools/pytorch_cifar_zoo.py computes the same way (zoo_fill, uniform) — bit for bit, since it is
// integer arithmetic, then one f64 expression rounded once to f32.
//
//   u(name, i) = (splitmix64(fnv1a64(name) + (i + 1)·φ) >> 40 − 2^23) / 2^23  in [-1, 1)
//   running_mean 0.1·u, running_var 1.25 + 0.25·u, num_batches_tracked 0,
//   1-D weight (BatchNorm) 1 + 0.25·u, 1-D bias 0.1·u, other weights u·sqrt(3 / fan_in).

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rg::testing {

inline uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// n values of u(name, ·), in f64 (each exact in f32).
inline std::vector<double> zoo_uniform(const std::string& name, int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  const uint64_t seed = fnv1a64(name);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = seed + static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    out[static_cast<std::size_t>(i)] =
        static_cast<double>(static_cast<int64_t>(z >> 40) - (int64_t{1} << 23)) /
        static_cast<double>(int64_t{1} << 23);
  }
  return out;
}

// The value of state entry `name` of shape `shape` (f32; i64 zeros for num_batches_tracked).
inline Tensor zoo_fill(const std::string& name, const Shape& shape) {
  if (name.ends_with("num_batches_tracked")) return zeros(shape, {.dtype = DType::i64});
  const std::vector<double> u = zoo_uniform(name, numel_of(shape));
  std::vector<float> v(u.size());
  double scale = 0, offset = 0;
  if (name.ends_with("running_mean")) {
    scale = 0.1;
  } else if (name.ends_with("running_var")) {
    offset = 1.25, scale = 0.25;
  } else if (shape.size() == 1 && name.ends_with("weight")) {
    offset = 1.0, scale = 0.25;
  } else if (shape.size() == 1) {
    scale = 0.1;
  } else {
    int64_t fan_in = 1;
    for (std::size_t d = 1; d < shape.size(); ++d) fan_in *= shape[d];
    scale = std::sqrt(3.0 / static_cast<double>(fan_in));
  }
  // The script's f64 expression (adding a zero offset changes no value: u is never -0).
  for (std::size_t i = 0; i < u.size(); ++i) v[i] = static_cast<float>(offset + scale * u[i]);
  return from_vector(v, shape);
}

}  // namespace rg::testing
