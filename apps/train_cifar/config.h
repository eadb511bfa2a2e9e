#pragma once
// train_cifar's options. One JSON object holds them all; it is built up in this order, later
// sources overriding earlier ones:
//   defaults (the classic recipe) < --preset NAME < --config FILE.json < command-line flags
//   < --set key=value (repeatable; the value is JSON, or a bare string)
// Unknown keys and values of the wrong type are errors naming the key; so are values out of
// range (the limits below), strings that are not UTF-8 and JSON nested deeper than
// kMaxConfigDepth (a config is flat; a value nested 300,000 deep once overflowed the stack).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "parallel/faults.h"

namespace rg {
struct AmpOptions;
}

namespace rg::apps {

struct TrainConfig {
  std::string data;         // CIFAR-10 root; empty: search the usual places
  std::string data_format;  // auto | binary | folder | csv
  std::string model;        // a name of nn::model_names(), ResNets with optional @width
  int64_t epochs;
  int64_t batch_size;
  double lr;
  double momentum;
  double weight_decay;
  bool nesterov;
  std::string schedule;             // cosine | multistep | onecycle | constant
  std::vector<int64_t> milestones;  // epochs, for multistep
  double warmup_epochs;
  std::string lr_scaling;  // none | linear (lr x world size)
  bool sync_bn;            // under mpirun or --dp: SyncBatchNorm instead of per-device BatchNorm
  std::string allreduce;   // ring | native: how DDP averages gradients under mpirun
  double bucket_mb;        // DDP bucket cap (the first bucket is 1 MiB at most)
  int64_t dp;              // DataParallel over this many devices of --device's kind; 0: off
  std::string dp_devices;  // or over these ("cuda:0,cuda:0"); empty: --dp decides
  std::string backend;     // auto | nccl | mpi: how GPU ranks reduce (train/world.h)
  std::string grad_compression;  // none | fp16: DDP's buckets on the wire
  int64_t zero;                  // 1: ZeRO-1, optimizer state sharded across processes
  std::string trace;             // a timeline of trace_steps to this file (train/step_trace.h)
  std::string trace_steps;       // "A:B"
  std::string amp;               // O0 | O1 | O2 | O3 (optim/amp.h)
  std::string amp_dtype;         // fp16 | bf16
  std::string loss_scale;        // dynamic | a positive number (a fixed scale)
  double label_smoothing;
  // airbench94's pieces (train_cifar --preset airbench94); off by default.
  std::string augmentation;    // classic (crop 4 with zeros, random flip) | airbench94
  double norm_bias_lr_scale;   // BatchNorm biases: lr x this, weight decay / this (1: one group)
  int64_t whiten_bias_epochs;  // airbench94 model: its whitening bias trains these epochs (0: all)
  bool lookahead;              // airbench94's lookahead: weights <- their average every 5 steps
  int64_t workers;
  int64_t threads;  // 0: all hardware threads
  int64_t seed;
  std::string out;     // output folder: checkpoints, CSV, TensorBoard
  std::string resume;  // checkpoint path, "auto" (<out>/last.safetensors if present) or empty
  bool overwrite;      // start over in an --out that holds an earlier run (deleting its files)
  bool eval_only;
  int64_t train_limit;  // 0: all samples
  int64_t test_limit;
  std::string device;
  double clip_grad_norm;   // 0: off
  bool progress;           // the live progress bar
  bool tta;                // test-time augmentation: average each image with its mirror
  bool tta_translate;      // with tta: also over one-pixel shifts (airbench94's TTA level 2)
  std::string tta_epochs;  // every | last: which epochs' evaluations tta augments
  bool deterministic;      // GPU convolutions through deterministic algorithms only
  bool cudnn_benchmark;    // GPU convolutions through the fastest plan timed (not with the above)
  // auto | on | off: the data set on the training device, batches made there (cifar_data.h);
  // auto: on for cuda devices (without --dp, when the set fits), off on the CPU
  std::string data_on_device;
  int64_t stop_after_epochs;  // 0: run to the end; >0: stop early, as if interrupted (tests)
  double collective_timeout;  // seconds a collective may wait under mpirun before the job ends
  bool check_sequence;        // debug: compare every collective across ranks (names late ranks)
  // --fault SPEC (repeatable; command line only, never saved: an experiment, not a recipe)
  parallel::FaultPlan faults;
  std::string preset;

  nlohmann::json to_json() const;
  AmpOptions amp_options() const;  // throws naming a bad level, dtype or scale
};

// Limits on options, far beyond any real run, so that a typo is an error rather than a
// wrapped integer or a failure deep inside the run.
inline constexpr int64_t kMaxEpochs = 1'000'000;
inline constexpr int64_t kMaxThreads = 1024;
inline constexpr int64_t kMaxBucketMb = int64_t{1} << 20;  // 1 TiB
// Seconds; the floor is one millisecond, the resolution of ProcessGroupOptions::timeout.
inline constexpr double kMinCollectiveTimeout = 0.001;
inline constexpr double kMaxCollectiveTimeout = 1e6;
inline constexpr int kMaxConfigDepth = 8;
inline constexpr int64_t kMaxConfigFileBytes = 1 << 20;

nlohmann::json default_config();
std::vector<std::string> preset_names();
nlohmann::json preset(const std::string& name);

// Merges `overrides` into `config`, refusing unknown keys and type changes.
void merge_config(nlohmann::json& config, const nlohmann::json& overrides,
                  const std::string& source);
// Merges the JSON object in the file at `path` (--config), refusing files that are not regular
// or larger than kMaxConfigFileBytes.
void merge_config_file(nlohmann::json& config, const std::string& path);
// Applies "key=value".
void apply_set(nlohmann::json& config, const std::string& assignment);
TrainConfig parse_config(const nlohmann::json& config);

// Parses argv into a config (throws rg::Error for bad flags/values; --help prints and exits
// with the returned flag set).
struct CommandLine {
  TrainConfig config;
  bool help_requested = false;
  std::string help;
};
CommandLine parse_command_line(int argc, char** argv);

}  // namespace rg::apps
