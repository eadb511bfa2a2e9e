// train_cifar --model NAME for the pytorch-cifar models of the zoo (a tiny synthetic CIFAR-10, two
// steps: the whole run — data, model, optimizer, evaluation, checkpoint with its card — works, and
// the checkpoint's weights load back strictly into the model the card names), and --init-from:
// a run starts from given weights, a PyTorch state_dict with DataParallel's prefix or a ringgrad
// checkpoint, with a fresh optimizer, schedule and epoch count. DataParallel (--dp 2) and
// mpirun (scripts/mpirun.sh 2) runs of zoo models are in tests/CMakeLists.txt
// (apps.train_cifar_zoo_dp, parallel_mpi.train_zoo_efficientnetb0).
#include <gtest/gtest.h>

#include <filesystem>

#include "apps/train_cifar/config.h"
#include "apps/train_cifar/run.h"
#include "core/safetensors.h"
#include "nn/models/zoo.h"
#include "tests/apps/tiny_cifar.h"
#include "tests/support/fixtures.h"
#include "tests/support/zoo_fill.h"
#include "train/pretrained.h"

namespace rg::apps {
namespace {
namespace fs = std::filesystem;
using rg::testing::throws_error;

TrainConfig zoo_config(const std::string& data, const std::string& model, const std::string& out) {
  TrainConfig cfg = tiny_config(data, out);
  cfg.model = model;
  cfg.epochs = 1;
  cfg.train_limit = 16;  // two steps of 8
  cfg.test_limit = 8;
  return cfg;
}

class TrainCifarZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainCifarZoo, TrainsAndItsCheckpointLoadsIntoItsModel) {
  const std::string name = GetParam();
  const std::string data = tiny_cifar("zoo_data", 4);
  const std::string out = rg::testing::temp_path("zoo_" + name);
  fs::remove_all(out);
  ASSERT_EQ(run(zoo_config(data, name, out)), 0);
  const SafetensorsFile file = load_safetensors(out + "/last.safetensors");
  EXPECT_EQ(file.metadata.at("model.name"), name);
  auto model = nn::make_model(name, 10);
  train::load_pretrained(*model, train::read_pretrained(out + "/last.safetensors"), name);
  fs::remove_all(out);
}

// The models of pytorch-cifar's README table that the zoo did not have, and three whose wiring
// differs (EfficientNetB0's frozen convolutions, ShuffleNetV2's shuffles, LeNet without BatchNorm);
// every model's forward and backward are tests/nn/model_zoo_parity_test.cpp's.
INSTANTIATE_TEST_SUITE_P(PyTorchCifar, TrainCifarZoo,
                         ::testing::Values("regnetx_200mf", "regnety_400mf", "resnext29_32x4d",
                                           "resnext29_2x64d", "simpledla", "densenet121", "dpn92",
                                           "dla", "efficientnetb0", "shufflenetv2", "lenet"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(TrainCifarInitFrom, StartsFreshFromGivenWeights) {
  const std::string data = tiny_cifar("init_data", 4);
  // A PyTorch user's LeNet, saved through DataParallel: the formula's weights, "module." keys.
  auto lenet = nn::make_model("lenet", 10);
  std::map<std::string, Tensor> state;
  for (const auto& [key, t] : lenet->state_dict())
    state["module." + key] = rg::testing::zoo_fill(key, t.shape());
  const std::string file = rg::testing::temp_path("lenet_dp.safetensors");
  save_safetensors(file, state);

  const std::string out = rg::testing::temp_path("init_run");
  fs::remove_all(out);
  TrainConfig cfg = zoo_config(data, "lenet", out);
  cfg.init_from = file;
  cfg.lr = 1e-30;  // the steps leave the weights where they started, to f32 rounding
  ASSERT_EQ(run(cfg), 0);
  const SafetensorsFile trained = load_safetensors(out + "/last.safetensors");
  EXPECT_EQ(trained.metadata.at("train.epoch"), "1");
  for (const auto& [key, t] : lenet->state_dict())
    EXPECT_TRUE(rg::testing::all_close(trained.tensors.at(key),
                                       rg::testing::zoo_fill(key, t.shape()), 0, 0))
        << key;

  // From a ringgrad checkpoint (one epoch done): the new run counts its own epochs from 0.
  const std::string again = rg::testing::temp_path("init_again");
  fs::remove_all(again);
  TrainConfig next = zoo_config(data, "lenet", again);
  next.init_from = out + "/last.safetensors";
  ASSERT_EQ(run(next), 0);
  EXPECT_EQ(load_safetensors(again + "/last.safetensors").metadata.at("train.epoch"), "1");

  // Another model's weights are refused by name.
  TrainConfig wrong = zoo_config(data, "mobilenet", rg::testing::temp_path("init_wrong"));
  wrong.init_from = file;
  wrong.overwrite = true;
  EXPECT_TRUE(throws_error([&] { run(wrong); },
                           {"lenet_dp.safetensors", "do not fit mobilenet", "missing, the first"}));

  // Interrupted, the same command with --resume auto continues from its own checkpoint.
  const std::string resumed = rg::testing::temp_path("init_resumed");
  fs::remove_all(resumed);
  TrainConfig first = zoo_config(data, "lenet", resumed);
  first.init_from = file;
  first.epochs = 2;
  first.stop_after_epochs = 1;
  ASSERT_EQ(run(first), 0);
  TrainConfig second = first;
  second.stop_after_epochs = 0;
  second.resume = "auto";
  ASSERT_EQ(run(second), 0);
  EXPECT_EQ(load_safetensors(resumed + "/last.safetensors").metadata.at("train.epoch"), "2");
  fs::remove_all(resumed);
  fs::remove_all(out);
  fs::remove_all(again);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace rg::apps
