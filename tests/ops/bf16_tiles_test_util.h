#pragma once
// What the bf16 tile-kernel tests share (conv2d_tiles_test.cpp, conv3d_tiles_test.cpp): the
// skip on machines without the instruction set, bf16 inputs, and the rule a tile result is held
// to against f64 on the same bf16 values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/cpu_features.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "ops/conv/conv_params.h"

namespace rg::testing {

inline bool machine_has(CpuIsa isa) {
  return static_cast<int>(cpu_isa()) >= static_cast<int>(isa);
}

#define SKIP_WITHOUT(isa)               \
  if (!::rg::testing::machine_has(isa)) \
  GTEST_SKIP() << "this machine has no " << cpu_isa_name(isa) << " (" << cpu_isa_note() << ")"

// While it lives, bf16 convolutions take `kernels` instead of the rule (set_bf16_conv_kernels):
// the tile-kernel tests run every pass on the tiles, also where the rule would widen it.
class Bf16KernelsScope {
 public:
  explicit Bf16KernelsScope(Bf16ConvKernels kernels) : previous_(bf16_conv_kernels()) {
    set_bf16_conv_kernels(kernels);
  }
  ~Bf16KernelsScope() { set_bf16_conv_kernels(previous_); }
  Bf16KernelsScope(const Bf16KernelsScope&) = delete;
  Bf16KernelsScope& operator=(const Bf16KernelsScope&) = delete;

 private:
  Bf16ConvKernels previous_;
};

inline Tensor random_bf16(const Shape& s, uint64_t seed) {
  manual_seed(seed);
  return randn(s).to(DType::bf16);
}

// |tile − ref| <= 2^-8·|ref| + 2^-23·K·S: one rounding to bf16 of a sum of K terms accumulated
// in f32 (each step off by at most 2^-24 of the partial sum, bounded by S = the same sum of
// absolute values, doubled for slack). A wrong tap, channel or position is off by a whole
// term, ~S/K, far beyond it on these small K.
inline ::testing::AssertionResult within_f32_sums(const Tensor& tile, const Tensor& ref,
                                                  const Tensor& abs_sum, int64_t terms) {
  const std::vector<double> a = tile.to_vector<double>();
  const std::vector<double> r = ref.to_vector<double>();
  const std::vector<double> s = abs_sum.to_vector<double>();
  if (a.size() != r.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double tol = std::ldexp(std::abs(r[i]), -8) + std::ldexp(s[i] * double(terms), -23);
    if (!(std::abs(a[i] - r[i]) <= tol))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << r[i] << " (tolerance " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

inline Tensor f64(const Tensor& t) {
  return t.defined() ? t.to(DType::f64) : t;
}

// |t| in f64: the terms' absolute values, whose sums bound the rounding.
inline Tensor abs64(const Tensor& t) {
  if (!t.defined()) return t;
  std::vector<double> v = t.to_vector<double>();
  for (double& e : v) e = std::abs(e);
  return from_vector(v, t.shape(), {DType::f64});
}

}  // namespace rg::testing
