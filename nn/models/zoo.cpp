#include "nn/models/zoo.h"

#include <algorithm>
#include <cmath>

#include "nn/models/airbench.h"
#include "nn/models/airbench94.h"
#include "nn/models/mobilenetv2.h"
#include "nn/models/preact_resnet.h"
#include "nn/models/resnet.h"
#include "nn/models/unet.h"
#include "nn/models/vgg.h"

namespace rg::nn {

std::vector<std::string> model_names() {
  return {"airbench",  "airbench94",     "resnet18", "resnet20",    "resnet34", "resnet50",
          "resnet101", "preactresnet18", "vgg16",    "mobilenetv2", "unet2d",   "unet3d"};
}

bool is_segmentation_model(const std::string& name) {
  const std::string base = name.substr(0, name.find('@'));
  return base == "unet2d" || base == "unet3d";
}

std::shared_ptr<Module> make_model(const std::string& name, int64_t num_classes) {
  return make_model(name, ModelOptions{.num_classes = num_classes});
}

std::shared_ptr<Module> make_model(const std::string& name, const ModelOptions& options) {
  RG_CHECK(options.num_classes >= 0 && options.in_channels >= 0, "model '", name,
           "': num_classes and in_channels must be positive (0: the model's default), got ",
           options.num_classes, " and ", options.in_channels);
  std::string base = name;
  double width = 1.0;
  if (auto at = name.find('@'); at != std::string::npos) {
    base = name.substr(0, at);
    try {
      std::size_t used = 0;
      width = std::stod(name.substr(at + 1), &used);
      if (used != name.size() - at - 1) width = -1;
    } catch (const std::exception&) {
      width = -1;
    }
    RG_CHECK(width > 0, "model '", name,
             "': the width multiplier after '@' must be a positive number");
  }
  const std::vector<std::string> names = model_names();
  if (std::find(names.begin(), names.end(), base) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    fail("unknown model '", name, "' (known: ", known,
         "; append @<width> to airbench, a resnet or a unet for a width multiplier, e.g. "
         "resnet18@0.5)");
  }
  if (base == "unet2d" || base == "unet3d") {
    UNetConfig config = base == "unet2d" ? unet2d_config() : unet3d_config();
    if (options.num_classes > 0) config.num_classes = options.num_classes;
    if (options.in_channels > 0) config.in_channels = options.in_channels;
    // Rounded to an even width, which the decoder halves.
    config.base_width = 2 * std::max<int64_t>(1, std::llround(config.base_width * width / 2));
    return std::make_shared<UNet>(config);
  }
  RG_CHECK(options.in_channels == 0 || options.in_channels == 3, "model '", name,
           "' takes RGB images (in_channels 3), got in_channels ", options.in_channels);
  const int64_t num_classes = options.num_classes > 0 ? options.num_classes : 10;
  if (base == "resnet18") return std::make_shared<ResNet>(resnet18_config(num_classes, width));
  if (base == "resnet20") return std::make_shared<ResNet>(resnet20_config(num_classes, width));
  if (base == "resnet34") return std::make_shared<ResNet>(resnet34_config(num_classes, width));
  if (base == "resnet50") return std::make_shared<ResNet>(resnet50_config(num_classes, width));
  if (base == "resnet101") return std::make_shared<ResNet>(resnet101_config(num_classes, width));
  if (base == "airbench") return std::make_shared<Airbench>(num_classes, width);
  if (base == "vgg16" || base == "preactresnet18" || base == "mobilenetv2" ||
      base == "airbench94") {
    // pytorch-cifar's widths only, so that its checkpoints fit; airbench94's, its recipe's.
    RG_CHECK(name == base, "model '", name, "': ", base, " takes no width multiplier");
    if (base == "vgg16") return std::make_shared<VGG>(num_classes);
    if (base == "mobilenetv2") return std::make_shared<MobileNetV2>(num_classes);
    if (base == "airbench94") return std::make_shared<Airbench94>(num_classes);
  }
  // PreActResNet18, the one name left.
  return std::make_shared<PreActResNet>(std::vector<int64_t>{2, 2, 2, 2}, num_classes);
}

}  // namespace rg::nn
