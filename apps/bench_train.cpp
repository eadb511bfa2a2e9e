// Train-step throughput of a model on random data: forward, cross-entropy, backward, SGD step.
// Prints JSON. tools/bench_train_vs_pytorch.py runs it beside PyTorch on the same model.
//
//   ./build/apps/bench_train [--model resnet18] [--batch 128] [--threads 2] [--steps 5]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "core/allocator.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "nn/models/resnet.h"
#include "optim/optim.h"

int main(int argc, char** argv) {
  CLI::App app{"bench_train: images/s of a training step"};
  std::string model_name = "resnet18";
  int64_t batch = 128, steps = 5, warmup = 1;
  int threads = 0;
  app.add_option("--model", model_name, "model name (resnet18, resnet20, ...@width)");
  app.add_option("--batch", batch, "batch size");
  app.add_option("--threads", threads, "compute threads (0: all)");
  app.add_option("--steps", steps, "timed steps");
  app.add_option("--warmup", warmup, "untimed steps first");
  CLI11_PARSE(app, argc, argv);
  try {
    if (threads > 0) rg::set_num_threads(threads);
    rg::manual_seed(0);
    auto model = rg::nn::make_model(model_name);
    rg::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9, .weight_decay = 5e-4});
    rg::Tensor x = rg::randn({batch, 3, 32, 32});
    std::vector<int64_t> y(static_cast<std::size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) y[static_cast<std::size_t>(i)] = i % 10;
    rg::Tensor labels = rg::from_vector(y, {batch}, {rg::DType::i64});
    auto step = [&] {
      opt.zero_grad();
      rg::cross_entropy(model->forward(x), labels).backward();
      opt.step();
    };
    for (int64_t i = 0; i < warmup; ++i) step();
    rg::reset_peak_memory(rg::Device::cpu());
    double best = 1e30, total = 0;
    for (int64_t i = 0; i < steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::min(best, s);
      total += s;
    }
    std::printf(
        "{\"framework\": \"ringgrad\", \"model\": \"%s\", \"batch\": %lld, \"threads\": %d, "
        "\"steps\": %lld, \"images_per_second\": %.1f, \"best_images_per_second\": %.1f, "
        "\"peak_memory_mib\": %.1f}\n",
        model_name.c_str(), static_cast<long long>(batch), rg::num_threads(),
        static_cast<long long>(steps), static_cast<double>(batch * steps) / total,
        static_cast<double>(batch) / best,
        static_cast<double>(rg::memory_stats(rg::Device::cpu()).peak_bytes) / (1 << 20));
  } catch (const std::exception& e) {
    std::cerr << "bench_train: error: " << e.what() << "\n";
    return 1;
  }
}
