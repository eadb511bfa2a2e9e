// train/pretrained.h: weights from outside a run. A state_dict as PyTorch writes it
// (nn.DataParallel around a model, safetensors.torch.save_file:
// tests/fixtures/pytorch_dataparallel_state_dict, tools/pytorch_cifar_zoo.py) loads with its
// "module." prefix stripped and computes PyTorch's output; every zoo model takes its twin's
// state_dict (its keys and shapes, proven equal to pytorch-cifar's by tests/nn/model_zoo_test.cpp)
// with or without the prefix; a ringgrad checkpoint gives its weights only (O2 masters first);
// files that do not fit name the first missing and surplus keys; init_from refuses a card of
// another model.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/safetensors.h"
#include "nn/layers.h"
#include "nn/models/zoo.h"
#include "optim/checkpoint.h"
#include "optim/sgd.h"
#include "tests/support/fixtures.h"
#include "tests/support/zoo_fill.h"
#include "train/model_card.h"
#include "train/pretrained.h"

namespace rg::train {
namespace {
using rg::testing::all_close;
using rg::testing::throws_error;

// The formula's weights under the model's names, each key with `prefix` in front.
std::map<std::string, Tensor> formula_state(const nn::Module& model, const std::string& prefix) {
  std::map<std::string, Tensor> state;
  for (const auto& [key, t] : model.state_dict())
    state[prefix + key] = rg::testing::zoo_fill(key, t.shape());
  return state;
}

TEST(Pretrained, PyTorchsOwnDataParallelFileLoadsAndComputesItsOutput) {
  const std::string path =
      std::string(RG_FIXTURE_DIR) + "/pytorch_dataparallel_state_dict.safetensors";
  const Pretrained w = read_pretrained(path);
  EXPECT_EQ(w.stripped_prefix, "module.");
  EXPECT_NE(w.describe().find("'module.' prefix stripped"), std::string::npos) << w.describe();
  nn::Sequential model(
      {std::make_shared<nn::Conv2d>(3, 4, nn::Size2{3, 3}), std::make_shared<nn::BatchNorm2d>(4)});
  load_pretrained(model, w, "Sequential");
  EXPECT_EQ(model.state_dict().at("1.num_batches_tracked").item(), 1.0);
  model.eval();
  std::vector<float> pixels;
  for (double u : rg::testing::zoo_uniform("input", 2 * 3 * 32 * 32))
    pixels.push_back(static_cast<float>(u));
  const Tensor x =
      from_vector(pixels, {2, 3, 32, 32}).narrow(0, 0, 1).narrow(2, 0, 8).narrow(3, 0, 8);
  NoGradGuard no_grad;
  const rg::testing::Fixture expected("pytorch_predict");
  EXPECT_TRUE(
      all_close(model.forward(x.contiguous()), expected["sequential.eval_output"], 1e-6, 1e-5));
}

// Zoo classifiers take a state_dict of their twins' keys, as PyTorch saves it plainly and through
// DataParallel, bit for bit.
TEST(Pretrained, ZooModelsTakeTheirTwinsStateDictWithOrWithoutThePrefix) {
  // A few of every kind (tests/nn/model_zoo_parity_test.cpp loads the formula's state into each
  // model strictly; this is the file's way in, twice).
  for (const char* name : {"resnet18", "regnety_400mf", "densenet_cifar", "shufflenetv2",
                           "efficientnetb0", "pnasnetb", "lenet"}) {
    SCOPED_TRACE(name);
    auto model = nn::make_model(name, 10);
    for (const std::string prefix : {"", "module."}) {
      const std::string path = rg::testing::temp_path(std::string(name) + ".safetensors");
      save_safetensors(path, formula_state(*model, prefix));
      const Pretrained w = read_pretrained(path);
      EXPECT_EQ(w.stripped_prefix, prefix);
      load_pretrained(*model, w, name);
      for (const auto& [key, t] : model->state_dict())
        ASSERT_TRUE(all_close(t, rg::testing::zoo_fill(key, t.shape()), 0, 0)) << key;
      std::remove(path.c_str());
    }
  }
}

TEST(Pretrained, ARinggradCheckpointGivesItsWeightsOnly) {
  auto model = nn::make_model("resnet20@0.25", 10);
  SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  for (Tensor p : model->parameters()) p.set_grad(ones_like(p));
  sgd.step();  // momentum buffers: optim.* entries
  const std::string path = rg::testing::temp_path("ckpt.safetensors");
  TrainingState state;
  state.epoch = 7;
  save_checkpoint(path, *model, &sgd, nullptr, state);
  const Pretrained w = read_pretrained(path);
  EXPECT_EQ(w.stripped_prefix, "");
  for (const auto& [key, t] : w.tensors) EXPECT_FALSE(key.starts_with("optim.")) << key;
  auto fresh = nn::make_model("resnet20@0.25", 10);
  load_pretrained(*fresh, w, "resnet20@0.25");
  const auto want = model->state_dict();
  for (const auto& [key, t] : fresh->state_dict())
    EXPECT_TRUE(all_close(t, want.at(key), 0, 0)) << key;
  std::remove(path.c_str());
}

TEST(Pretrained, AFileThatDoesNotFitNamesTheFirstKeys) {
  auto resnet18 = nn::make_model("resnet18@0.25", 10);
  const std::string path = rg::testing::temp_path("other.safetensors");
  save_safetensors(path, formula_state(*resnet18, "module."));
  const Pretrained w = read_pretrained(path);
  auto vgg = nn::make_model("vgg11", 10);
  EXPECT_TRUE(throws_error([&] { load_pretrained(*vgg, w, "vgg11"); },
                           {"other.safetensors", "do not fit vgg11", "'module.' stripped",
                            "missing, the first: classifier.bias [10]",
                            "surplus, the first: bn1.bias [16]", "--model"}));
  auto wider = nn::make_model("resnet18@0.5", 10);
  EXPECT_TRUE(throws_error([&] { load_pretrained(*wider, w, "resnet18@0.5"); },
                           {"of another shape, the first: bn1.bias: the file's [16], the "
                            "model's [32]"}));
  save_safetensors(path, {{"optim.sgd.momentum.0", zeros({2})}});
  EXPECT_TRUE(throws_error([&] { read_pretrained(path); }, {"other.safetensors", "no tensor"}));
  std::remove(path.c_str());
}

TEST(Pretrained, InitFromRefusesACardOfAnotherModel) {
  auto model = nn::make_model("resnet18@0.25", 10);
  ModelCard card;
  card.model = "resnet18@0.25";
  card.outputs = 10;
  for (int64_t k = 0; k < 10; ++k) card.class_names.push_back(std::to_string(k));
  card.input_size = {32, 32};
  card.mean = kPytorchCifarMean;
  card.std = kPytorchCifarStd;
  const std::string path = rg::testing::temp_path("carded.safetensors");
  save_safetensors(path, formula_state(*model, ""), model_card_metadata(card));
  const std::string note = init_from(*model, path, "resnet18@0.25");
  EXPECT_NE(note.find("weights only"), std::string::npos) << note;
  EXPECT_NE(note.find("another input normalisation"), std::string::npos) << note;
  auto other = nn::make_model("resnet18@0.5", 10);
  EXPECT_TRUE(
      throws_error([&] { init_from(*other, path, "resnet18@0.5"); },
                   {"carded.safetensors", "holds resnet18@0.25", "--model is resnet18@0.5"}));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rg::train
