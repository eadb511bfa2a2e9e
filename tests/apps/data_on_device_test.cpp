// train_cifar with the data set on the training device (--data-on-device, cifar_data.h), end to
// end on a logical cpu device standing in for a GPU: the device loader's batches, the test-time
// views made on the device and the evaluation counted there train and score exactly as the host
// DataLoader path does; and the option's errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/train_cifar/cifar_data.h"
#include "apps/train_cifar/config.h"
#include "apps/train_cifar/run.h"
#include "core/safetensors.h"
#include "tests/apps/tiny_cifar.h"
#include "tests/support/fixtures.h"

namespace rg::apps {
namespace {
namespace fs = std::filesystem;
using rg::testing::all_close;
using rg::testing::throws_error;

// metrics.csv as rows of named cells.
std::vector<std::map<std::string, std::string>> read_metrics(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (header.empty()) {
      header = cells;
      continue;
    }
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

TEST(TrainCifarDataOnDevice, TrainsAndScoresExactlyLikeTheHostDataLoader) {
  const std::string data = tiny_cifar("data", 8);  // 40 train, 8 test images
  for (const std::string augmentation : {"classic", "airbench94"}) {
    std::map<std::string, std::map<std::string, Tensor>> weights;
    std::map<std::string, std::vector<std::map<std::string, std::string>>> metrics;
    for (const std::string placement : {"off", "on"}) {
      TrainConfig cfg = tiny_config(data, rg::testing::temp_path("ondevice_" + placement));
      fs::remove_all(cfg.out);
      cfg.epochs = 2;
      cfg.device = "cpu:1";  // batches made on the device vs. copied there from the host
      cfg.augmentation = augmentation;
      cfg.tta = cfg.tta_translate = true;  // the test-time views, on the device under "on"
      cfg.data_on_device = placement;
      ::testing::internal::CaptureStdout();
      const int rc = run(cfg);
      const std::string out = ::testing::internal::GetCapturedStdout();
      ASSERT_EQ(rc, 0) << augmentation << " " << placement;
      EXPECT_NE(out.find(placement == "on" ? "data set on cpu:1" : "batches made on the host"),
                std::string::npos)
          << out;
      EXPECT_NE(out.find("device time: training "), std::string::npos) << out;
      weights[placement] = load_safetensors(cfg.out + "/last.safetensors").tensors;
      metrics[placement] = read_metrics(cfg.out + "/metrics.csv");
    }
    // The same batches, so the same steps: the same weights to the bit.
    ASSERT_EQ(weights["on"].size(), weights["off"].size());
    for (const auto& [name, t] : weights["off"])
      EXPECT_TRUE(all_close(weights["on"].at(name), t, 0, 0)) << augmentation << " " << name;
    ASSERT_EQ(metrics["on"].size(), 2u);
    for (std::size_t e = 0; e < 2; ++e) {
      auto &on = metrics["on"][e], &off = metrics["off"][e];
      EXPECT_EQ(on["train_loss"], off["train_loss"]) << augmentation << " epoch " << e;
      EXPECT_EQ(on["train_accuracy"], off["train_accuracy"]);
      // Counted on the device: the same correct predictions; the loss summed in another order.
      EXPECT_EQ(on["test_accuracy"], off["test_accuracy"]);
      EXPECT_NEAR(std::stod(on["test_loss"]), std::stod(off["test_loss"]), 1e-9);
      EXPECT_GT(std::stod(on["train_device_seconds"]), 0);
      EXPECT_GT(std::stod(on["test_device_seconds"]), 0);
    }
  }
}

// The warm-up (train/warm_up.h) runs a throwaway model before the timed run; the run itself must
// not notice: not through the default generator the throwaway draws from, the test loader it
// evaluates with, or anything else. Also with airbench94's pieces (whitening, lookahead, TTA's
// other batch shapes) and an epoch ending on a smaller batch (40 images in batches of 12).
TEST(TrainCifarWarmUp, LeavesTheRunUnchangedToTheBit) {
  const std::string data = tiny_cifar("data", 8);
  for (const std::string model : {"resnet20@0.25", "airbench94"}) {
    std::map<std::string, std::map<std::string, Tensor>> weights;
    std::map<std::string, std::vector<std::map<std::string, std::string>>> metrics;
    std::map<std::string, std::string> generator;
    for (const bool warm_up : {false, true}) {
      const std::string run_name = warm_up ? "warm" : "cold";
      TrainConfig cfg =
          tiny_config(data, rg::testing::temp_path("warmup_" + model.substr(0, 8) + run_name));
      fs::remove_all(cfg.out);
      cfg.epochs = 2;
      cfg.batch_size = 12;
      cfg.model = model;
      cfg.device = "cpu:1";
      cfg.data_on_device = "on";
      cfg.tta = cfg.tta_translate = true;
      cfg.tta_epochs = "last";
      if (model == "airbench94") cfg.lookahead = true;
      cfg.warm_up = warm_up;
      ::testing::internal::CaptureStdout();
      const int rc = run(cfg);
      const std::string out = ::testing::internal::GetCapturedStdout();
      ASSERT_EQ(rc, 0) << model << " " << run_name;
      EXPECT_EQ(out.find("warm-up: ") != std::string::npos, warm_up) << out;
      const SafetensorsFile checkpoint = load_safetensors(cfg.out + "/last.safetensors");
      weights[run_name] = checkpoint.tensors;
      generator[run_name] =
          checkpoint.metadata.at("rng.seed") + "/" + checkpoint.metadata.at("rng.offset");
      metrics[run_name] = read_metrics(cfg.out + "/metrics.csv");
    }
    // The default generator where the run left it (a later draw, say a dropout's, would differ).
    EXPECT_EQ(generator["warm"], generator["cold"]) << model;
    ASSERT_EQ(weights["warm"].size(), weights["cold"].size()) << model;
    for (const auto& [key, t] : weights["cold"])
      EXPECT_TRUE(all_close(weights["warm"].at(key), t, 0, 0)) << model << " " << key;
    ASSERT_EQ(metrics["warm"].size(), 2u);
    for (std::size_t e = 0; e < 2; ++e)
      for (const std::string column :
           {"train_loss", "train_accuracy", "test_loss", "test_accuracy"})
        EXPECT_EQ(metrics["warm"][e][column], metrics["cold"][e][column]) << model << " " << column;
  }
}

TEST(TrainCifarDataOnDevice, WhereTheDataGoesAndWhatIsRefused) {
  train::Json c = train_cifar_options().defaults();
  train_cifar_options().apply_set(c, "data_on_device=maybe");
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(c); },
                           {"data_on_device must be auto, on or off"}));
  TrainConfig cfg = train_cifar_options().read(train_cifar_options().defaults());
  EXPECT_EQ(cfg.data_on_device, "auto");
  EXPECT_TRUE(choose_data_placement(cfg, Device::cuda(0)) == DataPlacement::device);
  EXPECT_TRUE(choose_data_placement(cfg, Device::cpu()) == DataPlacement::host);
  cfg.dp = 2;
  EXPECT_TRUE(choose_data_placement(cfg, Device::cuda(0)) == DataPlacement::host);
  cfg.data_on_device = "on";
  EXPECT_TRUE(throws_error([&] { choose_data_placement(cfg, Device::cpu()); },
                           {"--data-on-device on", "--dp 2"}));
  cfg.dp = 0;
  EXPECT_TRUE(choose_data_placement(cfg, Device::cpu()) == DataPlacement::device);
  cfg.data_on_device = "off";
  EXPECT_TRUE(choose_data_placement(cfg, Device::cuda(0)) == DataPlacement::host);
  // The flag reaches the option.
  std::vector<std::string> args = {"train_cifar", "--data-on-device", "off"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  EXPECT_EQ(
      train_cifar_options().parse(static_cast<int>(argv.size()), argv.data()).config.data_on_device,
      "off");
}

}  // namespace
}  // namespace rg::apps
