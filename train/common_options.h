#pragma once
// The options the apps share, declared and checked once (train/run_options.h): the machine
// (device, threads, data loading, seed, DataParallel, DDP under mpirun), the precision
// (optim/amp.h) and the output folder. An app's options struct extends these structs and
// include()s their declarations, so --device, --amp or --out have one name, one help text, one
// default and one error in every app; the loop gets them as the structs it takes (WorldOptions,
// WrapOptions, AmpOptions).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "train/outputs.h"
#include "train/run_options.h"
#include "train/step_trace.h"
#include "train/world.h"

namespace rg {
struct AmpOptions;
namespace nn {
class Module;
}
}  // namespace rg

namespace rg::train {

struct WrapOptions;

// Limits far beyond any real run, so that a typo is an error rather than a wrapped integer or
// a failure deep inside the run.
inline constexpr int64_t kMaxEpochs = 1'000'000;
inline constexpr int64_t kMaxThreads = 1024;
inline constexpr int64_t kMaxBucketMb = int64_t{1} << 20;  // 1 TiB
inline constexpr int64_t kMaxAccumulateSteps = 1 << 20;
// Seconds; the floor is one millisecond, the resolution of ProcessGroupOptions::timeout.
inline constexpr double kMinCollectiveTimeout = 0.001;
inline constexpr double kMaxCollectiveTimeout = 1e6;

// What runs a model: a training run, and predict.
struct DeviceOptions {
  std::string device = "cpu";  // cpu, cpu:N, cuda or cuda:N; under mpirun "cuda" is per rank
  int64_t threads = 0;         // compute threads per process; 0: the cores, shared among ranks
};

// A training run's machine: its device, and the data loading, processes and replicas around it.
struct MachineOptions : DeviceOptions {
  int64_t workers = 2;  // data loading threads
  int64_t seed = 0;
  int64_t dp = 0;                  // DataParallel over this many devices of --device's kind; 0: off
  std::string dp_devices{};        // or over these ("cuda:0,cuda:0"); empty: --dp decides
  bool sync_bn = false;            // under mpirun or --dp: SyncBatchNorm, not per-device BatchNorm
  std::string allreduce = "ring";  // ring | native: how DDP averages gradients under mpirun
  std::string backend = "auto";    // auto | nccl | mpi: how GPU ranks reduce (train/world.h)
  double bucket_mb = 25;           // DDP bucket cap
  double first_bucket_mb = 1;      // DDP's first bucket's cap (bench_ddp's --first-bucket-mb)
  std::string grad_compression = "none";  // none | fp16: DDP's buckets on the wire
  double collective_timeout = 300;  // seconds a collective may wait under mpirun before the end
  bool check_sequence = false;      // debug: compare every collective across ranks
  int64_t zero = 0;  // 1: ZeRO-1, the optimizer's state sharded across processes (not with --dp)
  // Micro-batches of --batch-size per optimizer step (gradient accumulation, train/accumulate.h):
  // the global batch is processes × batch size × this.
  int64_t accumulate_steps = 1;

  WorldOptions world_options() const;  // join_world's
};

// Where this process trains, decided before any GPU call: the device by local rank × GPUs
// (DataParallel: its first device), DataParallel's devices, and the group every collective of
// its tensors goes through — the world, or the world with GPU tensors staged through host memory
// when ranks share a GPU (--backend mpi). Throws naming a device this machine does not have.
struct Placement {
  Device device;
  std::vector<Device> dp_devices;  // empty: no DataParallel
  std::shared_ptr<parallel::ProcessGroup> group;
};
Placement place(const MachineOptions& machine, std::shared_ptr<parallel::ProcessGroup> world);

// Trainer::wrap's options: DataParallel over the placement's devices (each replica built by
// `replica_factory`), DDP's buckets, ZeRO-1.
WrapOptions wrap_options(const MachineOptions& machine, const Placement& placement,
                         std::function<std::shared_ptr<nn::Module>()> replica_factory);

// The precision of the forward passes, and training's loss scale.
struct PrecisionOptions {
  std::string amp = "O0";          // O0 | O1 | O2 | O3 (optim/amp.h)
  std::string amp_dtype = "fp16";  // fp16 | bf16
  // auto (dynamic for fp16, none for bf16) | dynamic | none | a positive number (a fixed scale)
  std::string loss_scale = "auto";

  AmpOptions amp_options() const;
};

// Where a training run writes, and how it starts and stops.
struct RunOutputOptions {
  std::string out{};       // checkpoints, CSV, TensorBoard; each app names its default folder
  std::string resume{};    // a checkpoint, "auto" (<out>/last.safetensors if present) or empty
  bool overwrite = false;  // start over in an --out that holds an earlier run (deleting its files)
  bool progress = true;    // the live progress bar
  int64_t stop_after_epochs = 0;    // 0: run to the end; >0: stop early, as if interrupted
  std::string trace{};              // a timeline of trace_steps to this file; empty: none
  std::string trace_steps = "2:4";  // "A:B", steps counted from 1 across epochs
  std::string explain{};            // categories the explain sink tells for trace_steps; "": none

  OutputOptions folder(std::string program) const;  // prepare_run_folder's
  TraceOptions trace_options() const;               // the Trainer's (train/step_trace.h)
};

// The declarations, for RunOptions::include.
const RunOptions<DeviceOptions>& device_options();
const RunOptions<MachineOptions>& machine_options();  // includes device_options()
const RunOptions<PrecisionOptions>& precision_options();
const RunOptions<RunOutputOptions>& run_output_options();

}  // namespace rg::train
