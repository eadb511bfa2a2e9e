#pragma once
// train_cifar's options: the struct the run reads, and their declarations (config.cpp) for the
// run-options parser every app shares (train/run_options.h: defaults < --preset NAME <
// --config FILE.json < flags < --set key=value, each value checked when read). The machine,
// precision and output options are the shared groups' (train/common_options.h).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/common_options.h"
#include "train/run_options.h"

namespace rg::apps {

// The initial values are the defaults: the classic recipe (pytorch-cifar's).
struct TrainConfig : train::MachineOptions, train::PrecisionOptions, train::RunOutputOptions {
  TrainConfig() : RunOutputOptions{.out = "runs/cifar10"} {}

  std::string data{};                // CIFAR-10 root; empty: search the usual places
  std::string data_format = "auto";  // auto | binary | folder | csv
  std::string model = "resnet18";    // a name of nn::model_names(), ResNets with optional @width
  // Weights to start from (train/pretrained.h: a ringgrad checkpoint or a PyTorch state_dict as
  // safetensors); the optimizer, schedule and epoch count start fresh. Empty: initialised anew.
  // A run that resumes continues from its checkpoint instead.
  std::string init_from{};
  int64_t epochs = 200;
  int64_t batch_size = 128;
  double lr = 0.1;
  double momentum = 0.9;
  double weight_decay = 5e-4;
  bool nesterov = false;
  std::string schedule = "cosine";            // cosine | multistep | onecycle | constant
  std::vector<int64_t> milestones{100, 150};  // epochs, for multistep
  double warmup_epochs = 0;
  std::string lr_scaling = "none";  // none | linear (lr x world size)
  double label_smoothing = 0;
  // airbench94's pieces (train_cifar --preset airbench94); off by default.
  std::string augmentation = "classic";  // classic (crop 4 with zeros, random flip) | airbench94
  double norm_bias_lr_scale = 1;  // BatchNorm biases: lr x this, weight decay / this (1: one group)
  int64_t whiten_bias_epochs =
      0;                   // airbench94 model: its whitening bias trains these epochs (0: all)
  bool lookahead = false;  // airbench94's lookahead: weights <- their average every 5 steps
  bool eval_only = false;
  int64_t train_limit = 0;  // 0: all samples
  int64_t test_limit = 0;
  double clip_grad_norm = 0;         // 0: off
  bool tta = false;                  // test-time augmentation: average each image with its mirror
  bool tta_translate = false;        // with tta: also over one-pixel shifts (airbench94's level 2)
  std::string tta_epochs = "every";  // every | last: which epochs' evaluations tta augments
  bool deterministic = false;        // GPU convolutions through deterministic algorithms only
  // GPU convolutions through the fastest plan timed (not with the above); not given (or null):
  // on for the quick, resnet18 and airbench94 presets on a GPU (benchmarks_convolutions_on_gpu)
  bool cudnn_benchmark = false;
  // Time the convolutions' plans before the timed run, on a throwaway model (train/warm_up.h);
  // not given: on where cudnn_benchmark is (the plans it would otherwise time in epoch 1)
  bool warm_up = false;
  // Each full-batch training step captured once in a CUDA graph and replayed (train/step_graph.h)
  bool cuda_graphs = false;
  // The model, its inputs and its loss in f64 (CPU, --amp O0): a checking mode whose rounding
  // (~1e-16) no ReLU's kink notices, where f32's (~1e-7) flips one now and then
  bool float64 = false;
  // contiguous | channels_last: the layout of the model's activations; the input is converted
  // once at the model's entry, parameters and checkpoints stay NCHW. Not given (or null):
  // channels_last for the quick, resnet18 and airbench94 presets on a GPU (gpu_preset_defaults)
  std::string memory_format = "contiguous";
  // auto | on | off: the data set on the training device, batches made there (cifar_data.h);
  // auto: on for cuda devices (without --dp, when the set fits), off on the CPU
  std::string data_on_device = "auto";
  // --fault SPEC (repeatable; command line only, never saved: an experiment, not a recipe)
  std::vector<std::string> faults{};
  std::string preset{};  // the named recipe the options started from

  nlohmann::json to_json() const;  // what checkpoints record
};

const train::RunOptions<TrainConfig>& train_cifar_options();

bool benchmarks_convolutions_on_gpu(const std::string& preset, const std::string& device,
                                    const std::string& dp_devices);

// What the presets made for speed (quick, resnet18, airbench94) train in on a GPU unless told
// otherwise, as PyTorch's airbench94 (a half-precision, channels-last model): channels-last
// activations, and mixed precision O1 in bf16 where the GPU has fast bf16 (compute capability
// `capability` = 10·major + minor >= 80; train/gpu_capability.h). Nothing changes on the CPU.
struct GpuPresetDefaults {
  bool channels_last = false;
  bool amp_bf16 = false;  // amp O1, amp_dtype bf16
};
GpuPresetDefaults gpu_preset_defaults(const std::string& preset, const std::string& device,
                                      const std::string& dp_devices, int capability);

}  // namespace rg::apps
