#pragma once
// predict's options: the checkpoint, the inputs, where masks go, and the machine and precision
// to run on (--device, --threads, --amp, --amp-dtype: the shared groups' own declarations,
// train/common_options.h). Read from the command line alone by the run-options parser
// (train/run_options.h); every value is checked when the options are read.

#include <cstdint>
#include <string>
#include <vector>

#include "train/common_options.h"
#include "train/model_card.h"
#include "train/run_options.h"

namespace rg::apps {

struct PredictOptions {
  std::string checkpoint{};
  std::vector<std::string> inputs{};  // image files, volumes, or folders of them
  int64_t top_k = 5;                  // classifiers: classes printed per image
  int64_t batch_size = 256;  // classifiers: images per forward pass (train_cifar's test batch)
  std::string out{};         // segmenters: the folder of the masks; empty: beside each input
  bool overwrite = false;    // replace masks already there
  train::DeviceOptions compute{};       // --device, --threads
  train::PrecisionOptions precision{};  // --amp, --amp-dtype (its loss scale is training's)
  train::CardFlags flags{};             // for checkpoints without a model card
};

const train::RunOptions<PredictOptions>& predict_options();

}  // namespace rg::apps
