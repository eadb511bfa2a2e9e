#include "apps/train_cifar/config.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/device.h"
#include "core/error.h"
#include "data/dataloader.h"
#include "nn/models/zoo.h"
#include "optim/amp.h"
#include "train/step_trace.h"
#include "train/world.h"

namespace rg::apps {

using json = nlohmann::json;
namespace fs = std::filesystem;

json default_config() {
  return {{"data", ""},
          {"data_format", "auto"},
          {"model", "resnet18"},
          {"epochs", 200},
          {"batch_size", 128},
          {"lr", 0.1},
          {"momentum", 0.9},
          {"weight_decay", 5e-4},
          {"nesterov", false},
          {"schedule", "cosine"},
          {"milestones", json::array({100, 150})},
          {"warmup_epochs", 0.0},
          {"lr_scaling", "none"},
          {"sync_bn", false},
          {"allreduce", "ring"},
          {"bucket_mb", 25.0},
          {"dp", 0},
          {"dp_devices", ""},
          {"backend", "auto"},
          {"grad_compression", "none"},
          {"zero", 0},
          {"amp", "O0"},
          {"amp_dtype", "fp16"},
          {"loss_scale", "dynamic"},
          {"label_smoothing", 0.0},
          {"augmentation", "classic"},
          {"norm_bias_lr_scale", 1.0},
          {"whiten_bias_epochs", 0},
          {"lookahead", false},
          {"workers", 2},
          {"threads", 0},
          {"seed", 0},
          {"out", "runs/cifar10"},
          {"resume", ""},
          {"overwrite", false},
          {"eval_only", false},
          {"train_limit", 0},
          {"test_limit", 0},
          {"device", "cpu"},
          {"clip_grad_norm", 0.0},
          {"progress", true},
          {"tta", false},
          {"tta_translate", false},
          {"tta_epochs", "every"},
          {"deterministic", false},
          {"cudnn_benchmark", false},
          {"data_on_device", "auto"},
          {"stop_after_epochs", 0},
          {"collective_timeout", 300.0},
          {"check_sequence", false},
          {"trace", ""},
          {"trace_steps", "2:4"},
          {"preset", ""}};
}

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
std::vector<std::string> preset_names() {
  return {"classic", "quick", "resnet18", "airbench94"};
}

json preset(const std::string& name) {
  if (name == "classic") return json::object();
  if (name == "quick")
    return {{"model", "airbench@0.5"},
            {"epochs", 8},
            {"batch_size", 256},
            {"schedule", "onecycle"},
            {"lr", 1.2},
            {"momentum", 0.85},
            {"nesterov", true},
            {"weight_decay", 1e-4},
            {"label_smoothing", 0.2},
            {"tta", true},
            {"out", "runs/quick"}};
  if (name == "resnet18")
    return {{"model", "resnet18"},
            {"epochs", 30},
            {"batch_size", 256},
            {"schedule", "onecycle"},
            {"lr", 0.2},
            {"momentum", 0.9},
            {"nesterov", true},
            {"weight_decay", 5e-4},
            {"label_smoothing", 0.1},
            {"tta", true},
            {"out", "runs/resnet18"}};
  if (name == "airbench94")
    return {{"model", "airbench94"},
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
            {"out", "runs/airbench94"}};
  fail("unknown preset '", name, "' (known: classic, quick, resnet18, airbench94)");
}

namespace {
const char* type_name(const json& v) {
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list of integers";
  return "an object";
}

bool same_type(const json& want, const json& got) {
  if (want.is_number_float()) return got.is_number();
  if (want.is_number_integer()) return got.is_number_integer();
  if (want.is_array())  // the one list option, milestones, holds integers
    return got.is_array() &&
           std::all_of(got.begin(), got.end(), [](const json& v) { return v.is_number_integer(); });
  return want.type() == got.type();
}

// Text for a message, cut short (at a UTF-8 character boundary).
std::string clipped(const std::string& text) {
  if (text.size() <= 80) return text;
  std::size_t cut = 80;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

// A value for a message: dumped (its depth is bounded by parse_json, so dump()'s recursion is)
// and cut short (its length is not).
std::string shown(const json& v) {
  return clipped(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

// The offset of the first byte that breaks UTF-8, or npos. Options end up in JSON (the
// checkpoint's metadata), whose writer holds every string to the well-formed sequences of
// Unicode's table 3-7: besides the shape of lead and continuation bytes, no overlong forms
// (C0, C1; E0 below A0; F0 below 90), no surrogates (ED above 9F) and nothing past U+10FFFF
// (F4 above 8F; F5-FF). A shape-only check let "\xC1\xBE" through to a crash (a fuzz finding).
std::size_t invalid_utf8_at(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = 0;                           // bytes in the sequence
    unsigned char lo = 0x80, hi = 0xBF;  // the range of its second byte
    if (c < 0x80)
      n = 1;
    else if (c >= 0xC2 && c <= 0xDF)
      n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
      n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
      n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (n == 0 || i + n > s.size()) return i;
    for (int k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return i;
    }
    i += static_cast<std::size_t>(n);
  }
  return std::string::npos;
}

void check_utf8(const std::string& text, const std::string& what) {
  const std::size_t at = invalid_utf8_at(text);
  RG_CHECK(at == std::string::npos, what, ": the value is not valid UTF-8 (byte ", at,
           "); options are stored as JSON, which holds only UTF-8 text");
}

// Parses JSON text, refusing nesting deeper than kMaxConfigDepth as the parser meets it.
// `allow_invalid`: a discarded value instead of an error for text that is not JSON.
json parse_json(const std::string& text, const std::string& what, bool allow_invalid) {
  const json::parser_callback_t depth_guard = [&](int depth, json::parse_event_t event, json&) {
    if (depth >= kMaxConfigDepth &&
        (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start))
      fail(what, ": JSON nests lists or objects deeper than ", kMaxConfigDepth, " levels");
    return true;
  };
  json value = json::parse(text, depth_guard, /*allow_exceptions=*/false);
  RG_CHECK(allow_invalid || !value.is_discarded(), what, " is not valid JSON");
  return value;
}

std::string known_keys() {
  std::string keys;
  const json defaults = default_config();  // named: items() would dangle on a temporary
  for (auto& [k, _] : defaults.items()) keys += (keys.empty() ? "" : ", ") + k;
  return keys;
}
}  // namespace

void merge_config(json& config, const json& overrides, const std::string& source) {
  RG_CHECK(overrides.is_object(), source, ": the configuration must be a JSON object");
  for (auto& [key, value] : overrides.items()) {
    RG_CHECK(config.contains(key), source, ": unknown option '", clipped(key),
             "' (known: ", known_keys(), ")");
    RG_CHECK(same_type(config[key], value), source, ": option '", key, "' must be ",
             type_name(config[key]), ", got ", shown(value));
    config[key] = value;
  }
}

void apply_set(json& config, const std::string& assignment) {
  const auto eq = assignment.find('=');
  RG_CHECK(eq != std::string::npos && eq > 0, "--set '", clipped(assignment),
           "': expected key=value");
  const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  check_utf8(assignment, "--set " + clipped(key));
  json value = parse_json(text, "--set " + clipped(key), /*allow_invalid=*/true);
  // A bare word is a string; so is anything given for a string option (--set loss_scale=1024).
  if (value.is_discarded() ||
      (config.contains(key) && config[key].is_string() && !value.is_string()))
    value = text;
  merge_config(config, {{key, value}}, "--set " + clipped(assignment));
}

TrainConfig parse_config(const json& c) {
  TrainConfig t;
  t.data = c["data"];
  t.data_format = c["data_format"];
  t.model = c["model"];
  t.epochs = c["epochs"];
  t.batch_size = c["batch_size"];
  t.lr = c["lr"];
  t.momentum = c["momentum"];
  t.weight_decay = c["weight_decay"];
  t.nesterov = c["nesterov"];
  t.schedule = c["schedule"];
  t.milestones = c["milestones"].get<std::vector<int64_t>>();
  t.warmup_epochs = c["warmup_epochs"];
  t.lr_scaling = c["lr_scaling"];
  t.sync_bn = c["sync_bn"];
  t.allreduce = c["allreduce"];
  t.bucket_mb = c["bucket_mb"];
  t.dp = c["dp"];
  t.dp_devices = c["dp_devices"];
  t.backend = c["backend"];
  t.grad_compression = c["grad_compression"];
  t.zero = c["zero"];
  t.amp = c["amp"];
  t.amp_dtype = c["amp_dtype"];
  t.loss_scale = c["loss_scale"];
  t.label_smoothing = c["label_smoothing"];
  t.augmentation = c["augmentation"];
  t.norm_bias_lr_scale = c["norm_bias_lr_scale"];
  t.whiten_bias_epochs = c["whiten_bias_epochs"];
  t.lookahead = c["lookahead"];
  t.workers = c["workers"];
  t.threads = c["threads"];
  t.seed = c["seed"];
  t.out = c["out"];
  t.resume = c["resume"];
  t.overwrite = c["overwrite"];
  t.eval_only = c["eval_only"];
  t.train_limit = c["train_limit"];
  t.test_limit = c["test_limit"];
  t.device = c["device"];
  t.clip_grad_norm = c["clip_grad_norm"];
  t.progress = c["progress"];
  t.tta = c["tta"];
  t.tta_translate = c["tta_translate"];
  t.tta_epochs = c["tta_epochs"];
  t.deterministic = c["deterministic"];
  t.cudnn_benchmark = c["cudnn_benchmark"];
  t.data_on_device = c["data_on_device"];
  t.stop_after_epochs = c["stop_after_epochs"];
  t.trace = c["trace"];
  t.trace_steps = c["trace_steps"];
  train::TraceOptions trace_window;
  train::parse_trace_steps(t.trace_steps, trace_window);  // names a bad window now
  RG_CHECK(t.zero == 0 || t.zero == 1,
           "zero must be 0 (off) or 1 (ZeRO stage 1: optimizer "
           "state sharded across processes), got ",
           t.zero);
  RG_CHECK(t.zero == 0 || (t.dp == 0 && t.dp_devices.empty()),
           "zero shards the optimizer across processes (mpirun); it does not combine with dp");
  t.collective_timeout = c["collective_timeout"];
  t.check_sequence = c["check_sequence"];
  t.preset = c["preset"];
  RG_CHECK(t.epochs > 0 && t.epochs <= kMaxEpochs, "epochs must be in [1, ", kMaxEpochs, "], got ",
           t.epochs);
  RG_CHECK(t.batch_size > 0, "batch_size must be > 0, got ", t.batch_size);
  RG_CHECK(!nn::is_segmentation_model(t.model), "model '", t.model,
           "' is a segmentation model; train_cifar trains classifiers (see --help)");
  // NaN fails every comparison; JSON numbers such as 1e400 parse to infinity.
  for (const auto& [name, v] : {std::pair<const char*, double>{"lr", t.lr},
                                {"momentum", t.momentum},
                                {"weight_decay", t.weight_decay},
                                {"warmup_epochs", t.warmup_epochs},
                                {"label_smoothing", t.label_smoothing},
                                {"norm_bias_lr_scale", t.norm_bias_lr_scale},
                                {"clip_grad_norm", t.clip_grad_norm},
                                {"bucket_mb", t.bucket_mb},
                                {"collective_timeout", t.collective_timeout}})
    RG_CHECK(std::isfinite(v), name, " must be a finite number, got ", v);
  RG_CHECK(t.lr > 0, "lr must be > 0, got ", t.lr);
  // Before the casts to int that would wrap (4294967297 threads became 1).
  RG_CHECK(t.workers >= 0 && t.workers <= data::kMaxWorkers, "workers must be in [0, ",
           data::kMaxWorkers, "], got ", t.workers);
  RG_CHECK(t.threads >= 0 && t.threads <= kMaxThreads, "threads must be in [0, ", kMaxThreads,
           "] (0: all cores), got ", t.threads);
  // A negative limit used to mean "no limit" silently.
  RG_CHECK(t.train_limit >= 0, "train_limit must be >= 0 (0: all images), got ", t.train_limit);
  RG_CHECK(t.test_limit >= 0, "test_limit must be >= 0 (0: all images), got ", t.test_limit);
  RG_CHECK(t.stop_after_epochs >= 0, "stop_after_epochs must be >= 0, got ", t.stop_after_epochs);
  RG_CHECK(t.clip_grad_norm >= 0, "clip_grad_norm must be >= 0 (0: off), got ", t.clip_grad_norm);
  RG_CHECK(t.label_smoothing >= 0 && t.label_smoothing < 1,
           "label_smoothing must be in [0, 1), got ", t.label_smoothing);
  RG_CHECK(t.schedule == "cosine" || t.schedule == "multistep" || t.schedule == "onecycle" ||
               t.schedule == "constant" || t.schedule == "airbench94",
           "schedule must be cosine, multistep, onecycle, constant or airbench94, got '",
           t.schedule, "'");
  RG_CHECK(t.augmentation == "classic" || t.augmentation == "airbench94",
           "augmentation must be classic or airbench94, got '", t.augmentation, "'");
  RG_CHECK(t.norm_bias_lr_scale > 0, "norm_bias_lr_scale must be > 0, got ", t.norm_bias_lr_scale);
  RG_CHECK(t.whiten_bias_epochs >= 0, "whiten_bias_epochs must be >= 0 (0: always trains), got ",
           t.whiten_bias_epochs);
  RG_CHECK(t.whiten_bias_epochs == 0 || t.model == "airbench94",
           "whiten_bias_epochs is airbench94's (its whitening bias); the model is '", t.model, "'");
  RG_CHECK(!t.tta_translate || t.tta, "tta_translate adds shifts to tta's mirror; set tta too");
  RG_CHECK(t.tta_epochs == "every" || t.tta_epochs == "last",
           "tta_epochs must be every or last, got '", t.tta_epochs, "'");
  RG_CHECK(t.data_on_device == "auto" || t.data_on_device == "on" || t.data_on_device == "off",
           "data_on_device must be auto, on or off, got '", t.data_on_device, "'");
  // The lookahead averages the model's own weights; under O2/O3 the optimizer updates f32
  // masters that it would not see.
  RG_CHECK(!t.lookahead || t.amp == "O0" || t.amp == "O1",
           "lookahead runs on the model's f32 weights: amp O0 or O1, got ", t.amp);
  RG_CHECK(t.lr_scaling == "none" || t.lr_scaling == "linear",
           "lr_scaling must be none or linear, got '", t.lr_scaling, "'");
  RG_CHECK(t.allreduce == "ring" || t.allreduce == "native",
           "allreduce must be ring or native, got '", t.allreduce, "'");
  // The cap keeps bucket_mb * 2^20 inside int64 (1e300 was an undefined float-to-int cast).
  RG_CHECK(t.bucket_mb > 0 && t.bucket_mb <= kMaxBucketMb, "bucket_mb must be in (0, ",
           kMaxBucketMb, "], got ", t.bucket_mb);
  RG_CHECK(t.collective_timeout >= kMinCollectiveTimeout &&
               t.collective_timeout <= kMaxCollectiveTimeout,
           "collective_timeout must be in [", kMinCollectiveTimeout, ", ", kMaxCollectiveTimeout,
           "] seconds, got ", t.collective_timeout);
  // Evaluating freshly initialised weights would print a meaningless accuracy and exit 0.
  RG_CHECK(!t.eval_only || !t.resume.empty(),
           "eval_only needs a checkpoint to evaluate: --resume PATH, or --resume auto for "
           "<out>/last.safetensors");
  RG_CHECK(t.dp >= 0 && t.dp <= kMaxCpuDevices, "dp must be in [0, ", kMaxCpuDevices, "], got ",
           t.dp);
  // The list's syntax, kinds and count now; which GPUs the machine has, at the start of the run.
  RG_CHECK(t.dp_devices.size() <= 16 * kMaxCpuDevices, "dp_devices is too long (",
           t.dp_devices.size(), " characters)");
  if (!t.dp_devices.empty()) {
    const auto devices =
        train::data_parallel_devices(t.device, static_cast<int>(t.dp), t.dp_devices, 0);
    RG_CHECK(devices.size() <= static_cast<std::size_t>(kMaxCpuDevices), "dp_devices names ",
             devices.size(), " devices; at most ", kMaxCpuDevices);
  }
  train::parse_gpu_backend(t.backend);
  RG_CHECK(t.grad_compression == "none" || t.grad_compression == "fp16",
           "grad_compression must be none or fp16, got '", t.grad_compression, "'");
  t.amp_options();  // names a bad level, dtype or scale now, not after loading the data
  RG_CHECK(t.warmup_epochs >= 0 && t.warmup_epochs < static_cast<double>(t.epochs),
           "warmup_epochs must be in [0, epochs), got ", t.warmup_epochs);
  return t;
}

AmpOptions TrainConfig::amp_options() const {
  try {
    return {parse_opt_level(amp), parse_amp_dtype(amp_dtype), parse_loss_scale(loss_scale)};
  } catch (const Error& e) {
    fail("amp options: ", e.what());
  }
}

json TrainConfig::to_json() const {
  return {{"data", data},
          {"data_format", data_format},
          {"model", model},
          {"epochs", epochs},
          {"batch_size", batch_size},
          {"lr", lr},
          {"momentum", momentum},
          {"weight_decay", weight_decay},
          {"nesterov", nesterov},
          {"schedule", schedule},
          {"milestones", milestones},
          {"warmup_epochs", warmup_epochs},
          {"lr_scaling", lr_scaling},
          {"sync_bn", sync_bn},
          {"allreduce", allreduce},
          {"bucket_mb", bucket_mb},
          {"dp", dp},
          {"dp_devices", dp_devices},
          {"backend", backend},
          {"grad_compression", grad_compression},
          {"zero", zero},
          {"amp", amp},
          {"amp_dtype", amp_dtype},
          {"loss_scale", loss_scale},
          {"label_smoothing", label_smoothing},
          {"augmentation", augmentation},
          {"norm_bias_lr_scale", norm_bias_lr_scale},
          {"whiten_bias_epochs", whiten_bias_epochs},
          {"lookahead", lookahead},
          {"workers", workers},
          {"threads", threads},
          {"seed", seed},
          {"out", out},
          {"resume", resume},
          {"overwrite", overwrite},
          {"eval_only", eval_only},
          {"train_limit", train_limit},
          {"test_limit", test_limit},
          {"device", device},
          {"clip_grad_norm", clip_grad_norm},
          {"progress", progress},
          {"tta", tta},
          {"tta_translate", tta_translate},
          {"tta_epochs", tta_epochs},
          {"deterministic", deterministic},
          {"cudnn_benchmark", cudnn_benchmark},
          {"data_on_device", data_on_device},
          {"stop_after_epochs", stop_after_epochs},
          {"collective_timeout", collective_timeout},
          {"check_sequence", check_sequence},
          {"trace", trace},
          {"trace_steps", trace_steps},
          {"preset", preset}};
}

void merge_config_file(json& config, const std::string& path) {
  const std::string what = "--config '" + path + "'";
  RG_CHECK(fs::is_regular_file(path), what, ": not a regular file that can be read");
  RG_CHECK(fs::file_size(path) <= static_cast<uintmax_t>(kMaxConfigFileBytes), what,
           ": larger than ", kMaxConfigFileBytes, " bytes, too large for a configuration");
  std::ifstream in(path);
  RG_CHECK(in.good(), what, ": cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  merge_config(config, parse_json(text.str(), what, /*allow_invalid=*/false), path);
}

CommandLine parse_command_line(int argc, char** argv) {
  CLI::App app{"train_cifar: train a ResNet on CIFAR-10 (ringgrad)"};
  json flags = json::object();
  std::string preset_name, config_file;
  std::vector<std::string> sets;
  // Each flag mirrors one config key; only flags given on the command line override.
  std::map<std::string, std::string> text;
  app.add_option("--preset", preset_name,
                 "named recipe: classic (default), quick, resnet18 or airbench94");
  app.add_option("--config", config_file, "JSON file of options");
  app.add_option("--set", sets, "key=value override, repeatable");
  const std::vector<std::pair<std::string, std::string>> keyed = {
      {"data", "CIFAR-10 folder (binary batches, image folder or CSV lists)"},
      {"data-format", "auto, binary, folder or csv"},
      {"model",
       "resnet18, resnet20, resnet34, resnet50, resnet101, airbench (these optionally @width: "
       "resnet18@0.5), airbench94, preactresnet18, vgg16, mobilenetv2"},
      {"epochs", "epochs to train"},
      {"batch-size", "images per step and process (under mpirun: x N in all)"},
      {"lr", "peak learning rate"},
      {"momentum", "SGD momentum"},
      {"weight-decay", "L2 weight decay"},
      {"schedule", "cosine, multistep, onecycle, constant or airbench94"},
      {"warmup-epochs", "linear warm-up length"},
      {"lr-scaling", "none or linear (lr x number of processes, with warm-up)"},
      {"allreduce", "gradient allreduce under mpirun: ring (ours) or native (MPI_Allreduce)"},
      {"bucket-mb", "DDP gradient bucket cap in MiB"},
      {"dp",
       "DataParallel over N devices: cpu:0..N-1, or with --device cuda the GPUs (replicas share "
       "them when there are fewer than N); 0: off"},
      {"dp-devices",
       "DataParallel over these devices, one per replica (cuda:0,cuda:0: two replicas sharing "
       "a GPU; cpu:0,cpu:1)"},
      {"backend",
       "how GPU processes reduce gradients under mpirun: auto (= nccl, a GPU per process) or mpi "
       "(through host memory; processes may share a GPU)"},
      {"grad-compression", "DDP gradient buckets on the wire under mpirun: none or fp16"},
      {"amp", "mixed precision: O0 (f32), O1 (autocast), O2 (16-bit model, f32 masters), O3"},
      {"amp-dtype", "16-bit type of O1-O3: fp16 or bf16"},
      {"loss-scale", "dynamic, or a fixed loss scale such as 1024"},
      {"label-smoothing", "cross-entropy label smoothing"},
      {"augmentation",
       "classic (crop with zero padding 4, random flip) or airbench94 "
       "(reflect-padded crop 2, alternating flip)"},
      {"workers", "data loading threads"},
      {"threads", "compute threads (0: all)"},
      {"seed", "random seed"},
      {"out", "output folder"},
      {"resume", "checkpoint to resume from, or 'auto'"},
      {"train-limit", "use only the first N training images"},
      {"test-limit", "use only the first N test images"},
      {"device", "cpu or cuda[:N]"},
      {"clip-grad-norm", "clip gradients to this global norm (0: off)"},
      {"tta-epochs", "with --tta: augment every epoch's evaluation, or only the last's"},
      {"data-on-device",
       "auto, on or off: keep the data set on the training device and make batches there "
       "(auto: on for cuda without --dp; off: the host DataLoader)"},
      {"stop-after-epochs", "stop after N epochs of this run, as if interrupted"},
      {"collective-timeout",
       "seconds a collective may wait under mpirun before the job ends naming it (default 300)"},
      {"zero", "1: ZeRO stage 1, each process keeps 1/N of the optimizer state (0: off)"},
      {"trace", "write a timeline of --trace-steps to this file (Chrome / Perfetto JSON)"},
      {"trace-steps", "A:B, the steps --trace records (from 1, across epochs; default 2:4)"}};
  for (const auto& [flag, help] : keyed) app.add_option("--" + flag, text[flag], help);
  bool eval_only = false, no_progress = false, overwrite = false;
  auto* eval_flag = app.add_flag("--eval-only", eval_only, "evaluate the checkpoint and stop");
  auto* progress_flag = app.add_flag("--no-progress", no_progress, "no live progress bar");
  auto* overwrite_flag =
      app.add_flag("--overwrite", overwrite,
                   "start over in an --out holding an earlier run (deletes its files)");
  bool tta = false, sync_bn = false, deterministic = false, cudnn_benchmark = false;
  auto* tta_flag = app.add_flag("--tta", tta, "test-time augmentation (mirror images)");
  auto* deterministic_flag = app.add_flag(
      "--deterministic", deterministic,
      "GPU convolutions only through algorithms cuDNN marks deterministic (the CPU always is)");
  auto* cudnn_benchmark_flag = app.add_flag(
      "--cudnn-benchmark", cudnn_benchmark,
      "GPU convolutions through the fastest of cuDNN's candidate plans, timed in the first step "
      "(torch.backends.cudnn.benchmark; --deterministic overrides it)");
  auto* sync_bn_flag =
      app.add_flag("--sync-bn", sync_bn, "BatchNorm statistics over all processes (SyncBN)");
  bool check_sequence = false;
  auto* check_sequence_flag = app.add_flag(
      "--check-sequence", check_sequence,
      "debug: compare every collective across ranks; names a rank that calls another or none");
  std::vector<std::string> fault_specs;
  app.add_option("--fault", fault_specs,
                 "inject a fault (repeatable): kill:rank=R:step=S, exit:rank=R:step=S[:code=C], "
                 "delay:rank=R:step=S:seconds=T, stop:rank=R:step=S, error:rank=R:step=S; "
                 "each fires before step S, or with :at=backward during its backward, with "
                 ":at=checkpoint (rank 0) while writing its epoch's checkpoint "
                 "(parallel/faults.h)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return {TrainConfig{}, true, app.help()};
  } catch (const CLI::ParseError& e) {
    fail("train_cifar: ", e.what(), " (see --help)");
  }

  json config = default_config();
  if (!preset_name.empty()) {
    merge_config(config, preset(preset_name), "--preset " + preset_name);
    config["preset"] = preset_name;
  }
  if (!config_file.empty()) merge_config_file(config, config_file);
  for (const auto& [flag, _] : keyed) {
    if (app.count("--" + flag) == 0) continue;
    std::string key = flag;
    std::replace(key.begin(), key.end(), '-', '_');
    check_utf8(text[flag], "--" + flag);  // before json(...).dump(), which would throw
    apply_set(config, key + "=" + (config[key].is_string() ? json(text[flag]).dump() : text[flag]));
  }
  if (eval_flag->count()) config["eval_only"] = true;
  if (progress_flag->count()) config["progress"] = false;
  if (overwrite_flag->count()) config["overwrite"] = true;
  if (tta_flag->count()) config["tta"] = true;
  if (deterministic_flag->count()) config["deterministic"] = true;
  if (cudnn_benchmark_flag->count()) config["cudnn_benchmark"] = true;
  if (sync_bn_flag->count()) config["sync_bn"] = true;
  if (check_sequence_flag->count()) config["check_sequence"] = true;
  for (const std::string& s : sets) apply_set(config, s);
  TrainConfig parsed = parse_config(config);
  parsed.faults = parallel::FaultPlan(fault_specs);
  return {parsed, false, ""};
}

}  // namespace rg::apps
