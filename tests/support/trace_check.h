#pragma once
// Reads a trace-event JSON file (core/trace.h, parallel/trace_file.h) and checks what every
// viewer relies on: a "traceEvents" list; each event with ph, pid, tid and a number ts; complete
// events ("X") with dur >= 0 that nest within each thread (two spans of one track either are
// disjoint or one contains the other); each track's events in time order; every async end ("e")
// after a begin ("b") with its id in the same process. Tests then ask what is in it.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rg::testing {

struct TraceEvent {
  char ph = 0;
  std::string cat, name;
  int pid = 0, tid = 0;
  double ts = 0, dur = 0;  // microseconds
  std::string id;          // async events
  std::string args;        // the args object, dumped
  double end() const { return ts + dur; }
};

struct TraceCheck {
  std::vector<std::string> errors;                          // empty: valid
  std::vector<TraceEvent> events;                           // not metadata
  std::map<std::pair<int, int>, std::string> thread_names;  // (pid, tid) -> name
  std::map<int, std::string> process_names;
  // The first X/b event of this name (exact, or containing `part`), or nullptr.
  const TraceEvent* find(const std::string& name) const;
  std::vector<const TraceEvent*> with_name_containing(const std::string& part) const;
  std::string summary() const;  // errors, or counts per category: for failure messages
};

TraceCheck check_trace_file(const std::string& path);
TraceCheck check_trace_json(const std::string& text);

}  // namespace rg::testing
