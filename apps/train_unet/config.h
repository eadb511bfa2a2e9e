#pragma once
// train_unet's options: what to segment (generated shapes in 2-D or 3-D, or the user's own
// images and masks, or volumes), the UNet, the optimizer, and the same machine, precision and
// output options as train_cifar. Every value is checked when the options are read, so a typo
// fails before anything is built.

#include <cstdint>
#include <string>
#include <vector>

#include "nn/models/unet.h"
#include "optim/amp.h"

namespace rg::apps {

struct UnetConfig {
  // ---- data: generated (data/shapes.h, drawn from the seed, the test set from seed + 1), or
  // files in data_root (data/segmentation_files.h: 2-D images and masks, or .npy volumes) ----
  std::string data = "shapes2d";  // shapes2d | shapes3d | folder | npy
  std::string data_root{};        // folder | npy: the folder
  // binary (one logit, BCE + Dice) | per-kind (shapes: a class per kind) | multiclass (files:
  // a class per mask value or class-map line); both of the latter train CE + soft Dice.
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
  // ---- precision, machine, output: as train_cifar ----
  std::string amp = "O0", amp_dtype = "fp16", loss_scale = "dynamic";
  std::string device = "cpu";
  int64_t dp = 0;
  bool sync_bn = false;
  double bucket_mb = 25;
  std::string allreduce = "ring";
  int64_t threads = 0, workers = 2, seed = 0;
  std::string out = "runs/unet", resume{};
  bool overwrite = false, progress = true;
  int64_t stop_after_epochs = 0;
  int64_t zero = 0;     // 1: ZeRO-1, AdamW's moments sharded across processes
  std::string trace{};  // a timeline of trace_steps to this file (train/step_trace.h)
  std::string trace_steps = "2:4";

  // Set by run_unet from the files (class map or mask values; the first image's channels).
  int64_t file_classes = 0;

  bool volumes() const { return data == "shapes3d" || data == "npy"; }
  bool files() const { return data == "folder" || data == "npy"; }
  // Classes of the data set (background included) and outputs of the model: one logit for a
  // binary mask, one per class otherwise.
  int64_t data_classes() const;
  int64_t model_classes() const { return classes == "binary" ? 1 : data_classes(); }
  std::vector<int64_t> resolved_image_size() const;
  nn::UNetConfig unet() const;
  AmpOptions amp_options() const;
  std::string describe() const;  // one line, for the log and the checkpoint
};

// Throws rg::Error naming the first bad value.
void check_config(const UnetConfig& config);

struct UnetCommandLine {
  UnetConfig config;
  bool help_requested = false;
  std::string help;
};
UnetCommandLine parse_unet_command_line(int argc, char** argv);

// "64x64" or "16x64x64" -> {64, 64} / {16, 64, 64}; throws naming the text.
std::vector<int64_t> parse_image_size(const std::string& text);

}  // namespace rg::apps
