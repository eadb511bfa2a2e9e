#include "train/common_options.h"

#include <cmath>

#include "data/dataloader.h"
#include "optim/amp.h"
#include "optim/loss_scaler.h"
#include "train/trainer.h"

namespace rg::train {

const RunOptions<DeviceOptions>& device_options() {
  static const RunOptions<DeviceOptions> options = [] {
    RunOptions<DeviceOptions> o("device options", "");
    o.section("Machine");
    o.add("device", &DeviceOptions::device,
          "cpu, cpu:N, cuda or cuda:N (under mpirun, cuda is each process's GPU by local rank)",
          [](const std::string&, const std::string& v) { (void)Device::parse(v); });
    o.add("threads", &DeviceOptions::threads,
          "compute threads per process (0: all cores, shared among a machine's processes)",
          in_range<int64_t>(0, kMaxThreads, "(0: all cores)"));
    return o;
  }();
  return options;
}

const RunOptions<MachineOptions>& machine_options() {
  static const RunOptions<MachineOptions> options = [] {
    using M = MachineOptions;
    RunOptions<M> o("machine options", "");
    o.include(device_options());
    o.section("Machine");
    // Before the casts to int that would wrap (4294967297 threads became 1).
    o.add("workers", &M::workers, "data loading threads (0: in the training thread)",
          in_range<int64_t>(0, data::kMaxWorkers));
    o.add("seed", &M::seed, "random seed: initial weights, shuffling, augmentation, generated data",
          at_least<int64_t>(0));
    o.add("dp", &M::dp,
          "DataParallel over N devices: cpu:0..N-1, or with --device cuda the GPUs (replicas share "
          "them when there are fewer than N); 0: off",
          in_range<int64_t>(0, kMaxCpuDevices));
    o.add("dp_devices", &M::dp_devices,
          "DataParallel over these devices, one per replica (cuda:0,cuda:0: two replicas sharing "
          "a GPU; cpu:0,cpu:1)",
          [](const std::string& key, const std::string& v) {
            RG_CHECK(v.size() <= 16 * kMaxCpuDevices, key, " is too long (", v.size(),
                     " characters)");
          });
    o.add("sync_bn", &M::sync_bn,
          "BatchNorm statistics over all processes and --dp replicas (SyncBatchNorm)");
    o.add("allreduce", &M::allreduce,
          "gradient allreduce under mpirun: ring (ours) or native (MPI_Allreduce)",
          one_of({"ring", "native"}));
    o.add("backend", &M::backend,
          "how GPU processes reduce gradients under mpirun: auto (= nccl, a GPU per process) or "
          "mpi (through host memory; processes may share a GPU)",
          [](const std::string&, const std::string& v) { (void)parse_gpu_backend(v); });
    // The cap keeps bucket_mb * 2^20 inside int64 (1e300 was an undefined float-to-int cast).
    o.add("bucket_mb", &M::bucket_mb, "DDP gradient bucket cap in MiB",
          in_interval(0, kMaxBucketMb, Interval::left_open));
    o.add("first_bucket_mb", &M::first_bucket_mb,
          "DDP's first bucket cap in MiB: the last layers' gradients, sent while backward goes on",
          in_interval(0, kMaxBucketMb, Interval::left_open));
    o.add("grad_compression", &M::grad_compression,
          "DDP gradient buckets on the wire under mpirun: none, fp16 or bf16 (DDP's compression "
          "hooks)",
          one_of({"none", "fp16", "bf16"}));
    o.add("collective_timeout", &M::collective_timeout,
          "seconds a collective may wait under mpirun before the job ends naming it",
          in_interval(kMinCollectiveTimeout, kMaxCollectiveTimeout, Interval::closed, "seconds"));
    o.add("check_sequence", &M::check_sequence,
          "debug: compare every collective across ranks; names a rank that calls another or none");
    o.add("zero", &M::zero,
          "1: ZeRO stage 1, each process keeps 1/N of the optimizer state (0: off)",
          [](const std::string& key, const int64_t& v) {
            RG_CHECK(v == 0 || v == 1, key,
                     " must be 0 (off) or 1 (ZeRO stage 1: optimizer state sharded across "
                     "processes), got ",
                     v);
          });
    o.add("accumulate_steps", &M::accumulate_steps,
          "micro-batches of --batch-size per optimizer step (gradient accumulation; under mpirun "
          "DDP averages once per step): the step equals one of a batch this many times larger",
          in_range<int64_t>(1, kMaxAccumulateSteps));
    // ZeRO's shards are processes' (mpirun); DataParallel's replicas share one optimizer.
    o.check([](const M& m) {
      RG_CHECK(m.zero == 0 || (m.dp == 0 && m.dp_devices.empty()),
               "zero shards the optimizer across processes (mpirun); it does not combine with dp");
    });
    // The list's syntax, kinds and count now; which GPUs the machine has, when the run starts.
    o.check([](const M& m) {
      if (m.dp_devices.empty()) return;
      const auto devices = data_parallel_devices(m.device, static_cast<int>(m.dp), m.dp_devices, 0);
      RG_CHECK(devices.size() <= static_cast<std::size_t>(kMaxCpuDevices), "dp_devices names ",
               devices.size(), " devices; at most ", kMaxCpuDevices);
    });
    return o;
  }();
  return options;
}

const RunOptions<PrecisionOptions>& precision_options() {
  static const RunOptions<PrecisionOptions> options = [] {
    using P = PrecisionOptions;
    RunOptions<P> o("precision options", "");
    o.section("Precision");
    // The parsers' own errors name the option and the values it takes.
    o.add("amp", &P::amp,
          "mixed precision: O0 (f32), O1 (autocast), O2 (16-bit model, f32 masters), O3",
          [](const std::string&, const std::string& v) { (void)parse_opt_level(v); });
    o.add("amp_dtype", &P::amp_dtype, "16-bit type of O1-O3: fp16 or bf16",
          [](const std::string&, const std::string& v) { (void)parse_amp_dtype(v); });
    o.add("loss_scale", &P::loss_scale,
          "auto (dynamic for fp16, none for bf16, whose range is f32's), dynamic, none, or a "
          "fixed loss scale such as 1024",
          [](const std::string&, const std::string& v) {
            if (v != "auto") (void)parse_loss_scale(v);
          });
    return o;
  }();
  return options;
}

const RunOptions<RunOutputOptions>& run_output_options() {
  static const RunOptions<RunOutputOptions> options = [] {
    using O = RunOutputOptions;
    RunOptions<O> o("output options", "");
    o.section("Output");
    o.add("out", &O::out, "output folder: checkpoints, metrics.csv, TensorBoard events",
          not_empty("name a folder"));
    o.add("resume", &O::resume,
          "a checkpoint to resume from, or auto (<out>/last.safetensors if there is one)");
    o.add("overwrite", &O::overwrite,
          "start over in an --out holding an earlier run (deletes its files)");
    o.add("progress", &O::progress, "no live progress bar", {}, Flag::negated);
    o.add("stop_after_epochs", &O::stop_after_epochs,
          "stop after N epochs of this run, as if interrupted (0: run to the end)",
          at_least<int64_t>(0));
    o.add("trace", &O::trace,
          "write a timeline of --trace-steps to this file (Chrome / Perfetto JSON)");
    o.add("explain", &O::explain,
          "tell --trace-steps as text, rank after rank: the events of these categories, comma-"
          "separated (ddp, ring, dp, sync_bn, collective, optimizer, backward, ...) or all");
    o.add("trace_steps", &O::trace_steps,
          "A:B, the steps --trace records and --explain tells (from 1, across epochs)",
          [](const std::string&, const std::string& v) {
            TraceOptions window;
            parse_trace_steps(v, window);  // names a bad window now, not after loading the data
          });
    return o;
  }();
  return options;
}

WorldOptions MachineOptions::world_options() const {
  return {.allreduce = allreduce == "native" ? parallel::AllreduceAlgorithm::native
                                             : parallel::AllreduceAlgorithm::ring,
          .threads = threads,
          // <= kMaxCollectiveTimeout: the milliseconds fit easily
          .collective_timeout = std::chrono::milliseconds(std::llround(collective_timeout * 1000)),
          .check_sequence = check_sequence};
}

Placement place(const MachineOptions& m, std::shared_ptr<parallel::ProcessGroup> world) {
  const GpuBackend backend = parse_gpu_backend(m.backend);
  std::vector<Device> dp_devices =
      data_parallel_devices(m.device, static_cast<int>(m.dp), m.dp_devices, cuda_device_count());
  const Device device = !dp_devices.empty() ? dp_devices[0]
                                            : rank_device({.device_flag = m.device,
                                                           .local_rank = world->local_rank(),
                                                           .local_size = world->local_size(),
                                                           .gpu_count = cuda_device_count(),
                                                           .backend = backend});
  for (const Device& d : dp_devices) check_device_available(d);
  check_device_available(device);
  auto group = gradient_group(std::move(world), device, backend);
  return {device, std::move(dp_devices), std::move(group)};
}

WrapOptions wrap_options(const MachineOptions& m, const Placement& placement,
                         std::function<std::shared_ptr<nn::Module>()> replica_factory) {
  return {.dp_devices = placement.dp_devices,
          .replica_factory = std::move(replica_factory),
          .batch_norm = m.sync_bn ? parallel::BatchNormSync::across_devices
                                  : parallel::BatchNormSync::per_device,
          .bucket_mb = m.bucket_mb,
          .first_bucket_mb = m.first_bucket_mb,
          .compression = m.grad_compression == "fp16"   ? parallel::GradCompression::fp16
                         : m.grad_compression == "bf16" ? parallel::GradCompression::bf16
                                                        : parallel::GradCompression::none,
          .zero = m.zero == 1 ? ZeroStage::one : ZeroStage::off};
}

OutputOptions RunOutputOptions::folder(std::string program) const {
  return {.program = std::move(program),
          .out = out,
          .resume = resume,
          .overwrite = overwrite,
          .own_files_since = elastic_job_start()};
}

TraceOptions RunOutputOptions::trace_options() const {
  TraceOptions options{.path = trace, .explain = explain};
  parse_trace_steps(trace_steps, options);
  return options;
}

AmpOptions PrecisionOptions::amp_options() const {
  const DType dtype = parse_amp_dtype(amp_dtype);
  return {parse_opt_level(amp), dtype,
          loss_scale == "auto" ? default_loss_scale(dtype) : parse_loss_scale(loss_scale)};
}

}  // namespace rg::train
