#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/safetensors.h"
#include "nn/layers.h"
#include "nn/models/zoo.h"
#include "tests/support/fixtures.h"

namespace rg::nn {
namespace {
using rg::testing::all_close;
using rg::testing::throws_error;

// Two linear layers around a ReLU, the smallest model with children and nesting.
class Mlp : public Module {
 public:
  Mlp() {
    body_ =
        register_module("body", std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
                                    std::make_shared<Linear>(4, 3), std::make_shared<ReLU>()}));
    head_ = register_module("head", std::make_shared<Linear>(3, 2, Bias::without));
  }
  Tensor forward(const Tensor& x) override { return head_->forward(body_->forward(x)); }
  std::string type_name() const override { return "Mlp"; }

 private:
  std::shared_ptr<Sequential> body_;
  std::shared_ptr<Linear> head_;
};

TEST(Module, NamesNestWithDots) {
  Mlp m;
  std::vector<std::string> names;
  for (auto& [n, t] : m.named_parameters()) {
    names.push_back(n);
    EXPECT_TRUE(t.requires_grad()) << n;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"body.0.weight", "body.0.bias", "head.weight"}));
  EXPECT_EQ(m.parameter_count(), 4 * 3 + 3 + 3 * 2);
  EXPECT_EQ(m.named_modules().size(), 5u);  // Mlp, body, body.0, body.1, head
  EXPECT_NE(m.str().find("(head): Linear(3, 2, bias=false)"), std::string::npos) << m.str();
}

TEST(Module, StateDictRoundTripThroughSafetensors) {
  manual_seed(1);
  Mlp a;
  manual_seed(2);
  Mlp b;
  const std::string path = rg::testing::temp_path("mlp.safetensors");
  save_safetensors(path, a.state_dict());
  Tensor before = b.named_parameters()[0].second;
  b.load_state_dict(load_safetensors(path).tensors);
  EXPECT_TRUE(before.same_as(b.named_parameters()[0].second));  // loaded in place
  Tensor x = randn({5, 4});
  EXPECT_TRUE(all_close(a.forward(x), b.forward(x), 0, 0));
}

TEST(Module, LoadStateDictListsEveryDifference) {
  Mlp m;
  auto state = m.state_dict();
  state.erase("head.weight");
  state["body.0.bias"] = zeros({7});
  state["extra.weight"] = zeros({1});
  EXPECT_TRUE(
      throws_error([&] { m.load_state_dict(state); },
                   {"missing keys (1)", "head.weight", "unexpected keys (1)", "extra.weight",
                    "shape mismatches (1)", "body.0.bias: checkpoint [7], model [3]"}));
  state["body.0.bias"] = zeros({3});
  m.load_state_dict(state, LoadMode::non_strict);  // missing/unexpected tolerated
  EXPECT_EQ(m.state_dict()["body.0.bias"].to_vector<float>(), std::vector<float>(3, 0.f));
}

TEST(Module, ModeAndDtypeConversion) {
  auto net = std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Conv2d>(3, 4, Size2{3, 3}), std::make_shared<BatchNorm2d>(4)});
  net->eval();
  for (auto& [_, m] : net->named_modules()) EXPECT_FALSE(m->is_training());
  net->to(DType::f16);
  auto state = net->state_dict();
  EXPECT_EQ(state["0.weight"].dtype(), DType::f16);
  EXPECT_EQ(state["1.weight"].dtype(), DType::f32);  // BatchNorm stays f32
  EXPECT_EQ(state["1.num_batches_tracked"].dtype(), DType::i64);
  EXPECT_TRUE(net->named_parameters()[0].second.is_leaf());
  EXPECT_TRUE(net->named_parameters()[0].second.requires_grad());
  // f64 is not mixed precision: BatchNorm follows, so an f64 model runs end to end.
  net->to(DType::f64);
  state = net->state_dict();
  EXPECT_EQ(state["1.weight"].dtype(), DType::f64);
  EXPECT_EQ(state["1.running_var"].dtype(), DType::f64);
  EXPECT_EQ(net->forward(randn({1, 3, 5, 5}, {DType::f64})).dtype(), DType::f64);
}

TEST(Layers, InitialisationFollowsTheReferences) {
  manual_seed(0);
  Conv2d conv(64, 128, {3, 3}, {.bias = Bias::without});
  std::vector<double> w = conv.weight_.to_vector<double>();
  double s2 = 0;
  for (double v : w) s2 += v * v;
  // Kaiming normal, fan_out = 128·9: std = sqrt(2 / 1152).
  EXPECT_NEAR(std::sqrt(s2 / w.size()), std::sqrt(2.0 / 1152), 0.002);
  Linear lin(100, 10);
  for (double v : lin.weight_.to_vector<double>()) EXPECT_LE(std::fabs(v), 0.1);
  BatchNorm2d bn(8);
  EXPECT_EQ(bn.weight_.to_vector<float>(), std::vector<float>(8, 1.f));
  EXPECT_EQ(bn.bias_.to_vector<float>(), std::vector<float>(8, 0.f));
}

TEST(Layers, BatchNormTracksBatches) {
  BatchNorm2d bn(2);
  Tensor x = randn({4, 2, 3, 3});
  bn.forward(x);
  bn.forward(x);
  EXPECT_EQ(bn.num_batches_tracked_.item(), 2);
  bn.eval();
  bn.forward(x);
  EXPECT_EQ(bn.num_batches_tracked_.item(), 2);
  EXPECT_TRUE(throws_error([&] { bn.forward(randn({4, 2})); }, {"BatchNorm2d", "[4, 2]"}));
}

// forward_relu is relu(forward(x)) through the fused op: the same batch count, running stats
// and (up to batch_norm_relu's fma, see ops/batch_norm/batch_norm.h) outputs and gradients.
// A subclass that overrides forward gets its own forward, then relu.
TEST(Layers, BatchNormForwardReluIsReluOfForward) {
  const Tensor x = randn({4, 3, 5, 5}) * 2.0 + 0.5;
  BatchNorm2d fused(3), plain(3);
  {
    NoGradGuard no_grad;
    copy_strided(fused.weight_, rand({3}) + 0.5);
    copy_strided(fused.bias_, randn({3}));
  }
  plain.load_state_dict(fused.state_dict());
  for (Mode mode : {Mode::train, Mode::eval}) {
    fused.set_mode(mode);
    plain.set_mode(mode);
    Tensor xf = x.clone().set_requires_grad(true), xp = x.clone().set_requires_grad(true);
    Tensor yf = fused.forward_relu(xf), yp = relu(plain.forward(xp));
    EXPECT_TRUE(all_close(yf, yp, 1e-6, 1e-6));
    sum(yf * yf).backward();
    sum(yp * yp).backward();
    EXPECT_TRUE(all_close(xf.grad(), xp.grad(), 1e-5, 1e-5));
  }
  EXPECT_TRUE(all_close(fused.running_mean_, plain.running_mean_, 0, 0));
  EXPECT_TRUE(all_close(fused.running_var_, plain.running_var_, 0, 0));
  EXPECT_EQ(fused.num_batches_tracked_.item(), 1);

  struct Doubled : BatchNorm2d {
    Doubled() : BatchNorm2d(3) {}
    Tensor forward(const Tensor& in) override { return BatchNorm2d::forward(in) * 2.0; }
  } doubled;
  BatchNorm2d base(3);
  EXPECT_TRUE(all_close(doubled.forward_relu(x), relu(base.forward(x)) * 2.0, 1e-6, 1e-6));
}

// forward_gelu is gelu(forward(x)) through the fused op batch_norm_gelu, as forward_relu is for
// relu: the same batch count and running stats, outputs and gradients up to the fused op's fma.
TEST(Layers, BatchNormForwardGeluIsGeluOfForward) {
  const Tensor x = randn({4, 3, 5, 5}) * 2.0 + 0.5;
  BatchNorm2d fused(3), plain(3);
  {
    NoGradGuard no_grad;
    copy_strided(fused.weight_, rand({3}) + 0.5);
    copy_strided(fused.bias_, randn({3}));
  }
  plain.load_state_dict(fused.state_dict());
  for (Mode mode : {Mode::train, Mode::eval}) {
    fused.set_mode(mode);
    plain.set_mode(mode);
    Tensor xf = x.clone().set_requires_grad(true), xp = x.clone().set_requires_grad(true);
    Tensor yf = fused.forward_gelu(xf), yp = gelu(plain.forward(xp));
    EXPECT_TRUE(all_close(yf, yp, 1e-6, 1e-6));
    sum(yf * yf).backward();
    sum(yp * yp).backward();
    EXPECT_TRUE(all_close(xf.grad(), xp.grad(), 1e-5, 1e-5));
  }
  EXPECT_TRUE(all_close(fused.running_mean_, plain.running_mean_, 0, 0));
  EXPECT_TRUE(all_close(fused.running_var_, plain.running_var_, 0, 0));
  EXPECT_EQ(fused.num_batches_tracked_.item(), 1);

  struct Doubled : BatchNorm2d {
    Doubled() : BatchNorm2d(3) {}
    Tensor forward(const Tensor& in) override { return BatchNorm2d::forward(in) * 2.0; }
  } doubled;
  BatchNorm2d base(3);
  EXPECT_TRUE(all_close(doubled.forward_gelu(x), gelu(base.forward(x) * 2.0), 1e-6, 1e-6));
}

TEST(Models, ResNet18ParameterCountMatchesPyTorch) {
  // torchvision-style CIFAR ResNet18 of pytorch-cifar, counted with PyTorch:
  // sum(p.numel() for p in ResNet18().parameters()) == 11173962.
  EXPECT_EQ(make_model("resnet18")->parameter_count(), 11173962);
  // ResNet-20 with projection shortcuts: 0.27 M.
  EXPECT_EQ(make_model("resnet20")->parameter_count(), 272474);
  EXPECT_LT(make_model("resnet18@0.5")->parameter_count(), 11173962 / 3);
}

TEST(Models, ForwardShapesAndBackward) {
  auto model = make_model("resnet20@0.25");
  Tensor x = randn({2, 3, 32, 32});
  Tensor y = model->forward(x);
  EXPECT_EQ(y.shape(), (Shape{2, 10}));
  cross_entropy(y, from_vector<int64_t>({1, 7}, {2}, {DType::i64})).backward();
  for (auto& [name, p] : model->named_parameters()) EXPECT_TRUE(p.grad().defined()) << name;
  EXPECT_TRUE(throws_error([] { make_model("vgg"); }, {"unknown model 'vgg'", "resnet18"}));
  EXPECT_TRUE(throws_error([] { make_model("resnet18@x"); }, {"width multiplier"}));
}

// A Linear that doubles its output: a subclass that may take a Linear member's place.
class DoubledLinear : public Linear {
 public:
  using Linear::Linear;
  Tensor forward(const Tensor& x) override { return Linear::forward(x) * 2.0; }
  std::string type_name() const override { return "DoubledLinear"; }
};

// Holds its head by address (rebindable) and its body by value.
class Net : public Module {
 public:
  Net() {
    body_ = register_module(
        "body", std::make_shared<Sequential>(
                    std::vector<std::shared_ptr<Module>>{std::make_shared<Linear>(2, 2)}));
    head_ = std::make_shared<Linear>(2, 1);
    register_module("head", &head_);
  }
  Tensor forward(const Tensor& x) override { return head_->forward(body_->forward(x)); }
  std::string type_name() const override { return "Net"; }
  std::shared_ptr<Sequential> body_;
  std::shared_ptr<Linear> head_;
};

TEST(Module, ReplaceChildRebindsTheMemberForwardCalls) {
  Net net;
  Tensor x = randn({3, 2});
  const Tensor before = net.forward(x);
  auto doubled = std::make_shared<DoubledLinear>(2, 1);
  doubled->load_state_dict(net.head_->state_dict());
  net.replace_child("head", doubled);
  EXPECT_EQ(net.head_.get(), doubled.get());  // the typed member follows the registry
  EXPECT_EQ(net.children()[1].second.get(), doubled.get());
  EXPECT_TRUE(all_close(net.forward(x), before * 2.0, 1e-6, 1e-6));
  EXPECT_NE(net.str().find("(head): DoubledLinear"), std::string::npos);
  // Sequential calls its children through the registry: a by-value child may be replaced.
  auto inner = std::make_shared<DoubledLinear>(2, 2);
  net.body_->replace_child("0", inner);
  EXPECT_EQ(net.named_parameters()[0].second.impl(), inner->weight_.impl());
}

TEST(Module, ReplaceChildRefusesWhatWouldBeSilentlyIgnored) {
  Net net;
  EXPECT_TRUE(throws_error([&] { net.replace_child("head", std::make_shared<ReLU>()); },
                           {"Net.replace_child('head')", "ReLU", "Linear"}));
  EXPECT_TRUE(throws_error(
      [&] { net.replace_child("body", std::make_shared<Sequential>()); },
      {"Net.replace_child('body')", "registered by value", "register_module(\"body\", &member_)"}));
  EXPECT_TRUE(throws_error([&] { net.replace_child("tail", std::make_shared<ReLU>()); },
                           {"no child named 'tail'", "body, head"}));
  EXPECT_TRUE(throws_error([&] { net.replace_child("head", nullptr); }, {"null"}));
  EXPECT_EQ(net.head_->type_name(), "Linear");  // nothing changed
}

// A wrapper whose state dict is its wrapped module's, without a prefix (as DDP).
class Wrapper : public Module {
 public:
  explicit Wrapper(std::shared_ptr<Module> inner) : inner_(inner) {
    register_wrapped_module(inner);
  }
  Tensor forward(const Tensor& x) override { return inner_->forward(x); }
  std::string type_name() const override { return "Wrapper"; }
  void wrap(std::shared_ptr<Module> m) { register_wrapped_module(m); }
  std::shared_ptr<Module> inner_;
};

TEST(Module, WrappedModuleNamesCarryNoPrefix) {
  auto net = std::make_shared<Net>();
  Wrapper w(net);
  EXPECT_EQ(w.state_dict().size(), net->state_dict().size());
  for (auto& [name, t] : net->named_parameters()) EXPECT_TRUE(w.state_dict().count(name)) << name;
  Net plain;
  plain.load_state_dict(w.state_dict());  // strict: same keys
  Tensor x = randn({2, 2});
  EXPECT_TRUE(all_close(plain.forward(x), w.forward(x), 0, 0));
  EXPECT_EQ(w.parameters().size(), net->parameters().size());
  w.eval();
  EXPECT_FALSE(net->head_->is_training());
  EXPECT_NE(w.str().find("(module): Net("), std::string::npos) << w.str();
  EXPECT_TRUE(throws_error([&] { w.wrap(net); }, {"already"}));
}

}  // namespace
}  // namespace rg::nn

#include "nn/loss.h"

namespace rg::nn {
namespace {
TEST(Losses, ModulesCallTheirOps) {
  Tensor logits = randn({4, 3});
  Tensor target = from_vector<int64_t>({0, 2, 1, 2}, {4}, {DType::i64});
  CrossEntropyLoss ce({.label_smoothing = 0.1});
  EXPECT_TRUE(rg::testing::all_close(
      ce(logits, target), cross_entropy(logits, target, Tensor(), Reduction::mean, -100, 0.1), 0,
      0));
  Tensor y = randn({4, 3});
  EXPECT_TRUE(rg::testing::all_close(MSELoss(Reduction::sum)(logits, y),
                                     mse_loss(logits, y, Reduction::sum), 0, 0));
  Tensor p = rand({4, 3});
  EXPECT_TRUE(rg::testing::all_close(BCEWithLogitsLoss()(logits, p),
                                     binary_cross_entropy_with_logits(logits, p), 0, 0));
}
}  // namespace
}  // namespace rg::nn
