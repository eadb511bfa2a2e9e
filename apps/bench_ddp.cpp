// bench_ddp: data-parallel training speed on this machine. Run it alone and under mpirun:
//
//   build/apps/bench_ddp --model resnet18 --global-batch 64            # 1 process, all cores
//   scripts/mpirun.sh 2 build/apps/bench_ddp --model resnet18 --global-batch 64
//
// The global batch stays fixed and is split over the processes (strong scaling), and the
// cores are shared among them (cores / N compute threads each): on one machine, the question
// is how much of the machine's throughput data parallelism keeps. Per configuration it times
// `--steps` training steps (forward, cross-entropy, backward, SGD) on random data and prints,
// from rank 0, one JSON object:
//   images_per_second      global batch / the slowest rank's mean step time
//   local_step_ms          the same step with DDP's no_sync(): no communication at all
//   exposed_comm_ms        step_ms − local_step_ms: what communication adds to a step, after
//                          the overlap with backward
//   backward_wait_ms       of that, DDP's wait for its allreduces once backward has ended
// for each bucket cap of --bucket-mb (a sweep) and the chosen allreduce algorithm.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "core/rng.h"
#include "core/thread_pool.h"
#include "nn/models/resnet.h"
#include "optim/optim.h"
#include "parallel/ddp.h"
#include "parallel/horovod.h"

using namespace rg;
using namespace rg::parallel;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Timing {
  double step_ms = 0, backward_wait_ms = 0;
};
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_ddp: data-parallel train-step throughput, exposed communication, buckets"};
  std::string model_name = "resnet18", algorithm = "ring";
  int64_t global_batch = 64, steps = 4, warmup = 1;
  int threads = 0;
  std::vector<double> bucket_mb = {1, 5, 25, 100};
  app.add_option("--model", model_name, "model name (resnet18, resnet20, ...@width)");
  app.add_option("--global-batch", global_batch, "images per step over all processes");
  app.add_option("--threads", threads, "compute threads per process (0: cores / processes)");
  app.add_option("--steps", steps, "timed steps per configuration");
  app.add_option("--warmup", warmup, "untimed steps first");
  app.add_option("--bucket-mb", bucket_mb, "DDP bucket caps to sweep (MiB)");
  app.add_option("--allreduce", algorithm, "ring or native")
      ->check(CLI::IsMember({"ring", "native"}));
  CLI11_PARSE(app, argc, argv);
  try {
    ProcessGroupOptions options;
    options.algorithm =
        algorithm == "native" ? AllreduceAlgorithm::native : AllreduceAlgorithm::ring;
    auto group = init(options);
    const int n = group->size();
    RG_CHECK(global_batch % n == 0, "bench_ddp: --global-batch ", global_batch,
             " does not split over ", n, " processes");
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    set_num_threads(threads > 0 ? threads : std::max(1, cores / group->local_size()));

    const int64_t batch = global_batch / n;
    manual_seed(static_cast<uint64_t>(group->rank()));  // each rank its own data
    std::shared_ptr<nn::Module> model = nn::make_model(model_name);
    Tensor x = randn({batch, 3, 32, 32});
    std::vector<int64_t> y(static_cast<std::size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) y[static_cast<std::size_t>(i)] = i % 10;
    Tensor labels = from_vector(y, {batch}, {DType::i64});

    // Mean over the timed steps, the slowest rank's (every rank waits for it anyway).
    auto time_steps = [&](DistributedDataParallel& ddp, bool communicate) {
      SGD opt(ddp.parameters(), {.lr = 0.01, .momentum = 0.9, .weight_decay = 5e-4});
      Timing t;
      for (int64_t i = 0; i < warmup + steps; ++i) {
        group->barrier()->wait();
        const auto t0 = std::chrono::steady_clock::now();
        opt.zero_grad();
        if (communicate) {
          cross_entropy(ddp.forward(x), labels).backward();
        } else {
          auto local = ddp.no_sync();
          cross_entropy(ddp.forward(x), labels).backward();
        }
        opt.step();
        if (i < warmup) continue;
        t.step_ms += 1e3 * seconds_since(t0) / static_cast<double>(steps);
        if (communicate)
          t.backward_wait_ms += ddp.last_iteration().backward_wait_ms / static_cast<double>(steps);
      }
      t.step_ms = allreduce_metric(t.step_ms, "step time", ReduceOp::max, *group);
      t.backward_wait_ms = allreduce_metric(t.backward_wait_ms, "wait", ReduceOp::max, *group);
      return t;
    };

    if (group->rank() == 0)
      std::printf(
          "{\"model\": \"%s\", \"processes\": %d, \"threads_per_process\": %d, "
          "\"global_batch\": %lld, \"allreduce\": \"%s\", \"backend\": \"%s\", "
          "\"runs\": [\n",
          model_name.c_str(), n, num_threads(), static_cast<long long>(global_batch),
          algorithm.c_str(), group->backend().c_str());
    for (std::size_t k = 0; k < bucket_mb.size(); ++k) {
      DistributedDataParallel ddp(
          model, group, {.bucket_cap_bytes = static_cast<int64_t>(bucket_mb[k] * (1 << 20))});
      const Timing local = time_steps(ddp, false);
      const Timing synced = time_steps(ddp, true);
      if (group->rank() == 0)
        std::printf(
            "  {\"bucket_mb\": %g, \"buckets\": %zu, \"images_per_second\": %.1f, "
            "\"step_ms\": %.1f, \"local_step_ms\": %.1f, \"exposed_comm_ms\": %.1f, "
            "\"backward_wait_ms\": %.1f}%s\n",
            bucket_mb[k], ddp.buckets().size(),
            static_cast<double>(global_batch) / (synced.step_ms / 1e3), synced.step_ms,
            local.step_ms, synced.step_ms - local.step_ms, synced.backward_wait_ms,
            k + 1 < bucket_mb.size() ? "," : "");
    }
    if (group->rank() == 0) std::printf("]}\n");
  } catch (const std::exception& e) {
    std::cerr << "bench_ddp: error: " << e.what() << "\n";
    return 1;
  }
}
