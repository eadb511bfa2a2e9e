#include "train/step_trace.h"

#include <charconv>
#include <iostream>

#include "core/trace.h"
#include "parallel/trace_file.h"

namespace rg::train {

namespace {
int64_t parse_step(const std::string& text, const std::string& whole) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  RG_CHECK(ec == std::errc() && end == text.data() + text.size() && v >= 1, "--trace-steps '",
           whole, "': expected A:B with whole numbers 1 <= A <= B (steps counted from 1), got '",
           text, "'");
  return v;
}

// Forward through the model as one ModulePass; everything else is the model's.
class TracedModel final : public nn::Module {
 public:
  explicit TracedModel(std::shared_ptr<nn::Module> model) : model_(std::move(model)) {
    register_wrapped_module(model_);
    set_mode(model_->is_training() ? nn::Mode::train : nn::Mode::eval);
    std::vector<std::string> names;
    std::vector<std::vector<const void*>> params;
    for (const auto& [name, child] : model_->children()) {
      names.push_back(name);
      params.emplace_back();
      for (const Tensor& p : child->parameters()) params.back().push_back(p.impl());
    }
    trace::set_modules(std::move(names), std::move(params));
  }
  Tensor forward(const Tensor& x) override {
    trace::ModulePass pass;
    return model_->forward(x);
  }
  std::string type_name() const override { return model_->type_name(); }

 private:
  std::shared_ptr<nn::Module> model_;
};
}  // namespace

std::vector<std::string> explain_categories(const std::string& text) {
  std::vector<std::string> categories;
  if (text == "all") return categories;  // none named: every category
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    if (comma > at) categories.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  RG_CHECK(!categories.empty(), "--explain '", text,
           "': name categories (ddp,ring,dp,sync_bn,collective,optimizer,...) or all");
  return categories;
}

void parse_trace_steps(const std::string& text, TraceOptions& options) {
  const auto colon = text.find(':');
  const int64_t a = parse_step(text.substr(0, colon), text);
  const int64_t b = colon == std::string::npos ? a : parse_step(text.substr(colon + 1), text);
  RG_CHECK(a <= b, "--trace-steps '", text, "': the first step comes after the last");
  options.first_step = a;
  options.last_step = b;
}

StepTrace::StepTrace(TraceOptions options, std::shared_ptr<parallel::ProcessGroup> group)
    : options_(std::move(options)), group_(std::move(group)) {
  if (!enabled()) return;
  RG_CHECK(options_.first_step >= 1 && options_.first_step <= options_.last_step,
           "--trace-steps: need 1 <= first <= last, got ", options_.first_step, ":",
           options_.last_step);
  if (!options_.path.empty()) parallel::check_trace_path(options_.path);
  trace::name_this_thread("main");
}

StepTrace::~StepTrace() {
  if (state_ != State::recording) return;  // else an error left the window open
  trace::stop();
  trace::stop_explaining();
}

void StepTrace::open() {
  if (!options_.path.empty()) parallel::start_trace(*group_);
  if (!options_.explain.empty()) trace::explain(explain_categories(options_.explain));
  state_ = State::recording;
}

void StepTrace::before_step(int64_t step) {
  if (enabled() && state_ == State::waiting && step >= options_.first_step &&
      step <= options_.last_step)
    open();  // step 1, or a run resumed inside the window
  if (state_ == State::recording && first_recorded_ == 0) first_recorded_ = step;
}

void StepTrace::after_step(int64_t step) {
  if (!enabled()) return;
  if (state_ == State::recording) last_recorded_ = step;
  if (state_ == State::waiting && step + 1 == options_.first_step) open();
  if (state_ == State::recording && step >= options_.last_step) finish();
}

void StepTrace::finish() {
  if (state_ != State::recording) return;
  state_ = State::written;
  // What the window held: fewer steps than asked when the run ended inside it.
  const std::string steps =
      first_recorded_ == last_recorded_
          ? "step " + std::to_string(first_recorded_)
          : "steps " + std::to_string(first_recorded_) + "-" + std::to_string(last_recorded_);
  if (!options_.explain.empty()) {
    trace::stop_explaining();
    if (group_->rank() == 0) std::cout << "\r" << steps << ", explained:\n" << std::flush;
    parallel::print_explained(*group_);
  }
  if (options_.path.empty()) return;
  parallel::write_trace(options_.path, *group_);
  if (group_->rank() == 0)
    std::cout << "\rtrace of " << steps << " written to " << options_.path
              << " (open it at ui.perfetto.dev or chrome://tracing)\n";
}

std::shared_ptr<nn::Module> traced_model(std::shared_ptr<nn::Module> model) {
  return std::make_shared<TracedModel>(std::move(model));
}

}  // namespace rg::train
