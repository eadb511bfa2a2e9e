#pragma once
// The model zoo: every model of nn/models/ by name, for the apps' --model, the benchmarks and
// the tests. Each model's own header holds its definition; this file only names them. The
// classifiers (airbench, the ResNets, vgg16, mobilenetv2) map images to (N, num_classes) and
// are train_cifar's; unet2d / unet3d are segmentation models, (N, C, [D,] H, W) to
// (N, num_classes, [D,] H, W).

#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace rg::nn {

// 0 means the model's own default:
//   num_classes: 10 for the CIFAR models; unet2d 2 (Pytorch-UNet's UNet(n_channels=3,
//     n_classes=2)); unet3d 1 (the seeds' UNet3d(n_channels=1, n_classes=1)).
//   in_channels: 3; unet3d 1. The CIFAR models take RGB images only (3).
struct ModelOptions {
  int64_t num_classes = 0;
  int64_t in_channels = 0;
};

// Builds a model by name (model_names(): airbench, airbench94, the ResNets, pytorch-cifar's vgg16,
// preactresnet18, mobilenetv2, and unet2d / unet3d with unet.h's default configurations);
// airbench, the ResNets and the UNets take a width suffix such as "resnet18@0.5" (a UNet's
// base width 64 or 32 times it, kept even). Unknown names are an error that lists the known
// ones.
std::shared_ptr<Module> make_model(const std::string& name, const ModelOptions& options = {});
std::shared_ptr<Module> make_model(const std::string& name, int64_t num_classes);
std::vector<std::string> model_names();
// Whether `name` (with or without a width suffix) is one of the segmentation models (the
// UNets), so that an app can refuse a model of the other kind before it builds anything.
bool is_segmentation_model(const std::string& name);

}  // namespace rg::nn
