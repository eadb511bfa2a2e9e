// Train-step throughput and peak memory of a model on random data: forward, cross-entropy,
// backward, SGD step — in f32, or at the mixed-precision levels of optim/amp.h. Prints one JSON
// object per configuration. tools/bench_train_vs_pytorch.py runs it beside PyTorch.
//
//   ./build/apps/bench_train [--model resnet18] [--batch 128] [--threads 2] [--steps 5]
//   ./build/apps/bench_train --model resnet20 --amp all      # O0, then O1-O3 in fp16 and bf16
//   ./build/apps/bench_train --device cuda --amp all         # on a GPU (cuDNN, cuBLAS)
//   ./build/apps/bench_train --device cuda --cudnn-benchmark # each conv's fastest cuDNN plan
//   ./build/apps/bench_train --device cuda --model airbench94 --count-launches
//                                  # kernels, cuDNN/cuBLAS calls and copies per timed step
//
// 16 bits on the CPU are a storage format: every conv/GEMM widens its operands to f32, so the
// AMP rows measure the cost of the conversions and the memory that 16-bit activations save,
// not a tensor-core speed-up. On a GPU each step is timed to the device's completion, and the
// peak memory is the caching allocator's peak on that GPU (what the step holds, not what the
// pool has reserved). host_ms_per_step is the time until step() returns, before the wait for
// the device: on a GPU, well below the step's time when the host queues ahead of the GPU, and
// equal to it when something in the step waits for the GPU (a read back, a synchronous copy).
#include <sys/resource.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "core/allocator.h"
#include "core/launch_counts.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "core/trace.h"
#include "nn/models/zoo.h"
#include "ops/ops.h"
#include "optim/optim.h"
#include "train/step_trace.h"

namespace {

struct Result {
  double images_per_second, best_images_per_second, peak_mib, host_ms_per_step;
  int64_t skipped, parameters;
  double cpu_ms_per_step;     // CPU time of the process (all threads) per timed step
  rg::LaunchCounts launches;  // over the timed steps (core/launch_counts.h)
};

double process_cpu_seconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// --trace: steps [first, last] of a configuration, counted from 1 over warm-up and timed steps.
struct TraceWindow {
  std::string path;
  int64_t first = 0, last = 0;
};

Result run(const std::string& model_name, const rg::AmpOptions& options, const rg::Device& device,
           int64_t batch, int64_t steps, int64_t warmup, const TraceWindow& window,
           rg::MemoryFormat format) {
  rg::manual_seed(0);
  std::shared_ptr<rg::nn::Module> model = rg::nn::make_model(model_name);
  int64_t parameters = 0;  // for tools/bench_train_vs_pytorch.py's check against its twin
  for (const rg::Tensor& p : model->parameters()) parameters += p.numel();
  model->to(device);
  rg::MixedPrecision amp(*model, options);
  rg::SGD opt(amp.optimizer_params(), {.lr = 0.01, .momentum = 0.9, .weight_decay = 5e-4});
  // --memory-format channels_last: the input in NHWC, as PyTorch's x.to(memory_format=...); the
  // activations follow it (the ops keep the layout, core/memory_format.h).
  const rg::Tensor x = rg::to_memory_format(rg::randn({batch, 3, 32, 32}).to(device), format);
  std::vector<int64_t> y(static_cast<std::size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) y[static_cast<std::size_t>(i)] = i % 10;
  const rg::Tensor labels = rg::from_vector(y, {batch}, {rg::DType::i64}).to(device);
  // Traced: forward and backward per top-level module (train/step_trace.h).
  std::shared_ptr<rg::nn::Module> stepped =
      window.path.empty() ? model : rg::train::traced_model(model);
  int64_t taken = 0;
  auto step = [&] {
    if (++taken == window.first) rg::trace::start();
    {
      rg::trace::Span span("train", "step");
      rg::Tensor logits;
      {
        rg::trace::Span forward("forward", "forward");
        auto autocast = amp.autocast();  // O1 only
        logits = stepped->forward(amp.cast_input(x));
      }
      opt.zero_grad();
      rg::trace::Span backward("backward", "backward");
      amp.backward(rg::cross_entropy(logits.to(rg::DType::f32), labels));
      backward.finish();
      rg::trace::Span optimizer("optimizer", "optimizer step");
      rg::trace::DeviceSpan on_device(device, "optimizer step");
      amp.step(opt);
      amp.update();
    }
    if (taken == window.last) {
      rg::trace::stop();
      rg::trace::write_file(window.path, rg::trace::json_file({rg::trace::to_json_objects(
                                             rg::trace::take(), 0, "bench_train " + model_name)}));
    }
  };
  for (int64_t i = 0; i < warmup; ++i) step();
  rg::synchronize(device);
  rg::reset_peak_memory(device);
  double best = 1e30, total = 0, host = 0;
  using Clock = std::chrono::steady_clock;
  const double cpu0 = process_cpu_seconds();
  const rg::LaunchCounts launches0 = rg::launch_counts();
  for (int64_t i = 0; i < steps; ++i) {
    const auto t0 = Clock::now();
    step();
    host += std::chrono::duration<double>(Clock::now() - t0).count();
    rg::synchronize(device);  // a GPU step is done when the device is, not when the host is
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
  }
  const double cpu = process_cpu_seconds() - cpu0;
  const rg::LaunchCounts launches = rg::launch_counts() - launches0;
  if (!window.path.empty() && taken >= window.first && taken < window.last) {  // ended inside
    rg::trace::stop();
    rg::trace::write_file(window.path, rg::trace::json_file({rg::trace::to_json_objects(
                                           rg::trace::take(), 0, "bench_train " + model_name)}));
  }
  return {static_cast<double>(batch * steps) / total,
          static_cast<double>(batch) / best,
          static_cast<double>(rg::memory_stats(device).peak_bytes) / (1 << 20),
          1e3 * host / static_cast<double>(steps),
          amp.scaler() ? amp.scaler()->skipped_steps() : 0,
          parameters,
          1e3 * cpu / static_cast<double>(steps),
          launches};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_train: images/s and peak memory of a training step"};
  std::string model_name = "resnet18";
  int64_t batch = 128, steps = 5, warmup = 1;
  int threads = 0;
  std::string device_name = "cpu";
  std::vector<std::string> levels = {"O0"}, dtypes = {"fp16", "bf16"};
  app.add_option("--model", model_name, "model name (resnet18, resnet20, ...@width)");
  app.add_option("--batch", batch, "batch size");
  app.add_option("--threads", threads, "compute threads (0: all)");
  app.add_option("--steps", steps, "timed steps");
  app.add_option("--warmup", warmup, "untimed steps first");
  app.add_option("--amp", levels, "mixed-precision levels to time (O0..O3, or all)");
  app.add_option("--amp-dtype", dtypes, "16-bit types for O1-O3 (fp16, bf16)");
  app.add_option("--device", device_name, "cpu or cuda[:N]");
  std::string memory_format = "contiguous";
  app.add_option("--memory-format", memory_format,
                 "contiguous (NCHW) or channels_last (NHWC) activations");
  bool cudnn_benchmark = false;
  app.add_flag("--cudnn-benchmark", cudnn_benchmark,
               "time cuDNN's candidate plans for each convolution in the warmup and keep the "
               "fastest (torch.backends.cudnn.benchmark)");
  TraceWindow window;
  std::string trace_steps = "2:4";
  app.add_option("--trace", window.path,
                 "write a timeline of --trace-steps (of the first configuration) to this file");
  app.add_option("--trace-steps", trace_steps, "A:B, counted from 1 over warm-up and timed steps")
      ->capture_default_str();
  bool count_launches = false;
  app.add_flag("--count-launches", count_launches,
               "also print kernel launches, cuDNN/cuBLAS calls and device copies per timed step "
               "(core/launch_counts.h; 0 on the CPU)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!window.path.empty()) {
      rg::trace::check_path(window.path);
      rg::train::TraceOptions parsed;
      rg::train::parse_trace_steps(trace_steps, parsed);
      window.first = parsed.first_step;
      window.last = parsed.last_step;
      rg::trace::name_this_thread("main");
    }
    if (threads > 0) rg::set_num_threads(threads);
    rg::set_benchmark_convolutions(cudnn_benchmark);
    const rg::Device device = rg::Device::parse(device_name);
    rg::check_device_available(device);  // no GPU: the clear error, before any model is built
    if (levels == std::vector<std::string>{"all"}) levels = {"O0", "O1", "O2", "O3"};
    std::vector<rg::AmpOptions> configs;
    for (const std::string& level : levels) {
      const rg::OptLevel l = rg::parse_opt_level(level);
      if (l == rg::OptLevel::O0) {
        configs.push_back({});  // f32: no 16-bit type
        continue;
      }
      for (const std::string& dtype : dtypes) {
        const rg::DType d = rg::parse_amp_dtype(dtype);
        configs.push_back({l, d, rg::default_loss_scale(d)});  // bf16: no scaler, as PyTorch's
      }
    }
    for (const rg::AmpOptions& c : configs) {
      const Result r = run(model_name, c, device, batch, steps, warmup, window,
                           rg::parse_memory_format(memory_format));
      window = {};  // the first configuration's steps only
      const bool f32 = c.level == rg::OptLevel::O0;
      std::printf(
          "{\"framework\": \"ringgrad\", \"device\": \"%s\", \"model\": \"%s\", \"batch\": %lld, "
          "\"threads\": %d, "
          "\"amp\": \"%s\", \"dtype\": \"%s\", \"steps\": %lld, \"images_per_second\": %.1f, "
          "\"best_images_per_second\": %.1f, \"host_ms_per_step\": %.2f, \"peak_memory_mib\": "
          "%.1f, \"skipped_steps\": %lld, \"parameters\": %lld, \"cudnn_benchmark\": %s, "
          "\"memory_format\": \"%s\", \"cpu_ms_per_step\": %.1f}\n",
          device.str().c_str(), model_name.c_str(), static_cast<long long>(batch),
          rg::num_threads(), std::string(rg::opt_level_name(c.level)).c_str(),
          f32 ? "fp32" : (c.dtype == rg::DType::f16 ? "fp16" : "bf16"),
          static_cast<long long>(steps), r.images_per_second, r.best_images_per_second,
          r.host_ms_per_step, r.peak_mib, static_cast<long long>(r.skipped),
          static_cast<long long>(r.parameters), cudnn_benchmark ? "true" : "false",
          memory_format.c_str(), r.cpu_ms_per_step);
      if (count_launches) {
        const double n = static_cast<double>(steps);
        std::printf(
            "{\"model\": \"%s\", \"device\": \"%s\", \"batch\": %lld, \"amp\": \"%s\", "
            "\"kernels_per_step\": %.1f, \"library_calls_per_step\": %.1f, "
            "\"copies_per_step\": %.1f}\n",
            model_name.c_str(), device.str().c_str(), static_cast<long long>(batch),
            std::string(rg::opt_level_name(c.level)).c_str(),
            static_cast<double>(r.launches.kernels) / n,
            static_cast<double>(r.launches.library_calls) / n,
            static_cast<double>(r.launches.copies) / n);
      }
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_train: error: " << e.what() << "\n";
    return 1;
  }
}
