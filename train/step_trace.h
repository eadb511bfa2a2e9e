#pragma once
// --trace FILE, --explain CATEGORIES, --trace-steps A:B: a timeline of training steps A to B
// (counted from 1 across epochs) in a Chrome / Perfetto trace file — every rank a process, every
// thread a track (core/trace.h records, parallel/trace_file.h gathers and writes). The loop calls
// before_step / after_step; recording starts after step A−1, so step A's wait for its batch is
// in it, and the file is written after step B (or when the run ends inside the window). A window
// across an epoch's end shows the evaluation and the checkpoint too.
//
// traced_model() wraps a model so that each forward is a ModulePass: the timeline then shows
// forward and backward per top-level module ("forward layer2", "backward layer2").

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "parallel/process_group.h"

namespace rg::train {

struct TraceOptions {
  std::string path{};      // empty: no trace
  int64_t first_step = 2;  // step 1 allocates everything for the first time: not typical
  int64_t last_step = 4;
  // --explain: the explain sink (core/trace.h) over the same steps, printed rank after rank
  // when the window closes. "ddp,ring", "all", or empty: off.
  std::string explain{};
};

// --explain's text as the explain sink's categories: "ddp,ring" -> {ddp, ring}; "all" -> {}.
std::vector<std::string> explain_categories(const std::string& text);

// "A:B" with 1 <= A <= B, or "A" (one step); throws rg::Error naming the text.
void parse_trace_steps(const std::string& text, TraceOptions& options);

class StepTrace {
 public:
  // Checks the path at once (parallel::check_trace_path) when there is one.
  StepTrace(TraceOptions options, std::shared_ptr<parallel::ProcessGroup> group);
  ~StepTrace();
  bool enabled() const { return !options_.path.empty() || !options_.explain.empty(); }
  // Collectives while the window opens or closes: every rank calls them at the same steps.
  void before_step(int64_t step);
  void after_step(int64_t step);
  // Writes what was recorded if the window is still open (a run shorter than B steps).
  void finish();

 private:
  void open();
  TraceOptions options_;
  std::shared_ptr<parallel::ProcessGroup> group_;
  enum class State { waiting, recording, written } state_ = State::waiting;
  int64_t first_recorded_ = 0, last_recorded_ = 0;  // the steps the window held
};

// The model, forwarded through a wrapper that makes each forward a ModulePass over the model's
// top-level children (names and checkpoints unchanged: the wrapper adds no prefix).
std::shared_ptr<nn::Module> traced_model(std::shared_ptr<nn::Module> model);

}  // namespace rg::train
