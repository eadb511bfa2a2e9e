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

TEST(TrainCifarDataOnDevice, WhereTheDataGoesAndWhatIsRefused) {
  nlohmann::json c = default_config();
  apply_set(c, "data_on_device=maybe");
  EXPECT_TRUE(throws_error([&] { parse_config(c); }, {"data_on_device must be auto, on or off"}));
  TrainConfig cfg = parse_config(default_config());
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
  EXPECT_EQ(parse_command_line(static_cast<int>(argv.size()), argv.data()).config.data_on_device,
            "off");
}

}  // namespace
}  // namespace rg::apps
