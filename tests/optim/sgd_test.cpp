#include <gtest/gtest.h>

#include <cmath>

#include "core/thread_pool.h"
#include "ops/ops.h"
#include "tests/optim/optim_fixture.h"

namespace rg {
namespace {
using namespace rg::testing;

// The options of each case, as in tools/fixtures/optim_sgd.py.
MakeOptimizer sgd(SGDOptions o) {
  return [o](const std::vector<Tensor>& ps) { return std::make_unique<SGD>(ps, o); };
}

TEST(SGD, MatchesPyTorchPlain) {
  check_optimizer_case("optim_sgd", "plain", sgd({.lr = 0.1}), {"momentum_buffer"});
}

TEST(SGD, MatchesPyTorchMomentum) {
  check_optimizer_case("optim_sgd", "momentum", sgd({.lr = 0.1, .momentum = 0.9}),
                       {"momentum_buffer"});
}

TEST(SGD, MatchesPyTorchDampeningAndWeightDecay) {
  check_optimizer_case("optim_sgd", "dampening_wd",
                       sgd({.lr = 0.05, .momentum = 0.9, .dampening = 0.5, .weight_decay = 0.01}),
                       {"momentum_buffer"});
}

TEST(SGD, MatchesPyTorchNesterov) {
  check_optimizer_case(
      "optim_sgd", "nesterov",
      sgd({.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = Nesterov::on}),
      {"momentum_buffer"});
}

TEST(SGD, MatchesPyTorchGroupsAndMissingGradients) {
  // Parameter 1 has no gradient at steps 0 and 2, parameter 2 none at step 3: skipped there.
  check_optimizer_case("optim_sgd", "groups",
                       [](const std::vector<Tensor>& ps) {
                         return std::make_unique<SGD>(std::vector<ParamGroup<SGDOptions>>{
                             {{ps[0], ps[1]}, {.lr = 0.1, .momentum = 0.9}},
                             {{ps[2]}, {.lr = 0.01, .momentum = 0.5, .weight_decay = 0.1}}});
                       },
                       {"momentum_buffer"});
}

TEST(SGD, MatchesPyTorchF64) {
  check_optimizer_case("optim_sgd", "f64",
                       sgd({.lr = 0.1, .momentum = 0.9, .nesterov = Nesterov::on}),
                       {"momentum_buffer"}, 1e-12, 1e-12);
}

TEST(SGD, ParameterWithoutGradientIsUntouched) {
  Tensor a = randn({4}).set_requires_grad(true), b = randn({3}).set_requires_grad(true);
  const Tensor b0 = b.clone();
  SGD opt({a, b}, {.lr = 0.1, .momentum = 0.9});
  a.set_grad(ones({4}));
  opt.step();
  EXPECT_TRUE(all_close(b, b0, 0, 0));
  const StateDict sd = opt.state_dict();
  EXPECT_EQ(sd.tensors.count("optim.state.0.momentum_buffer"), 1u);
  EXPECT_EQ(sd.tensors.count("optim.state.1.momentum_buffer"), 0u);
}

TEST(SGD, ZeroGradDropsGradients) {
  Tensor a = randn({4}).set_requires_grad(true);
  SGD opt({a}, {.lr = 0.1});
  a.set_grad(ones({4}));
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(SGD, NonContiguousParameterIsUpdatedInPlace) {
  // A transposed view of a plain tensor is a non-contiguous leaf.
  Tensor base = arange(0, 12).reshape({4, 3});
  Tensor p = base.transpose(0, 1);
  Tensor q = p.clone();
  p.set_requires_grad(true);
  q.set_requires_grad(true);
  SGD opt_p({p}, {.lr = 0.5, .momentum = 0.9}), opt_q({q}, {.lr = 0.5, .momentum = 0.9});
  for (int k = 0; k < 2; ++k) {
    const Tensor g = arange(0, 12).reshape({3, 4});
    p.set_grad(g);
    q.set_grad(g.clone());
    opt_p.step();
    opt_q.step();
  }
  EXPECT_TRUE(all_close(p, q, 0, 0));
  EXPECT_TRUE(all_close(base.transpose(0, 1), q, 0, 0));  // the update reached the storage
}

TEST(SGD, ThreadCountDoesNotChangeTheResult) {
  const Tensor init = randn({100'000}), grad = randn({100'000});
  std::vector<Tensor> results;
  const int threads = num_threads();
  for (int n : {1, 2, 3}) {
    set_num_threads(n);
    Tensor p = init.clone();
    p.set_requires_grad(true);
    SGD opt({p}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = Nesterov::on});
    for (int k = 0; k < 2; ++k) {
      p.set_grad(grad.clone());
      opt.step();
    }
    results.push_back(p);
  }
  set_num_threads(threads);
  EXPECT_TRUE(all_close(results[1], results[0], 0, 0));
  EXPECT_TRUE(all_close(results[2], results[0], 0, 0));
}

TEST(SGD, HalfPrecisionParametersComputeInFloat) {
  for (DType dtype : {DType::f16, DType::bf16}) {
    Tensor p = full({8}, 1.0, {dtype}), ref = full({8}, 1.0);
    p.set_requires_grad(true);
    ref.set_requires_grad(true);
    SGD opt({p}, {.lr = 0.125, .momentum = 0.5}), opt_ref({ref}, {.lr = 0.125, .momentum = 0.5});
    for (int k = 0; k < 3; ++k) {
      p.set_grad(full({8}, 0.5, {dtype}));
      ref.set_grad(full({8}, 0.5));
      opt.step();
      opt_ref.step();
    }
    EXPECT_EQ(p.dtype(), dtype);
    EXPECT_TRUE(all_close(p, ref, 1e-2, 1e-2));  // exact in f32; these values are exact in 16 bits
  }
}

TEST(SGD, BadHyperparameters) {
  Tensor p = ones({2}).set_requires_grad(true);
  EXPECT_TRUE(throws_error([&] { SGD({p}, {.lr = -0.1}); }, {"SGD", "learning rate", "-0.1"}));
  EXPECT_TRUE(throws_error([&] { SGD({p}, {.lr = std::nan("")}); }, {"SGD", "learning rate"}));
  EXPECT_TRUE(throws_error([&] { SGD({p}, {.momentum = -1}); }, {"SGD", "momentum", "-1"}));
  EXPECT_TRUE(throws_error([&] { SGD({p}, {.weight_decay = -1}); }, {"SGD", "weight_decay"}));
  EXPECT_TRUE(throws_error([&] { SGD({p}, {.nesterov = Nesterov::on}); },
                           {"SGD", "Nesterov", "momentum > 0"}));
  EXPECT_TRUE(
      throws_error([&] { SGD({p}, {.momentum = 0.9, .dampening = 0.1, .nesterov = Nesterov::on}); },
                   {"SGD", "Nesterov", "dampening = 0", "0.1"}));
  SGD opt({p}, {.lr = 0.1});
  EXPECT_TRUE(throws_error([&] { opt.set_lr(0, -1); }, {"SGD", "learning rate"}));
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.1);
}

TEST(SGD, BadParameters) {
  EXPECT_TRUE(throws_error([] { SGD({}, {}); }, {"SGD", "empty parameter list"}));
  Tensor p = ones({2}).set_requires_grad(true);
  EXPECT_TRUE(throws_error([&] { SGD({p, p}, {}); }, {"SGD", "parameter 1", "more than once"}));
  EXPECT_TRUE(throws_error(
      [&] {
        SGD(std::vector<ParamGroup<SGDOptions>>{{{p}, {}}, {{p}, {}}});
      },
      {"SGD", "parameter 1 (group 1)", "more than once"}));
  EXPECT_TRUE(throws_error([] { SGD({ones({2}, {DType::i64})}, {}); },
                           {"SGD", "floating point", "[2] i64 cpu"}));
  EXPECT_TRUE(throws_error([] { SGD({Tensor()}, {}); }, {"SGD", "parameter 0", "undefined"}));
  Tensor x = ones({3}).set_requires_grad(true);
  EXPECT_TRUE(throws_error([&] { SGD({relu(x)}, {}); }, {"SGD", "not a leaf"}));
}

TEST(SGD, GradientThatDoesNotMatchItsParameter) {
  // set_grad refuses a mismatched gradient, so plant one directly, as a buggy hook might.
  Tensor p = ones({2, 3}).set_requires_grad(true);
  SGD opt({p}, {.lr = 0.1});
  p.impl()->autograd->grad = ones({3, 2}).impl_ptr();
  EXPECT_TRUE(
      throws_error([&] { opt.step(); }, {"SGD", "parameter 0", "[3, 2] f32", "[2, 3] f32"}));
  p.impl()->autograd->grad = ones({2, 3}, {DType::f64}).impl_ptr();
  EXPECT_TRUE(throws_error([&] { opt.step(); }, {"SGD", "[2, 3] f64 cpu", "[2, 3] f32 cpu"}));
}

}  // namespace
}  // namespace rg
