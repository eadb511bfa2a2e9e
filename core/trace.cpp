#include "core/trace.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/atomic_file.h"
#include "core/autograd.h"
#include "core/config.h"
#include "core/tensor.h"

namespace rg::trace {

namespace {

// One thread's events. Its thread appends; take() reads from another thread, hence the lock
// (uncontended while recording).
struct ThreadLog {
  std::mutex mutex;
  std::vector<Event> events;
  int track = 0;
};

// A device span waiting for stop() to read its marks.
struct PendingDeviceSpan {
  std::string name;
  DeviceTimer* timer;
  DeviceTimer::Mark from, to;
};

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<ThreadLog>> logs;  // kept after their threads end
  std::map<int, std::string> track_names;
  std::map<std::string, int> virtual_tracks;
  int next_track = 1;
  int64_t origin_ns = 0;
  std::vector<PendingDeviceSpan> device_spans;
  DeviceTimer* timers[2] = {nullptr, nullptr};  // by DeviceType
  // ModulePass: the model's top-level modules.
  std::vector<std::string> module_names;
  std::unordered_map<const void*, int> module_of_param;
  // The module of each node recorded in the current pass (a side table, so that Node, which
  // every op includes, carries nothing for the timeline); cleared when a pass begins, when the
  // previous step's graph is gone.
  std::unordered_map<const Node*, int> module_of_node;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: threads may record at exit
  return *r;
}

ThreadLog& this_thread_log() {
  thread_local std::shared_ptr<ThreadLog> log = [] {
    auto made = std::make_shared<ThreadLog>();
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    made->track = r.next_track++;
    r.logs.push_back(made);
    return made;
  }();
  return *log;
}

void push(ThreadLog& log, Event event) {
  std::lock_guard lock(log.mutex);
  log.events.push_back(std::move(event));
}

// The two sinks: the timeline's buffers (start/stop, pause/resume) and the explain sink.
std::atomic<bool> timeline{false};

void set_recording() {
  detail::update_recording();
}

void push_here(Event event) {
  ThreadLog& log = this_thread_log();
  event.track = log.track;
  if (explaining()) detail::explain_event(event);
  if (timeline.load(std::memory_order_relaxed)) push(log, std::move(event));
}

std::atomic<uint64_t> next_async_id{1};

}  // namespace

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void detail::update_recording() {
  recording.store(timeline.load(std::memory_order_relaxed) || explaining(),
                  std::memory_order_relaxed);
}

std::string detail::track_name(int track) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.track_names.find(track);
  return it == r.track_names.end() ? std::string() : it->second;
}

void name_this_thread(std::string name) {
  ThreadLog& log = this_thread_log();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.track_names[log.track] = std::move(name);
}

int virtual_track(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto [it, made] = r.virtual_tracks.emplace(name, 0);
  if (made) {
    // Far above the threads' numbers, so a stream's track sorts after them.
    it->second = 100000 + static_cast<int>(r.virtual_tracks.size());
    r.track_names[it->second] = name;
  }
  return it->second;
}

void complete(const char* category, std::string name, int64_t start_ns, int64_t end_ns,
              std::string args) {
  if (!on()) return;
  push_here({Phase::complete, category, std::move(name), start_ns,
             std::max<int64_t>(0, end_ns - start_ns), 0, 0, std::move(args)});
}

void complete_on_track(int track, const char* category, std::string name, int64_t start_ns,
                       int64_t end_ns, std::string args) {
  ThreadLog& log = this_thread_log();  // any buffer will do: the event names its track
  push(log, {Phase::complete, category, std::move(name), start_ns,
             std::max<int64_t>(0, end_ns - start_ns), 0, track, std::move(args)});
}

void instant(const char* category, std::string name, std::string args) {
  if (!on()) return;
  push_here({Phase::instant, category, std::move(name), now_ns(), 0, 0, 0, std::move(args)});
}

uint64_t async_begin(const char* category, std::string name, std::string args) {
  const uint64_t id = next_async_id.fetch_add(1, std::memory_order_relaxed);
  if (on())
    push_here({Phase::async_begin, category, std::move(name), now_ns(), 0, id, 0, std::move(args)});
  return id;
}

void async_end(const char* category, std::string name, uint64_t id, std::string args) {
  if (!on()) return;
  push_here({Phase::async_end, category, std::move(name), now_ns(), 0, id, 0, std::move(args)});
}

namespace {
thread_local HandOver handed_over;
}  // namespace

void hand_over(const char* category, std::string name, uint64_t id) {
  handed_over = {category, std::move(name), id};
}

HandOver take_hand_over() {
  HandOver h = std::move(handed_over);
  handed_over = {};
  return h;
}

void end_hand_over(const HandOver& h) {
  if (h.category) async_end(h.category, h.name, h.id);
}

void Span::begin(const char* category, std::string name, std::string args) {
  category_ = category;
  name_ = std::move(name);
  args_ = std::move(args);
  start_ = now_ns();
}

void Span::end() {
  const int64_t end = now_ns();
  push_here(
      {Phase::complete, category_, std::move(name_), start_, end - start_, 0, 0, std::move(args_)});
}

// ---- device spans ----------------------------------------------------------------------------

void set_device_timer(DeviceType type, DeviceTimer* timer) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.timers[static_cast<int>(type)] = timer;
}

// The CUDA backend's timer (core/cuda/trace_timer.cpp, CUDA builds only).
DeviceTimer& cuda_device_timer();

namespace {
DeviceTimer* timer_for(const Device& device) {
  if (device.is_cpu()) return nullptr;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    if (DeviceTimer* set = r.timers[static_cast<int>(device.type)]) return set;
  }
  if constexpr (kWithCuda) return &cuda_device_timer();
  return nullptr;
}
}  // namespace

struct DeviceSpan::State {
  DeviceTimer* timer;
  Device device;
  std::string name;
  DeviceTimer::Mark from;
};

DeviceSpan::DeviceSpan(const Device& device, const char* name) {
  if (!on()) return;
  DeviceTimer* timer = timer_for(device);
  if (!timer) return;
  state_ = std::make_unique<State>(State{timer, device, name, timer->mark(device)});
}

DeviceSpan::~DeviceSpan() {
  finish();
}

void DeviceSpan::finish() {
  if (!state_) return;
  const std::unique_ptr<State> state = std::move(state_);
  try {
    DeviceTimer::Mark to = state->timer->mark(state->device);
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.device_spans.push_back(
        {std::move(state->name), state->timer, std::move(state->from), std::move(to)});
  } catch (...) {
    // A trace must never end a training step: a mark that failed is a span left out.
  }
}

// ---- modules ---------------------------------------------------------------------------------

void set_modules(std::vector<std::string> names, std::vector<std::vector<const void*>> params) {
  RG_CHECK(names.size() == params.size(), "trace::set_modules: ", names.size(), " names but ",
           params.size(), " parameter lists");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.module_names = std::move(names);
  r.module_of_param.clear();
  for (std::size_t m = 0; m < params.size(); ++m)
    for (const void* p : params[m]) r.module_of_param[p] = static_cast<int>(m);
}

namespace {
std::string module_name(int module) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (module >= 0 && static_cast<std::size_t>(module) < r.module_names.size())
    return r.module_names[static_cast<std::size_t>(module)];
  return "outside the model (the loss)";
}

// The forward attribution of this thread (ModulePass).
struct Attribution {
  bool active = false;
  int module = -1;         // the open span's module; -1: none open yet
  int64_t span_start = 0;  // where the open span began
  int64_t last_op = 0;     // the end of the last op recorded (or the pass's start)
  std::unique_ptr<DeviceSpan> device;

  void close() {
    if (module >= 0) complete("forward", "forward " + module_name(module), span_start, last_op);
    device.reset();
    module = -1;
  }
};
thread_local Attribution attribution;
}  // namespace

ModulePass::ModulePass() {
  if (!on()) return;
  active_ = true;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.module_of_node.clear();
  }
  attribution.active = true;
  attribution.module = -1;
  attribution.last_op = now_ns();
}

ModulePass::~ModulePass() {
  if (!active_) return;
  attribution.close();
  attribution.active = false;
}

void detail::attribute(Node& node, const std::vector<Tensor>& inputs) {
  if (!attribution.active) return;
  Registry& r = registry();
  int module = attribution.module;
  {
    std::lock_guard lock(r.mutex);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      auto it = r.module_of_param.find(inputs[i].impl());
      if (it == r.module_of_param.end()) continue;
      module = it->second;
      // The leaf's accumulator too: backward shows the gradients' accumulation (and DDP's
      // hooks) inside the module's run.
      if (i < node.next_edges.size() && node.next_edges[i].node)
        r.module_of_node[node.next_edges[i].node.get()] = module;
    }
  }
  const int64_t now = now_ns();
  if (module != attribution.module) {
    attribution.close();
    attribution.module = module;
    attribution.span_start = attribution.last_op;
    if (module >= 0 && !node.outputs.empty())
      attribution.device =
          std::make_unique<DeviceSpan>(node.outputs[0].device, "forward");  // cpu: nothing
  }
  {
    std::lock_guard lock(r.mutex);
    r.module_of_node[&node] = module;
  }
  attribution.last_op = now;
}

void detail::BackwardRuns::node(const Node& node) {
  if (!on()) return;
  int module = -1;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    // No traced model (DataParallel's replicas, a bare backward): no per-module runs to show.
    if (r.module_names.empty()) return;
    auto it = r.module_of_node.find(&node);
    if (it != r.module_of_node.end()) module = it->second;
  }
  if (module == module_) return;
  finish();
  module_ = module;
  start_ = now_ns();
  if (!node.outputs.empty())
    device_ = std::make_unique<DeviceSpan>(node.outputs[0].device, "backward");
}

void detail::BackwardRuns::finish() {
  if (module_ == -2) return;
  complete("backward", "backward " + module_name(module_), start_, now_ns());
  device_.reset();
  module_ = -2;
}

// ---- the session -----------------------------------------------------------------------------

void start() {
  Registry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    for (auto& log : r.logs) {
      std::lock_guard log_lock(log->mutex);
      log->events.clear();
    }
    r.device_spans.clear();
    r.origin_ns = now_ns();
  }
  timeline.store(true, std::memory_order_relaxed);
  set_recording();
}

void pause() {
  timeline.store(false, std::memory_order_relaxed);
  set_recording();
}

void resume() {
  timeline.store(true, std::memory_order_relaxed);
  set_recording();
}

void stop() {
  timeline.store(false, std::memory_order_relaxed);
  set_recording();
  Registry& r = registry();
  std::vector<PendingDeviceSpan> spans;
  {
    std::lock_guard lock(r.mutex);
    spans.swap(r.device_spans);
  }
  // Device time becomes host time through one anchor per device, made here, after the traced
  // steps, so that nothing inside them waits: once the device has reached a first mark, a second
  // mark runs the moment it is recorded, so its device time is the host's clock then.
  struct Anchor {
    DeviceTimer::Mark mark;
    int64_t host_ns;
  };
  std::map<std::pair<DeviceTimer*, std::string>, Anchor> anchors;
  for (PendingDeviceSpan& s : spans) {
    try {
      // Streams of one device share a clock; the stream name starts with the device's.
      const std::string device = s.from.stream.substr(0, s.from.stream.find(' '));
      auto key = std::make_pair(s.timer, device);
      auto it = anchors.find(key);
      if (it == anchors.end()) {
        const Device d = Device::parse(device);
        const DeviceTimer::Mark drained = s.timer->mark(d);
        s.timer->elapsed_ms(drained, drained);  // waits for the device's queued work
        const int64_t before = now_ns();
        DeviceTimer::Mark mark = s.timer->mark(d);
        s.timer->elapsed_ms(mark, mark);
        const int64_t after = now_ns();
        it = anchors.emplace(key, Anchor{std::move(mark), before + (after - before) / 2}).first;
      }
      const Anchor& anchor = it->second;
      const auto to_host = [&](const DeviceTimer::Mark& m) {
        return anchor.host_ns - static_cast<int64_t>(s.timer->elapsed_ms(m, anchor.mark) * 1e6);
      };
      complete_on_track(virtual_track(s.from.stream), "device", std::move(s.name), to_host(s.from),
                        to_host(s.to));
    } catch (...) {
      // A device span that cannot be read is left out; the trace of the host stays whole.
    }
  }
}

Recorded take() {
  Recorded out;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  out.origin_ns = r.origin_ns;
  for (auto& log : r.logs) {
    std::lock_guard log_lock(log->mutex);
    for (Event& e : log->events) out.events.push_back(std::move(e));
    log->events.clear();
  }
  for (const auto& [track, name] : r.track_names) out.tracks.emplace_back(track, name);
  return out;
}

// ---- JSON ------------------------------------------------------------------------------------

namespace {
void append_us(std::string& out, int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1000.0);
  out += buf;
}
}  // namespace

std::string to_json_objects(const Recorded& recorded, int pid, const std::string& process_name) {
  std::string out;
  const std::string pid_str = std::to_string(pid);
  auto meta = [&](const char* what, const std::string& tid, const std::string& name) {
    if (!out.empty()) out += ",\n";
    out += "{\"ph\":\"M\",\"name\":\"";
    out += what;
    out += "\",\"pid\":" + pid_str;
    if (!tid.empty()) out += ",\"tid\":" + tid;
    out += ",\"args\":{\"name\":";
    append_json_string(out, name);
    out += "}}";
  };
  meta("process_name", "", process_name);
  out += ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + pid_str +
         ",\"args\":{\"sort_index\":" + pid_str + "}}";
  for (const auto& [track, name] : recorded.tracks)
    meta("thread_name", std::to_string(track), name);

  // Each track in time order; at equal starts the longer event first, so that it encloses.
  std::vector<const Event*> order;
  order.reserve(recorded.events.size());
  for (const Event& e : recorded.events) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const Event* a, const Event* b) {
    if (a->track != b->track) return a->track < b->track;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    return a->duration_ns > b->duration_ns;
  });
  for (const Event* e : order) {
    out += ",\n{\"ph\":\"";
    out += static_cast<char>(e->phase);
    out += "\",\"cat\":";
    append_json_string(out, e->category);
    out += ",\"name\":";
    append_json_string(out, e->name);
    out += ",\"pid\":" + pid_str + ",\"tid\":" + std::to_string(e->track) + ",\"ts\":";
    append_us(out, e->start_ns - recorded.origin_ns);
    if (e->phase == Phase::complete) {
      out += ",\"dur\":";
      append_us(out, e->duration_ns);
    }
    if (e->phase == Phase::async_begin || e->phase == Phase::async_end)
      out += ",\"id2\":{\"local\":\"0x" + [&] {
        char buf[24];
        std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(e->id));
        return std::string(buf);
      }() + "\"}";
    if (e->phase == Phase::instant) out += ",\"s\":\"t\"";
    if (!e->args.empty()) out += ",\"args\":{" + e->args + "}";
    out += "}";
  }
  return out;
}

std::string json_file(const std::vector<std::string>& processes) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  for (const std::string& p : processes) {
    if (p.empty()) continue;
    if (!first) out += ",\n";
    out += p;
    first = false;
  }
  out += "\n]}\n";
  return out;
}

void check_path(const std::string& path) {
  namespace fs = std::filesystem;
  RG_CHECK(!path.empty(), "--trace: the file name is empty");
  const fs::path p(path);
  std::error_code ec;
  RG_CHECK(!fs::is_directory(p, ec), "--trace ", path, ": is a folder; give a file name, e.g. ",
           (p / "trace.json").string());
  const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  RG_CHECK(fs::is_directory(folder, ec), "--trace ", path, ": the folder ", folder.string(),
           " does not exist");
  RG_CHECK(::access(folder.c_str(), W_OK) == 0, "--trace ", path, ": cannot write in ",
           folder.string(), " (", std::strerror(errno), ")");
}

void write_file(const std::string& path, const std::string& text) {
  write_file_atomically(path, text, "--trace");
}

}  // namespace rg::trace
