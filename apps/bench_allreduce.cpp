// bench_allreduce: allreduce bandwidth of our ring against the library's own algorithm (MPI's
// for cpu tensors, NCCL's for cuda ones), for the ranks it runs with, from 4 KB to 256 MB.
// Prints JSON (rank 0), or with --format table the ring beside its α-β model.
//
//   scripts/mpirun.sh 2 build/apps/bench_allreduce
//   scripts/mpirun.sh 2 build/apps/bench_allreduce --device cuda   # one GPU per rank
//   scripts/mpirun.sh 2 build/apps/bench_allreduce --format table  # α and B fitted, per step
//   scripts/mpirun.sh 2 build/apps/bench_allreduce --max-bytes 64MB   # sizes take units
//   scripts/mpirun.sh 3 build/apps/bench_allreduce --steps 8   # watch one ring allreduce
//   scripts/mpirun.sh 2 build/apps/bench_allreduce --trace ring.json   # the timeline
//
// As nccl-tests defines them: algbw = bytes / time; busbw = algbw · 2(N−1)/N, the rate each
// rank's link carries in a ring allreduce — comparable across N, and to the link's bandwidth.
// time is the slowest rank's average over the timed iterations — the best of --repeat such
// averages, since the machines this runs on are often shared. Each ring step's time comes from
// extra, traced runs (core/trace.h: every step is a span), and the model T = 2(N−1)α +
// 2(N−1)/N·S/B is fitted to the timed runs (parallel/ring_model.h).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "apps/common/byte_size.h"
#include "core/tensor.h"
#include "core/trace.h"
#include "parallel/reduce.h"
#include "parallel/ring_model.h"
#include "parallel/trace_file.h"
#include "parallel/world.h"

using namespace rg;
using namespace rg::parallel;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The slowest rank's value: every rank then agrees on it.
double world_max(double value) {
  Tensor t = full({1}, value, {.dtype = DType::f64});
  world_ptr()->allreduce(t, ReduceOp::max)->wait();
  return t.item();
}
}  // namespace

// The ring's measured times beside the model fitted to them: a markdown table (rank 0).
void print_model_table(const RingModel& model, const std::vector<double>& sizes,
                       const std::vector<double>& seconds,
                       const std::vector<std::map<int, double>>& steps) {
  const int n = model.ranks;
  std::printf(
      "ring allreduce over %d ranks: alpha = %.2f us per step, B = %.3f GB/s (fitted "
      "to the times below: least squares of the relative error)\n"
      "T(S) = 2(N-1)*alpha + 2(N-1)/N * S/B;  one step: alpha + (S/N)/B;  the two "
      "terms are equal at S = N*alpha*B = %.0f KB\n\n",
      n, model.alpha_seconds * 1e6, model.bytes_per_second / 1e9,
      n * model.alpha_seconds * model.bytes_per_second / 1024);
  std::printf(
      "| bytes | measured us | model us | 2(N-1)a us | bandwidth term us | mean step "
      "us | model step us | slowest step us | bound by |\n"
      "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    double sum = 0, slowest = 0;
    for (const auto& [step, s] : steps[i]) sum += s, slowest = std::max(slowest, s);
    const double mean = steps[i].empty() ? 0 : sum / static_cast<double>(steps[i].size());
    const double latency = model.latency_seconds(), bandwidth = model.bandwidth_seconds(sizes[i]);
    const double kb = sizes[i] / 1024;
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s |\n",
                kb >= 1024 ? (std::to_string(static_cast<int64_t>(kb / 1024)) + " MB").c_str()
                           : (std::to_string(static_cast<int64_t>(kb)) + " KB").c_str(),
                seconds[i] * 1e6, model.seconds(sizes[i]) * 1e6, latency * 1e6, bandwidth * 1e6,
                mean * 1e6, model.step_seconds(sizes[i]) * 1e6, slowest * 1e6,
                latency > bandwidth ? "latency" : "bandwidth");
  }
}

int run(int argc, char** argv) {
  CLI::App app{"allreduce bus bandwidth, ring vs native"};
  int64_t min_bytes = 4 << 10, max_bytes = 256 << 20, factor = 4;
  std::string dtype_name = "f32";
  double min_time = 0.2;
  int64_t chunk_bytes = ProcessGroupOptions{}.ring_chunk_bytes;
  apps::add_byte_size_option(app, "--min-bytes", min_bytes, "smallest message (4096, 4KiB, ...)");
  apps::add_byte_size_option(app, "--max-bytes", max_bytes, "largest message (64MB, 1GiB, ...)");
  app.add_option("--factor", factor, "size step: 2 or 4")->capture_default_str();
  app.add_option("--dtype", dtype_name, "f32, f64, f16, bf16, i64, u8")->capture_default_str();
  app.add_option("--min-time", min_time, "seconds per timed run")->capture_default_str();
  apps::add_byte_size_option(app, "--chunk-bytes", chunk_bytes, "the ring's largest message");
  int repeat = 3;
  app.add_option("--repeat", repeat, "timed runs per size and algorithm; the fastest counts")
      ->capture_default_str();
  std::string device_name = "cpu";
  app.add_option("--device", device_name, "cpu, or cuda: each rank on GPU local_rank")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  int64_t steps = 0;
  app.add_option("--steps", steps,
                 "instead: print the ring's steps for one allreduce of this many elements, "
                 "and how long each took");
  std::string trace_path;
  app.add_option("--trace", trace_path,
                 "write the timeline of the traced ring runs (Chrome / Perfetto JSON)");
  std::string format = "json";
  app.add_option("--format", format, "json, or table: the ring beside its fitted α-β model")
      ->check(CLI::IsMember({"json", "table"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const DType dtype = dtype_from_name(dtype_name);
  RG_CHECK(min_bytes >= 1 && max_bytes >= min_bytes && factor >= 2 && chunk_bytes >= 1,
           "bench_allreduce: needs 1 <= --min-bytes <= --max-bytes, --factor >= 2 and "
           "--chunk-bytes >= 1; got --min-bytes ",
           min_bytes, ", --max-bytes ", max_bytes, ", --factor ", factor, ", --chunk-bytes ",
           chunk_bytes);
  if (!trace_path.empty()) check_trace_path(trace_path);
  trace::name_this_thread("main");

  init({.timeout = std::chrono::seconds(120)});
  const int n = size();
  const Device device = device_name == "cuda" ? Device::cuda(local_rank()) : Device::cpu();
  zeros({1}, {.device = device});  // a rank without its GPU says so before any output
  if (steps > 0) {
    // Rank r holds r + 1 everywhere; afterwards every element is N(N + 1)/2.
    Tensor t = full({steps}, rank() + 1, {.dtype = dtype, .device = device});
    auto traced = new_group({.ring_chunk_bytes = chunk_bytes});
    start_trace(*world_ptr());
    trace::explain({"ring"});
    const auto start = std::chrono::steady_clock::now();
    traced->allreduce(t, ReduceOp::sum)->wait();
    const double whole = seconds_since(start);
    trace::stop_explaining();
    trace::stop();
    const trace::Recorded recorded = trace::take();
    print_explained(*world_ptr());  // every rank's steps, rank after rank
    std::string out;
    for (const auto& [step, seconds] : mean_ring_step_seconds(recorded)) {
      char line[96];
      std::snprintf(line, sizeof line, "[rank %d] step %d took %.1f us\n", rank(), step,
                    seconds * 1e6);
      out += line;
    }
    char line[160];
    std::snprintf(line, sizeof line, "[rank %d] the whole allreduce: %.1f us; result: ", rank(),
                  whole * 1e6);
    out += line + t.str() + "\n";
    print_in_rank_order(*world_ptr(), out);
    if (!trace_path.empty()) write_trace(trace_path, *world_ptr(), recorded);
    return 0;
  }
  struct Algorithm {
    const char* name;
    std::shared_ptr<ProcessGroup> group;
  };
  std::vector<Algorithm> algorithms{{"ring", new_group({.algorithm = AllreduceAlgorithm::ring,
                                                        .timeout = std::chrono::seconds(120),
                                                        .ring_chunk_bytes = chunk_bytes})},
                                    {"native", new_group({.algorithm = AllreduceAlgorithm::native,
                                                          .timeout = std::chrono::seconds(120)})}};

  const bool json = format == "json";
  if (rank() == 0 && json)
    std::printf(
        "{\"benchmark\": \"allreduce\", \"ranks\": %d, \"device\": \"%s\", \"dtype\": "
        "\"%s\", \"op\": \"sum\", \"ring_chunk_bytes\": %lld, \"results\": [\n",
        n, device_name.c_str(), dtype_name.c_str(), static_cast<long long>(chunk_bytes));
  // Warm up for a moment first: the first sizes came out several times slower without it (the
  // processes start on one core until the scheduler spreads them).
  {
    Tensor w = zeros({1024}, {.device = device});
    const auto start = std::chrono::steady_clock::now();
    while (world_max(seconds_since(start)) < 0.3)
      for (Algorithm& a : algorithms) a.group->allreduce(w, ReduceOp::sum)->wait();
  }
  // The ring's measurements, for the model: the whole time per size and each step's mean.
  std::vector<double> sizes, ring_seconds;
  std::vector<std::map<int, double>> ring_steps;
  trace::Recorded timeline;   // every traced run, for --trace
  start_trace(*world_ptr());  // one origin for all sizes; recording only in the traced runs
  trace::pause();
  bool first = true;
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    const int64_t count = bytes / static_cast<int64_t>(element_size(dtype));
    Tensor t = full({count}, rank() + 1, {.dtype = dtype, .device = device});
    std::string line = "  {\"bytes\": " + std::to_string(bytes);
    for (Algorithm& a : algorithms) {
      // Warm-up, which also checks the result: Σ (r + 1) = N(N + 1)/2.
      fill_(t, rank() + 1);
      a.group->allreduce(t, ReduceOp::sum)->wait();
      RG_CHECK(t.numel() == 0 || (t.select(0, 0).item() == n * (n + 1) / 2 &&
                                  t.select(0, count - 1).item() == n * (n + 1) / 2),
               "bench_allreduce: wrong result from the ", a.name, " allreduce");
      fill_(t, 0);  // zeros stay zeros: no overflow, no denormals while timing
      // As many iterations as fill min_time, agreed on by all ranks.
      auto start = std::chrono::steady_clock::now();
      a.group->allreduce(t, ReduceOp::sum)->wait();
      const double once = world_max(seconds_since(start));
      const int iterations =
          static_cast<int>(std::clamp(min_time / std::max(once, 1e-7), 1.0, 1000.0));
      double time = 1e300;
      for (int k = 0; k < repeat; ++k) {
        world_ptr()->barrier()->wait();
        start = std::chrono::steady_clock::now();
        for (int i = 0; i < iterations; ++i) a.group->allreduce(t, ReduceOp::sum)->wait();
        time = std::min(time, world_max(seconds_since(start) / iterations));
      }
      if (std::string(a.name) == "ring" && n > 1) {
        // Each step's time, from a few more runs with the trace recording (a span per step).
        trace::resume();
        for (int i = 0; i < std::min(iterations, 20); ++i)
          a.group->allreduce(t, ReduceOp::sum)->wait();
        trace::pause();
        trace::Recorded r = trace::take();
        std::map<int, double> step_means = mean_ring_step_seconds(r);
        for (auto& [step, seconds] : step_means) seconds = world_max(seconds);
        ring_steps.push_back(std::move(step_means));
        sizes.push_back(static_cast<double>(bytes));
        ring_seconds.push_back(time);
        timeline.origin_ns = r.origin_ns;
        timeline.tracks = std::move(r.tracks);
        for (trace::Event& e : r.events) timeline.events.push_back(std::move(e));
      }
      const double algbw = static_cast<double>(bytes) / time / 1e9;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      char text[200];
      std::snprintf(text, sizeof text,
                    ", \"%s\": {\"time_us\": %.1f, \"algbw_GBps\": %.3f, \"busbw_GBps\": %.3f}",
                    a.name, time * 1e6, algbw, busbw);
      line += text;
    }
    if (rank() == 0 && json) {
      std::printf("%s%s}", first ? "" : ",\n", line.c_str());
      std::fflush(stdout);
    }
    first = false;
  }
  trace::stop();
  if (!trace_path.empty()) write_trace(trace_path, *world_ptr(), timeline);
  if (n < 2 || sizes.size() < 2) {
    if (rank() == 0 && json) std::printf("\n]}\n");
    return 0;
  }
  const RingModel model = fit_ring_model(n, sizes, ring_seconds);
  if (rank() != 0) return 0;
  if (json) {
    std::printf("\n], \"ring_model\": {\"alpha_us\": %.3f, \"bandwidth_GBps\": %.3f}}\n",
                model.alpha_seconds * 1e6, model.bytes_per_second / 1e9);
    return 0;
  }
  print_model_table(model, sizes, ring_seconds, ring_steps);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const rg::Error& e) {
    std::fprintf(stderr, "bench_allreduce: %s\n", e.what());
    rg::parallel::end_job_after_error("bench_allreduce stopped on the error above");
    return 1;
  }
}
