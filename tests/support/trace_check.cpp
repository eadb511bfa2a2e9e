#include "tests/support/trace_check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace rg::testing {

const TraceEvent* TraceCheck::find(const std::string& name) const {
  for (const TraceEvent& e : events)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<const TraceEvent*> TraceCheck::with_name_containing(const std::string& part) const {
  std::vector<const TraceEvent*> out;
  for (const TraceEvent& e : events)
    if (e.name.find(part) != std::string::npos) out.push_back(&e);
  return out;
}

std::string TraceCheck::summary() const {
  std::ostringstream out;
  for (const std::string& e : errors) out << "error: " << e << "\n";
  std::map<std::string, int> per_category;
  for (const TraceEvent& e : events) ++per_category[e.cat];
  for (const auto& [cat, n] : per_category) out << cat << ": " << n << " event(s)\n";
  return out.str();
}

TraceCheck check_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    TraceCheck c;
    c.errors.push_back("cannot open " + path);
    return c;
  }
  std::stringstream text;
  text << in.rdbuf();
  return check_trace_json(text.str());
}

TraceCheck check_trace_json(const std::string& text) {
  TraceCheck c;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    c.errors.push_back(std::string("not JSON: ") + e.what());
    return c;
  }
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    c.errors.push_back("no \"traceEvents\" list");
    return c;
  }
  std::map<std::pair<int, int>, double> last_ts;  // file order per track
  for (const auto& j : doc["traceEvents"]) {
    auto error = [&](const std::string& what) { c.errors.push_back(what + ": " + j.dump()); };
    if (!j.is_object() || !j.contains("ph") || !j["ph"].is_string() || !j.contains("pid") ||
        !j["pid"].is_number_integer()) {
      error("an event without ph or pid");
      continue;
    }
    const std::string ph = j["ph"];
    if (ph == "M") {
      const std::string what = j.value("name", "");
      const std::string name = j.contains("args") ? j["args"].value("name", "") : "";
      if (what == "thread_name") c.thread_names[{j["pid"], j.value("tid", -1)}] = name;
      if (what == "process_name") c.process_names[j["pid"]] = name;
      continue;
    }
    if (ph.size() != 1 || std::string("Xbei").find(ph[0]) == std::string::npos) {
      error("an unknown phase");
      continue;
    }
    if (!j.contains("tid") || !j["tid"].is_number_integer() || !j.contains("ts") ||
        !j["ts"].is_number() || !j.contains("name") || !j["name"].is_string()) {
      error("an event without tid, ts or name");
      continue;
    }
    TraceEvent e;
    e.ph = ph[0];
    e.cat = j.value("cat", "");
    e.name = j["name"];
    e.pid = j["pid"];
    e.tid = j["tid"];
    e.ts = j["ts"];
    if (e.ph == 'X') {
      if (!j.contains("dur") || !j["dur"].is_number() || j["dur"].get<double>() < 0) {
        error("a complete event without a dur >= 0");
        continue;
      }
      e.dur = j["dur"];
    }
    if (e.ph == 'b' || e.ph == 'e') {
      if (!j.contains("id2") || !j["id2"].contains("local")) {
        error("an async event without id2.local");
        continue;
      }
      e.id = j["id2"]["local"].dump();
    }
    if (j.contains("args")) e.args = j["args"].dump();
    const auto track = std::make_pair(e.pid, e.tid);
    if (last_ts.count(track) && e.ts < last_ts[track])
      error("out of time order on track " + std::to_string(e.tid));
    last_ts[track] = e.ts;
    c.events.push_back(std::move(e));
  }

  // Complete events nest per track: in start order (longer first at equal starts), each one
  // must end by the end of every open span that contains its start.
  std::map<std::pair<int, int>, std::vector<const TraceEvent*>> tracks;
  for (const TraceEvent& e : c.events)
    if (e.ph == 'X') tracks[{e.pid, e.tid}].push_back(&e);
  const double slack = 0.0015;  // the file's ts and dur are rounded to 1 ns each
  for (auto& [track, spans] : tracks) {
    std::stable_sort(spans.begin(), spans.end(), [](const TraceEvent* a, const TraceEvent* b) {
      return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur;
    });
    std::vector<const TraceEvent*> open;
    for (const TraceEvent* e : spans) {
      while (!open.empty() && open.back()->end() <= e->ts + slack) open.pop_back();
      if (!open.empty() && e->end() > open.back()->end() + slack)
        c.errors.push_back(
            "\"" + e->name + "\" [" + std::to_string(e->ts) + ", " + std::to_string(e->end()) +
            "] overlaps \"" + open.back()->name + "\" [" + std::to_string(open.back()->ts) + ", " +
            std::to_string(open.back()->end()) + "] on pid " + std::to_string(track.first) +
            " tid " + std::to_string(track.second) + " without nesting");
      open.push_back(e);
    }
  }
  // Async spans: an end only after its begin, in the same process.
  std::map<std::pair<int, std::string>, double> begun;
  std::vector<const TraceEvent*> async;
  for (const TraceEvent& e : c.events)
    if (e.ph == 'b' || e.ph == 'e') async.push_back(&e);
  std::stable_sort(async.begin(), async.end(),
                   [](const TraceEvent* a, const TraceEvent* b) { return a->ts < b->ts; });
  for (const TraceEvent* e : async) {
    const auto key = std::make_pair(e->pid, e->id);
    if (e->ph == 'b') {
      if (begun.count(key)) c.errors.push_back("async id " + e->id + " begun twice");
      begun[key] = e->ts;
    } else if (!begun.count(key)) {
      c.errors.push_back("async end \"" + e->name + "\" (id " + e->id + ") without a begin");
    }
  }
  return c;
}

}  // namespace rg::testing
