#pragma once
// `predict`'s library side: a checkpoint and its model card (model_card.h) become a model on a
// device, in a precision, that classifies image files or segments images and volumes — with
// the functions evaluation uses (inference.h), so that its answers are evaluation's:
//
//   Predictor p({.checkpoint = "runs/unet/best.safetensors", .device = "cpu"});
//   for (const std::string& f : list_inputs({"scans/"}, p.card().task))
//     write_mask_file(mask_path(f, "", p.card().spatial_dims()), p.segment(f));
//
// Inputs are checked against the card before the model sees them: a classifier's image must
// have its input size; a segmenter's input its rank and channels. Every error names the file.

#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "optim/amp.h"
#include "train/inference.h"
#include "train/model_card.h"

namespace rg::train {

struct PredictorOptions {
  std::string checkpoint;
  std::string device = "cpu";  // cpu, cpu:N, cuda or cuda:N
  AmpOptions amp{};            // the precision of the forward passes (O0: f32)
  CardFlags flags{};           // for a checkpoint without a model card
};

class Predictor {
 public:
  // Reads the checkpoint — a ringgrad checkpoint, or a PyTorch state_dict saved as safetensors
  // (train/pretrained.h: weights only, DataParallel's "module." prefix stripped) — its card (or
  // the flags standing in for one), then its weights, strictly: a card that does not match the
  // weights is an error naming the first missing and surplus keys. Throws rg::Error naming what
  // is wrong.
  explicit Predictor(const PredictorOptions& options);
  ~Predictor();

  const ModelCard& card() const { return card_; }
  // What was read: the file, its tensors, and whether a "module." prefix was stripped.
  const std::string& weights_note() const { return weights_note_; }
  const Device& device() const { return device_; }

  // An input as the model sees it: read, checked against the card, preprocessed — (C, H, W)
  // f32 of the card's input size for a classifier; (C, *S) f32 of its rank and channels, any
  // size, for a segmenter. Classifiers read PNG, JPEG and BMP images; segmenters also .npy.
  Tensor read_input(const std::string& path) const;

  // The logits (N, K) f32 of image files, `batch` images per forward pass (evaluation's test
  // batch gives evaluation's logits).
  Tensor classify(const std::vector<std::string>& files, int64_t batch) const;
  // The logits (1, K, *S) of one input, by sliding windows of the card's crop, overlap and
  // windows per pass — what validation computed for it.
  Tensor segment_logits(const std::string& file) const;
  // Its predicted mask (*S) u8 (predicted_masks()).
  Tensor segment(const std::string& file) const;

 private:
  ModelCard card_;
  std::string weights_note_;
  Device device_;
  std::shared_ptr<nn::Module> model_;
  std::unique_ptr<MixedPrecision> amp_;
  std::shared_ptr<data::Transform> preprocess_;
};

// The model a card describes, freshly initialised (load the checkpoint's weights into it).
// An unknown name is an error listing the known ones.
std::shared_ptr<nn::Module> build_model(const ModelCard& card);
// Its preprocessing (data::Preprocess): one image (C, ...) u8 or f32 -> f32.
std::shared_ptr<data::Transform> preprocessing(const ModelCard& card);

// The input files `paths` name: a file is taken as it is; a folder gives its image files
// (PNG, JPEG, BMP, and for segmentation .npy), sorted by name, not descending into subfolders
// and leaving out files named *_mask.* (predict's own outputs). A path that does not exist,
// or a folder with no input, is an error naming it.
std::vector<std::string> list_inputs(const std::vector<std::string>& paths, ModelTask task);

// Where the mask of `input` goes: `out_dir`/<stem>.png (2-D) or .npy (3-D) when out_dir is
// given, else beside the input as <stem>_mask.png / _mask.npy.
std::string mask_path(const std::string& input, const std::string& out_dir, int64_t spatial_dims);

}  // namespace rg::train
