// The DDP lesson's picture (docs/learn/3-ddp.md): one training step of every rank from a
// --trace file (bench_ddp's or train_cifar's) — backward, each bucket from ready to reduced, and
// the ring's steps on the communication thread — so the overlap of the two is seen, not told.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "apps/lesson_pictures/pictures.h"
#include "apps/lesson_pictures/svg.h"
#include "core/error.h"

namespace rg::apps {

namespace {

struct Bar {
  int pid;
  std::string row;  // "backward", "buckets", "communication"
  std::string name;
  double start, end;  // µs
};

std::string row_of(const std::string& category) {
  if (category == "backward" || category == "forward") return category;
  if (category == "ddp") return "buckets";
  if (category == "ring" || category == "collective") return "communication";
  return "";
}

// A bucket's colour follows its number on every rank; the rows' own colours otherwise.
std::string colour(const Bar& b, std::size_t row) {
  if (b.name.starts_with("bucket ")) return palette(std::atoi(b.name.c_str() + 7));
  if (b.name == "wait for the buckets") return "#bab0ac";
  return palette(static_cast<int>(row) + 3);
}

}  // namespace

std::string draw_timeline(const std::string& trace_path) {
  std::ifstream in(trace_path);
  RG_CHECK(in.good(), "lesson_pictures timeline: cannot read ", trace_path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json trace;
  try {
    trace = nlohmann::json::parse(text.str());
  } catch (const std::exception& e) {
    fail("lesson_pictures timeline: ", trace_path, " is not a trace file (", e.what(), ")");
  }
  std::vector<Bar> bars;
  std::map<int, double> last_forward;  // per rank: when its last synchronised forward began
  // Async begins by (pid, id): an async span's end may come first in the file (its track).
  std::map<std::pair<int, std::string>, double> begins;
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("ph", "") == "b" && e.contains("id2"))
      begins[{e.value("pid", 0), e["id2"].value("local", "")}] = e.value("ts", 0.0);
  for (const auto& e : trace.at("traceEvents")) {
    const std::string ph = e.value("ph", ""), cat = e.value("cat", "");
    if (ph == "M") continue;
    const int pid = e.value("pid", 0);
    const double ts = e.value("ts", 0.0);
    if (cat == "ddp" && ph == "i" && e.value("name", "").starts_with("forward: synchronised"))
      last_forward[pid] = std::max(last_forward[pid], ts);
    const std::string row = row_of(cat);
    if (row.empty()) continue;
    // A whole pass's own span would hide its runs per module.
    const std::string name = e.value("name", "");
    if (ph == "X" && name != "backward" && !name.starts_with("forward and"))
      bars.push_back({pid, row, name, ts, ts + e.value("dur", 0.0)});
    const auto begin = begins.find({pid, e.contains("id2") ? e["id2"].value("local", "") : ""});
    if (ph == "e" && begin != begins.end()) bars.push_back({pid, row, name, begin->second, ts});
  }
  RG_CHECK(!bars.empty(), "lesson_pictures timeline: ", trace_path,
           " holds no backward, DDP or ring events (record it with --trace)");
  // The last synchronised iteration: from its forward on the rank that began first to the
  // end of the last wait for the buckets.
  double from = 0, to = 1e300;
  if (!last_forward.empty()) {
    from = 1e300;
    for (const auto& [_, ts] : last_forward) from = std::min(from, ts);
    to = 0;
    for (const Bar& b : bars)
      if (b.name == "wait for the buckets" && b.start >= from) to = std::max(to, b.end);
  }
  std::erase_if(bars, [&](const Bar& b) { return b.end <= from || b.start >= to; });
  double t0 = 1e300, t1 = 0;
  int ranks = 0;
  for (const Bar& b : bars) {
    t0 = std::min(t0, b.start);
    t1 = std::max(t1, b.end);
    ranks = std::max(ranks, b.pid + 1);
  }
  const std::vector<std::string> rows = {"forward", "backward", "buckets", "communication"};
  const double left = 130, width = 760, lane = 20, top = 50;
  const double per_rank = rows.size() * (lane + 6) + 24;
  Svg svg(left + width + 20, top + ranks * per_rank + 40);
  svg.text(10, 22,
           "One DDP step of a real run: forward and backward per layer, each bucket from its "
           "last gradient to reduced, the ring's steps.",
           13);
  const double scale = width / std::max(1.0, t1 - t0);
  for (int r = 0; r < ranks; ++r) {
    const double y0 = top + r * per_rank;
    svg.text(10, y0 + 12, "rank " + std::to_string(r), 13);
    for (std::size_t k = 0; k < rows.size(); ++k)
      svg.text(left - 8, y0 + 18 + k * (lane + 6) + 14, rows[k], 11, "end", "#555");
    for (const Bar& b : bars) {
      if (b.pid != r) continue;
      const auto k =
          static_cast<std::size_t>(std::find(rows.begin(), rows.end(), b.row) - rows.begin());
      const double x = left + (b.start - t0) * scale, w = std::max(1.0, (b.end - b.start) * scale);
      const double y = y0 + 18 + k * (lane + 6);
      svg.rect(x, y, w, lane, colour(b, k), "white", 0.5);
      const std::string label = b.name.starts_with("backward ")  ? b.name.substr(9)
                                : b.name.starts_with("forward ") ? b.name.substr(8)
                                                                 : b.name;
      if (w > 6.5 * label.size()) svg.text(x + w / 2, y + 14, label, 10, "middle", "white");
    }
  }
  svg.text(left, top + ranks * per_rank + 16,
           "0 to " + Svg::num((t1 - t0) / 1000) + " ms; from " +
               trace_path.substr(trace_path.rfind('/') + 1),
           11, "start", "#555");
  return svg.str();
}

}  // namespace rg::apps
