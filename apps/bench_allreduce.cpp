// bench_allreduce: allreduce bandwidth of our ring against the library's own algorithm (MPI's
// for cpu tensors, NCCL's for cuda ones), for the ranks it runs with, from 4 KB to 256 MB.
// Prints JSON (rank 0).
//
//   scripts/mpirun.sh 2 build/apps/bench_allreduce
//   scripts/mpirun.sh 2 build/apps/bench_allreduce --device cuda   # one GPU per rank
//   scripts/mpirun.sh 3 build/apps/bench_allreduce --trace 8   # watch one ring allreduce
//
// As nccl-tests defines them: algbw = bytes / time; busbw = algbw · 2(N−1)/N, the rate each
// rank's link carries in a ring allreduce — comparable across N, and to the link's bandwidth.
// time is the slowest rank's average over the timed iterations — the best of --repeat such
// averages, since the machines this runs on are often shared.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "parallel/reduce.h"
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

int run(int argc, char** argv) {
  CLI::App app{"allreduce bus bandwidth, ring vs native"};
  int64_t min_bytes = 4 << 10, max_bytes = 256 << 20, factor = 4;
  std::string dtype_name = "f32";
  double min_time = 0.2;
  int64_t chunk_bytes = ProcessGroupOptions{}.ring_chunk_bytes;
  app.add_option("--min-bytes", min_bytes, "smallest message")->capture_default_str();
  app.add_option("--max-bytes", max_bytes, "largest message")->capture_default_str();
  app.add_option("--factor", factor, "size step: 2 or 4")->capture_default_str();
  app.add_option("--dtype", dtype_name, "f32, f64, f16, bf16, i64, u8")->capture_default_str();
  app.add_option("--min-time", min_time, "seconds per timed run")->capture_default_str();
  app.add_option("--chunk-bytes", chunk_bytes, "the ring's largest message")->capture_default_str();
  int repeat = 3;
  app.add_option("--repeat", repeat, "timed runs per size and algorithm; the fastest counts")
      ->capture_default_str();
  std::string device_name = "cpu";
  app.add_option("--device", device_name, "cpu, or cuda: each rank on GPU local_rank")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  int64_t trace = 0;
  app.add_option("--trace", trace,
                 "instead: print the ring's steps for one allreduce of this many elements");
  CLI11_PARSE(app, argc, argv);
  const DType dtype = dtype_from_name(dtype_name);

  init({.timeout = std::chrono::seconds(120)});
  const int n = size();
  const Device device = device_name == "cuda" ? Device::cuda(local_rank()) : Device::cpu();
  zeros({1}, {.device = device});  // a rank without its GPU says so before any output
  if (trace > 0) {
    // Rank r holds r + 1 everywhere; afterwards every element is N(N + 1)/2.
    Tensor t = full({trace}, rank() + 1, {.dtype = dtype, .device = device});
    new_group({.trace = Trace::on, .ring_chunk_bytes = chunk_bytes})
        ->allreduce(t, ReduceOp::sum)
        ->wait();
    world_ptr()->barrier()->wait();
    std::printf("[rank %d] result: %s\n", rank(), t.str().c_str());
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

  if (rank() == 0)
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
      const double algbw = static_cast<double>(bytes) / time / 1e9;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      char text[200];
      std::snprintf(text, sizeof text,
                    ", \"%s\": {\"time_us\": %.1f, \"algbw_GBps\": %.3f, \"busbw_GBps\": %.3f}",
                    a.name, time * 1e6, algbw, busbw);
      line += text;
    }
    if (rank() == 0) {
      std::printf("%s%s}", first ? "" : ",\n", line.c_str());
      std::fflush(stdout);
    }
    first = false;
  }
  if (rank() == 0) std::printf("\n]}\n");
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
