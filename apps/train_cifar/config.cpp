#include "apps/train_cifar/config.h"

#include "core/error.h"
#include "data/cifar10.h"
#include "nn/models/zoo.h"
#include "parallel/faults.h"
#include "train/gpu_capability.h"

namespace rg::apps {
namespace {
using train::Flag;
using train::Interval;
using train::Json;

// Named recipes. "classic" is the pytorch-cifar recipe (the defaults). "quick" is for the
// 2-core CPU: airbench at half width, a one-cycle schedule with a high peak (the net's output
// is scaled by 1/9), Nesterov, label smoothing, flip test-time augmentation: 85.8-86.2 % in
// 12-16 minutes on 2 cores, as measured (README). "resnet18" is meant for one GPU: pytorch-cifar's
// ResNet18 (93.02 % after 200 epochs of the classic recipe) on the quick preset's tricks — a
// one-cycle schedule, Nesterov, label smoothing, flip test-time augmentation — to reach 93 % in
// 30 epochs; one run on an H200 at O1 (bf16) reached 91.10 % in 1 min 49 s (README, "On a GPU").
// "airbench94" is Keller Jordan's airbench94.py (94 % in 3.8 s on an A100): its net, Nesterov
// SGD over two groups (BatchNorm biases at 64x the lr), its warm-up/decay schedule, label
// smoothing 0.2, lookahead, alternating flip and 2-pixel translation, flip-and-translate TTA
// in the last epoch's evaluation (the others are plain, as airbench94.py logs them);
// 10 epochs of batch 1024 (the original stops at 9.9). Its lr and weight decay are given "per
// 1024 examples" of a summed loss; for our mean loss at batch 1024: lr = 11.5 / (1 + 1/(1 −
// 0.85)) = 1.5 and weight decay 0.0153 / 11.5 (the same steps; apps/README.md).
std::vector<train::Preset> presets() {
  return {{"classic", Json::object()},
          {"quick",
           {{"model", "airbench@0.5"},
            {"epochs", 8},
            {"batch_size", 256},
            {"schedule", "onecycle"},
            {"lr", 1.2},
            {"momentum", 0.85},
            {"nesterov", true},
            {"weight_decay", 1e-4},
            {"label_smoothing", 0.2},
            {"tta", true},
            {"out", "runs/quick"}}},
          {"resnet18",
           {{"model", "resnet18"},
            {"epochs", 30},
            {"batch_size", 256},
            {"schedule", "onecycle"},
            {"lr", 0.2},
            {"momentum", 0.9},
            {"nesterov", true},
            {"weight_decay", 5e-4},
            {"label_smoothing", 0.1},
            {"tta", true},
            {"out", "runs/resnet18"}}},
          {"airbench94",
           {{"model", "airbench94"},
            {"epochs", 10},
            {"batch_size", 1024},
            {"schedule", "airbench94"},
            {"lr", 1.5},
            {"momentum", 0.85},
            {"nesterov", true},
            {"weight_decay", 0.0153 / 11.5},
            {"norm_bias_lr_scale", 64.0},
            {"label_smoothing", 0.2},
            {"augmentation", "airbench94"},
            {"whiten_bias_epochs", 3},
            {"lookahead", true},
            {"tta", true},
            {"tta_translate", true},
            {"tta_epochs", "last"},
            {"out", "runs/airbench94"}}}};
}

// The GPU whose capability decides the presets' precision: --device's, or DataParallel's first
// (a bare "cuda", per rank under mpirun, asks about GPU 0: the GPUs of a machine alike).
int gpu_index(const TrainConfig& t) {
  const std::string& first =
      t.dp_devices.empty() ? t.device : t.dp_devices.substr(0, t.dp_devices.find(','));
  const std::size_t colon = first.find(':');
  if (first.rfind("cuda", 0) != 0 || colon == std::string::npos) return 0;
  try {
    return std::stoi(first.substr(colon + 1));
  } catch (const std::exception&) {
    return 0;  // the device's own check names a malformed index
  }
}

train::RunOptions<TrainConfig> declare() {
  using C = TrainConfig;
  using train::at_least;
  using train::in_range;
  using train::one_of;
  train::RunOptions<C> o("train_cifar", "train a ResNet on CIFAR-10 (ringgrad)");
  o.section("Data");
  o.add("data", &C::data, "CIFAR-10 folder (binary batches, image folder or CSV lists)");
  o.add("data_format", &C::data_format, "auto, binary, folder or csv",
        [](const std::string&, const std::string& v) { (void)data::parse_data_format(v); });
  // A negative limit used to mean "no limit" silently.
  o.add("train_limit", &C::train_limit, "use only the first N training images",
        at_least<int64_t>(0, "(0: all images)"));
  o.add("test_limit", &C::test_limit, "use only the first N test images",
        at_least<int64_t>(0, "(0: all images)"));
  o.add("augmentation", &C::augmentation,
        "classic (crop with zero padding 4, random flip) or airbench94 (reflect-padded crop 2, "
        "alternating flip)",
        one_of({"classic", "airbench94"}));
  o.add("data_on_device", &C::data_on_device,
        "auto, on or off: keep the data set on the training device and make batches there "
        "(auto: on for cuda without --dp; off: the host DataLoader)",
        one_of({"auto", "on", "off"}));
  o.section("Model");
  // A UNet failed only at the first loss, after building 31 M parameters, on a shape mismatch.
  std::string classifiers;
  for (const std::string& name : nn::model_names())
    if (!nn::is_segmentation_model(name)) classifiers += (classifiers.empty() ? "" : ", ") + name;
  o.add("model", &C::model,
        classifiers +
            " (airbench and the resnets optionally @width: resnet18@0.5; shufflenetv2 "
            "@net_size: 0.5, 1, 1.5, 2); pytorch-cifar's models with its parameter names",
        [](const std::string&, const std::string& v) {
          RG_CHECK(!nn::is_segmentation_model(v), "model '", v,
                   "' is a segmentation model; train_cifar trains classifiers (see --help)");
        });
  o.add("init_from", &C::init_from,
        "start from these weights: a ringgrad checkpoint, or a PyTorch state_dict saved as "
        "safetensors (DataParallel's 'module.' prefix stripped). Weights only: the optimizer, "
        "schedule and epochs start fresh. A run that --resume finds a checkpoint for continues "
        "from that instead");
  o.add("whiten_bias_epochs", &C::whiten_bias_epochs,
        "airbench94: epochs its whitening bias trains (0: all)",
        at_least<int64_t>(0, "(0: always trains)"), Flag::config_only);
  o.section("Optimization");
  o.add("epochs", &C::epochs, "epochs to train", in_range<int64_t>(1, train::kMaxEpochs));
  o.add("batch_size", &C::batch_size,
        "images per batch and process (under mpirun: x N in all; with --accumulate-steps K, K "
        "batches a step)",
        at_least<int64_t>(1));
  o.add("lr", &C::lr, "peak learning rate", train::positive());
  o.add("momentum", &C::momentum, "SGD momentum");
  o.add("weight_decay", &C::weight_decay, "L2 weight decay");
  o.add("nesterov", &C::nesterov, "Nesterov momentum", {}, Flag::config_only);
  o.add("schedule", &C::schedule, "cosine, multistep, onecycle, constant or airbench94",
        one_of({"cosine", "multistep", "onecycle", "constant", "airbench94"}));
  o.add("milestones", &C::milestones, "multistep: the epochs whose start divides the lr by 10", {},
        Flag::config_only);
  o.add("warmup_epochs", &C::warmup_epochs, "linear warm-up length");
  o.add("lr_scaling", &C::lr_scaling,
        "none or linear (lr x processes x accumulation steps: the global batch over --batch-size)",
        one_of({"none", "linear"}));
  o.add("label_smoothing", &C::label_smoothing, "cross-entropy label smoothing",
        train::in_interval(0, 1, Interval::right_open));
  o.add("norm_bias_lr_scale", &C::norm_bias_lr_scale,
        "BatchNorm biases: lr x this, weight decay / this (1: one group)", train::positive(),
        Flag::config_only);
  o.add("lookahead", &C::lookahead, "airbench94's lookahead (weights averaged every 5 steps)", {},
        Flag::config_only);
  o.add("clip_grad_norm", &C::clip_grad_norm, "clip gradients to this global norm (0: off)",
        at_least<double>(0, "(0: off)"));
  o.section("Evaluation");
  o.add("eval_only", &C::eval_only, "evaluate the checkpoint and stop");
  o.add("tta", &C::tta, "test-time augmentation (mirror images)");
  o.add("tta_translate", &C::tta_translate, "with tta: also over 1-pixel shifts (airbench94's)", {},
        Flag::config_only);
  o.add("tta_epochs", &C::tta_epochs,
        "with --tta: augment every epoch's evaluation, or only the last's",
        one_of({"every", "last"}));
  o.include(train::machine_options());
  o.section("Machine");
  o.add("deterministic", &C::deterministic,
        "GPU convolutions only through algorithms cuDNN marks deterministic (the CPU always is)");
  o.add("cudnn_benchmark", &C::cudnn_benchmark,
        "GPU convolutions through the fastest of cuDNN's candidate plans, timed in the first "
        "step (torch.backends.cudnn.benchmark; --deterministic overrides it). Default: on for the "
        "quick, resnet18 and airbench94 presets on a GPU")
      .negated_by("GPU convolutions through cuDNN's heuristics' first plan, also for a preset")
      .derived_default();
  o.add("warm_up", &C::warm_up,
        "before the timed run, choose the convolutions' plans on a throwaway copy of the model "
        "(a training step of each batch size, the evaluations), as airbench94's warmup94; the "
        "run trains as without. Default: on where cudnn_benchmark is")
      .negated_by("no warm-up: plans are chosen inside the first epoch")
      .derived_default();
  o.add("cuda_graphs", &C::cuda_graphs,
        "capture the training step once in a CUDA graph and replay it for every full batch "
        "(after 2 eager steps; partial batches run eagerly): one launch per step. Needs a GPU, "
        "SGD, one process and no loss scaler (bf16 has none by default)");
  o.add("float64", &C::float64,
        "the model, its inputs and its loss in f64, on the CPU at --amp O0: a checking mode, as "
        "PyTorch's model.double() (two runs that differ only in the order of their additions "
        "then stay within f64's rounding of each other; in f32 a ReLU net can part at a kink)");
  o.add("memory_format", &C::memory_format,
        "contiguous (NCHW) or channels_last (NHWC) activations: the model's input is converted "
        "once at its entry; parameters and checkpoints stay NCHW f32. Default: channels_last for "
        "the quick, resnet18 and airbench94 presets on a GPU, which there also default to --amp O1 "
        "--amp-dtype bf16 where the GPU has bf16 (sm_80+; --amp O0 keeps f32)",
        one_of({"contiguous", "channels_last"}))
      .derived_default();
  o.add(
      "fault", &C::faults,
      "inject a fault (repeatable): kill:rank=R:step=S, exit:rank=R:step=S[:code=C], "
      "delay:rank=R:step=S:seconds=T, stop:rank=R:step=S, error:rank=R:step=S; each fires "
      "before step S, or with :at=backward during its backward, with :at=checkpoint (rank 0) "
      "while writing its epoch's checkpoint (parallel/faults.h)",
      [](const std::string&, const std::vector<std::string>& specs) {
        (void)parallel::FaultPlan(specs);
      },
      Flag::command_line_only);
  o.include(train::precision_options());
  o.include(train::run_output_options());
  o.presets(&C::preset, presets());

  // An explicit cudnn_benchmark (--cudnn-benchmark, --no-cudnn-benchmark, --set, --config)
  // wins; what checkpoints record is the value decided here, never null.
  o.derived_defaults([](C& t, const Json& given) {
    if (!given.contains("cudnn_benchmark"))
      t.cudnn_benchmark =
          benchmarks_convolutions_on_gpu(t.preset, t.device, t.dp_devices) && !t.deterministic;
    // Likewise the layout and the precision: an explicit --memory-format, --amp or --amp-dtype
    // wins over the preset's GPU default. The GPU is asked only for such a run (a CPU run makes
    // no CUDA call).
    const bool gpu_preset = benchmarks_convolutions_on_gpu(t.preset, t.device, t.dp_devices);
    const int capability = gpu_preset ? train::cuda_compute_capability(gpu_index(t)) : 0;
    const GpuPresetDefaults gpu = gpu_preset_defaults(t.preset, t.device, t.dp_devices, capability);
    if (!given.contains("memory_format"))
      t.memory_format = gpu.channels_last ? "channels_last" : "contiguous";
    if (gpu.amp_bf16) {
      if (!given.contains("amp")) t.amp = "O1";
      if (!given.contains("amp_dtype")) t.amp_dtype = "bf16";
    }
    if (!given.contains("warm_up")) t.warm_up = t.cudnn_benchmark;
  });
  o.check([](const C& t) {
    RG_CHECK(!t.tta_translate || t.tta, "tta_translate adds shifts to tta's mirror; set tta too");
    RG_CHECK(t.whiten_bias_epochs == 0 || t.model == "airbench94",
             "whiten_bias_epochs is airbench94's (its whitening bias); the model is '", t.model,
             "'");
    // The lookahead averages the model's own weights; under O2/O3 the optimizer updates f32
    // masters that it would not see.
    RG_CHECK(!t.lookahead || t.amp == "O0" || t.amp == "O1",
             "lookahead runs on the model's f32 weights: amp O0 or O1, got ", t.amp);
    // Evaluating freshly initialised weights would print a meaningless accuracy and exit 0.
    RG_CHECK(!t.eval_only || !t.resume.empty(),
             "eval_only needs a checkpoint to evaluate: --resume PATH, or --resume auto for "
             "<out>/last.safetensors");
    RG_CHECK(!t.float64 || (t.amp == "O0" && t.device.rfind("cpu", 0) == 0),
             "float64 is a checking mode on the CPU without mixed precision: --amp O0 and --device "
             "cpu, got --amp ",
             t.amp, " --device ", t.device);
    RG_CHECK(t.warmup_epochs >= 0 && t.warmup_epochs < static_cast<double>(t.epochs),
             "warmup_epochs must be in [0, epochs), got ", t.warmup_epochs);
  });
  return o;
}

}  // namespace

// The presets made for speed time cuDNN's plans on a GPU, as PyTorch's airbench94 does
// (torch.backends.cudnn.benchmark = True): the first step of each convolution shape runs its
// candidate plans and keeps the fastest. The CPU has no plans to time.
bool benchmarks_convolutions_on_gpu(const std::string& preset, const std::string& device,
                                    const std::string& dp_devices) {
  const bool gpu_preset = preset == "quick" || preset == "resnet18" || preset == "airbench94";
  return gpu_preset && (dp_devices.empty() ? device : dp_devices).rfind("cuda", 0) == 0;
}

GpuPresetDefaults gpu_preset_defaults(const std::string& preset, const std::string& device,
                                      const std::string& dp_devices, int capability) {
  // The same presets and devices as benchmarks_convolutions_on_gpu.
  const bool on_gpu = benchmarks_convolutions_on_gpu(preset, device, dp_devices);
  return {.channels_last = on_gpu, .amp_bf16 = on_gpu && train::has_fast_bf16(capability)};
}

const train::RunOptions<TrainConfig>& train_cifar_options() {
  static const train::RunOptions<TrainConfig> options = declare();
  return options;
}

nlohmann::json TrainConfig::to_json() const {
  return train_cifar_options().to_json(*this);
}

}  // namespace rg::apps
