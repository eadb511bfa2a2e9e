// train_unet as a user runs it, in-process on tiny generated shapes: it learns (Dice rises),
// a resumed run ends with the uninterrupted run's weights, TensorBoard gets the preview images,
// 3-D volumes train, and bad options are named errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "apps/train_unet/config.h"
#include "apps/train_unet/run.h"
#include "core/safetensors.h"
#include "tests/support/fixtures.h"

namespace rg::apps {
namespace {
namespace fs = std::filesystem;
using rg::testing::all_close;
using rg::testing::read_csv;
using rg::testing::throws_error;

UnetConfig tiny(const std::string& name) {
  UnetConfig c;
  c.image_size = {32, 32};
  c.train_size = 96;
  c.test_size = 24;
  c.depth = 2;
  c.width = 8;
  c.epochs = 4;
  c.batch_size = 8;
  c.workers = 0;
  c.progress = false;
  c.out = rg::testing::temp_path(name);
  fs::remove_all(c.out);
  return c;
}

int column(const std::vector<std::string>& header, const std::string& name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  ADD_FAILURE() << "no column " << name;
  return 0;
}

train::CommandLine<UnetConfig> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "train_unet");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return train_unet_options().parse(static_cast<int>(argv.size()), argv.data());
}

TEST(TrainUnet, LearnsTheShapes) {
  const UnetConfig c = tiny("unet_learns");
  ASSERT_EQ(run_unet(c), 0);
  const auto csv = read_csv(c.out + "/metrics.csv");
  ASSERT_EQ(csv.size(), 1u + 4u);
  const int dice = column(csv[0], "test_dice"), loss = column(csv[0], "train_loss");
  column(csv[0], "test_iou");
  EXPECT_LT(std::stod(csv[4][loss]), std::stod(csv[1][loss]));  // the training loss falls
  EXPECT_GT(std::stod(csv[4][dice]), std::stod(csv[1][dice]));  // and validation Dice rises
  EXPECT_GT(std::stod(csv[4][dice]), 0.5);
  EXPECT_TRUE(fs::exists(c.out + "/best.safetensors"));
}

TEST(TrainUnet, ResumedRunEndsWithTheSameWeights) {
  UnetConfig straight = tiny("unet_straight");
  straight.epochs = 2;
  UnetConfig first = tiny("unet_resumed");
  first.epochs = 2;
  first.stop_after_epochs = 1;
  ASSERT_EQ(run_unet(straight), 0);
  ASSERT_EQ(run_unet(first), 0);
  UnetConfig second = first;
  second.stop_after_epochs = 0;
  second.resume = "auto";
  ASSERT_EQ(run_unet(second), 0);
  const auto a = load_safetensors(straight.out + "/last.safetensors").tensors;
  const auto b = load_safetensors(second.out + "/last.safetensors").tensors;
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TRUE(all_close(b.at(name), t, 0, 0)) << name;
  EXPECT_EQ(read_csv(second.out + "/metrics.csv").size(), 1u + 2u);
}

// --accumulate-steps: 96 shapes in batches of 8 are 12 batches, 4 optimizer steps an epoch at
// 3 per step (the schedule's and the checkpoint's count), recorded as the global batch of 24.
TEST(TrainUnet, AccumulatesBatchesIntoOneStep) {
  UnetConfig c = tiny("unet_accumulate");
  c.epochs = 2;
  c.accumulate_steps = 3;
  ASSERT_EQ(run_unet(c), 0);
  const auto meta = load_safetensors(c.out + "/last.safetensors").metadata;
  EXPECT_EQ(meta.at("train.step"), "8");
  EXPECT_EQ(meta.at("batch.global"), "24");
  EXPECT_TRUE(throws_error([] { parse({"--accumulate-steps", "0"}); }, {"accumulate_steps", "0"}));
}

// Each epoch writes the preview's input, ground truth and prediction as PNG image summaries.
TEST(TrainUnet, WritesPreviewImagesToTensorBoard) {
  UnetConfig c = tiny("unet_images");
  c.epochs = 1;
  c.classes = "per-kind";  // the multi-class road (CE + soft Dice, arg-max preview) too
  ASSERT_EQ(run_unet(c), 0);
  std::string events;
  for (const auto& e : fs::directory_iterator(c.out))
    if (e.path().filename().string().starts_with("events.out.tfevents.")) {
      std::ifstream in(e.path(), std::ios::binary);
      events += std::string(std::istreambuf_iterator<char>(in), {});
    }
  for (const char* tag : {"preview/input", "preview/ground_truth", "preview/prediction"})
    EXPECT_NE(events.find(tag), std::string::npos) << tag;
  std::size_t pngs = 0;
  for (std::size_t at = events.find("\x89PNG"); at != std::string::npos;
       at = events.find("\x89PNG", at + 1))
    ++pngs;
  EXPECT_EQ(pngs, 3u);
}

TEST(TrainUnet, TrainsVolumes) {
  UnetConfig c = tiny("unet_volumes");
  c.data = "shapes3d";
  c.image_size = {8, 16, 16};
  c.train_size = 16;
  c.test_size = 8;
  c.epochs = 1;
  c.batch_size = 4;
  c.depth = 1;
  c.amp = "O1";  // the seeds' 3-D run is mixed precision
  c.amp_dtype = "bf16";
  ASSERT_EQ(run_unet(c), 0);
  const auto csv = read_csv(c.out + "/metrics.csv");
  ASSERT_EQ(csv.size(), 2u);
  const double dice = std::stod(csv[1][column(csv[0], "test_dice")]);
  EXPECT_GE(dice, 0.0);
  EXPECT_LE(dice, 1.0);
}

// --dp 2 --sync-bn (DataParallel over cpu:0 and cpu:1), and a model on cpu:1 standing in for a
// GPU: batches, masks, metrics and preview images cross from the loader's host tensors to the
// device. On cpu:1 the host's kernels run, so the weights must be identical. (After a test of
// a helper's parallel draft of train_unet.)
TEST(TrainUnet, DataParallelAndANonHostDevice) {
  UnetConfig dp = tiny("unet_dp");
  dp.epochs = 1;
  dp.dp = 2;
  dp.sync_bn = true;
  ASSERT_EQ(run_unet(dp), 0);
  EXPECT_EQ(read_csv(dp.out + "/metrics.csv").size(), 2u);
  // --dp-devices, shared with train_cifar (train/common_options.h): the same replicas named.
  UnetConfig listed = tiny("unet_dp_devices");
  listed.epochs = 1;
  listed.dp_devices = "cpu:0,cpu:1";
  listed.sync_bn = true;
  ASSERT_EQ(run_unet(listed), 0);
  const auto by_dp = load_safetensors(dp.out + "/last.safetensors").tensors;
  const auto by_list = load_safetensors(listed.out + "/last.safetensors").tensors;
  ASSERT_EQ(by_dp.size(), by_list.size());
  for (auto& [name, t] : by_dp) EXPECT_TRUE(all_close(by_list.at(name), t, 0, 0)) << name;
  std::map<std::string, Tensor> last[2];
  for (int d = 0; d < 2; ++d) {
    UnetConfig c = tiny("unet_device" + std::to_string(d));
    c.epochs = 1;
    c.device = d == 0 ? "cpu" : "cpu:1";
    ASSERT_EQ(run_unet(c), 0);
    last[d] = load_safetensors(c.out + "/last.safetensors").tensors;
  }
  ASSERT_EQ(last[0].size(), last[1].size());
  for (auto& [name, t] : last[0]) EXPECT_TRUE(all_close(last[1].at(name), t, 0, 0)) << name;
}

TEST(TrainUnetOptions, BadValuesAreNamedErrors) {
  EXPECT_TRUE(throws_error([] { parse({"--data", "cifar"}); }, {"data", "shapes2d", "cifar"}));
  EXPECT_TRUE(throws_error([] { parse({"--image-size", "64x"}); }, {"image_size", "64x"}));
  EXPECT_TRUE(throws_error([] { parse({"--image-size", "16x64x64"}); }, {"HxW", "3 sides"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--image-size", "8x8", "--depth", "4"});
      },
      {"too small for depth 4"}));
  EXPECT_TRUE(throws_error([] { parse({"--width", "7"}); }, {"width", "even", "7"}));
  EXPECT_TRUE(throws_error([] { parse({"--epochs", "0"}); }, {"epochs", "0"}));
  EXPECT_TRUE(throws_error([] { parse({"--lr", "nan"}); }, {"lr"}));
  EXPECT_TRUE(throws_error([] { parse({"--amp", "O7"}); }, {"amp", "O7"}));
  EXPECT_TRUE(throws_error([] { parse({"--classes", "many"}); }, {"classes", "many"}));
  EXPECT_TRUE(throws_error([] { parse({"--device", "tpu"}); }, {"tpu"}));
  EXPECT_TRUE(throws_error([] { parse({"--epochs", "ten"}); }, {"train_unet", "--epochs"}));
  const UnetConfig volumes = parse({"--data", "shapes3d"}).config;
  EXPECT_EQ(volumes.resolved_image_size(), (std::vector<int64_t>{32, 160, 160}));
  EXPECT_EQ(volumes.unet().dims, 3);
  EXPECT_EQ(parse({"--classes", "per-kind"}).config.model_classes(), 4);
}

}  // namespace
}  // namespace rg::apps
