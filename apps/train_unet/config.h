#pragma once
// train_unet's options: what to segment (generated shapes in 2-D or 3-D, or the user's own
// images and masks, or volumes), the UNet, the optimizer, and the machine, precision and output
// groups every app shares. They are read as train_cifar's are (train/run_options.h: defaults <
// --config FILE.json < flags < --set key=value), and every value is checked when the options are
// read, so a typo fails before anything is built.

#include <cstdint>
#include <string>
#include <vector>

#include "nn/models/unet.h"
#include "train/common_options.h"
#include "train/run_options.h"

namespace rg::apps {

// The initial values are the defaults.
struct UnetConfig : train::MachineOptions, train::PrecisionOptions, train::RunOutputOptions {
  UnetConfig() : RunOutputOptions{.out = "runs/unet"} {}

  // ---- data: generated (data/shapes.h, drawn from the seed, the test set from seed + 1), or
  // files in data_root (data/segmentation_files.h: 2-D images and masks, or .npy volumes) ----
  std::string data = "shapes2d";  // shapes2d | shapes3d | folder | npy
  std::string data_root{};        // folder | npy: the folder
  // binary (one logit, BCE + Dice) | per-kind (shapes: a class per kind) | multiclass (files:
  // a class per mask value or class-map line); both of the latter train CE + soft Dice.
  // Files are multiclass and RGB unless the options say otherwise (derived defaults).
  std::string classes = "binary";
  // Generated shapes' size; for files the training crop (the network's input, the sliding
  // window of validation): {H, W} or {D, H, W}; empty: 64x64, or 32x160x160.
  std::vector<int64_t> image_size{};
  int64_t channels = 1;  // shapes: generated; folder: decoded images as 1 (luma) or 3 (RGB)
  int64_t train_size = 1024, test_size = 256;  // shapes only
  std::string class_map{};      // files: a class map; empty: <root>/classes.txt, or mask values
  double val_fraction = 0.2;    // files without train/ and val/: the share held out
  int64_t crops_per_image = 1;  // files: random crops of each image or volume per epoch
  double overlap = 0.25;        // validation's sliding windows (recorded for predict)
  // ---- model: nn/models/unet.h ----
  int64_t depth = 3, width = 16;       // poolings, channels of the first block
  std::string decoder = "transposed";  // transposed (conv-transpose) | interpolate
  // ---- optimization: AdamW on a schedule of train/schedule.h ----
  int64_t epochs = 10, batch_size = 16;
  double lr = 3e-3, weight_decay = 1e-4;
  std::string schedule = "cosine";
  // ---- machine, precision, output: the shared groups (train/common_options.h) ----

  // Not an option: set by run_unet from the files (class map or mask values; the first image's
  // channels).
  int64_t file_classes = 0;

  bool volumes() const { return data == "shapes3d" || data == "npy"; }
  bool files() const { return data == "folder" || data == "npy"; }
  // Classes of the data set (background included) and outputs of the model: one logit for a
  // binary mask, one per class otherwise.
  int64_t data_classes() const;
  int64_t model_classes() const { return classes == "binary" ? 1 : data_classes(); }
  std::vector<int64_t> resolved_image_size() const;
  nn::UNetConfig unet() const;
  std::string describe() const;    // one line, for the log
  nlohmann::json to_json() const;  // what checkpoints record
};

// Declared once (config.cpp): read by parse(argc, argv), checked again by run_unet (validate).
const train::RunOptions<UnetConfig>& train_unet_options();

}  // namespace rg::apps
