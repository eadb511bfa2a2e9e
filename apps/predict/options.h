#pragma once
// predict's options: the checkpoint, the inputs, where masks go, and the machine and
// precision to run on. Every value is checked when the options are read.

#include <cstdint>
#include <string>
#include <vector>

#include "train/model_card.h"

namespace rg::apps {

struct PredictOptions {
  std::string checkpoint;
  std::vector<std::string> inputs;  // image files, volumes, or folders of them
  int64_t top_k = 5;                // classifiers: classes printed per image
  int64_t batch_size = 256;  // classifiers: images per forward pass (train_cifar's test batch)
  std::string out{};         // segmenters: the folder of the masks; empty: beside each input
  bool overwrite = false;    // replace masks already there
  std::string device = "cpu";
  std::string amp = "O0", amp_dtype = "fp16";
  int64_t threads = 0;       // 0: all cores
  train::CardFlags flags{};  // for checkpoints without a model card
};

void check_options(const PredictOptions& options);  // throws naming the first bad value

struct PredictCommandLine {
  PredictOptions options;
  bool help_requested = false;
  std::string help;
};
PredictCommandLine parse_predict_command_line(int argc, char** argv);

}  // namespace rg::apps
