#include "optim/clip_grad.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/thread_pool.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

const std::vector<Shape> kShapes = {{4, 5}, {7}, {2, 3, 2}};

// Parameters holding the fixture's gradients of `c` (no gradient where the fixture has none).
std::vector<Tensor> params_with_grads(const Fixture& f, const std::string& c) {
  std::vector<Tensor> params;
  for (std::size_t i = 0; i < kShapes.size(); ++i) {
    const std::string key = c + ".g" + std::to_string(i);
    Tensor p = zeros(kShapes[i], {f.has(key) ? f[key].dtype() : DType::f32});
    p.set_requires_grad(true);
    if (f.has(key)) p.set_grad(f[key].clone());
    params.push_back(p);
  }
  return params;
}

// max_norm and norm_type of each case, as in tools/fixtures/optim_clip.py.
void check_clip_case(const std::string& c, double max_norm, double norm_type, double tol = 1e-5) {
  SCOPED_TRACE("case " + c);
  Fixture f("optim_clip");
  std::vector<Tensor> params = params_with_grads(f, c);
  const double want = f[c + ".norm"].item();
  EXPECT_NEAR(grad_norm(params, norm_type), want, tol * want);
  const double total = clip_grad_norm(params, max_norm, norm_type);
  EXPECT_NEAR(total, want, tol * want);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::string key = c + ".clipped" + std::to_string(i);
    if (f.has(key))
      EXPECT_TRUE(all_close(params[i].grad(), f[key], tol, tol)) << "gradient " << i;
    else
      EXPECT_FALSE(params[i].grad().defined());
  }
}

TEST(ClipGradNorm, MatchesPyTorchL2) {
  check_clip_case("l2", 1.0, 2.0);
}
TEST(ClipGradNorm, MatchesPyTorchL2BelowMaxNorm) {
  check_clip_case("l2_noclip", 100.0, 2.0);
}
TEST(ClipGradNorm, MatchesPyTorchInf) {
  check_clip_case("inf", 0.5, kInfNorm);
}
TEST(ClipGradNorm, MatchesPyTorchL1) {
  check_clip_case("l1", 2.0, 1.0);
}
TEST(ClipGradNorm, MatchesPyTorchL3) {
  check_clip_case("p3", 1.5, 3.0);
}
TEST(ClipGradNorm, MatchesPyTorchWithMissingGradient) {
  check_clip_case("partial", 1.0, 2.0);
}
TEST(ClipGradNorm, MatchesPyTorchF64) {
  check_clip_case("f64", 1.0, 2.0, 1e-12);
}

TEST(ClipGradNorm, ClipsToJustUnderMaxNorm) {
  Tensor p = zeros({2}).set_requires_grad(true);
  p.set_grad(from_vector<float>({3, 4}, {2}));
  EXPECT_DOUBLE_EQ(clip_grad_norm({p}, 1.0), 5.0);
  EXPECT_NEAR(grad_norm({p}), 1.0, 1e-6);
  EXPECT_LT(grad_norm({p}), 1.0 + 1e-7);
}

TEST(ClipGradNorm, NoGradientsGiveZero) {
  Tensor p = zeros({2}).set_requires_grad(true);
  EXPECT_EQ(clip_grad_norm({p}, 1.0), 0.0);
  EXPECT_EQ(clip_grad_norm({}, 1.0), 0.0);
}

TEST(ClipGradNorm, NonFiniteNormLeavesGradientsAlone) {
  for (double bad : {INFINITY, NAN}) {
    Tensor p = zeros({3}, {DType::f64}).set_requires_grad(true);
    Tensor q = zeros({2}).set_requires_grad(true);
    p.set_grad(from_vector<double>({1, bad, 2}, {3}, {DType::f64}));
    q.set_grad(from_vector<float>({5, 6}, {2}));
    const double total = clip_grad_norm({p, q}, 1.0);
    EXPECT_TRUE(std::isinf(bad) ? std::isinf(total) : std::isnan(total)) << total;
    EXPECT_TRUE(all_close(q.grad(), from_vector<float>({5, 6}, {2}), 0, 0));
    const double inf_total = clip_grad_norm({q, p}, 1.0, kInfNorm);  // NaN wins over the max
    EXPECT_TRUE(std::isinf(bad) ? std::isinf(inf_total) : std::isnan(inf_total)) << inf_total;
    EXPECT_TRUE(throws_error(
        [&] {
          clip_grad_norm({p, q}, 1.0, 2.0, NonFiniteNorm::error);
        },
        {"clip_grad_norm", "total norm", "left unchanged"}));
    EXPECT_TRUE(all_close(q.grad(), from_vector<float>({5, 6}, {2}), 0, 0));
  }
}

TEST(ClipGradNorm, NonContiguousGradient) {
  Tensor p = zeros({3, 2}).set_requires_grad(true);
  Tensor g = from_vector<float>({3, 0, 0, 4, 0, 0}, {2, 3}).transpose(0, 1);
  p.impl()->autograd->grad = g.impl_ptr();  // set_grad would accept it too; keep the view
  EXPECT_DOUBLE_EQ(clip_grad_norm({p}, 0.5), 5.0);
  EXPECT_NEAR(p.grad().to_vector<double>()[0], 0.3, 1e-6);
  EXPECT_NEAR(p.grad().to_vector<double>()[1], 0.4, 1e-6);  // [[3, 4], [0, 0], [0, 0]]
}

TEST(ClipGradNorm, ThreadCountDoesNotChangeTheNorm) {
  Tensor p = zeros({200'000}).set_requires_grad(true);
  p.set_grad(randn({200'000}));
  const int threads = num_threads();
  set_num_threads(1);
  const double one = grad_norm({p});
  set_num_threads(3);
  const double three = grad_norm({p});
  set_num_threads(threads);
  EXPECT_EQ(one, three);
}

TEST(ClipGradNorm, BadArguments) {
  Tensor p = zeros({2}).set_requires_grad(true);
  EXPECT_TRUE(
      throws_error([&] { clip_grad_norm({p}, 1.0, 0.0); }, {"clip_grad_norm", "norm_type"}));
  EXPECT_TRUE(throws_error([&] { clip_grad_norm({p}, 1.0, -2.0); }, {"norm_type", "-2"}));
  EXPECT_TRUE(throws_error([&] { grad_norm({p}, NAN); }, {"grad_norm", "norm_type"}));
  EXPECT_TRUE(throws_error([&] { clip_grad_norm({p}, -1.0); }, {"clip_grad_norm", "max_norm"}));
  EXPECT_TRUE(throws_error(
      [&] {
        clip_grad_norm({p, Tensor()}, 1.0);
      },
      {"parameter 1", "undefined"}));
}

}  // namespace
}  // namespace rg
