#pragma once
// A model card: what a checkpoint must say for its model to be used without the run that
// trained it — which model to rebuild before loading the weights, its classes, and what its
// inputs went through. train_cifar and train_unet write it into every checkpoint's
// __metadata__ (optim/checkpoint.h's "extra" entries), one plain value per key; `predict`
// reads it back:
//
//   model.card               1: the version of these keys
//   model.task               classification | segmentation
//   model.name               a name of nn::make_model ("resnet20@0.25", "airbench94"), or
//                            "unet" (train_unet's UNet, then the model.unet.* keys)
//   model.unet.dims          2 | 3
//   model.unet.depth         poolings
//   model.unet.width         channels of the first block
//   model.unet.decoder       transposed | interpolate
//   model.unet.norm          batch_norm | none
//   model.outputs            logits per image (classification) or per position (segmentation;
//                            1 is a binary mask: foreground where the logit's sigmoid > 0.5)
//   model.classes            the class names, a JSON array: one per output (a binary
//                            segmentation names 2: background and foreground)
//   preprocess.channels      input channels
//   preprocess.input_size    HxW or DxHxW: the image size a classifier takes; a segmenter's
//                            training crop, which is its sliding window at inference
//   preprocess.mean, .std    JSON arrays, one per channel: x <- (x - mean) / std after u8
//                            images are scaled to [0, 1]; absent: no normalisation
//   inference.overlap        segmentation: the fraction by which sliding windows overlap
//   inference.window_batch   segmentation: windows per forward pass; validation's value, so
//                            that inference computes bit for bit the logits validation did
//
// A checkpoint comes from outside: every value is checked when read, and a missing or bad one
// is an rg::Error naming the file and the key. Checkpoints written before cards existed hold
// none; CardFlags stand in for it (the error without them says which to pass).

#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/transforms.h"  // kCifar10Mean, kCifar10Std
#include "nn/models/unet.h"   // UNetConfig

namespace rg::train {

enum class ModelTask { classification, segmentation };

struct ModelCard {
  ModelTask task = ModelTask::classification;
  std::string model;      // nn::make_model's name, or "unet"
  nn::UNetConfig unet{};  // model == "unet": dims, depth, base_width, decoder, norm
  int64_t outputs = 0;
  std::vector<std::string> class_names;
  int64_t channels = 3;
  std::vector<int64_t> input_size;   // {H, W} or {D, H, W}
  std::vector<float> mean{}, std{};  // empty: no normalisation
  double overlap = 0.25;             // segmentation
  int64_t window_batch = 1;          // segmentation

  // Spatial dimensions of the inputs: 2 (images) or 3 (volumes).
  int64_t spatial_dims() const { return static_cast<int64_t>(input_size.size()); }
  bool binary() const { return task == ModelTask::segmentation && outputs == 1; }
  std::string describe() const;  // one line, for the log
};

// Checks a card (as written or as read): throws rg::Error naming `where` and the bad value.
void check_model_card(const ModelCard& card, const std::string& where);

// The card as metadata entries (the keys above).
std::map<std::string, std::string> model_card_metadata(const ModelCard& card);

// Whether `metadata` holds a card (model.card); read_model_card says what is wrong with one.
bool has_model_card(const std::map<std::string, std::string>& metadata);
// The card in a checkpoint's metadata; `path` names the checkpoint in messages.
ModelCard read_model_card(const std::map<std::string, std::string>& metadata,
                          const std::string& path);

// What stands in for the card of a checkpoint written before cards, or of weights from elsewhere
// (a PyTorch state_dict, train/pretrained.h): the model it holds and, for a classifier, its number
// of classes and its normalisation (default train_cifar's: CIFAR-10's mean and std; pytorch-cifar
// normalises with std 0.2023,0.1994,0.2010), 32x32 images; for a UNet, the input size (the
// architecture is read from the weights' shapes, the preprocessing is train_unet's: u8 to [0, 1]).
struct CardFlags {
  std::string model{};                // a name of nn::make_model, or "unet"; empty: not given
  int64_t classes = 0;                // classifier outputs; 0: not given
  std::vector<int64_t> input_size{};  // empty: not given (a classifier's default is 32x32)
  std::string mean{}, std{};          // "R,G,B": x <- (x - mean) / std; empty: not given
  bool given() const {
    return !model.empty() || classes > 0 || !input_size.empty() || !mean.empty() || !std.empty();
  }
};

// "0.4914,0.4822,0.4465" -> its numbers; `what` names the option in errors (finite numbers, one
// per channel, a std's all > 0 are checked with the card).
std::vector<float> parse_channel_values(const std::string& text, const std::string& what);

// pytorch-cifar's normalisation (its main.py's transforms.Normalize).
inline const std::vector<float> kPytorchCifarMean = {0.4914f, 0.4822f, 0.4465f};
inline const std::vector<float> kPytorchCifarStd = {0.2023f, 0.1994f, 0.2010f};

// The checkpoint's card. A checkpoint with a card refuses flags (it knows its model); one
// without needs them, and the error names the flags, with what the checkpoint's recorded
// configuration suggests. `weights` are the checkpoint's tensors (a UNet's shapes).
ModelCard checkpoint_model_card(const std::map<std::string, std::string>& metadata,
                                const std::map<std::string, Tensor>& weights,
                                const std::string& path, const CardFlags& flags);

// "64x64" / "16x64x64" and back; parse_size throws naming `what` and the text.
std::string size_text(const std::vector<int64_t>& size);
std::vector<int64_t> parse_size(const std::string& text, const std::string& what);

}  // namespace rg::train
