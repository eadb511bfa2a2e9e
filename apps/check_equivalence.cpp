// check_equivalence: the proof, as a program, that data parallelism computes what one device
// computes — and where it does not, by how much and why. From the same weights and the same
// batches it trains K steps (SGD with momentum and weight decay) of
//
//   single       one device, the whole batch                          (the reference)
//   DP           DataParallel over N logical cpu devices, per-device BatchNorm
//   DP+SyncBN    DataParallel with SyncBatchNorm across the devices' threads
//   DDP          N processes under mpirun, per-process BatchNorm
//   DDP+SyncBN   N processes with SyncBatchNorm
//
// and prints, for every parameter and buffer, the largest |difference| from `single` after K
// steps. Alone it runs single, DP and DP+SyncBN; under scripts/mpirun.sh N it runs single, DDP
// and DDP+SyncBN (each process its B/N rows).
//
//   build/apps/check_equivalence --devices 2
//   scripts/mpirun.sh 2 build/apps/check_equivalence
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "core/rng.h"
#include "nn/layers.h"
#include "optim/optim.h"
#include "parallel/data_parallel.h"
#include "parallel/ddp.h"
#include "parallel/sync_batch_norm.h"
#include "parallel/world.h"

using namespace rg;
using namespace rg::parallel;

namespace {

using State = std::map<std::string, Tensor>;

// conv(3→8) BN ReLU → conv(8→16, stride 2) BN ReLU → global average pool → linear(16→10):
// small, but with BatchNorm at two depths. A Sequential, so SyncBatchNorm can replace its BNs.
std::shared_ptr<nn::Module> make_net(DType dtype) {
  manual_seed(1);  // every process and every replica starts from the same weights
  auto net = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(3, 8, nn::Size2{3, 3},
                                   nn::Conv2dOptions{.padding = {1, 1}, .bias = nn::Bias::without}),
      std::make_shared<nn::BatchNorm2d>(8), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Conv2d>(
          8, 16, nn::Size2{3, 3},
          nn::Conv2dOptions{.stride = {2, 2}, .padding = {1, 1}, .bias = nn::Bias::without}),
      std::make_shared<nn::BatchNorm2d>(16), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::AdaptiveAvgPool2d>(nn::Size2{1, 1}), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(16, 10)});
  net->to(dtype);
  return net;
}

struct Batch {
  Tensor images, labels;
};
// Batch `step`: the same on every process (drawn from the seed and the step only).
Batch batch(int64_t size, int step, DType dtype) {
  manual_seed(1000 + static_cast<uint64_t>(step));
  Tensor images = randn({size, 3, 8, 8}, {.dtype = dtype});
  std::vector<int64_t> labels(static_cast<std::size_t>(size));
  const auto u = rand({size}, {.dtype = DType::f64}).to_vector<double>();
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(u[i] * 10);
  return {images, from_vector(labels, {size}, {DType::i64})};
}

// K steps of `model` (with its optimizer over `params`) on rows [first, first + count) of each
// batch; returns the final parameters and buffers.
State train(nn::Module& model, std::vector<Tensor> params, int steps, int64_t global_batch,
            int64_t first, int64_t count, DType dtype) {
  SGD opt(std::move(params), {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4});
  for (int step = 0; step < steps; ++step) {
    const Batch b = batch(global_batch, step, dtype);
    opt.zero_grad();
    cross_entropy(model.forward(b.images.narrow(0, first, count)), b.labels.narrow(0, first, count))
        .backward();
    opt.step();
  }
  return model.state_dict();
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
  return worst;
}

void print_table(const State& reference, const std::vector<std::pair<std::string, State>>& runs,
                 int steps, DType dtype) {
  std::printf("max |difference| from one device after %d steps (%s):\n\n| tensor |", steps,
              std::string(dtype_name(dtype)).c_str());
  for (const auto& [name, _] : runs) std::printf(" %s |", name.c_str());
  std::printf("\n| --- |");
  for (std::size_t i = 0; i < runs.size(); ++i) std::printf(" ---: |");
  std::printf("\n");
  for (const auto& [tensor, value] : reference) {
    std::printf("| %s |", tensor.c_str());
    for (const auto& [_, state] : runs)
      std::printf(" %.1e |", max_abs_difference(state.at(tensor), value));
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"check_equivalence: N devices or processes against one, tensor by tensor"};
  int devices = 2, steps = 3;
  int64_t global_batch = 12;
  std::string dtype_text = "f64";
  app.add_option("--devices", devices, "logical cpu devices for DP (alone)");
  app.add_option("--steps", steps, "SGD steps");
  app.add_option("--batch", global_batch, "samples per step over all devices / processes");
  app.add_option("--dtype", dtype_text, "f64 (differences of rounding ~1e-15) or f32 (~1e-6)")
      ->check(CLI::IsMember({"f32", "f64"}));
  CLI11_PARSE(app, argc, argv);
  try {
    const DType dtype = dtype_text == "f64" ? DType::f64 : DType::f32;
    auto world = init();
    const int n = world->size(), rank = world->rank();
    RG_CHECK(devices >= 1 && steps >= 1 && global_batch >= 1,
             "check_equivalence: --devices, --steps and --batch must be >= 1");
    auto single = make_net(dtype);
    const State reference =
        train(*single, single->parameters(), steps, global_batch, 0, global_batch, dtype);
    std::vector<std::pair<std::string, State>> runs;
    if (n == 1) {
      for (BatchNormSync sync : {BatchNormSync::per_device, BatchNormSync::across_devices}) {
        std::vector<Device> cpus;
        for (int d = 0; d < devices; ++d) cpus.push_back(Device::cpu(d));
        DataParallel dp(make_net(dtype), [dtype] { return make_net(dtype); }, cpus,
                        {.batch_norm = sync});
        runs.emplace_back("DP " + std::to_string(devices) +
                              (sync == BatchNormSync::across_devices ? " + SyncBN" : ""),
                          train(dp, dp.parameters(), steps, global_batch, 0, global_batch, dtype));
      }
    } else {
      RG_CHECK(global_batch % n == 0, "check_equivalence: --batch ", global_batch,
               " must divide among ", n, " processes (equal shares: DDP averages their means)");
      const int64_t share = global_batch / n;
      for (bool sync : {false, true}) {
        auto net = make_net(dtype);
        if (sync) net = convert_sync_batchnorm(net, world);
        DistributedDataParallel ddp(net, world);
        runs.emplace_back(
            "DDP " + std::to_string(n) + (sync ? " + SyncBN" : ""),
            train(ddp, ddp.parameters(), steps, global_batch, rank * share, share, dtype));
      }
    }
    if (rank == 0) {
      print_table(reference, runs, steps, dtype);
      std::printf(
          "\nExpected: with SyncBN every difference is rounding (the order of additions: per-share "
          "sums, then the reduce-add or allreduce, Chan's merge of BatchNorm statistics) — about "
          "1e-15 in f64, 1e-6 in f32. Without it each device normalises with its own share's "
          "statistics — a different function of the batch — so the gradients, and every "
          "parameter after the first step, differ by far more than rounding, and the running "
          "statistics are device 0's (DP) or rank 0's (DDP broadcasts them): of B/N samples, "
          "not B. num_batches_tracked never differs.\n");
      if (n == 1)
        std::printf("For the DDP columns: scripts/mpirun.sh %d build/apps/check_equivalence\n",
                    devices);
    }
    shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "check_equivalence: " << e.what() << "\n";
    rg::parallel::end_job_after_error("check_equivalence stopped on the error above");
    return 1;
  }
}
