// Resident memory over many training steps: does anything grow step after step? A small CNN
// trains on synthetic CIFAR-shaped images through the whole data path (a Dataset making u8
// images, the CIFAR train transform, a DataLoader with worker threads started again every
// epoch), cross-entropy, backward and SGD — optionally in mixed precision with the dynamic loss
// scaler. The process's RSS (/proc/self/statm) and the tensor allocator's bytes in use are
// sampled along the way; one JSON object reports them.
//
//   ./build/apps/bench_rss [--steps 10000] [--batch 32] [--samples 50] [--amp O2]
//
// The first samples (the warm-up: allocator pools, glibc arenas of the worker threads, lazily
// built kernels' buffers) are reported apart; "growth" is what the RSS gained from the end of
// the warm-up to the last step, and "slope" the least-squares trend over the samples after it,
// per 1,000 steps. A leak of even one small tensor per step shows as a steady slope.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "core/allocator.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "core/trace.h"
#include "data/dataloader.h"
#include "nn/layers.h"
#include "optim/optim.h"
#include "train/step_trace.h"

namespace {

// Deterministic images made on request: every get() allocates a fresh tensor, as a decoding
// dataset does.
class SyntheticImages final : public rg::data::Dataset {
 public:
  explicit SyntheticImages(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  rg::data::Example get(int64_t index) const override {
    check_index(index);
    // The class sets the brightness, the index a pattern over it: learnable, not constant.
    const int64_t label = index % 10;
    std::vector<uint8_t> pixels(3 * 32 * 32);
    for (std::size_t i = 0; i < pixels.size(); ++i)
      pixels[i] =
          static_cast<uint8_t>(label * 20 + ((static_cast<uint64_t>(index) * 131 + i * 7) & 0x3F));
    return {rg::from_vector(pixels, {3, 32, 32}, {rg::DType::u8}), label};
  }
  int64_t num_classes() const override { return 10; }
  std::string describe() const override { return "synthetic 3x32x32 images"; }

 private:
  int64_t n_;
};

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long total_pages = 0, resident_pages = 0;
  statm >> total_pages >> resident_pages;
  return static_cast<double>(resident_pages) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1 << 20);
}

std::shared_ptr<rg::nn::Module> small_cnn() {
  using namespace rg::nn;
  const Conv2dOptions same{.padding = {1, 1}, .bias = Bias::without};
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Conv2d>(3, 16, Size2{3, 3}, same), std::make_shared<BatchNorm2d>(16),
      std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(Size2{2, 2}, Size2{2, 2}),
      std::make_shared<Conv2d>(16, 32, Size2{3, 3}, same), std::make_shared<BatchNorm2d>(32),
      std::make_shared<ReLU>(), std::make_shared<AdaptiveAvgPool2d>(Size2{1, 1}),
      std::make_shared<Flatten>(), std::make_shared<Linear>(32, 10)});
}

struct Sample {
  int64_t step;
  double rss_mib, tensor_mib;
};

// Least-squares slope of RSS against the step, in MiB per 1,000 steps.
double slope_per_1000(const std::vector<Sample>& s) {
  if (s.size() < 2) return 0;
  double mx = 0, my = 0;
  for (const Sample& p : s) mx += static_cast<double>(p.step), my += p.rss_mib;
  mx /= static_cast<double>(s.size());
  my /= static_cast<double>(s.size());
  double sxy = 0, sxx = 0;
  for (const Sample& p : s) {
    const double dx = static_cast<double>(p.step) - mx;
    sxy += dx * (p.rss_mib - my);
    sxx += dx * dx;
  }
  return sxx > 0 ? 1000 * sxy / sxx : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_rss: resident memory over many training steps of a small CNN"};
  int64_t steps = 10000, batch = 32, samples = 50, dataset_size = 1024;
  int threads = 0, workers = 2;
  double warmup_fraction = 0.1;
  std::string amp_level = "O0", amp_dtype = "bf16";
  app.add_option("--steps", steps, "training steps")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--batch", batch, "batch size")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app.add_option("--samples", samples, "RSS samples over the run")
      ->check(CLI::Range(int64_t{2}, int64_t{100000}));
  app.add_option("--dataset-size", dataset_size, "synthetic images per epoch")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--warmup", warmup_fraction, "fraction of the steps counted as warm-up")
      ->check(CLI::Range(0.0, 0.9));
  app.add_option("--threads", threads, "compute threads (0: all)")->check(CLI::Range(0, 1024));
  app.add_option("--workers", workers, "DataLoader worker threads")
      ->check(CLI::Range(0, rg::data::kMaxWorkers));
  app.add_option("--amp", amp_level, "mixed-precision level (O0..O3)");
  app.add_option("--amp-dtype", amp_dtype, "16-bit type for O1-O3 (fp16, bf16)");
  rg::train::TraceOptions window;
  std::string trace_steps = "2:4";
  app.add_option("--trace", window.path, "write a timeline of --trace-steps to this file");
  app.add_option("--trace-steps", trace_steps, "A:B, steps from 1")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    rg::train::parse_trace_steps(trace_steps, window);
    if (!window.path.empty()) {
      rg::trace::check_path(window.path);
      rg::trace::name_this_thread("main");
    }
    if (threads > 0) rg::set_num_threads(threads);
    rg::manual_seed(0);
    auto model = small_cnn();
    rg::MixedPrecision amp(*model,
                           {rg::parse_opt_level(amp_level), rg::parse_amp_dtype(amp_dtype), {}});
    rg::SGD opt(amp.optimizer_params(), {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4});
    auto dataset = std::make_shared<SyntheticImages>(dataset_size);
    rg::data::DataLoader loader(
        dataset, std::make_shared<rg::data::RandomSampler>(dataset_size, 0),
        rg::data::cifar10_train_transform(),
        {.batch_size = batch, .last_batch = rg::data::LastBatch::drop, .num_workers = workers});
    RG_CHECK(loader.num_batches() > 0, "bench_rss: --dataset-size ", dataset_size,
             " holds no full batch of ", batch);

    const int64_t every = std::max<int64_t>(1, steps / samples);
    const auto warmup_end = static_cast<int64_t>(warmup_fraction * static_cast<double>(steps));
    std::vector<Sample> trace;
    const double rss_start = rss_mib();
    double last_loss = 0;
    int64_t step = 0, epoch = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (step < steps) {
      loader.start_epoch(epoch++);
      while (step < steps) {
        if (!window.path.empty() && step + 1 == window.first_step) rg::trace::start();
        rg::trace::Span waiting("data", "wait for the next batch");
        auto b = loader.next();
        waiting.finish();
        if (!b) break;
        rg::Tensor logits;
        {
          rg::trace::Span span("forward", "forward");
          auto autocast = amp.autocast();
          logits = model->forward(amp.cast_input(b->images));
        }
        opt.zero_grad();
        rg::Tensor loss = rg::cross_entropy(logits.to(rg::DType::f32), b->labels);
        rg::trace::Span backward("backward", "backward");
        amp.backward(loss);
        backward.finish();
        rg::trace::Span optimizer("optimizer", "optimizer step");
        amp.step(opt);
        amp.update();
        optimizer.finish();
        ++step;
        if (!window.path.empty() && (step == window.last_step || step == steps) &&
            step >= window.first_step && rg::trace::on()) {
          rg::trace::stop();
          rg::trace::write_file(window.path, rg::trace::json_file({rg::trace::to_json_objects(
                                                 rg::trace::take(), 0, "bench_rss")}));
        }
        if (step % every == 0 || step == steps) {
          last_loss = loss.item();
          trace.push_back(
              {step, rss_mib(),
               static_cast<double>(rg::memory_stats(rg::Device::cpu()).current_bytes) / (1 << 20)});
        }
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::vector<Sample> steady;
    for (const Sample& s : trace)
      if (s.step >= warmup_end) steady.push_back(s);
    if (steady.empty()) steady.push_back(trace.back());
    double lo = 1e300, hi = 0;
    for (const Sample& s : steady) lo = std::min(lo, s.rss_mib), hi = std::max(hi, s.rss_mib);
    std::printf(
        "{\"benchmark\": \"rss\", \"model\": \"small_cnn\", \"amp\": \"%s\", \"steps\": %lld, "
        "\"batch\": %lld, \"epochs\": %lld, \"workers\": %d, \"threads\": %d, \"seconds\": %.1f, "
        "\"final_loss\": %.4f, \"rss_start_mib\": %.1f, \"warmup_steps\": %lld, "
        "\"rss_after_warmup_mib\": %.1f, \"rss_end_mib\": %.1f, \"rss_min_mib\": %.1f, "
        "\"rss_max_mib\": %.1f, \"growth_mib\": %.2f, \"slope_mib_per_1000_steps\": %.3f, "
        "\"tensor_mib_after_warmup\": %.2f, \"tensor_mib_end\": %.2f, \"samples\": [",
        std::string(rg::opt_level_name(amp.level())).c_str(), static_cast<long long>(steps),
        static_cast<long long>(batch), static_cast<long long>(epoch), workers, rg::num_threads(),
        seconds, last_loss, rss_start, static_cast<long long>(warmup_end), steady.front().rss_mib,
        steady.back().rss_mib, lo, hi, steady.back().rss_mib - steady.front().rss_mib,
        slope_per_1000(steady), steady.front().tensor_mib, steady.back().tensor_mib);
    for (std::size_t i = 0; i < trace.size(); ++i)
      std::printf("%s[%lld, %.1f]", i ? ", " : "", static_cast<long long>(trace[i].step),
                  trace[i].rss_mib);
    std::printf("]}\n");
  } catch (const std::exception& e) {
    std::cerr << "bench_rss: error: " << e.what() << "\n";
    return 1;
  }
}
