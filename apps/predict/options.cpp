#include "apps/predict/options.h"

#include <CLI/CLI.hpp>

#include "core/device.h"
#include "core/error.h"
#include "optim/amp.h"

namespace rg::apps {

void check_options(const PredictOptions& o) {
  RG_CHECK(!o.checkpoint.empty(), "predict: --checkpoint names the model to use");
  RG_CHECK(!o.inputs.empty(), "predict: give the images, volumes or folders to predict");
  RG_CHECK(o.top_k >= 1 && o.top_k <= 1000, "predict: top_k must be in [1, 1000], got ", o.top_k);
  RG_CHECK(o.batch_size >= 1 && o.batch_size <= 65536,
           "predict: batch_size must be in [1, 65536], got ", o.batch_size);
  RG_CHECK(o.threads >= 0 && o.threads <= 1024, "predict: threads must be in [0, 1024], got ",
           o.threads);
  RG_CHECK(o.flags.classes >= 0, "predict: classes must be >= 1, got ", o.flags.classes);
  (void)Device::parse(o.device);  // names a bad device
  (void)parse_opt_level(o.amp);   // names a bad level
  (void)parse_amp_dtype(o.amp_dtype);
}

PredictCommandLine parse_predict_command_line(int argc, char** argv) {
  PredictOptions o;
  CLI::App app{
      "predict: classify images (top-k) or write predicted masks (PNG for images, .npy for "
      "volumes) with a checkpoint of train_cifar or train_unet (ringgrad)"};
  app.add_option("--checkpoint", o.checkpoint, "a checkpoint (best.safetensors, last.safetensors)")
      ->required();
  app.add_option("inputs", o.inputs,
                 "image files (PNG, JPEG, BMP), .npy arrays, or folders of them");
  app.add_option("--top-k", o.top_k, "classifiers: the most probable classes printed per image");
  app.add_option("--batch-size", o.batch_size, "classifiers: images per forward pass");
  app.add_option("--out", o.out,
                 "segmenters: the folder for the masks (<stem>.png / .npy); default: beside each "
                 "input as <stem>_mask.png / _mask.npy");
  app.add_flag("--overwrite", o.overwrite, "replace masks that already exist");
  app.add_option("--device", o.device, "cpu, cuda or cuda:N");
  app.add_option("--amp", o.amp, "precision of the forward passes: O0 (f32), O1, O2 or O3");
  app.add_option("--amp-dtype", o.amp_dtype, "fp16 or bf16");
  app.add_option("--threads", o.threads, "compute threads; 0: all cores");
  std::string input_size;
  app.add_option("--model", o.flags.model,
                 "a checkpoint without a model card: the model it holds (a train_cifar model "
                 "name, or unet)");
  app.add_option("--classes", o.flags.classes,
                 "a checkpoint without a model card: a classifier's number of classes");
  app.add_option("--input-size", input_size,
                 "a checkpoint without a model card: HxW (DxHxW), a UNet's training crop or a "
                 "classifier's image size (default 32x32)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return {PredictOptions{}, true, app.help()};
  } catch (const CLI::ParseError& e) {
    fail("predict: ", e.what(), " (see --help)");
  }
  if (!input_size.empty()) o.flags.input_size = train::parse_size(input_size, "input_size");
  check_options(o);
  return {o, false, ""};
}

}  // namespace rg::apps
