// The pytorch-cifar (kuangliu) models of nn/models/: each is built through make_model and compared
// with pytorch-cifar's own definition (tests/fixtures/model_zoo_parameters.txt, written by
// tools/pytorch_cifar_zoo.py: the parameter count, and the number and a hash of the parameters'
// and buffers' names and shapes in registration order — the state_dict's keys, so that
// pytorch-cifar checkpoints load into ours). What they compute is compared in
// model_zoo_parity_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "core/rng.h"
#include "nn/models/efficientnet.h"
#include "nn/models/zoo.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/zoo_fill.h"

namespace rg::nn {
namespace {

using rg::testing::throws_error;

struct Reference {
  int64_t parameter_count = -1;
  int64_t params = -1, buffers = -1;
  std::string params_hash, buffers_hash;
};

// The fixture's line "model <name> <count> params <n> <hash> buffers <n> <hash>".
Reference load_reference(const std::string& model) {
  const std::string path = std::string(RG_FIXTURE_DIR) + "/model_zoo_parameters.txt";
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot open " << path;
  Reference ref;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string first, name, word;
    fields >> first >> name;
    if (first != "model" || name != model) continue;
    fields >> ref.parameter_count >> word >> ref.params >> ref.params_hash >> word >> ref.buffers >>
        ref.buffers_hash;
  }
  EXPECT_GE(ref.parameter_count, 0) << "no model '" << model << "' in " << path;
  return ref;
}

std::string shape_text(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string text;
  for (auto d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text;
}

// "name shape" lines, as tools/pytorch_cifar_zoo.py --describe prints them.
std::string listing(const std::vector<std::pair<std::string, Tensor>>& entries) {
  std::string text;
  for (const auto& [key, t] : entries) text += key + " " + shape_text(t.shape()) + "\n";
  return text;
}

std::string hex(uint64_t h) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

void expect_matches_pytorch(const std::string& name) {
  SCOPED_TRACE(name);
  const Reference ref = load_reference(name);
  auto model = make_model(name, 10);
  EXPECT_EQ(model->parameter_count(), ref.parameter_count);
  const auto params = model->named_parameters();
  const auto buffers = model->named_buffers();
  const std::string ours = listing(params), our_buffers = listing(buffers);
  EXPECT_EQ(static_cast<int64_t>(params.size()), ref.params);
  EXPECT_EQ(static_cast<int64_t>(buffers.size()), ref.buffers);
  EXPECT_EQ(hex(rg::testing::fnv1a64(ours)), ref.params_hash)
      << "the parameters' names or shapes differ from PyTorch's; compare with "
         "tools/pytorch_cifar_zoo.py --describe "
      << name << ". Ours:\n"
      << ours;
  EXPECT_EQ(hex(rg::testing::fnv1a64(our_buffers)), ref.buffers_hash)
      << "the buffers' names or shapes differ from PyTorch's. Ours:\n"
      << our_buffers;
}

// Every zoo classifier with a twin (resnet20 and airbench have none).
class ZooNames : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooNames, MatchPyTorch) {
  expect_matches_pytorch(GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    PyTorchCifar, ZooNames,
    ::testing::Values("airbench94", "vgg11", "vgg13", "vgg16", "vgg19", "resnet18", "resnet34",
                      "resnet50", "resnet101", "resnet152", "preactresnet18", "preactresnet34",
                      "preactresnet50", "preactresnet101", "preactresnet152", "mobilenet",
                      "mobilenetv2", "regnetx_200mf", "regnetx_400mf", "regnety_400mf",
                      "resnext29_2x64d", "resnext29_4x64d", "resnext29_8x64d", "resnext29_32x4d",
                      "simpledla", "dla", "densenet121", "densenet161", "densenet169",
                      "densenet201", "densenet_cifar", "dpn26", "dpn92", "googlenet", "senet18",
                      "shufflenetv2", "efficientnetb0", "lenet", "pnasneta", "pnasnetb"),
    [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(ModelZoo, Airbench94StartsAsAirbench94Does) {
  auto model = make_model("airbench94");
  std::map<std::string, Tensor> p;
  for (const auto& [key, t] : model->named_parameters()) p[key] = t;
  // BatchNorm weights fixed at 1; only the biases train.
  EXPECT_FALSE(p.at("group2.norm1.weight").requires_grad());
  EXPECT_TRUE(p.at("group2.norm1.bias").requires_grad());
  EXPECT_EQ(sum(p.at("group2.norm1.weight")).item(), 256.0);
  // Dirac: the first `in` filters of each 3x3 conv are identity maps, the others random.
  const Tensor w = p.at("group2.conv1.weight").contiguous();  // (256, 64, 3, 3)
  const float* v = w.data<float>();
  for (int64_t o : {0, 17, 63})
    for (int64_t i = 0; i < 64; ++i)
      for (int64_t k = 0; k < 9; ++k)
        ASSERT_EQ(v[(o * 64 + i) * 9 + k], (i == o && k == 4) ? 1.0f : 0.0f) << o << " " << i;
  EXPECT_NE(v[(64 * 64 + 64) * 9 + 4], 1.0f);  // filter 64, past the identity block
  // The whitening bias starts at 0.
  const Tensor b = p.at("whiten.bias");
  EXPECT_EQ(sum(mul(b, b)).item(), 0.0);
}

TEST(ModelZoo, NamesAreListed) {
  const auto names = model_names();
  // pytorch-cifar's README table, then airbench94.
  for (const char* name :
       {"vgg16", "resnet18", "resnet50", "resnet101", "regnetx_200mf", "regnety_400mf",
        "mobilenetv2", "resnext29_32x4d", "resnext29_2x64d", "simpledla", "densenet121",
        "preactresnet18", "dpn92", "dla", "airbench94"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_TRUE(throws_error([] { make_model("vgg17"); }, {"unknown model 'vgg17'", "mobilenetv2"}));
}

TEST(ModelZoo, FixedWidthModelsRejectAMultiplier) {
  for (const char* name : {"vgg16@0.5", "preactresnet18@2", "mobilenetv2@0.5", "airbench94@0.5",
                           "densenet121@0.5", "dpn92@2", "regnetx_200mf@0.5"}) {
    EXPECT_TRUE(throws_error([&] { make_model(name); }, {name, "takes no width multiplier"}));
  }
  EXPECT_LT(make_model("resnet50@0.5")->parameter_count(), 23520842 / 3);
}

// ShuffleNetV2's suffix is pytorch-cifar's net_size, one of its four configurations.
TEST(ModelZoo, ShuffleNetV2TakesPyTorchCifarsNetSizes) {
  EXPECT_LT(make_model("shufflenetv2@0.5")->parameter_count(),
            make_model("shufflenetv2")->parameter_count());
  EXPECT_TRUE(throws_error([] { make_model("shufflenetv2@0.7"); },
                           {"net_size is 0.5, 1, 1.5 or 2", "0.7"}));
}

}  // namespace
}  // namespace rg::nn

namespace rg::nn {
namespace {

// EfficientNet's stochastic depth: a whole sample's branch is kept or dropped, the kept ones
// scaled by 1/(1 − p), about a fraction p dropped; nothing in eval mode or at p = 0.
TEST(DropConnect, DropsWholeSamplesAtRatePAndKeepsTheMean) {
  manual_seed(7);
  const double p = 0.2;
  const int64_t n = 20000;
  Tensor x = ones({n, 3, 2, 2}).set_requires_grad(true);
  const Tensor y = drop_connect(x, p, Mode::train);
  sum(y).backward();
  const std::vector<float> v = y.to_vector<float>(), g = x.grad().to_vector<float>();
  const float kept = static_cast<float>(1.0 / (1.0 - p));
  int64_t dropped = 0;
  double total = 0;
  for (int64_t s = 0; s < n; ++s) {
    const float first = v[static_cast<std::size_t>(s * 12)];
    ASSERT_TRUE(first == 0.0f || first == kept) << "sample " << s << ": " << first;
    for (int64_t i = 0; i < 12; ++i) {
      const auto k = static_cast<std::size_t>(s * 12 + i);
      ASSERT_EQ(v[k], first) << "sample " << s << " is not dropped or kept whole";
      ASSERT_EQ(g[k], first) << "the gradient takes the sample's mask and scale";
      total += v[k];
    }
    dropped += first == 0.0f;
  }
  // Binomial(n, p): standard deviation sqrt(n p (1 − p)) ≈ 57 samples; within 5 of them.
  EXPECT_NEAR(static_cast<double>(dropped), p * n, 5 * std::sqrt(n * p * (1 - p)));
  EXPECT_NEAR(total / static_cast<double>(n * 12), 1.0, 5 * std::sqrt(p / (1 - p) / n));

  EXPECT_TRUE(drop_connect(x, p, Mode::eval).same_as(x));
  EXPECT_TRUE(drop_connect(x, 0.0, Mode::train).same_as(x));
  for (double bad : {-0.1, 1.0})
    EXPECT_TRUE(throws_error([&] { drop_connect(x, bad, Mode::train); },
                             {"drop_connect", "p must be in [0, 1)"}));
}

std::vector<double> drop_rates(Module& model) {
  std::vector<double> rates;
  for (const auto& [name, m] : model.named_modules())
    if (const auto* block = dynamic_cast<const EfficientNetBlock*>(m))
      rates.push_back(block->drop_rate());
  return rates;
}

// pytorch-cifar's EfficientNetB0 computes every block's rate as 0 (its counter never advances);
// DropConnect::linear ramps it as the paper does. In eval mode both compute the same.
TEST(DropConnect, EfficientNetRatesAndEvalParity) {
  EfficientNet cifar, ramped(EfficientNetConfig{.drop_connect = DropConnect::linear});
  const std::vector<double> zero = drop_rates(cifar), ramp = drop_rates(ramped);
  ASSERT_EQ(zero.size(), 16u);
  ASSERT_EQ(ramp.size(), 16u);
  for (std::size_t b = 0; b < 16; ++b) {
    EXPECT_EQ(zero[b], 0.0);
    EXPECT_DOUBLE_EQ(ramp[b], 0.2 * static_cast<double>(b) / 16);
  }
  ramped.load_state_dict(cifar.state_dict());
  cifar.eval();
  ramped.eval();
  NoGradGuard no_grad;
  const Tensor x = randn({2, 3, 32, 32});
  EXPECT_TRUE(rg::testing::all_close(ramped.forward(x), cifar.forward(x), 0, 0));
  // In train mode the ramped blocks draw their masks: the two differ.
  cifar.train();
  ramped.train();
  EXPECT_FALSE(rg::testing::all_close(ramped.forward(x), cifar.forward(x), 1e-6, 0));
}

}  // namespace
}  // namespace rg::nn
