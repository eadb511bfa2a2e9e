// The explain sink (core/trace.h): the timeline's events as lines of text, as they happen.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/trace.h"

namespace rg::trace {

namespace {

struct Explainer {
  std::mutex mutex;
  std::vector<std::string> categories;                 // empty: every category
  std::vector<std::pair<int64_t, std::string>> lines;  // (start, text)
  int64_t origin_ns = 0;
};

Explainer& explainer() {
  static Explainer* e = new Explainer();  // never destroyed: threads may record at exit
  return *e;
}

std::atomic<bool> explaining_now{false};

// A JSON string's text (args() wrote it: quotes and backslashes escaped, control characters as
// \u00XX), from just after its opening quote; `at` ends after the closing quote.
std::string read_string(const std::string& json, std::size_t& at) {
  std::string out;
  while (at < json.size() && json[at] != '"') {
    if (json[at] == '\\' && at + 1 < json.size()) {
      ++at;
      if (json[at] == 'u' && at + 4 < json.size()) {
        out += static_cast<char>(std::stoi(json.substr(at + 1, 4), nullptr, 16));
        at += 4;
      } else {
        out += json[at];
      }
    } else {
      out += json[at];
    }
    ++at;
  }
  ++at;
  return out;
}

std::string with_unit(double bytes) {
  char text[32];
  if (bytes >= (1 << 20))
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1 << 20));
  else if (bytes >= 1024)
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024);
  else
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  return text;
}

// "\"bytes\":4096,\"to\":1" -> "bytes 4.0 KiB, to 1": a number under a key that names bytes
// gets a unit.
std::string render_args(const std::string& json) {
  std::string out;
  std::size_t at = 0;
  while (at < json.size()) {
    if (json[at] != '"') {
      ++at;
      continue;
    }
    ++at;
    const std::string key = read_string(json, at);
    if (at < json.size() && json[at] == ':') ++at;
    std::string value;
    if (at < json.size() && json[at] == '"') {
      ++at;
      value = read_string(json, at);
    } else {
      const std::size_t end = std::min(json.find(',', at), json.size());
      value = json.substr(at, end - at);
      at = end;
      if (key.find("bytes") != std::string::npos) value = with_unit(std::stod(value));
    }
    out += (out.empty() ? "" : ", ") + key + " " + value;
  }
  return out;
}

bool wanted(const Explainer& e, const char* category) {
  return e.categories.empty() ||
         std::find(e.categories.begin(), e.categories.end(), category) != e.categories.end();
}

}  // namespace

void explain(std::vector<std::string> categories) {
  Explainer& e = explainer();
  {
    std::lock_guard lock(e.mutex);
    e.categories = std::move(categories);
    e.lines.clear();
    e.origin_ns = now_ns();
  }
  explaining_now.store(true, std::memory_order_relaxed);
  detail::update_recording();
}

void stop_explaining() {
  explaining_now.store(false, std::memory_order_relaxed);
  detail::update_recording();
}

bool explaining() {
  return explaining_now.load(std::memory_order_relaxed);
}

std::vector<std::string> take_explained() {
  Explainer& e = explainer();
  std::vector<std::pair<int64_t, std::string>> lines;
  {
    std::lock_guard lock(e.mutex);
    lines.swap(e.lines);
  }
  // In the order things began: a span is written when it ends, after the events inside it.
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [_, text] : lines) out.push_back(std::move(text));
  return out;
}

void detail::explain_event(const Event& event) {
  Explainer& e = explainer();
  {
    std::lock_guard lock(e.mutex);
    if (!wanted(e, event.category)) return;
  }
  const std::string thread = track_name(event.track);
  std::string line(64, '\0');
  line.resize(static_cast<std::size_t>(std::snprintf(line.data(), line.size(), "+%9.3f ms  %-9s",
                                                     (event.start_ns - e.origin_ns) / 1e6,
                                                     event.category)));
  if (!thread.empty() && thread != "main") line += "[" + thread + "] ";
  line += event.name;
  if (event.phase == Phase::complete) {
    char took[32];
    std::snprintf(took, sizeof took, " (%.3f ms)", event.duration_ns / 1e6);
    line += took;
  }
  if (event.phase == Phase::async_begin) line += " begins";
  if (event.phase == Phase::async_end) line += " ends";
  if (!event.args.empty()) line += " — " + render_args(event.args);
  std::lock_guard lock(e.mutex);
  e.lines.emplace_back(event.start_ns, std::move(line));
}

}  // namespace rg::trace
