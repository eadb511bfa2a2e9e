// The autocast state (core/autocast): nesting guards, and the per-step weight-cast cache.
#include "core/autocast.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/autograd.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Autocast, GuardsNestAndRestore) {
  EXPECT_FALSE(autocast_enabled());
  {
    AutocastGuard outer(DType::f16);
    EXPECT_EQ(autocast_dtype(), DType::f16);
    {
      AutocastGuard inner(DType::bf16);
      EXPECT_EQ(autocast_dtype(), DType::bf16);
      {
        AutocastGuard off(std::nullopt);
        EXPECT_FALSE(autocast_enabled());
      }
      EXPECT_EQ(autocast_dtype(), DType::bf16);
    }
    EXPECT_EQ(autocast_dtype(), DType::f16);
  }
  EXPECT_FALSE(autocast_enabled());
}

TEST(Autocast, OnlyHalfDtypes) {
  EXPECT_TRUE(
      throws_error([] { AutocastGuard g(DType::f32); }, {"autocast", "f16 or bf16", "f32"}));
  EXPECT_TRUE(throws_error([] { AutocastGuard g(DType::i64); }, {"autocast", "i64"}));
  EXPECT_FALSE(autocast_enabled());  // a refused guard leaves the state alone
}

TEST(Autocast, AWeightIsCastOncePerStepAndTheCacheClearsOnExit) {
  const Tensor w = randn({3, 4}).set_requires_grad(true);
  const Tensor x = randn({2, 4});
  Tensor loss;
  {
    AutocastGuard outer(DType::f16);
    const Tensor c1 = autocast_to(w, DType::f16);
    Tensor y1 = linear(x, w, Tensor());
    {
      AutocastGuard inner(DType::f16);  // an inner guard shares the outer step's cache
      Tensor y2 = linear(x, w, Tensor());
      loss = sum(y1) + sum(y2);
    }
    EXPECT_EQ(autocast_cache_size(), 1u);  // one weight, one cast, used three times
    EXPECT_TRUE(autocast_to(w, DType::f16).same_as(c1));
    // Only casts to the autocast dtype of trainable leaves are cached: not another dtype, not
    // activations, not tensors that need no gradient.
    EXPECT_FALSE(autocast_to(w, DType::bf16).same_as(c1));
    autocast_to(x, DType::f16);
    autocast_to(randn({2}), DType::f16);
    EXPECT_EQ(autocast_cache_size(), 1u);
    {
      AutocastGuard inner(DType::bf16);  // a nested guard of the other dtype: its own entry
      autocast_to(w, DType::bf16);
      EXPECT_EQ(autocast_cache_size(), 2u);
    }
    {
      NoGradGuard no_grad;  // a cast without history must not serve a later graph
      EXPECT_FALSE(autocast_to(w, DType::f16).requires_grad());
    }
  }
  EXPECT_EQ(autocast_cache_size(), 0u);
  // The cached cast is differentiable: both uses add into the f32 weight's gradient.
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), DType::f32);
  // d/dw of 2·Σ x·wᵀ = 2·Σ_rows x, the same in every row of the gradient.
  const Tensor expected = (sum(x.to(DType::f16).to(DType::f32), {0}) * 2.0).unsqueeze(0);
  EXPECT_TRUE(all_close(w.grad(), expected.expand({3, 4}), 1e-3, 2e-3));
  // Outside autocast autocast_to is a plain cast (no caching).
  autocast_to(w, DType::f16);
  EXPECT_EQ(autocast_cache_size(), 0u);
}

TEST(Autocast, StateAndCacheAreThreadLocal) {
  AutocastGuard autocast(DType::bf16);
  const Tensor w = randn({3}).set_requires_grad(true);
  autocast_to(w, DType::bf16);
  const std::optional<DType> launcher = autocast_dtype();
  std::size_t cache_in_thread = 99;
  std::thread other([&] {
    EXPECT_FALSE(autocast_enabled());  // a replica thread enters its own guard ...
    AutocastGuard mine(launcher);      // ... with the launching thread's dtype
    EXPECT_EQ(autocast_dtype(), DType::bf16);
    cache_in_thread = autocast_cache_size();
  });
  other.join();
  EXPECT_EQ(cache_in_thread, 0u);
  EXPECT_EQ(autocast_cache_size(), 1u);
}

}  // namespace
}  // namespace rg
