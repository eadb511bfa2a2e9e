// The bf16 tile GEMM (ops/matmul/gemm_tiles.h: AMX, AVX512-BF16) against f64 on the same bf16
// values: sizes on and off the 16/32 blocks, both layouts of each operand, accumulation; and
// matmul (batched, broadcast, reduced) and linear, forward and backward, through it. Each ISA
// runs where the machine has it (the lower one capped with CpuIsaCap) and skips, saying why,
// where it has not.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/cpu_features.h"
#include "core/kernel_log.h"
#include "ops/matmul/gemm_tiles.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

#define SKIP_WITHOUT(isa)                                  \
  if (static_cast<int>(cpu_isa()) < static_cast<int>(isa)) \
  GTEST_SKIP() << "this machine has no " << cpu_isa_name(isa) << " (" << cpu_isa_note() << ")"

std::vector<double> bf16_values(int64_t n, uint64_t seed) {
  manual_seed(seed);
  return randn({n}).to(DType::bf16).to_vector<double>();
}

// |got − exact| <= 2⁻⁸·|exact| + 2⁻²³·K·S: one rounding to bf16 (for results rounded to bf16)
// plus the f32 sum's error, S = Σ|terms| (see tests/ops/conv2d_tiles_test.cpp).
::testing::AssertionResult close(double got, double exact, double abs_sum, int64_t k,
                                 bool rounded) {
  const double tol =
      (rounded ? std::ldexp(std::abs(exact), -8) : 0.0) + std::ldexp(abs_sum * double(k), -23);
  if (std::abs(got - exact) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << got << " vs " << exact << " (tolerance " << tol << ")";
}

class TileGemm : public ::testing::TestWithParam<CpuIsa> {};

TEST_P(TileGemm, MatchesF64OnEveryBlockTailAndLayout) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  struct Case {
    int64_t n, k, m;
  };
  for (const Case& s : {Case{1, 1, 1}, Case{16, 32, 16}, Case{17, 33, 15}, Case{32, 64, 32},
                        Case{45, 100, 70}, Case{3, 200, 130}}) {
    const std::vector<double> av = bf16_values(s.n * s.k, 1), bv = bf16_values(s.k * s.m, 2);
    for (bool a_col : {false, true})
      for (bool b_col : {false, true})
        for (bool accumulate : {false, true}) {
          SCOPED_TRACE(::testing::Message() << s.n << "x" << s.k << "x" << s.m << " a_col " << a_col
                                            << " b_col " << b_col << " accumulate " << accumulate);
          // a(i, kk) stored row- or column-major, likewise b.
          std::vector<BFloat16> a(av.size()), b(bv.size());
          for (int64_t i = 0; i < s.n; ++i)
            for (int64_t kk = 0; kk < s.k; ++kk)
              a[a_col ? kk * s.n + i : i * s.k + kk] = BFloat16(av[i * s.k + kk]);
          for (int64_t kk = 0; kk < s.k; ++kk)
            for (int64_t j = 0; j < s.m; ++j)
              b[b_col ? j * s.k + kk : kk * s.m + j] = BFloat16(bv[kk * s.m + j]);
          std::vector<float> c(static_cast<std::size_t>(s.n * s.m), 0.5f);
          detail::tile_gemm({a.data(), s.n, s.k, a_col ? s.n : s.k, a_col},
                            {b.data(), s.k, s.m, b_col ? s.k : s.m, b_col},
                            {c.data(), s.n, s.m, s.m, false}, accumulate);
          for (int64_t i = 0; i < s.n; ++i)
            for (int64_t j = 0; j < s.m; ++j) {
              double exact = accumulate ? 0.5 : 0.0, abs_sum = accumulate ? 0.5 : 0.0;
              for (int64_t kk = 0; kk < s.k; ++kk) {
                exact += av[i * s.k + kk] * bv[kk * s.m + j];
                abs_sum += std::abs(av[i * s.k + kk] * bv[kk * s.m + j]);
              }
              ASSERT_TRUE(close(c[i * s.m + j], exact, abs_sum, s.k + 1, false))
                  << "at (" << i << ", " << j << ")";
            }
        }
  }
}

Tensor abs_of(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  for (double& e : v) e = std::abs(e);
  return from_vector(v, t.shape(), {DType::f64});
}

// op on bf16 leaves, forward and backward, against f64 leaves of the same values.
void check_bf16_op(const std::function<Tensor(const std::vector<Tensor>&)>& op,
                   const std::vector<Shape>& shapes, int64_t k) {
  std::vector<Tensor> in16, in64, abs64;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const Tensor v = randn(shapes[i]).to(DType::bf16);
    in16.push_back(v.clone().set_requires_grad(true));
    in64.push_back(v.to(DType::f64).set_requires_grad(true));
    abs64.push_back(abs_of(v).set_requires_grad(true));
  }
  const Tensor y16 = op(in16), y64 = op(in64), s = op(abs64);
  ASSERT_EQ(y16.dtype(), DType::bf16);
  const auto check = [&](const Tensor& got, const Tensor& exact, const Tensor& abs_sum) {
    const std::vector<double> g = got.to_vector<double>(), e = exact.to_vector<double>();
    const std::vector<double> a = abs_sum.to_vector<double>();
    ASSERT_EQ(g.size(), e.size());
    for (std::size_t i = 0; i < g.size(); ++i) ASSERT_TRUE(close(g[i], e[i], a[i], k, true)) << i;
  };
  check(y16, y64, s);
  const Tensor gy = randn(y64.shape()).to(DType::bf16);
  y16.backward(gy);
  y64.backward(gy.to(DType::f64));
  s.backward(abs_of(gy));
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    SCOPED_TRACE("gradient of input " + std::to_string(i));
    check(in16[i].grad(), in64[i].grad(), abs64[i].grad());
  }
}

TEST_P(TileGemm, MatmulBatchedAndBroadcastMatchesF64) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  // b broadcast over a's batch: its gradient sums the batch's products before rounding once.
  check_bf16_op([](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); },
                {{3, 5, 40}, {40, 7}}, 3 * 40);
  check_bf16_op([](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); },
                {{2, 33, 17}, {2, 17, 48}}, 48);
}

TEST_P(TileGemm, LinearMatchesF64) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  check_bf16_op([](const std::vector<Tensor>& t) { return linear(t[0], t[1], t[2]); },
                {{37, 70}, {10, 70}, {10}}, 71);
  const std::string expected =
      GetParam() == CpuIsa::amx ? "bf16 tiles (amx)" : "bf16 tiles (avx512_bf16)";
  bool noted = false;
  for (const KernelChoice& c : kernel_choices())
    noted = noted || (c.op == "linear" && c.kernel == expected);
  EXPECT_TRUE(noted);
}

INSTANTIATE_TEST_SUITE_P(Isa, TileGemm, ::testing::Values(CpuIsa::amx, CpuIsa::avx512_bf16),
                         [](const auto& info) { return std::string(cpu_isa_name(info.param)); });

TEST(TileGemmErrors, ShapesThatDoNotChainAreANamedError) {
  std::vector<BFloat16> a(6), b(6);
  std::vector<float> c(4);
  EXPECT_TRUE(throws_error(
      [&] {
        detail::tile_gemm({a.data(), 2, 3, 3, false}, {b.data(), 2, 3, 3, false},
                          {c.data(), 2, 2, 2, false}, false);
      },
      {"tile_gemm", "(2, 3) · (2, 3)"}));
}

}  // namespace
}  // namespace rg
