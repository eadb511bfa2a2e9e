// check_equivalence: the proof, as a program, that data parallelism computes what one device
// computes — judged. From the same weights and the same batches it trains K steps (SGD with
// momentum and weight decay) of a small net with two BatchNorms, and checks every parameter and
// buffer of each run against the one-device run it must equal:
//
//   run                        must equal (one device, the same K steps)
//   DP N, DDP N                BatchNorm per share: each share of the batch normalised with its
//                              own statistics, the running statistics of share 0 kept
//   DP N + SyncBN, DDP N + SyncBN    the whole batch at once
//   DDP N [+ SyncBN] + ZeRO-1  the same as without ZeRO: the optimizer state sharded over the
//                              ranks (parallel/zero.h) changes no result (bit for bit with 2)
//   1 device, DDP N [+ ZeRO-1] + accumulate K    (the net without its BatchNorms)
//                              the whole batch at once: K micro-batches per step, their losses
//                              weighted by their sizes, DDP averaging once per step
//                              (train/accumulate.h, what --accumulate-steps runs)
//
// Alone it runs the DP rows (DataParallel over --devices logical cpu devices, or --dp-devices);
// under scripts/mpirun.sh N the DDP rows (each process its B/N rows; with --device cuda over
// NCCL, or --backend mpi for ranks sharing a GPU). It prints how far each tensor is from one
// device over the whole batch (what per-device BatchNorm costs), then a verdict per run against
// the tolerance of the dtype, and exits 1 when a run breaks it. DDP runs also check that every
// rank ends with the same parameters.
//
//   build/apps/check_equivalence --devices 2
//   scripts/mpirun.sh 2 build/apps/check_equivalence
//   build/apps/check_equivalence --device cuda --dp-devices cuda:0,cuda:0
//   scripts/mpirun.sh 2 build/apps/check_equivalence --device cuda --backend mpi
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "apps/check_equivalence/judge.h"
#include "apps/check_equivalence/textbook_grades.h"
#include "apps/check_equivalence/training.h"
#include "core/autograd.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "core/trace.h"
#include "nn/layers.h"
#include "optim/amp.h"
#include "optim/optim.h"
#include "parallel/data_parallel.h"
#include "parallel/data_parallel_functions.h"
#include "parallel/ddp.h"
#include "parallel/sync_batch_norm.h"
#include "parallel/trace_file.h"
#include "parallel/world.h"
#include "parallel/zero.h"
#include "train/accumulate.h"
#include "train/world.h"

using namespace rg;
using namespace rg::parallel;
using namespace rg::apps;

namespace {

const char* const kWholeWithoutBn = "one device, whole batch (the net without BatchNorm)";

// Gradient accumulation (train/accumulate.h, what --accumulate-steps runs): each step's rows
// [first, first + count) as `micro` micro-batches, as equal as possible; under DDP (`ddp`) the
// last one synchronises, with `zero` ZeRO-1 over that DDP steps.
State train_accumulated(nn::Module& model, std::vector<Tensor> params, const Setup& s,
                        int64_t first, int64_t count, int micro,
                        DistributedDataParallel* ddp = nullptr, bool zero = false) {
  SGD sgd = make_sgd(std::move(params));
  std::unique_ptr<ZeroRedundancyOptimizer> sharded;
  if (zero) sharded = std::make_unique<ZeroRedundancyOptimizer>(*ddp, sgd);
  Optimizer& opt = sharded ? static_cast<Optimizer&>(*sharded) : sgd;
  MixedPrecision f32(model, {});
  const std::vector<int64_t> sizes = split_sizes(count, micro);
  const std::vector<double> weights = train::micro_batch_weights(sizes);
  for (int step = 0; step < s.steps; ++step) {
    const Batch b = batch(s.global_batch, step, s.dtype, s.device);
    opt.zero_grad();
    int64_t row = first;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const train::MicroBatch which =
          i + 1 < sizes.size() ? train::MicroBatch::more_follow : train::MicroBatch::last;
      Tensor loss;
      {
        train::MicroBatchForward in(ddp, which);
        loss = cross_entropy(model.forward(b.images.narrow(0, row, sizes[i])),
                             b.labels.narrow(0, row, sizes[i]));
      }
      train::backward_micro_batch(loss, weights[i], which, ddp, f32);
      row += sizes[i];
    }
    opt.step();
  }
  return model.state_dict();
}

// Per-device BatchNorm against its reference is bit-exact with two shares on the cpu (judge.h
// says why); everything else is judged against the dtype's tolerance.
bool exact_with_two(std::size_t shares, const Device& device) {
  return shares == 2 && device.is_cpu();
}

const char* why(bool synced, std::size_t shares, const Device& device) {
  if (synced) return apps::kSyncBnRounding;
  if (exact_with_two(shares, device)) return apps::kExactWithTwo;
  return device.is_cuda() ? apps::kOnGpuRounding : apps::kPerShareRounding;
}

std::string share_text(const std::vector<int64_t>& shares) {
  std::string text;
  for (int64_t s : shares) text += (text.empty() ? "" : "+") + std::to_string(s);
  return text;
}

// check_equivalence --textbook NAME: 0 when every run passes, 1 when one fails, 2 on an error.
int grade(const std::string& lesson) {
  try {
    const Graded graded = grade_textbook(lesson);
    std::printf("check_equivalence --textbook %s: %s\n\n", lesson.c_str(), graded.what.c_str());
    return print_verdicts(graded.runs, graded.dtype) ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "check_equivalence: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"check_equivalence: N devices or processes against one, judged per run"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  int devices = 2, steps = 3, perturb = -1, accumulate = 0;
  int64_t global_batch = 12;
  std::string dtype_text, device_text = "cpu", dp_devices_text, backend_text = "auto";
  app.add_option("--devices", devices, "DataParallel replicas when alone (logical cpu devices)");
  app.add_option("--dp-devices", dp_devices_text,
                 "DataParallel over these devices instead (cpu:0,cpu:0 or cuda:0,cuda:0: "
                 "replicas sharing a device)");
  app.add_option("--device", device_text, "cpu or cuda: where every run trains");
  app.add_option("--backend", backend_text,
                 "under mpirun with --device cuda: auto (= nccl, a GPU per rank) or mpi (ranks "
                 "may share a GPU)");
  app.add_option("--steps", steps, "SGD steps");
  app.add_option("--accumulate", accumulate,
                 "micro-batches per step of the accumulation rows (default: 5 alone, 2 under "
                 "mpirun)");
  app.add_option("--batch", global_batch, "samples per step over all devices / processes");
  app.add_option("--dtype", dtype_text, "f64 (default on cpu) or f32 (default on cuda)")
      ->check(CLI::IsMember({"f32", "f64"}));
  std::string trace_path;
  app.add_option("--trace", trace_path,
                 "write a timeline of every run (Chrome / Perfetto JSON): DP's replicas, DDP's and "
                 "ZeRO's collectives");
  std::string textbook;
  app.add_option("--textbook", textbook,
                 "instead: grade the textbook version of a lesson (parallel/textbook/, or your "
                 "own file built with -DRG_LEARN_<LESSON>=FILE) against one device and the real "
                 "implementation: ring, data_parallel, ddp, sync_bn, loss_scaler or zero");
  // Test-only: perturbs replica (DP) or rank (DDP) R's gradient, to show that the verdict fails.
  app.add_option("--perturb", perturb)->group("");
  CLI11_PARSE(app, argc, argv);
  if (!textbook.empty()) return grade(textbook);
  try {
    if (!trace_path.empty()) check_trace_path(trace_path);
    auto world = init();
    const int n = world->size(), rank = world->rank();
    if (!trace_path.empty()) {
      trace::name_this_thread("main");
      start_trace(*world);
    }
    RG_CHECK(devices >= 1 && steps >= 1 && global_batch >= 1 && accumulate >= 0,
             "check_equivalence: --devices, --steps and --batch must be >= 1");
    if (accumulate == 0) accumulate = n == 1 ? 5 : 2;
    Setup s{.steps = steps, .global_batch = global_batch};
    const train::GpuBackend backend = train::parse_gpu_backend(backend_text);
    std::vector<Device> dp_list;
    if (n == 1) {
      dp_list = train::data_parallel_devices(device_text, dp_devices_text.empty() ? devices : 0,
                                             dp_devices_text, cuda_device_count());
      s.device = dp_list[0];
      RG_CHECK(device_text == "cpu" || Device::parse(device_text).type == s.device.type,
               "check_equivalence: --dp-devices ", dp_devices_text, " is not on --device ",
               device_text);
    } else {
      s.device = train::rank_device({.device_flag = device_text,
                                     .local_rank = world->local_rank(),
                                     .local_size = world->local_size(),
                                     .gpu_count = cuda_device_count(),
                                     .backend = backend});
    }
    for (const Device& d : dp_list) check_device_available(d);
    check_device_available(s.device);
    s.dtype = dtype_text.empty() ? (s.device.is_cuda() ? DType::f32 : DType::f64)
                                 : (dtype_text == "f64" ? DType::f64 : DType::f32);
    const auto group = train::gradient_group(world, s.device, backend);
    // Large enough to break the tolerance of the dtype several times over, small next to a
    // gradient (~1/B per logit).
    const double eps = s.dtype == DType::f64 ? 1e-9 : 1e-4;

    auto single = make_net(s.dtype, s.device);
    const State whole = train_steps(*single, single->parameters(), s, 0, s.global_batch);
    auto single_without_bn = make_net(s.dtype, s.device, Norms::none);
    const State whole_without_bn =
        train_steps(*single_without_bn, single_without_bn->parameters(), s, 0, s.global_batch);
    std::vector<Run> runs;
    if (n == 1) {
      const std::vector<int64_t> shares =
          split_sizes(s.global_batch, std::min<int>(dp_list.size(), s.global_batch));
      // With the threads each replica computes with: the same kernels, split the same way.
      ThreadShare replica_threads(std::max(1, num_threads() / static_cast<int>(dp_list.size())));
      const State by_share = [&] {
        ScopedThreadShare use(replica_threads);
        return train_share_by_share(s, shares);
      }();
      for (BatchNormSync sync : {BatchNormSync::per_device, BatchNormSync::across_devices}) {
        const bool synced = sync == BatchNormSync::across_devices;
        Perturbation p;
        if (perturb >= 0 && perturb < static_cast<int>(shares.size())) {
          for (int r = 0; r < perturb; ++r) p.first += shares[static_cast<std::size_t>(r)];
          p.count = shares[static_cast<std::size_t>(perturb)];
          p.eps = eps;
        }
        DataParallel dp(make_net(s.dtype, s.device), [&] { return make_net(s.dtype, s.device); },
                        dp_list, {.batch_norm = sync});
        runs.push_back(
            {.name = "DP " + std::to_string(dp_list.size()) + (synced ? " + SyncBN" : ""),
             .reference = synced ? "one device, whole batch"
                                 : "one device, BatchNorm per share (" + share_text(shares) + ")",
             .state = train_steps(dp, dp.parameters(), s, 0, s.global_batch, p),
             .expected = synced ? whole : by_share,
             .exact = !synced && exact_with_two(shares.size(), s.device),
             .why = why(synced, shares.size(), s.device)});
      }
      // Uneven micro-batches (12 rows in 5: 3+3+2+2+2): the weights must make up for them.
      auto net = make_net(s.dtype, s.device, Norms::none);
      runs.push_back(
          {.name = "1 device + accumulate " + std::to_string(accumulate),
           .reference = kWholeWithoutBn,
           .state = train_accumulated(*net, net->parameters(), s, 0, s.global_batch, accumulate),
           .expected = whole_without_bn,
           .why = apps::kAccumulationRounding});
    } else {
      RG_CHECK(s.global_batch % n == 0, "check_equivalence: --batch ", s.global_batch,
               " must divide among ", n, " processes (equal shares: DDP averages their means)");
      const int64_t share = s.global_batch / n;
      const State by_share =
          train_share_by_share(s, std::vector<int64_t>(static_cast<std::size_t>(n), share));
      for (bool zero : {false, true})
        for (bool synced : {false, true}) {
          auto net = make_net(s.dtype, s.device);
          if (synced) net = convert_sync_batchnorm(net, group);
          DistributedDataParallel ddp(net, group);
          const Perturbation p{.count = rank == perturb ? share : 0, .eps = eps};
          Run run{.name = "DDP " + std::to_string(n) + (synced ? " + SyncBN" : "") +
                          (zero ? " + ZeRO-1" : ""),
                  .reference = synced ? "one device, whole batch"
                                      : "one device, BatchNorm per share (" + std::to_string(n) +
                                            " x " + std::to_string(share) + ")",
                  .state = train_steps(ddp, ddp.parameters(), s, rank * share, share, p,
                                       zero ? &ddp : nullptr),
                  .expected = synced ? whole : by_share,
                  .exact = !synced && exact_with_two(n, s.device),
                  .why = why(synced, n, s.device)};
          run.ranks_apart = apps::apart_across_ranks(ddp.named_parameters(), *world);
          runs.push_back(std::move(run));
        }
      // Each rank's share in micro-batches, DDP averaging in the last one's backward.
      for (bool zero : {false, true}) {
        DistributedDataParallel ddp(make_net(s.dtype, s.device, Norms::none), group);
        const int micro = static_cast<int>(std::min<int64_t>(accumulate, share));
        Run run{.name = "DDP " + std::to_string(n) + (zero ? " + ZeRO-1" : "") + " + accumulate " +
                        std::to_string(micro),
                .reference = kWholeWithoutBn,
                .state = train_accumulated(ddp, ddp.parameters(), s, rank * share, share, micro,
                                           &ddp, zero),
                .expected = whole_without_bn,
                .why = apps::kAccumulationRounding};
        run.ranks_apart = apps::apart_across_ranks(ddp.named_parameters(), *world);
        runs.push_back(std::move(run));
      }
    }
    if (!trace_path.empty()) write_trace(trace_path, *world);
    bool failed = false;
    if (rank == 0) {
      std::printf(
          "check_equivalence: %d steps of SGD (lr 0.05, momentum 0.9, weight decay 5e-4), "
          "batch %lld, %s, on %s\n\n",
          s.steps, static_cast<long long>(s.global_batch), std::string(dtype_name(s.dtype)).c_str(),
          s.device.str().c_str());
      apps::print_differences(whole, runs);
      failed = !apps::print_verdicts(runs, s.dtype);
      if (n == 1)
        std::printf("For the DDP runs: scripts/mpirun.sh %d build/apps/check_equivalence\n",
                    static_cast<int>(dp_list.size()));
    }
    // Every rank exits as rank 0 judged, so that mpirun's status is the verdict.
    Tensor verdict = full({1}, failed ? 1 : 0, {.dtype = DType::i64});
    world->broadcast(verdict, 0)->wait();
    shutdown();
    return verdict.item() != 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "check_equivalence: " << e.what() << "\n";
    rg::parallel::end_job_after_error("check_equivalence stopped on the error above");
    return 2;
  }
}
