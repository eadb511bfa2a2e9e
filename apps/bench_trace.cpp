// bench_trace: what the timeline (core/trace.h) costs. Prints one JSON object:
//   off_ns_per_point    a trace point while nothing records (a Span: one relaxed atomic load)
//   on_ns_per_span      a span recorded (two clock reads, a name, a locked append)
//   step_ms_off/on      a training step (forward by module, backward, SGD) without and with
//                       recording, interleaved step by step so that the machine's drift hits
//                       both alike: the medians
//   events_per_step     what one recorded step writes
//   off_fraction        events_per_step · off_ns_per_point / step_ms_off: the upper bound of
//                       what the trace points cost a step that does not record
//
//   build/apps/bench_trace [--model resnet20] [--batch 32] [--steps 20] [--threads 2]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/rng.h"
#include "core/thread_pool.h"
#include "core/trace.h"
#include "nn/models/zoo.h"
#include "ops/ops.h"
#include "optim/optim.h"
#include "train/step_trace.h"

using namespace rg;

namespace {
double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// ns per call of fn, over `count` calls.
template <class Fn>
double ns_per(int64_t count, Fn fn) {
  const int64_t t0 = trace::now_ns();
  for (int64_t i = 0; i < count; ++i) fn(i);
  return static_cast<double>(trace::now_ns() - t0) / static_cast<double>(count);
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_trace: the cost of the timeline, off and on"};
  std::string model_name = "resnet20";
  int64_t batch = 32, steps = 20;
  int threads = 0;
  app.add_option("--model", model_name, "model name")->capture_default_str();
  app.add_option("--batch", batch, "batch size")->capture_default_str();
  app.add_option("--steps", steps, "steps of each kind, interleaved")->capture_default_str();
  app.add_option("--threads", threads, "compute threads (0: all)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (threads > 0) set_num_threads(threads);
    trace::name_this_thread("main");
    // The trace points alone. The volatile sink keeps the loop from being optimised away.
    static volatile int64_t sink = 0;
    trace::stop();
    const double off = ns_per(100'000'000, [](int64_t i) {
      trace::Span span("bench", "point");
      sink = sink + i;
    });
    trace::start();
    const double on = ns_per(1'000'000, [](int64_t i) {
      trace::Span span("bench", "point");
      sink = sink + i;
    });
    trace::stop();
    trace::take();

    manual_seed(0);
    std::shared_ptr<nn::Module> model = train::traced_model(nn::make_model(model_name));
    SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
    const Tensor x = randn({batch, 3, 32, 32});
    std::vector<int64_t> y(static_cast<std::size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) y[static_cast<std::size_t>(i)] = i % 10;
    const Tensor labels = from_vector(y, {batch}, {DType::i64});
    auto step_ms = [&](bool record) {
      if (record) trace::resume();
      const int64_t t0 = trace::now_ns();
      {
        trace::Span step("train", "step");
        opt.zero_grad();
        trace::Span forward("forward", "forward and loss");
        Tensor loss = cross_entropy(model->forward(x), labels);
        forward.finish();
        trace::Span backward("backward", "backward");
        loss.backward();
        backward.finish();
        trace::Span optimizer("optimizer", "optimizer step");
        opt.step();
      }
      const double ms = static_cast<double>(trace::now_ns() - t0) / 1e6;
      trace::pause();
      return ms;
    };
    step_ms(false);  // warm-up: first allocations
    trace::start();
    trace::pause();
    std::vector<double> off_ms, on_ms;
    for (int64_t i = 0; i < steps; ++i) {
      off_ms.push_back(step_ms(false));
      on_ms.push_back(step_ms(true));
    }
    trace::stop();
    const double events =
        static_cast<double>(trace::take().events.size()) / static_cast<double>(steps);
    const double step_off = median(off_ms), step_on = median(on_ms);
    std::printf(
        "{\"model\": \"%s\", \"batch\": %lld, \"threads\": %d, \"steps\": %lld, "
        "\"off_ns_per_point\": %.2f, \"on_ns_per_span\": %.1f, \"events_per_step\": %.0f, "
        "\"step_ms_off\": %.2f, \"step_ms_on\": %.2f, \"on_overhead_percent\": %.2f, "
        "\"off_fraction\": %.2e}\n",
        model_name.c_str(), static_cast<long long>(batch), num_threads(),
        static_cast<long long>(steps), off, on, events, step_off, step_on,
        100 * (step_on - step_off) / step_off, events * off / (step_off * 1e6));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_trace: error: %s\n", e.what());
    return 1;
  }
}
