#pragma once
// Learning-rate schedules. A scheduler drives the lr of every parameter group of one optimizer:
// constructing it sets the lr of step 0, and each step() moves to the next step and sets that
// step's lr. Call step() once per iteration (or once per epoch — the unit is yours) *after*
// optimizer.step():
//
//   for (...) { opt.zero_grad(); loss = ...; loss.backward(); opt.step(); sched.step(); }
//
// Every schedule is a closed form lr_at(step, group) of its base lrs (the groups' lrs when the
// scheduler was made), so a schedule can be resumed, wrapped (LinearWarmup) or plotted without
// replaying it. These are PyTorch's closed forms; PyTorch's own step() uses recursive
// ("chainable") forms for some schedules, which agree with them up to rounding.
//
// A scheduler keeps a reference to its optimizer, which must outlive it.
//
// state_dict() is checkpoint metadata: {"lr_scheduler": JSON with the type, the step, the base
// lrs and the options}; load_state_dict restores all of it (as PyTorch does) and sets the lrs.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "optim/optimizer.h"

namespace rg {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances one step and sets every group's lr to lr_at(last_step(), group).
  void step();
  // The lr of every group at the current step (what the optimizer is now using, unless the
  // lr was changed behind the scheduler's back).
  std::vector<double> get_lr() const;
  // Steps taken since construction (0 right after it).
  int64_t last_step() const { return step_; }
  // The schedule itself: the lr of `group` at step `step` (>= 0).
  virtual double lr_at(int64_t step, std::size_t group) const = 0;
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  const std::string& name() const { return name_; }
  Optimizer& optimizer() const { return *optimizer_; }

  std::map<std::string, std::string> state_dict() const;
  // Checks the type and the number of groups, restores step, base lrs and options, sets lrs.
  void load_state_dict(const std::map<std::string, std::string>& metadata);

 protected:
  // Records the optimizer's current lrs as the base lrs. Derived constructors finish with
  // apply() (a base constructor cannot call the derived lr_at).
  LRScheduler(std::string name, Optimizer& optimizer);
  // Sets every group's lr to lr_at(step_, group).
  void apply();

  // The scheduler's state as a JSON object (type, step, base lrs, then options_json's keys),
  // and back; from_json validates like the constructor.
  nlohmann::json to_json() const;
  void from_json(const nlohmann::json& state);
  virtual nlohmann::json options_json() const = 0;
  virtual void load_options_json(const nlohmann::json& options) = 0;

  std::vector<double> base_lrs_;

 private:
  friend class LinearWarmup;  // saves and restores the schedule it wraps
  std::string name_;
  Optimizer* optimizer_;
  int64_t step_ = 0;
};

// lr = base_lr · gamma^(number of milestones <= step). Milestones need not be sorted; a
// milestone listed twice decays twice (PyTorch's Counter semantics).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);
  double lr_at(int64_t step, std::size_t group) const override;

 protected:
  nlohmann::json options_json() const override;
  void load_options_json(const nlohmann::json& options) override;

 private:
  static void validate(const std::vector<int64_t>& milestones, double gamma);
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr = eta_min + (base_lr − eta_min) · (1 + cos(π · step / T_max)) / 2: half a cosine from
// base_lr down to eta_min over T_max steps. Past T_max it continues the cosine (back up, with
// period 2·T_max) as PyTorch's does — size T_max to the run.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);
  double lr_at(int64_t step, std::size_t group) const override;

 protected:
  nlohmann::json options_json() const override;
  void load_options_json(const nlohmann::json& options) override;

 private:
  int64_t T_max_;
  double eta_min_;
};

enum class Anneal { cos, linear };

struct OneCycleOptions {
  double pct_start = 0.3;         // fraction of the steps spent rising
  Anneal anneal = Anneal::cos;    // shape of both phases
  double div_factor = 25;         // initial lr = max_lr / div_factor
  double final_div_factor = 1e4;  // final lr = initial lr / final_div_factor
};

// The 1cycle policy (Smith & Topin), two phases, PyTorch's formulas: with
// initial = max_lr / div_factor and min = initial / final_div_factor,
//   phase 1, steps 0 .. pct_start·total_steps − 1:    anneal initial → max_lr
//   phase 2, up to total_steps − 1:                   anneal max_lr → min
// where anneal_cos(a, b, pct) = b + (a − b)/2 · (1 + cos(π·pct)) and anneal_linear =
// a + (b − a)·pct, pct being the position within the phase. The optimizer's lrs are ignored:
// max_lr (one per group, or one for all) is the base lr. Valid steps are 0 .. total_steps;
// stepping past that throws (as PyTorch). At step total_steps itself (never used by an update
// in a loop of total_steps iterations) PyTorch extrapolates the last phase; with linear
// annealing that can be a negative lr, so there the linear phase holds min instead (the one
// departure from PyTorch). Momentum is not cycled (PyTorch's cycle_momentum=False).
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, int64_t total_steps,
             OneCycleOptions options = {});
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps,
             OneCycleOptions options = {});
  double lr_at(int64_t step, std::size_t group) const override;

 protected:
  nlohmann::json options_json() const override;
  void load_options_json(const nlohmann::json& options) override;

 private:
  static void validate(int64_t total_steps, const OneCycleOptions& options);
  int64_t total_steps_;
  OneCycleOptions options_;
};

// PyTorch's LinearLR: the lr moves linearly from start_factor · base_lr to end_factor · base_lr
// over total_steps steps, then holds:
//   lr = base_lr · (start_factor + (end_factor − start_factor) · min(step, total_steps) /
//   total_steps)
// (airbench94's decay from 1 to 0.07, after LinearWarmup's rise from 0.2).
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_steps);
  double lr_at(int64_t step, std::size_t group) const override;

 protected:
  nlohmann::json options_json() const override;
  void load_options_json(const nlohmann::json& options) override;

 private:
  static void validate(double start_factor, double end_factor, int64_t total_steps);
  double start_factor_, end_factor_;
  int64_t total_steps_;
};

// Linear warm-up in front of another schedule. With W = warmup_steps, s = start_factor and
// L0(g) = after.lr_at(0, g) (the wrapped schedule's first lr, normally the base lr):
//   step t < W:   lr = L0 · (s + (1 − s) · t / W)     from s·L0 up to (not reaching) L0
//   step t >= W:  lr = after.lr_at(t − W)             the wrapped schedule, starting at L0
// So the wrapped schedule is delayed by W steps: give it the length of the run after the
// warm-up (e.g. CosineAnnealingLR with T_max = total − W; milestones counted from the end of
// the warm-up). This equals PyTorch's SequentialLR([LinearLR(s, 1, W), after], [W]).
// `after` may be null: the lr stays at the base lr after the warm-up. LinearWarmup owns
// `after` and steps it; do not step `after` yourself. It must drive the same optimizer and be
// fresh (last_step() == 0).
class LinearWarmup : public LRScheduler {
 public:
  LinearWarmup(Optimizer& optimizer, std::unique_ptr<LRScheduler> after, int64_t warmup_steps,
               double start_factor = 0.1);
  double lr_at(int64_t step, std::size_t group) const override;
  const LRScheduler* after() const { return after_.get(); }

 protected:
  nlohmann::json options_json() const override;
  void load_options_json(const nlohmann::json& options) override;

 private:
  static void validate(int64_t warmup_steps, double start_factor);
  std::unique_ptr<LRScheduler> after_;
  int64_t warmup_steps_;
  double start_factor_;
};

// The linear scaling rule (Goyal et al., "ImageNet in 1 hour"): with N workers each on batch
// B, the effective batch is N·B, so scale the single-worker lr by N — and warm up (LinearWarmup)
// over the first epochs, where a large lr diverges.
enum class LrScaling { none, linear };
double scale_lr(double base_lr, int world_size, LrScaling mode);

}  // namespace rg
