#include <gtest/gtest.h>

#include "core/autograd.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using testing::throws_error;

Tensor vec(std::vector<double> v) {
  return from_vector(v, {static_cast<int64_t>(v.size())});
}

TEST(Autograd, AccumulatesAcrossUsesAndBackwardCalls) {
  Tensor x = vec({1, 2, 3}).set_requires_grad(true);
  Tensor y = relu(x + x);  // x used twice: gradients add
  y.backward(ones({3}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 2, 2}));
  relu(x).backward(ones({3}));  // a second graph accumulates into the same .grad
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{3, 3, 3}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

// A gradient that is a view into someone's buffer (DDP's buckets): backward accumulates into the
// buffer, zero_grad zeroes it there, set_grad ends it.
TEST(Autograd, AGradientViewIsAccumulatedIntoAndZeroedInPlace) {
  Tensor buffer = zeros({7});
  Tensor x = vec({1, 2, 3}).set_requires_grad(true);
  x.set_grad_view(buffer.view_slice_as(2, {3}, MemoryFormat::contiguous));
  EXPECT_TRUE(x.grad_is_view());
  (x * 2.0).backward(ones({3}));
  (x * 3.0).backward(ones({3}));
  EXPECT_EQ(buffer.to_vector<float>(), (std::vector<float>{0, 0, 5, 5, 5, 0, 0}));
  x.zero_grad();
  ASSERT_TRUE(x.grad().defined());  // zeroed, not dropped
  EXPECT_EQ(buffer.to_vector<float>(), std::vector<float>(7, 0.f));
  x.set_grad(Tensor());
  EXPECT_FALSE(x.grad_is_view());
  EXPECT_TRUE(throws_error([&] { x.set_grad_view(Tensor()); }, {"set_grad_view"}));
  // A channels-last view of a flat slice: the gradient keeps the parameter's layout.
  Tensor w = zeros({2, 3, 2, 2}).contiguous(MemoryFormat::channels_last).set_requires_grad(true);
  Tensor flat = zeros({30});
  w.set_grad_view(flat.view_slice_as(6, w.shape(), w.suggest_memory_format()));
  EXPECT_TRUE(w.grad().is_contiguous(MemoryFormat::channels_last));
  EXPECT_TRUE(throws_error([&] { flat.view_slice_as(20, w.shape(), MemoryFormat::contiguous); },
                           {"view_slice_as", "24 elements from 20"}));
}

TEST(Autograd, LeafAndHistory) {
  Tensor x = vec({1, -1}).set_requires_grad(true);
  EXPECT_TRUE(x.is_leaf());
  Tensor y = relu(x);
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "ReluBackward");
  EXPECT_TRUE(y.requires_grad());
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.storage().same_as(y.storage()));
  EXPECT_TRUE(throws_error([&] { y.set_requires_grad(false); }, {"leaf", "ReluBackward"}));
  EXPECT_TRUE(throws_error([] { ones({2}, {DType::i64}).set_requires_grad(true); },
                           {"floating", "[2] i64 cpu"}));
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor x = vec({1, 2}).set_requires_grad(true);
  {
    NoGradGuard guard;
    EXPECT_FALSE(GradMode::is_enabled());
    Tensor y = relu(x);
    EXPECT_FALSE(y.requires_grad());
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_TRUE(relu(x).requires_grad());
}

TEST(Autograd, ClearErrors) {
  Tensor x = vec({1, 2}).set_requires_grad(true);
  EXPECT_TRUE(
      throws_error([&] { relu(x).backward(); },
                   {"implicitly created only for outputs with one element", "[2] f32 cpu"}));
  EXPECT_TRUE(throws_error([] { vec({1}).backward(); }, {"does not require grad"}));
  Tensor s = vec({2}).set_requires_grad(true);
  Tensor y = relu(s + 1.0);
  y.backward();
  EXPECT_TRUE(throws_error([&] { y.backward(); }, {"second time", "retain_graph"}));
  Tensor z = relu(s + 1.0);
  z.backward(Tensor(), /*retain_graph=*/true);
  z.backward();
  EXPECT_EQ(s.grad().to_vector<float>(), (std::vector<float>{3}));
  EXPECT_TRUE(throws_error([&] { relu(x).backward(ones({3})); }, {"does not match", "[3]", "[2]"}));
}

TEST(Autograd, PostAccumulateHooksRunAfterEachAccumulation) {
  Tensor w1 = vec({1, 2}).set_requires_grad(true);
  Tensor w2 = vec({3, 4}).set_requires_grad(true);
  std::vector<std::string> order;
  std::vector<float> seen;
  w1.register_post_accumulate_hook([&](const Tensor& leaf) {
    order.push_back("w1");
    seen = leaf.grad().to_vector<float>();
  });
  w2.register_post_accumulate_hook([&](const Tensor&) { order.push_back("w2"); });
  // w1 is used first in the forward pass, so its gradient is ready last (reverse order),
  // which is the order DDP buckets rely on.
  Tensor h = relu(w1 + 1.0);
  Tensor y = relu(h + w2);
  y.backward(ones({2}));
  EXPECT_EQ(order, (std::vector<std::string>{"w2", "w1"}));
  EXPECT_EQ(seen, (std::vector<float>{1, 1}));
  EXPECT_TRUE(
      throws_error([&] { y.register_post_accumulate_hook([](const Tensor&) {}); }, {"leaf"}));
}

TEST(Autograd, BackwardCallbacksRunOnceBackwardHasFinished) {
  Tensor w1 = vec({1, 2}).set_requires_grad(true);
  Tensor w2 = vec({3, 4}).set_requires_grad(true);
  std::vector<std::string> order;
  // Queued from the first hook (w2's): runs after w1 has been accumulated too.
  w2.register_post_accumulate_hook([&](const Tensor&) {
    order.push_back("w2");
    queue_backward_callback([&] {
      order.push_back(w1.grad().defined() ? "end (w1 ready)" : "end (w1 missing)");
      queue_backward_callback([&] { order.push_back("queued by a callback"); });
    });
  });
  w1.register_post_accumulate_hook([&](const Tensor&) { order.push_back("w1"); });
  relu(relu(w1 + 1.0) + w2).backward(ones({2}));
  EXPECT_EQ(order,
            (std::vector<std::string>{"w2", "w1", "end (w1 ready)", "queued by a callback"}));
  // The next backward starts with an empty list; outside backward there is none.
  order.clear();
  w2.zero_grad();
  (w2 * 2.0).backward(ones({2}));
  EXPECT_EQ(order.size(), 3u);
  EXPECT_TRUE(throws_error([] { queue_backward_callback([] {}); }, {"no backward pass"}));
  // An error in a callback comes out of backward().
  Tensor w3 = vec({1}).set_requires_grad(true);
  w3.register_post_accumulate_hook(
      [](const Tensor&) { queue_backward_callback([] { fail("callback failed"); }); });
  EXPECT_TRUE(throws_error([&] { (w3 * 2.0).backward(ones({1})); }, {"callback failed"}));
}

TEST(Autograd, ViewsAndCopiesAreDifferentiable) {
  using testing::grad_input;
  using testing::gradcheck;
  auto check = [](testing::TensorFn fn, Shape shape) {
    EXPECT_TRUE(gradcheck(fn, {grad_input(shape)}));
  };
  check([](const std::vector<Tensor>& in) { return in[0].transpose(0, 1).reshape({6}); }, {2, 3});
  check([](const std::vector<Tensor>& in) { return in[0].narrow(1, 1, 2); }, {2, 3});
  check([](const std::vector<Tensor>& in) { return in[0].select(0, 1); }, {2, 3});
  check([](const std::vector<Tensor>& in) { return in[0].unsqueeze(1).expand({2, 4, 3}); }, {2, 3});
  check(
      [](const std::vector<Tensor>& in) {
        return in[0].view({3, 2}).squeeze(0).clone();
      },
      {2, 3});
  check([](const std::vector<Tensor>& in) { return in[0].transpose(0, 1).contiguous(); }, {2, 3});
  // A dtype round trip loses too much for finite differences: check the gradient directly.
  Tensor x = testing::grad_input({2, 3});
  x.to(DType::f32).to(DType::f64).backward(full({2, 3}, 0.5, {DType::f64}));
  EXPECT_EQ(x.grad().dtype(), DType::f64);
  EXPECT_EQ(x.grad().to_vector<double>(), std::vector<double>(6, 0.5));
  check([](const std::vector<Tensor>& in) { return in[0].flatten(); }, {2, 3});
}

TEST(Autograd, SumToShapeReducesBroadcastDims) {
  Tensor g = arange(0, 6, 1, {DType::f64}).reshape({2, 3});
  EXPECT_EQ(sum_to_shape(g, {3}).to_vector<double>(), (std::vector<double>{3, 5, 7}));
  EXPECT_EQ(sum_to_shape(g, {2, 1}).to_vector<double>(), (std::vector<double>{3, 12}));
  EXPECT_EQ(sum_to_shape(g, {1}).to_vector<double>(), (std::vector<double>{15}));
  EXPECT_TRUE(throws_error([&] { sum_to_shape(g, {4}); }, {"sum_to_shape", "[4]"}));
}

// record_backward's node (core/autograd.h): the closure's rule runs as the backward, with the
// gradients in the inputs' order, and the closure — with everything it captured — is destroyed
// once a backward without retain_graph has run, as release_saved() frees a Node class's members.
TEST(Autograd, RecordBackwardRunsTheRuleAndReleasesWhatItCaptured) {
  Tensor a = vec({1, 2}).set_requires_grad(true), b = vec({3, 4}).set_requires_grad(true);
  auto witness = std::make_shared<int>(0);  // stands for the memory the rule saves
  const std::weak_ptr<int> capture = witness;
  Tensor y = a.detach() * b.detach();  // the forward, without history
  record_backward("MulRuleBackward", {a, b}, y,
                  [witness = std::move(witness), a = saved(a), b = saved(b)](const Tensor& gy) {
                    return Grads{gy * b, gy * a};
                  });
  EXPECT_EQ(y.grad_fn()->name(), "MulRuleBackward");
  EXPECT_FALSE(capture.expired());
  y.backward(ones({2}), /*retain_graph=*/true);  // kept for a second backward
  EXPECT_FALSE(capture.expired());
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{1, 2}));
  y.backward(ones({2}));
  EXPECT_TRUE(capture.expired());  // released with the closure
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{6, 8}));
  EXPECT_TRUE(throws_error([&] { y.backward(ones({2})); }, {"second time", "MulRuleBackward"}));
}

// A rule over several outputs gets every output's gradient (zeros for one that got none).
TEST(Autograd, RecordBackwardOfSeveralOutputs) {
  Tensor x = vec({1, 2, 3, 4}).set_requires_grad(true);
  Tensor first = x.detach().narrow(0, 0, 2).clone(), second = x.detach().narrow(0, 2, 2).clone();
  record_backward("SplitRuleBackward", {x}, {&first, &second}, [](const std::vector<Tensor>& g) {
    return Grads{cat({g[0], g[1]}, 0)};
  });
  EXPECT_EQ(second.grad_fn(), first.grad_fn());
  EXPECT_EQ(second.output_nr(), 1);
  (first * 2.0).backward(ones({2}));  // second gets no gradient: zeros
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 2, 0, 0}));
}

}  // namespace
}  // namespace rg
