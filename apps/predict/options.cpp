#include "apps/predict/options.h"

#include "core/error.h"

namespace rg::apps {
namespace {

// Flags that stand in for the model card of a checkpoint written before cards existed.
train::RunOptions<train::CardFlags> card_flags() {
  using F = train::CardFlags;
  train::RunOptions<F> o("predict", "");
  o.section("Checkpoints without a model card (a PyTorch state_dict saved as safetensors, too)");
  o.add("model", &F::model, "the model it holds (a train_cifar model name, or unet)");
  o.add("classes", &F::classes, "a classifier's number of classes",
        train::at_least<int64_t>(0, "(0: not given)"));
  o.add("input_size", &F::input_size,
        "HxW (DxHxW), a UNet's training crop or a classifier's image size (default 32x32)")
      .reads_text(
          [](const std::string& text) {
            return train::Json(train::parse_size(text, "input_size"));
          },
          "HxW");
  o.add("mean", &F::mean,
        "R,G,B: a classifier's normalisation x <- (x - mean) / std of images scaled to [0, 1] "
        "(default CIFAR-10's, train_cifar's: 0.4914,0.4822,0.4465)");
  o.add("std", &F::std,
        "R,G,B (default 0.2470,0.2435,0.2616; pytorch-cifar's main.py normalises with "
        "0.2023,0.1994,0.2010)");
  return o;
}

train::RunOptions<PredictOptions> declare() {
  using P = PredictOptions;
  using train::Flag;
  using train::in_range;
  train::RunOptions<P> o("predict",
                         "classify images (top-k) or write predicted masks (PNG for images, .npy "
                         "for volumes) with a checkpoint of train_cifar or train_unet (ringgrad)",
                         train::Sources::command_line);
  o.section("Inputs and outputs");
  o.add("checkpoint", &P::checkpoint, "a checkpoint (best.safetensors, last.safetensors)",
        [](const std::string&, const std::string& v) {
          RG_CHECK(!v.empty(), "predict: --checkpoint names the model to use");
        });
  o.add(
      "inputs", &P::inputs, "image files (PNG, JPEG, BMP), .npy arrays, or folders of them",
      [](const std::string&, const std::vector<std::string>& v) {
        RG_CHECK(!v.empty(), "predict: give the images, volumes or folders to predict");
      },
      Flag::positional);
  o.add("top_k", &P::top_k, "classifiers: the most probable classes printed per image",
        in_range<int64_t>(1, 1000));
  o.add("batch_size", &P::batch_size, "classifiers: images per forward pass",
        in_range<int64_t>(1, 65536));
  o.add("out", &P::out,
        "segmenters: the folder for the masks (<stem>.png / .npy); default: beside each input as "
        "<stem>_mask.png / _mask.npy");
  o.add("overwrite", &P::overwrite, "replace masks that already exist");
  o.include(train::device_options(), &P::compute);
  o.include(train::precision_options(), &P::precision, {"amp", "amp_dtype"});
  o.include(card_flags(), &P::flags);
  return o;
}

}  // namespace

const train::RunOptions<PredictOptions>& predict_options() {
  static const train::RunOptions<PredictOptions> options = declare();
  return options;
}

}  // namespace rg::apps
