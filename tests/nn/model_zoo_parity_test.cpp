// Every pytorch-cifar model of the zoo computes what pytorch-cifar's own definition computes, at
// full size: the same weights (tests/support/zoo_fill.h, a formula of each entry's name, loaded
// strictly, so every key and shape must fit), the same input, then the eval-mode logits, and one
// train-mode step's logits, loss, every parameter's gradient and every BatchNorm statistic after
// it, against tests/fixtures/model_zoo_values.safetensors (tools/pytorch_cifar_zoo.py, which
// imports kuangliu's models). Gradients and statistics are compared through two numbers per
// tensor — the dot product with a formula vector r and the norm — in f64; where the values file
// holds a tensor whole (RG_ZOO_VALUES=<file>: the script's --full run), element by element too.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "nn/models/efficientnet.h"
#include "nn/models/zoo.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/zoo_fill.h"

namespace rg::nn {
namespace {

using rg::testing::all_close;
using rg::testing::zoo_fill;
using rg::testing::zoo_uniform;

// Every zoo classifier with a pytorch-cifar twin (airbench, airbench94 and resnet20 have none).
const std::vector<std::string> kModels = {
    "vgg11",           "vgg13",           "vgg16",           "vgg19",           "resnet18",
    "resnet34",        "resnet50",        "resnet101",       "resnet152",       "preactresnet18",
    "preactresnet34",  "preactresnet50",  "preactresnet101", "preactresnet152", "mobilenet",
    "mobilenetv2",     "regnetx_200mf",   "regnetx_400mf",   "regnety_400mf",   "resnext29_2x64d",
    "resnext29_4x64d", "resnext29_8x64d", "resnext29_32x4d", "simpledla",       "dla",
    "densenet121",     "densenet161",     "densenet169",     "densenet201",     "densenet_cifar",
    "dpn26",           "dpn92",           "googlenet",       "senet18",         "shufflenetv2",
    "efficientnetb0",  "lenet",           "pnasneta",        "pnasnetb"};

const SafetensorsFile& values() {
  static const SafetensorsFile file = [] {
    const char* path = std::getenv("RG_ZOO_VALUES");
    return load_safetensors(path ? std::string(path)
                                 : std::string(RG_FIXTURE_DIR) + "/model_zoo_values.safetensors");
  }();
  return file;
}

const Tensor* value(const std::string& key) {
  const auto it = values().tensors.find(key);
  return it == values().tensors.end() ? nullptr : &it->second;
}

std::shared_ptr<Module> build(const std::string& name) {
  // The twin's dropout draws from PyTorch's generator: both sides run the step without it.
  if (name == "efficientnetb0")
    return std::make_shared<EfficientNet>(EfficientNetConfig{.dropout_rate = 0});
  return make_model(name, 10);
}

// The formula's state for `model`: every parameter and buffer by its name and shape.
std::map<std::string, Tensor> formula_state(const Module& model) {
  std::map<std::string, Tensor> state;
  for (const auto& [key, t] : model.state_dict()) state[key] = zoo_fill(key, t.shape());
  return state;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.to_vector<double>()) m = std::max(m, std::fabs(v));
  return m;
}

struct Stats {
  double dot = 0, norm = 0;
};

Stats stats_of(const std::string& key, const Tensor& t) {
  const std::vector<double> v = t.contiguous().to_vector<double>();
  const std::vector<double> r = zoo_uniform(key + "#r", static_cast<int64_t>(v.size()));
  Stats s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    s.dot += v[i] * r[i];
    s.norm += v[i] * v[i];
  }
  s.norm = std::sqrt(s.norm);
  return s;
}

// Row i of an (n, 2) table of statistics.
Stats row(const Tensor& table, int64_t i) {
  const Tensor r = table.select(0, i).to(DType::f64).contiguous();
  const std::vector<double> v = r.to_vector<double>();
  return {v[0], v[1]};
}

// Rounding errors move the dot product with r by about |error| / sqrt(3) (r's elements have
// variance 1/3, and rounding errors point nowhere in particular), while a misplaced gradient —
// a wrong group, channel or branch — moves it by about |g| · sqrt(2/3): the dot product sees
// what the norm alone would not. `scale`: an absolute floor (the model's whole gradient norm
// times a small factor) for tensors whose true value is ~0, such as the bias of a convolution
// that a train-mode BatchNorm follows.
::testing::AssertionResult stats_close(const std::string& key, const Stats& ours, const Stats& ref,
                                       double rtol, double floor) {
  const double tol = rtol * ref.norm + floor;
  if (std::fabs(ours.norm - ref.norm) <= tol && std::fabs(ours.dot - ref.dot) <= tol)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << key << ": norm " << ours.norm << " vs PyTorch's " << ref.norm << ", dot with r "
         << ours.dot << " vs " << ref.dot << " (tolerance " << tol << ")";
}

class ZooParity : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooParity, MatchesPyTorchForwardAndOneTrainStep) {
  const std::string name = GetParam();
  const Tensor* loss_ref = value(name + ".loss");
  if (!loss_ref && std::getenv("RG_ZOO_VALUES"))
    GTEST_SKIP() << "RG_ZOO_VALUES holds no values of " << name;
  ASSERT_NE(loss_ref, nullptr) << "no values of " << name
                               << " in the fixture (tools/pytorch_cifar_zoo.py)";
  auto model = build(name);
  model->load_state_dict(formula_state(*model));  // strict: every key and shape must fit
  // In f64, as the script runs the twin: f32's rounding, amplified through a deep net's
  // backward, would hide what the comparison is for (tools/pytorch_cifar_zoo.py, run_twin).
  model->to(DType::f64);

  // The script's input: u("input", ·) itself, values in [-1, 1) as normalised images hold.
  std::vector<float> pixels;
  for (double u : zoo_uniform("input", 2 * 3 * 32 * 32)) pixels.push_back(static_cast<float>(u));
  const Tensor input = from_vector(pixels, {2, 3, 32, 32}).to(DType::f64);
  const Tensor labels = from_vector(std::vector<int64_t>{3, 7}, {2}, {.dtype = DType::i64});

  model->eval();
  {
    NoGradGuard no_grad;
    const Tensor ref = *value(name + ".eval_logits");
    const double scale = max_abs(ref);
    EXPECT_TRUE(all_close(model->forward(input), ref, 1e-6 * scale, 1e-6)) << "eval logits";
  }

  model->train();
  const Tensor logits = model->forward(input);
  const Tensor loss = cross_entropy(logits, labels);
  loss.backward();
  const Tensor train_ref = *value(name + ".train_logits");
  EXPECT_TRUE(all_close(logits, train_ref, 1e-6 * max_abs(train_ref), 1e-6)) << "train logits";
  EXPECT_TRUE(all_close(loss.reshape({1}), *loss_ref, 1e-6, 1e-6)) << "loss";

  const auto params = model->named_parameters();
  const Tensor grads = *value(name + ".grads");
  ASSERT_EQ(grads.size(0), static_cast<int64_t>(params.size()));
  double total = 0;
  for (int64_t i = 0; i < grads.size(0); ++i)
    total += std::pow(std::max(0.0, row(grads, i).norm), 2);
  const double floor = 1e-9 * std::sqrt(total);
  std::set<std::string> unused;
  for (int64_t i = 0; i < grads.size(0); ++i) {
    const auto& [key, p] = params[static_cast<std::size_t>(i)];
    const Stats ref = row(grads, i);
    if (ref.norm < 0) {  // PyTorch's grad is None: a parameter forward never uses
      EXPECT_FALSE(p.grad().defined()) << key << " has a gradient; PyTorch's twin gives none";
      unused.insert(key);
      continue;
    }
    ASSERT_TRUE(p.grad().defined()) << key << " has no gradient";
    EXPECT_TRUE(stats_close(key, stats_of(key, p.grad()), ref, 1e-5, floor)) << "gradient";
    if (const Tensor* whole = value(name + ".grad." + key)) {
      EXPECT_TRUE(all_close(p.grad(), *whole, 1e-6 * max_abs(*whole) + floor, 1e-5))
          << "gradient of " << key;
    }
  }

  const Tensor buffers = *value(name + ".buffers");
  int64_t b = 0;
  for (const auto& [key, t] : model->named_buffers()) {
    if (!is_floating(t.dtype())) {
      // One batch counted, but by a BatchNorm forward never calls (its weight gets no gradient).
      const std::string bn = key.substr(0, key.rfind('.'));
      EXPECT_EQ(t.item(), unused.count(bn + ".weight") ? 0.0 : 1.0) << key;
      continue;
    }
    ASSERT_LT(b, buffers.size(0));
    EXPECT_TRUE(stats_close(key, stats_of(key, t), row(buffers, b++), 1e-6, 0)) << "statistic";
    if (const Tensor* whole = value(name + ".buffer." + key)) {
      EXPECT_TRUE(all_close(t, *whole, 1e-7, 1e-6)) << "statistic " << key;
    }
  }
  EXPECT_EQ(b, buffers.size(0)) << "floating buffers";
}

INSTANTIATE_TEST_SUITE_P(PyTorchCifar, ZooParity, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace rg::nn
