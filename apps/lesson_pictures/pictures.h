#pragma once
// The lessons' pictures (docs/learn/), drawn from real runs: each returns an SVG document.

#include <string>

namespace rg::apps {

std::string draw_ring();                                   // a real ring allreduce over threads
std::string draw_timeline(const std::string& trace_path);  // a DDP step from a --trace file
std::string draw_zero();                                   // ZeRO-1's blocks over DDP's buckets

}  // namespace rg::apps
