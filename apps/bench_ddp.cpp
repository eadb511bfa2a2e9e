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
//   images_per_second      global batch / the slowest rank's median step time
//   local_step_ms          the same step with DDP's no_sync(): no communication at all
//   exposed_comm_ms        step_ms − local_step_ms: what communication adds to a step, after
//                          the overlap with backward
//   backward_wait_ms       of that, DDP's wait for its allreduces once backward has ended
//   optimizer_state_bytes  each rank's optimizer state (its largest over the ranks): with
//                          --zero 1 (ZeRO-1, parallel/zero.h) about 1/N of DDP's; the local
//                          step then still all-gathers the parameters
// for each bucket cap of --bucket-mb (a sweep: --bucket-mb 1,25) and the chosen allreduce
// algorithm; --first-bucket-mb sets the first bucket's cap (DDP's first_bucket_bytes), the one
// name for it across the apps. --trace FILE
// writes a timeline of --trace-steps (synchronised steps of the first configuration).
//
//   scripts/mpirun.sh 2 build/apps/bench_ddp --model resnet20 --zero 1 --bucket-mb 25
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "core/rng.h"
#include "core/thread_pool.h"
#include "core/trace.h"
#include "nn/models/zoo.h"
#include "ops/ops.h"
#include "optim/optim.h"
#include "parallel/ddp.h"
#include "parallel/horovod.h"
#include "parallel/world.h"
#include "parallel/zero.h"
#include "train/step_trace.h"

using namespace rg;
using namespace rg::parallel;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_ddp: data-parallel train-step throughput, exposed communication, buckets"};
  std::string model_name = "resnet18", algorithm = "ring";
  int64_t global_batch = 64, steps = 6, warmup = 1;
  int threads = 0;
  std::vector<double> bucket_mb = {1, 5, 25, 100};
  double first_bucket_mb = static_cast<double>(DDPOptions{}.first_bucket_bytes) / (1 << 20);
  app.option_defaults()->always_capture_default();  // --help shows every default
  app.add_option("--model", model_name, "model name (resnet18, resnet20, ...@width)");
  app.add_option("--global-batch", global_batch, "images per step over all processes");
  app.add_option("--threads", threads, "compute threads per process (0: cores / processes)");
  app.add_option("--steps", steps, "timed steps per configuration");
  app.add_option("--warmup", warmup, "untimed steps first");
  app.add_option("--bucket-mb", bucket_mb, "DDP bucket caps to sweep, in MiB (1,25 or 1 25)")
      ->delimiter(',');
  app.add_option("--first-bucket-mb", first_bucket_mb,
                 "DDP's first bucket's cap, in MiB (small: communication starts early)");
  app.add_option("--allreduce", algorithm, "ring or native")
      ->check(CLI::IsMember({"ring", "native"}));
  int zero = 0;
  app.add_option("--zero", zero, "1: ZeRO-1, the optimizer state sharded over the processes")
      ->check(CLI::IsMember({0, 1}));
  train::TraceOptions trace;
  std::string trace_steps = "2:4";
  app.add_option("--trace", trace.path, "write a timeline of --trace-steps to this file");
  app.add_option("--explain", trace.explain,
                 "tell --trace-steps as text, rank after rank: the events of these categories "
                 "(ddp,ring,... or all; docs/learn/3-ddp.md)");
  app.add_option("--trace-steps", trace_steps,
                 "A:B, the synchronised steps (from 1, warm-up included) --trace records and "
                 "--explain tells")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    train::parse_trace_steps(trace_steps, trace);
    ProcessGroupOptions options;
    options.algorithm =
        algorithm == "native" ? AllreduceAlgorithm::native : AllreduceAlgorithm::ring;
    auto group = init(options);
    const int n = group->size();
    // Bounded so that the caps in bytes fit int64 (and are not 0 after the cast).
    for (double mb : bucket_mb)
      RG_CHECK(mb > 0 && mb <= 1 << 20, "bench_ddp: --bucket-mb must be in (0, 1048576], got ", mb);
    RG_CHECK(first_bucket_mb > 0 && first_bucket_mb <= 1 << 20,
             "bench_ddp: --first-bucket-mb must be in (0, 1048576], got ", first_bucket_mb);
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
    train::StepTrace step_trace(trace, group);  // checks the path
    // Traced: forward and backward per top-level module.
    std::shared_ptr<nn::Module> wrapped = trace.path.empty() ? model : train::traced_model(model);
    int64_t synced_steps = 0;

    // Synchronised and local (no_sync) steps alternate, so that drifts in the machine's speed
    // hit both alike; each is the median over the timed steps, the slowest rank's.
    auto time_steps = [&](DistributedDataParallel& ddp, int64_t& state_bytes) {
      SGD sgd(ddp.parameters(), {.lr = 0.01, .momentum = 0.9, .weight_decay = 5e-4});
      std::unique_ptr<ZeroRedundancyOptimizer> sharded;
      if (zero == 1) sharded = std::make_unique<ZeroRedundancyOptimizer>(ddp, sgd);
      Optimizer& opt = sharded ? static_cast<Optimizer&>(*sharded) : sgd;
      auto step_ms = [&](bool communicate) {
        group->barrier()->wait();
        if (communicate) step_trace.before_step(++synced_steps);
        const auto t0 = std::chrono::steady_clock::now();
        opt.zero_grad();
        if (communicate) {
          trace::Span forward("forward", "forward and loss");
          Tensor loss = cross_entropy(ddp.forward(x), labels);
          forward.finish();
          trace::Span backward("backward", "backward");
          loss.backward();
        } else {
          auto local = ddp.no_sync();
          cross_entropy(ddp.forward(x), labels).backward();
        }
        {
          trace::Span span("optimizer", "optimizer step");
          opt.step();
        }
        const double ms = 1e3 * seconds_since(t0);
        if (communicate) step_trace.after_step(synced_steps);
        return ms;
      };
      std::vector<double> local, synced, waited;
      for (int64_t i = 0; i < warmup + steps; ++i) {
        const double l = step_ms(false), s = step_ms(true);
        if (i < warmup) continue;
        local.push_back(l);
        synced.push_back(s);
        waited.push_back(ddp.last_iteration().backward_wait_ms);
      }
      auto slowest_median = [&](std::vector<double> v, const char* what) {
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        return allreduce_metric(v[v.size() / 2], what, ReduceOp::max, *group);
      };
      state_bytes = opt.state_bytes();
      return std::array<double, 3>{slowest_median(synced, "step"), slowest_median(local, "local"),
                                   slowest_median(waited, "wait")};
    };

    if (group->rank() == 0)
      std::printf(
          "{\"model\": \"%s\", \"processes\": %d, \"threads_per_process\": %d, "
          "\"global_batch\": %lld, \"allreduce\": \"%s\", \"backend\": \"%s\", "
          "\"zero\": %d, \"first_bucket_mb\": %g, \"runs\": [\n",
          model_name.c_str(), n, num_threads(), static_cast<long long>(global_batch),
          algorithm.c_str(), group->backend().c_str(), zero, first_bucket_mb);
    for (std::size_t k = 0; k < bucket_mb.size(); ++k) {
      DistributedDataParallel ddp(
          wrapped, group,
          {.bucket_cap_bytes = static_cast<int64_t>(bucket_mb[k] * (1 << 20)),
           .first_bucket_bytes = static_cast<int64_t>(first_bucket_mb * (1 << 20))});
      int64_t state_bytes = 0;
      const auto [step_ms, local_ms, wait_ms] = time_steps(ddp, state_bytes);
      const double most_state =
          allreduce_metric(static_cast<double>(state_bytes), "state bytes", ReduceOp::max, *group);
      if (group->rank() == 0)
        std::printf(
            "  {\"bucket_mb\": %g, \"buckets\": %zu, \"images_per_second\": %.1f, "
            "\"step_ms\": %.1f, \"local_step_ms\": %.1f, \"exposed_comm_ms\": %.1f, "
            "\"backward_wait_ms\": %.1f, \"optimizer_state_bytes\": %lld, "
            "\"optimizer_state_bytes_max\": %.0f}%s\n",
            bucket_mb[k], ddp.buckets().size(), static_cast<double>(global_batch) / (step_ms / 1e3),
            step_ms, local_ms, step_ms - local_ms, wait_ms, static_cast<long long>(state_bytes),
            most_state, k + 1 < bucket_mb.size() ? "," : "");
    }
    step_trace.finish();
    if (group->rank() == 0) std::printf("]}\n");
  } catch (const std::exception& e) {
    std::cerr << "bench_ddp: error: " << e.what() << "\n";
    rg::parallel::end_job_after_error("bench_ddp stopped on the error above");
    return 1;
  }
}
