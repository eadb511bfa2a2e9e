#pragma once
// trace: a timeline of what every thread does, for chrome://tracing and ui.perfetto.dev (the
// Chrome trace-event format: "X" complete events, "b"/"e" async spans, one track per thread).
//
// Why it lives in core/: every layer records spans — the autograd engine (core), the optimizer
// step (optim), the ring, DDP, SyncBatchNorm and DataParallel (parallel), data loading and the
// checkpoints (train) — and a layer may only use the layers above it in DESIGN.md's table, so
// the recorder sits at the top of that table, beside the engine that records backward.
//
//   trace::name_this_thread("main");
//   trace::start();                                 // origin = now (after a barrier: aligned)
//   { trace::Span span("optimizer", "step"); ... }  // a complete event on this thread's track
//   trace::stop();
//   std::string json = trace::to_json_objects(trace::take(), rank, "rank 0");
//
// Parallel programs gather every rank's objects into one file (parallel/trace_file.h), one
// process (pid) per rank.
//
// Cost when not recording: a Span, or any trace point, is one relaxed load of an atomic flag
// and a branch; names and arguments are built only when recording (callers that build a name
// check on() first). Recording: each thread appends to its own buffer (an uncontended lock per
// event, so take() may read it safely), roughly 100-200 ns per event.
//
// What a learner finds where (the categories): "data", "forward", "backward" (one span per
// run of autograd nodes of one top-level module, see ModulePass), "ddp" (each bucket from ready
// to reduced, as an async span), "collective" and "ring" (each collective on the communication
// thread, each ring step with its bytes), "sync_bn", "dp" (DataParallel's phases per replica),
// "optimizer", "checkpoint", and "device" (GPU work per stream, timed with CUDA events).

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/device.h"

namespace rg {
class Node;
class Tensor;
}  // namespace rg

namespace rg::trace {

struct Event;
namespace detail {
// Whether some sink listens: the timeline (start/stop) or the explain sink.
inline std::atomic<bool> recording{false};
void update_recording();                 // after either sink turned on or off
void explain_event(const Event& event);  // the explain sink (core/trace_explain.cpp)
std::string track_name(int track);       // "" for a track never named
}  // namespace detail

// Whether trace points record now: the only cost of a trace point when they do not.
inline bool on() noexcept {
  return detail::recording.load(std::memory_order_relaxed);
}

// The steady clock in nanoseconds (CLOCK_MONOTONIC: one clock for every process of a machine).
int64_t now_ns() noexcept;

enum class Phase : char { complete = 'X', async_begin = 'b', async_end = 'e', instant = 'i' };

struct Event {
  Phase phase = Phase::complete;
  const char* category = "";  // a string literal
  std::string name;
  int64_t start_ns = 0;     // now_ns() clock
  int64_t duration_ns = 0;  // complete events
  uint64_t id = 0;          // async events: a begin and its end share it
  int track = 0;            // the thread's track (tid), or a virtual one (a CUDA stream)
  std::string args;         // a JSON object's members: "\"bytes\":4096,\"peer\":1", or empty
};

// ---- recording -----------------------------------------------------------------------------

// Names the calling thread's track: "main", "communication", "replica 1 (cpu:1)". Kept whether
// or not recording, so threads named before the window are named in it.
void name_this_thread(std::string name);
// A track that is not a host thread (a CUDA stream), made once per name.
int virtual_track(const std::string& name);

// Each records only while on(); they do not check the window again (a Span begun inside it
// ends inside the trace, even if the window closed meanwhile).
void complete(const char* category, std::string name, int64_t start_ns, int64_t end_ns,
              std::string args = {});
void complete_on_track(int track, const char* category, std::string name, int64_t start_ns,
                       int64_t end_ns, std::string args = {});
void instant(const char* category, std::string name, std::string args = {});
struct Label;
// An instant whose name and arguments are built only when recording.
template <class Make>
requires std::is_invocable_v<Make>
void instant(const char* category, Make&& make);
// Async spans may begin on one thread and end on another (a DDP bucket: ready in the backward
// thread, reduced on the communication thread); begin returns the id its end must give.
uint64_t async_begin(const char* category, std::string name, std::string args = {});
void async_end(const char* category, std::string name, uint64_t id, std::string args = {});

// A span that ends where the work goes. DDP begins a bucket's async span on the backward thread
// and hands its end to the next collective this thread issues: a backend that runs collectives
// elsewhere (MPI's communication thread) takes it at issue and ends it when the collective is
// done; a backend that completes the collective before returning leaves it, and the issuer ends
// it then (take_hand_over() after the call still holds it).
struct HandOver {
  const char* category = nullptr;
  std::string name;
  uint64_t id = 0;
};
void hand_over(const char* category, std::string name, uint64_t id);
HandOver take_hand_over();              // this thread's, cleared
void end_hand_over(const HandOver& h);  // async_end when it holds a span

// JSON members from key/value pairs: args("bytes", 4096, "phase", "allgather").
inline void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static const char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[(c >> 4) & 0xf];
      out += hex[c & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
}
template <class... Rest>
std::string args(std::string_view key, const auto& value, const Rest&... rest) {
  std::string out;
  append_json_string(out, key);
  out += ':';
  using V = std::decay_t<decltype(value)>;
  if constexpr (std::is_arithmetic_v<V>)
    out += std::to_string(value);
  else
    append_json_string(out, std::string_view(value));
  if constexpr (sizeof...(rest) > 0) out += ',' + args(rest...);
  return out;
}

// A complete event on the calling thread from construction to destruction: one line of
// instrumentation per phase. Given a counter, it also adds its seconds there (whether recording
// or not: DataParallel's phase times, DDP's wait), so a phase is timed and traced by one object.
//   trace::Span span("dp", "gather the outputs", &times.gather);
// A name (or a name and arguments, as a Label) that costs something to build is given by a
// callable, run only when recording.
struct Label {
  std::string name;
  std::string args;  // JSON members, as args() makes them
};

template <class Make>
requires std::is_invocable_v<Make>
void instant(const char* category, Make&& make) {
  if (!on()) return;
  Label label = make();
  instant(category, std::move(label.name), std::move(label.args));
}

class Span {
 public:
  Span(const char* category, const char* name, double* seconds = nullptr) : seconds_(seconds) {
    if (on()) begin(category, name, {});
    start_clock();
  }
  template <class Make>
  requires std::is_invocable_v<Make> Span(const char* category, Make&& make,
                                          double* seconds = nullptr)
      : seconds_(seconds) {
    if (on()) {
      if constexpr (std::is_convertible_v<std::invoke_result_t<Make>, Label>) {
        Label label = make();
        begin(category, std::move(label.name), std::move(label.args));
      } else {
        begin(category, make(), {});
      }
    }
    start_clock();
  }
  ~Span() { finish(); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  // Arguments shown with the event (only stored when recording).
  void set_args(std::string json_members) {
    if (category_) args_ = std::move(json_members);
  }
  bool recording() const { return category_ != nullptr; }
  // Ends the span now (the destructor then records nothing): for phases one after another.
  void finish() {
    if (seconds_) *seconds_ += static_cast<double>(now_ns() - clock_start_) * 1e-9;
    seconds_ = nullptr;
    if (category_) end();
    category_ = nullptr;
  }

 private:
  void begin(const char* category, std::string name, std::string args);
  void end();
  void start_clock() {
    if (seconds_) clock_start_ = category_ ? start_ : now_ns();
  }
  const char* category_ = nullptr;
  std::string name_, args_;
  int64_t start_ = 0;
  double* seconds_ = nullptr;
  int64_t clock_start_ = 0;
};

// An async span (begun on this thread) whose end goes with the next collective this thread
// issues — see HandOver. If the collective completed in the call, or none took it, the end is
// recorded when this object dies.
class HandedSpan {
 public:
  template <class Make>
  requires std::is_convertible_v<std::invoke_result_t<Make>, Label> HandedSpan(const char* category,
                                                                               Make&& make) {
    if (!on()) return;
    Label label = make();
    category_ = category;
    name_ = label.name;
    id_ = async_begin(category, std::move(label.name), std::move(label.args));
    hand_over(category, name_, id_);
  }
  ~HandedSpan() {
    if (category_) end_hand_over(take_hand_over());
  }
  HandedSpan(const HandedSpan&) = delete;
  HandedSpan& operator=(const HandedSpan&) = delete;

 private:
  const char* category_ = nullptr;
  std::string name_;
  uint64_t id_ = 0;
};

// ---- GPU work, timed with device events -------------------------------------------------------
// A backend that can time work on a device's streams (the CUDA one, core/cuda/trace_timer.cpp,
// with CUDA events; tests use a fake). mark() records a point in the work queued so far on the
// calling thread's current stream of `device` — no host synchronisation; elapsed_ms() waits for
// both points, and is only called by stop(), after the traced steps.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  struct Mark {
    std::shared_ptr<void> handle;
    std::string stream;  // names its track: "cuda:0 stream 0x5581..."
  };
  virtual Mark mark(const Device& device) = 0;
  virtual double elapsed_ms(const Mark& from, const Mark& to) = 0;
};
// Installs the timer for a device type (nullptr removes it); cpu devices have none: their work is
// done when the host span ends.
void set_device_timer(DeviceType type, DeviceTimer* timer);

// A span of device work on the calling thread's current stream of `device`: between the two
// marks, shown on that stream's track once stop() has resolved it. No-op on the cpu.
class DeviceSpan {
 public:
  DeviceSpan(const Device& device, const char* name);
  ~DeviceSpan();
  void finish();  // ends it now
  DeviceSpan(const DeviceSpan&) = delete;
  DeviceSpan& operator=(const DeviceSpan&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// ---- which top-level module an autograd op belongs to ----------------------------------------
// The forward and backward of a model, per top-level module (ResNet's conv1, layer1, ... fc).
// Models call their children directly, so the module is found from the op: an op recorded
// during a ModulePass that takes a parameter of top-level module m belongs to m; an op without
// parameters (a ReLU, an add) belongs to the module of the op before it. The forward span of m
// runs from the end of the op before m's first op to the end of m's last; its autograd nodes
// (and its parameters' gradient accumulators) are remembered as m's, so the engine shows
// backward as runs of nodes of one module ("backward layer4").
//
// Set the model's top-level modules and their parameters (tensor implementations) once:
void set_modules(std::vector<std::string> names, std::vector<std::vector<const void*>> params);
// Attributes the ops this thread records while it lives (only while recording).
class ModulePass {
 public:
  ModulePass();
  ~ModulePass();
  ModulePass(const ModulePass&) = delete;
  ModulePass& operator=(const ModulePass&) = delete;

 private:
  bool active_ = false;
};
namespace detail {
// From record() (core/autograd.cpp) when on(): tags the node, moves the forward spans on.
void attribute(Node& node, const std::vector<Tensor>& inputs);
// From the engine: the backward spans, one per run of nodes of one module.
class BackwardRuns {
 public:
  void node(const Node& node);  // before it runs
  void finish();
  ~BackwardRuns() { finish(); }

 private:
  int module_ = -2;  // -2: no run open
  int64_t start_ = 0;
  std::unique_ptr<DeviceSpan> device_;
};
}  // namespace detail

// ---- a session -----------------------------------------------------------------------------
// Drops every recorded event, sets the origin (ts 0) to now and starts recording. Call it right
// after a barrier in every rank: the ranks' origins are then the same instant, to the barrier's
// skew (microseconds on one machine, whose processes share one clock anyway).
void start();
// The window (--trace-steps A:B): recording paused between steps outside it.
void pause();
void resume();
// Stops recording and resolves the device spans (waits for the device: after the traced steps).
void stop();

// ---- the explain sink: the same events, as text ----------------------------------------------
// While explaining, every event of the given categories ("ddp", "ring", "dp", ...; none: all) is
// also written as one line of text when it is recorded — the timeline's events told as a story:
//   +  0.412 ms  ddp      bucket 0 begins — hook allreduce, elements 2570, bytes 10.0 KiB, ...
//   +  0.433 ms  ring     [communication] reduce-scatter step 1/2 (0.015 ms) — ...
// Complete events are written when they end, with their duration; times count from explain().
// The timeline (start/stop) and the explain sink are independent: either, both or neither.
// Lines collect in this process's buffer until take_explained(); a parallel program prints every
// rank's lines in rank order (parallel/explain.h).
void explain(std::vector<std::string> categories = {});
void stop_explaining();
bool explaining();
std::vector<std::string> take_explained();

struct Recorded {
  std::vector<Event> events;
  std::vector<std::pair<int, std::string>> tracks;  // (track id, name)
  int64_t origin_ns = 0;
};
// Everything recorded since start(), and the names of the tracks.
Recorded take();

// One process's events as trace-event JSON objects separated by commas (no brackets), ts in
// microseconds since the origin, each track's events in time order; process and thread names
// as metadata events. Several processes' strings join with commas into one "traceEvents" list.
std::string to_json_objects(const Recorded& recorded, int pid, const std::string& process_name);
// A whole trace file from such strings: {"traceEvents":[...],"displayTimeUnit":"ms"}.
std::string json_file(const std::vector<std::string>& processes);

// Throws rg::Error when `path` could not be written: a folder that does not exist or cannot be
// written, a path that is a folder. Programs call it before they run, so that a typo costs
// nothing.
void check_path(const std::string& path);
// Writes `text` to `path` atomically (core/atomic_file.h): a reader never sees half a file, and
// an earlier file stays whole if writing fails. Throws naming the path.
void write_file(const std::string& path, const std::string& text);

}  // namespace rg::trace
