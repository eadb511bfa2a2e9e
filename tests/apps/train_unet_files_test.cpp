// train_unet on the user's own files, in-process: 2-D PNG images and masks (a train/ and val/
// split with a class map, or one set split evenly with the mask values as classes), .npy
// volumes larger than the crop under --dp, --sync-bn and --amp, resume, and bad files as named
// errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "apps/train_unet/config.h"
#include "apps/train_unet/run.h"
#include "core/safetensors.h"
#include "tests/apps/segmentation_files.h"
#include "tests/support/fixtures.h"

namespace rg::apps {
namespace {
namespace fs = std::filesystem;
using rg::testing::all_close;
using rg::testing::read_csv;
using rg::testing::throws_error;
using testing::fresh_dir;
using testing::png_split;
using testing::write_bytes;
using testing::write_shapes_pairs;

int column(const std::vector<std::string>& header, const std::string& name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  ADD_FAILURE() << "no column " << name;
  return 0;
}

UnetConfig files_config(const std::string& data, const std::string& root, const std::string& out) {
  UnetConfig c;
  c.data = data;
  c.data_root = root;
  c.classes = "multiclass";
  c.channels = 3;
  c.image_size = data == "npy" ? std::vector<int64_t>{8, 16, 16} : std::vector<int64_t>{32, 32};
  c.depth = 2;
  c.width = 8;
  c.epochs = 2;
  c.batch_size = 4;
  c.workers = 0;
  c.progress = false;
  c.out = rg::testing::temp_path(out);
  fs::remove_all(c.out);
  return c;
}

TEST(TrainUnetFiles, FolderOfPngsTrainsWithADiceAndIouPerClass) {
  const std::string root = png_split("unet_png_split");
  const UnetConfig c = files_config("folder", root, "unet_png_run");
  ASSERT_EQ(run_unet(c), 0);
  const auto csv = read_csv(c.out + "/metrics.csv");
  ASSERT_EQ(csv.size(), 1u + 2u);
  for (const char* name : {"background", "disc", "box", "triangle"})
    for (const char* metric : {"dice", "iou"}) {
      const double v =
          std::stod(csv[2][column(csv[0], std::string("test_") + metric + "_" + name)]);
      EXPECT_GE(v, 0.0) << metric << " " << name;
      EXPECT_LE(v, 1.0) << metric << " " << name;
    }
  // The overall Dice is the mean over the classes but the background.
  double mean = 0;
  for (const char* name : {"disc", "box", "triangle"})
    mean += std::stod(csv[2][column(csv[0], std::string("test_dice_") + name)]) / 3;
  EXPECT_NEAR(std::stod(csv[2][column(csv[0], "test_dice")]), mean, 2e-5);
  // The checkpoint records the model and its inputs for predict.
  const auto meta = load_safetensors(c.out + "/last.safetensors").metadata;
  EXPECT_EQ(meta.at("model.task"), "segmentation");
  EXPECT_EQ(meta.at("model.classes"), "[\"background\",\"disc\",\"box\",\"triangle\"]");
  EXPECT_EQ(meta.at("preprocess.channels"), "3");
  EXPECT_EQ(meta.at("preprocess.input_size"), "32x32");
  EXPECT_EQ(meta.at("model.unet.depth"), "2");
  EXPECT_EQ(meta.at("inference.window_batch"), "4");
}

// One images/ + masks/ set: every 4th pair (evenly spaced) validates, the classes are the mask
// values (columns test_dice_0 ...), images are decoded as luma with --channels 1.
TEST(TrainUnetFiles, OneSetIsSplitAndTheMaskValuesAreTheClasses) {
  const std::string root = fresh_dir("unet_png_single");
  write_shapes_pairs(root, "p", 12, {{32, 32}}, 3, 300);
  UnetConfig c = files_config("folder", root, "unet_png_single_run");
  c.channels = 1;
  c.val_fraction = 0.25;
  c.epochs = 1;
  ASSERT_EQ(run_unet(c), 0);
  const auto csv = read_csv(c.out + "/metrics.csv");
  ASSERT_EQ(csv.size(), 2u);
  column(csv[0], "test_dice_0");
  column(csv[0], "test_iou_3");
  const auto meta = load_safetensors(c.out + "/last.safetensors").metadata;
  EXPECT_EQ(meta.at("model.classes"), "[\"0\",\"1\",\"2\",\"3\"]");
  EXPECT_EQ(meta.at("preprocess.channels"), "1");
}

// Volumes of 8x24x24 voxels, f32 in [0, 1], cropped to 8x16x16 (two crops of each per epoch),
// validated whole by sliding windows; DataParallel over two cpu devices with SyncBatchNorm and
// bf16 mixed precision.
TEST(TrainUnetFiles, NpyVolumesLargerThanTheCropTrainUnderDpSyncBnAndAmp) {
  const std::string root = testing::npy_split("unet_npy");
  UnetConfig c = files_config("npy", root, "unet_npy_run");
  c.crops_per_image = 2;
  c.dp = 2;
  c.sync_bn = true;
  c.amp = "O1";
  c.amp_dtype = "bf16";
  c.epochs = 1;
  ASSERT_EQ(run_unet(c), 0);
  const auto csv = read_csv(c.out + "/metrics.csv");
  ASSERT_EQ(csv.size(), 2u);
  for (const char* name : {"test_dice_0", "test_dice_1", "test_dice_2", "test_iou_2"}) {
    const double v = std::stod(csv[1][column(csv[0], name)]);
    EXPECT_GE(v, 0.0) << name;
    EXPECT_LE(v, 1.0) << name;
  }
  const auto meta = load_safetensors(c.out + "/last.safetensors").metadata;
  EXPECT_EQ(meta.at("model.unet.dims"), "3");
  EXPECT_EQ(meta.at("preprocess.input_size"), "8x16x16");
  EXPECT_EQ(meta.at("preprocess.channels"), "1");
}

TEST(TrainUnetFiles, ResumedRunEndsWithTheSameWeights) {
  const std::string root = png_split("unet_png_resume");
  UnetConfig straight = files_config("folder", root, "unet_files_straight");
  UnetConfig first = files_config("folder", root, "unet_files_resumed");
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

TEST(TrainUnetFiles, BadFilesAreNamedErrors) {
  auto config = [](const std::string& data, const std::string& root, const std::string& out) {
    UnetConfig c = files_config(data, root, out);
    c.batch_size = 1;  // every sample is read in the first epoch
    return c;
  };
  // An image whose mask has another size.
  std::string root = fresh_dir("unet_bad_size");
  write_shapes_pairs(root, "p", 4, {{32, 32}}, 3, 600);
  data::Shapes other({.size = 1, .image_size = {32, 30}, .seed = 1});
  data::write_mask_file(root + "/masks/p2.png", other.get(0).mask);
  EXPECT_TRUE(throws_error([&] { run_unet(config("folder", root, "unet_bad_size_run")); },
                           {"p2.png", "p2.png", "the sizes must agree"}));

  // A mask value outside the class map's classes.
  root = fresh_dir("unet_bad_value");
  write_shapes_pairs(root, "p", 4, {{32, 32}}, 3, 700);
  write_bytes(root + "/classes.txt", "background\nshape\n");
  EXPECT_TRUE(throws_error([&] { run_unet(config("folder", root, "unet_bad_value_run")); },
                           {"mask", "is not a class (there are 2)"}));

  // A 2-D mask in a set of volumes.
  root = fresh_dir("unet_bad_rank");
  write_shapes_pairs(root, "p", 3, {{8, 16, 16}}, 1, 800);
  data::write_mask_file(root + "/masks/p1.npy", other.get(0).mask);
  data::write_npy(root + "/images/p1.npy", other.get(0).image);
  EXPECT_TRUE(throws_error([&] { run_unet(config("npy", root, "unet_bad_rank_run")); },
                           {"p1.npy", "this set holds volumes"}));

  // --classes binary over masks of four classes.
  root = fresh_dir("unet_bad_binary");
  write_shapes_pairs(root, "p", 4, {{32, 32}}, 3, 900);
  UnetConfig binary = files_config("folder", root, "unet_bad_binary_run");
  binary.classes = "binary";
  EXPECT_TRUE(throws_error([&] { run_unet(binary); }, {"--classes binary", "gives 4"}));
}

UnetCommandLine parse(std::vector<std::string> args) {
  args.insert(args.begin(), "train_unet");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parse_unet_command_line(static_cast<int>(argv.size()), argv.data());
}

TEST(TrainUnetOptions, FileDataOptions) {
  const UnetConfig folder = parse({"--data", "folder", "/data/cells"}).config;
  EXPECT_EQ(folder.data_root, "/data/cells");
  EXPECT_EQ(folder.classes, "multiclass");  // the default for files
  EXPECT_EQ(folder.channels, 3);
  EXPECT_FALSE(folder.volumes());
  const UnetConfig npy = parse({"--data", "npy", "vols", "--classes", "binary"}).config;
  EXPECT_TRUE(npy.volumes());
  EXPECT_EQ(npy.classes, "binary");
  EXPECT_EQ(npy.resolved_image_size(), (std::vector<int64_t>{32, 160, 160}));
  EXPECT_TRUE(throws_error([] { parse({"--data", "folder"}); }, {"--data folder DIR"}));
  EXPECT_TRUE(throws_error([] { parse({"--data", "shapes2d", "x"}); }, {"takes no folder"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--data", "folder", "d", "--classes", "per-kind"});
      },
      {"binary or multiclass", "per-kind"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--data", "folder", "d", "--channels", "2"});
      },
      {"1 or 3", "2"}));
  EXPECT_TRUE(throws_error([] { parse({"--class-map", "c.txt"}); }, {"class_map"}));
  EXPECT_TRUE(throws_error([] { parse({"--data", "npy", "d", "--overlap", "1"}); }, {"overlap"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--data", "npy", "d", "--val-fraction", "0"});
      },
      {"val_fraction"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--data", "npy", "d", "--crops-per-image", "0"});
      },
      {"crops_per_image"}));
}

}  // namespace
}  // namespace rg::apps
