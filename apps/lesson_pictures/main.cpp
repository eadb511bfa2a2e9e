// lesson_pictures: draws the lessons' pictures from real runs, so they stay true.
//
//   build/apps/lesson_pictures ring docs/learn/ring.svg
//   build/apps/lesson_pictures zero docs/learn/zero.svg
//   build/apps/lesson_pictures timeline ddp_trace.json docs/learn/ddp-timeline.svg
//
// scripts/draw_lessons.sh redraws all three (the timeline from a 2-rank bench_ddp run).
#include <CLI/CLI.hpp>
#include <iostream>

#include "apps/lesson_pictures/pictures.h"
#include "core/atomic_file.h"

int main(int argc, char** argv) {
  CLI::App app{"lesson_pictures: the lessons' pictures (docs/learn/), drawn from real runs"};
  app.require_subcommand(1);
  std::string out, trace_path;
  auto* ring = app.add_subcommand("ring", "the ring allreduce's chunks, step by step");
  ring->add_option("out", out, "the SVG file to write")->required();
  auto* zero = app.add_subcommand("zero", "ZeRO-1's blocks over DDP's buckets");
  zero->add_option("out", out, "the SVG file to write")->required();
  auto* timeline = app.add_subcommand("timeline", "one DDP step from a --trace file");
  timeline->add_option("trace", trace_path, "a trace file (bench_ddp --trace)")->required();
  timeline->add_option("out", out, "the SVG file to write")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    const std::string svg = ring->parsed()   ? rg::apps::draw_ring()
                            : zero->parsed() ? rg::apps::draw_zero()
                                             : rg::apps::draw_timeline(trace_path);
    rg::write_file_atomically(out, svg, "lesson_pictures");
    std::cout << "lesson_pictures: wrote " << out << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lesson_pictures: " << e.what() << "\n";
    return 1;
  }
}
