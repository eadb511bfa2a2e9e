#include "train/predict.h"

#include <algorithm>
#include <filesystem>

#include "core/safetensors.h"
#include "data/image_decode.h"
#include "data/segmentation_folder.h"
#include "nn/models/zoo.h"
#include "ops/ops.h"
#include "train/pretrained.h"

namespace rg::train {
namespace fs = std::filesystem;

namespace {

std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool takes(const fs::path& p, ModelTask task) {
  const std::string ext = lower_extension(p);
  if (ext == ".npy") return task == ModelTask::segmentation;
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp";
}

}  // namespace

std::shared_ptr<nn::Module> build_model(const ModelCard& card) {
  check_model_card(card, "model card");
  if (card.task == ModelTask::segmentation) {
    nn::UNetConfig config = card.unet;
    config.in_channels = card.channels;
    config.num_classes = card.outputs;
    return std::make_shared<nn::UNet>(config);
  }
  return nn::make_model(card.model, {.num_classes = card.outputs, .in_channels = card.channels});
}

std::shared_ptr<data::Transform> preprocessing(const ModelCard& card) {
  return std::make_shared<data::Preprocess>(card.mean, card.std);
}

Predictor::Predictor(const PredictorOptions& options) : device_(Device::parse(options.device)) {
  check_device_available(device_);
  std::error_code ec;
  RG_CHECK(fs::is_regular_file(options.checkpoint, ec), "predict: checkpoint '", options.checkpoint,
           "' ", fs::exists(options.checkpoint, ec) ? "is not a file" : "does not exist");
  // Weights only (a ringgrad checkpoint's or a PyTorch state_dict's), DataParallel's prefix
  // stripped: no training state is read.
  const Pretrained weights = read_pretrained(options.checkpoint);
  card_ =
      checkpoint_model_card(weights.metadata, weights.tensors, options.checkpoint, options.flags);
  model_ = build_model(card_);
  // Strict: a card that names another model than the weights' is refused, the first keys named.
  load_pretrained(*model_, weights, card_.model);
  weights_note_ = "weights from " + weights.describe();
  model_->to(device_);
  model_->eval();
  // After the weights: O2/O3 convert the f32 model (BatchNorm stays f32 under O2).
  amp_ = std::make_unique<MixedPrecision>(*model_, options.amp);
  preprocess_ = preprocessing(card_);
}

Predictor::~Predictor() = default;

Tensor Predictor::read_input(const std::string& path) const {
  const std::string ext = lower_extension(path);
  const bool npy = ext == ".npy";
  Tensor image;
  if (card_.task == ModelTask::classification) {
    RG_CHECK(!npy, "predict: '", path, "': a classifier reads PNG, JPEG or BMP images");
    image = data::decode_image(path);  // (3, H, W) u8
    RG_CHECK(card_.channels == 3, "predict: '", path, "': the model takes ", card_.channels,
             " channels, and decoded images have 3");
    RG_CHECK(image.size(1) == card_.input_size[0] && image.size(2) == card_.input_size[1],
             "predict: image '", path, "' is ", image.size(1), "x", image.size(2), "; model ",
             card_.model, " takes ", size_text(card_.input_size), " images (resize it first)");
  } else {
    const int64_t dims = card_.spatial_dims();
    RG_CHECK(npy || card_.channels == 1 || card_.channels == 3, "predict: '", path,
             "': the model takes ", card_.channels,
             " channels, which PNG, JPEG and BMP images do not have (1 or 3); give .npy arrays");
    RG_CHECK(npy || dims == 2, "predict: '", path, "' is a 2-D image, but the model segments ",
             "volumes: give .npy arrays (C, D, H, W) or (D, H, W)");
    image = data::read_segmentation_image(path, card_.channels, dims);
    RG_CHECK(image.dim() == dims + 1, "predict: '", path, "' has shape ", shape_str(image.shape()),
             "; the model segments ", dims == 3 ? "volumes" : "images", ": (C, ",
             dims == 3 ? "D, H, W" : "H, W", ") or without C for one channel");
    RG_CHECK(image.size(0) == card_.channels, "predict: '", path, "' has ", image.size(0),
             " channel(s) (shape ", shape_str(image.shape()), "); the model takes ",
             card_.channels);
  }
  data::SampleRng unused(0, 0, 0);  // preprocessing draws nothing
  return preprocess_->apply(image, unused);
}

Tensor Predictor::classify(const std::vector<std::string>& files, int64_t batch) const {
  RG_CHECK(card_.task == ModelTask::classification, "predict: the model segments; ",
           "classify() is for classifiers");
  RG_CHECK(batch >= 1, "predict: batch must be >= 1, got ", batch);
  const StepContext context{device_, *amp_};
  std::vector<Tensor> logits;
  for (std::size_t first = 0; first < files.size(); first += static_cast<std::size_t>(batch)) {
    std::vector<Tensor> images;
    for (std::size_t i = first; i < std::min(files.size(), first + static_cast<std::size_t>(batch));
         ++i)
      images.push_back(read_input(files[i]).unsqueeze(0));
    logits.push_back(infer(*model_, cat(images, 0), context));
  }
  RG_CHECK(!logits.empty(), "predict: no images to classify");
  return cat(logits, 0);
}

Tensor Predictor::segment_logits(const std::string& file) const {
  RG_CHECK(card_.task == ModelTask::segmentation, "predict: the model classifies; ",
           "segment() is for segmenters");
  const StepContext context{device_, *amp_};
  return sliding_window_logits(
      read_input(file).unsqueeze(0),
      {.window = card_.input_size, .overlap = card_.overlap, .batch = card_.window_batch},
      [&](const Tensor& x) { return infer(*model_, x, context); });
}

Tensor Predictor::segment(const std::string& file) const {
  return predicted_masks(segment_logits(file)).squeeze(0);
}

std::vector<std::string> list_inputs(const std::vector<std::string>& paths, ModelTask task) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    RG_CHECK(fs::exists(status), "predict: '", path, "' does not exist");
    if (!fs::is_directory(status)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      if (it->is_regular_file(ec) && takes(p, task) && !p.stem().string().ends_with("_mask"))
        found.push_back(p.string());
    }
    RG_CHECK(!ec, "predict: cannot list '", path, "' (", ec.message(), ")");
    RG_CHECK(!found.empty(), "predict: folder '", path, "' holds no ",
             task == ModelTask::classification ? "image (.png, .jpg, .jpeg, .bmp)"
                                               : "image or volume (.png, .jpg, .jpeg, .bmp, .npy)");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::string mask_path(const std::string& input, const std::string& out_dir, int64_t spatial_dims) {
  const fs::path in(input);
  const std::string ext = spatial_dims == 3 ? ".npy" : ".png";
  if (!out_dir.empty()) return (fs::path(out_dir) / (in.stem().string() + ext)).string();
  return (in.parent_path() / (in.stem().string() + "_mask" + ext)).string();
}

}  // namespace rg::train
