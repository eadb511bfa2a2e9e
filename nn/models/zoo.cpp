#include "nn/models/zoo.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "nn/models/airbench.h"
#include "nn/models/airbench94.h"
#include "nn/models/densenet.h"
#include "nn/models/dla.h"
#include "nn/models/dpn.h"
#include "nn/models/efficientnet.h"
#include "nn/models/googlenet.h"
#include "nn/models/mobilenet.h"
#include "nn/models/mobilenetv2.h"
#include "nn/models/preact_resnet.h"
#include "nn/models/regnet.h"
#include "nn/models/resnet.h"
#include "nn/models/resnext.h"
#include "nn/models/senet.h"
#include "nn/models/shufflenetv2.h"
#include "nn/models/unet.h"
#include "nn/models/vgg.h"

namespace rg::nn {

namespace {

// What a name's "@<number>" suffix means for a model.
enum class Suffix {
  width,     // a width multiplier (airbench, the ResNets, the UNets)
  net_size,  // pytorch-cifar's net_size (ShuffleNetV2: 0.5, 1, 1.5, 2)
  none,      // pytorch-cifar's widths only, so that its checkpoints fit (airbench94: its recipe's)
};

using Factory = std::function<std::shared_ptr<Module>(int64_t classes, double suffix)>;

struct Entry {
  std::string name;
  Suffix suffix;
  Factory make;
};

template <class M, class... Args>
Factory fixed(Args... args) {
  return [=](int64_t classes, double) { return std::make_shared<M>(args..., classes); };
}

Factory resnet(ResNetConfig (*config)(int64_t, double)) {
  return [config](int64_t classes, double width) {
    return std::make_shared<ResNet>(config(classes, width));
  };
}

template <class M, class Config>
Factory from_config(Config (*config)(int64_t)) {
  return [config](int64_t classes, double) { return std::make_shared<M>(config(classes)); };
}

Factory resnext(int64_t cardinality, int64_t width) {
  return [=](int64_t classes, double) {
    return std::make_shared<ResNeXt>(ResNeXtConfig{
        .cardinality = cardinality, .bottleneck_width = width, .num_classes = classes});
  };
}

Factory preact(std::vector<int64_t> blocks, PreActBlockKind kind) {
  return [=](int64_t classes, double) {
    return std::make_shared<PreActResNet>(blocks, classes, kind);
  };
}

Factory vgg(int64_t depth) {
  return [=](int64_t classes, double) { return std::make_shared<VGG>(classes, depth); };
}

// Every classifier, in the order model_names() lists them (the UNets follow).
const std::vector<Entry>& classifiers() {
  using B = PreActBlockKind;
  static const std::vector<Entry> entries = {
      {"airbench", Suffix::width,
       [](int64_t classes, double width) { return std::make_shared<Airbench>(classes, width); }},
      {"airbench94", Suffix::none, fixed<Airbench94>()},
      {"resnet18", Suffix::width, resnet(resnet18_config)},
      {"resnet20", Suffix::width, resnet(resnet20_config)},
      {"resnet34", Suffix::width, resnet(resnet34_config)},
      {"resnet50", Suffix::width, resnet(resnet50_config)},
      {"resnet101", Suffix::width, resnet(resnet101_config)},
      {"resnet152", Suffix::width, resnet(resnet152_config)},
      {"preactresnet18", Suffix::none, preact({2, 2, 2, 2}, B::basic)},
      {"preactresnet34", Suffix::none, preact({3, 4, 6, 3}, B::basic)},
      {"preactresnet50", Suffix::none, preact({3, 4, 6, 3}, B::bottleneck)},
      {"preactresnet101", Suffix::none, preact({3, 4, 23, 3}, B::bottleneck)},
      {"preactresnet152", Suffix::none, preact({3, 8, 36, 3}, B::bottleneck)},
      {"vgg11", Suffix::none, vgg(11)},
      {"vgg13", Suffix::none, vgg(13)},
      {"vgg16", Suffix::none, vgg(16)},
      {"vgg19", Suffix::none, vgg(19)},
      {"mobilenet", Suffix::none, fixed<MobileNet>()},
      {"mobilenetv2", Suffix::none, fixed<MobileNetV2>()},
      {"regnetx_200mf", Suffix::none, from_config<RegNet>(regnetx_200mf_config)},
      {"regnetx_400mf", Suffix::none, from_config<RegNet>(regnetx_400mf_config)},
      {"regnety_400mf", Suffix::none, from_config<RegNet>(regnety_400mf_config)},
      {"resnext29_2x64d", Suffix::none, resnext(2, 64)},
      {"resnext29_4x64d", Suffix::none, resnext(4, 64)},
      {"resnext29_8x64d", Suffix::none, resnext(8, 64)},
      {"resnext29_32x4d", Suffix::none, resnext(32, 4)},
      {"simpledla", Suffix::none, fixed<DLA>(DLAKind::simple)},
      {"dla", Suffix::none, fixed<DLA>(DLAKind::full)},
      {"densenet121", Suffix::none, from_config<DenseNet>(densenet121_config)},
      {"densenet161", Suffix::none, from_config<DenseNet>(densenet161_config)},
      {"densenet169", Suffix::none, from_config<DenseNet>(densenet169_config)},
      {"densenet201", Suffix::none, from_config<DenseNet>(densenet201_config)},
      {"densenet_cifar", Suffix::none, from_config<DenseNet>(densenet_cifar_config)},
      {"dpn26", Suffix::none, from_config<DPN>(dpn26_config)},
      {"dpn92", Suffix::none, from_config<DPN>(dpn92_config)},
      {"googlenet", Suffix::none, fixed<GoogLeNet>()},
      {"senet18", Suffix::none,
       [](int64_t classes, double) {
         return std::make_shared<SENet>(std::vector<int64_t>{2, 2, 2, 2}, classes);
       }},
      {"shufflenetv2", Suffix::net_size,
       [](int64_t classes, double size) { return std::make_shared<ShuffleNetV2>(size, classes); }},
      {"efficientnetb0", Suffix::none,
       [](int64_t classes, double) {
         return std::make_shared<EfficientNet>(EfficientNetConfig{.num_classes = classes});
       }},
      {"lenet", Suffix::none, fixed<LeNet>()},
      {"pnasneta", Suffix::none, fixed<PNASNet>(PNASCell::a, int64_t{44})},
      {"pnasnetb", Suffix::none, fixed<PNASNet>(PNASCell::b, int64_t{32})},
  };
  return entries;
}

const Entry* find_classifier(const std::string& base) {
  for (const Entry& e : classifiers())
    if (e.name == base) return &e;
  return nullptr;
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const Entry& e : classifiers()) names.push_back(e.name);
  names.push_back("unet2d");
  names.push_back("unet3d");
  return names;
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
  double suffix = 1.0;
  const auto at = name.find('@');
  if (at != std::string::npos) {
    base = name.substr(0, at);
    try {
      std::size_t used = 0;
      suffix = std::stod(name.substr(at + 1), &used);
      if (used != name.size() - at - 1) suffix = -1;
    } catch (const std::exception&) {
      suffix = -1;
    }
    RG_CHECK(suffix > 0, "model '", name,
             "': the width multiplier after '@' must be a positive number");
  }
  const Entry* entry = find_classifier(base);
  if (!entry && !is_segmentation_model(base)) {
    std::string known;
    for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    fail("unknown model '", name, "' (known: ", known,
         "; append @<width> to airbench, a resnet or a unet for a width multiplier, e.g. "
         "resnet18@0.5, and @<net_size> to shufflenetv2)");
  }
  if (!entry) {
    UNetConfig config = base == "unet2d" ? unet2d_config() : unet3d_config();
    if (options.num_classes > 0) config.num_classes = options.num_classes;
    if (options.in_channels > 0) config.in_channels = options.in_channels;
    // Rounded to an even width, which the decoder halves.
    config.base_width = 2 * std::max<int64_t>(1, std::llround(config.base_width * suffix / 2));
    return std::make_shared<UNet>(config);
  }
  RG_CHECK(options.in_channels == 0 || options.in_channels == 3, "model '", name,
           "' takes RGB images (in_channels 3), got in_channels ", options.in_channels);
  RG_CHECK(entry->suffix != Suffix::none || at == std::string::npos, "model '", name, "': ", base,
           " takes no width multiplier");
  return entry->make(options.num_classes > 0 ? options.num_classes : 10, suffix);
}

}  // namespace rg::nn
