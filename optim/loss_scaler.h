#pragma once
// LossScaler: loss scaling for 16-bit training (torch.cuda.amp.GradScaler, Apex's
// DynamicLossScaler). f16 gradients below 2⁻²⁴ flush to zero; multiplying the loss by S
// multiplies every gradient by S and lifts them into range. Before the update the gradients
// are divided by S again (unscale), checked for inf/NaN, and the step is skipped when any
// overflowed. Device-independent: unscale() is one fused unscale-and-check over all gradients
// (optim/update_items.h: CPU loops, or one launch per GPU that sets a found-inf flag on the
// device), and the host reads exactly one number per step — the first overflowing parameter.
//
// One training step, and the state it moves through:
//
//   loss ──scale()──▶ S·loss ──backward()──▶ S·g ──unscale(opt)──▶ g, found_inf
//                                                     │   (clip_grad_norm here sees true g)
//                                                     ▼
//                             step(opt): found_inf ? skip : opt.step()
//                                                     ▼
//   update(): found_inf  → S ← max(S·backoff, min_scale), skipped += 1, good_steps ← 0
//             otherwise  → good_steps += 1; when good_steps = growth_interval:
//                          S ← min(S·growth, max_scale), good_steps ← 0
//
// Static mode keeps S fixed but still skips a step whose gradients hold inf/NaN: applying them
// would destroy the weights, whatever the scale policy.
//
// Found-inf is a hook point: unscale() passes its local verdict (the first overflowing
// parameter, or none) to the hook (if set) and uses the hook's answer — data-parallel training
// installs one that exchanges the verdicts of all ranks (parallel/found_inf.h), so every rank
// skips the same steps, the replicas stay identical, and every rank names the same overflow.
//
// The record: every update() leaves a ScalerStep (scale used and after, skipped, what
// overflowed and on which rank) — last_step(), and take_history() for a loop's logs.
//
// Checkpoints: state_dict() fills StateDict metadata under "scaler.*" (scale, growth tracker,
// skipped steps, steps, options); save it next to the optimizer's state.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace rg {

// fixed: a static scale. none: no scaler at all (MixedPrecision makes none): bf16 has f32's
// exponent range, so its gradients need no lifting, as PyTorch's autocast in bf16 runs without a
// GradScaler — and without the scaler's verdict, the one host read of a step.
enum class LossScaleMode { dynamic, fixed, none };

struct LossScalerOptions {
  LossScaleMode mode = LossScaleMode::dynamic;
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;  // overflow-free steps before the scale grows
  double min_scale = 1.0;          // floor: the scale never collapses towards 0
  double max_scale = 16777216.0;   // ceiling 2^24 (Apex's default)
};

// Parses "dynamic", "none" or a positive number (a static scale), as --loss-scale takes it.
LossScalerOptions parse_loss_scale(const std::string& text);

// The overflow report.
struct OverflowInfo {
  int64_t step = 0;         // update() count when it happened (0-based)
  std::size_t param_index;  // first parameter (optimizer order) whose gradient held inf/NaN
  std::string param_name;   // its name when names were given, else "param <index>"
  // Where it happened when a found-inf hook shares verdicts across ranks: the lowest rank that
  // overflowed (its parameter is the one named). -1: this process, with no hook to ask.
  int rank = -1;
};

// What a found-inf hook answers: the verdict to act on and, when it is an overflow, where.
struct FoundInfVerdict {
  bool found_inf = false;
  int rank = -1;                           // the (lowest) rank that overflowed
  std::optional<std::size_t> param_index;  // that rank's first overflowing parameter
};

// The scaler's record of one step (one update()).
struct ScalerStep {
  int64_t step = 0;       // update() count, 0-based
  double scale = 0;       // the scale this step's loss was multiplied by
  double next_scale = 0;  // the scale after update()
  bool skipped = false;   // inf/NaN somewhere (on any rank, with a hook): no optimizer step
  std::optional<OverflowInfo> overflow;  // what overflowed first, when skipped
};
// "step 12: gradient overflow in layer1.0.conv1.weight on rank 1, step skipped, loss scale now
// 32768" — the line a training loop prints for a skipped step (`step` there counts from 1).
std::string describe_skip(const ScalerStep& record);

class LossScaler {
 public:
  // Throws rg::Error for init_scale <= 0 (or not finite), growth_factor <= 1, backoff_factor
  // outside (0, 1), growth_interval < 1, min_scale <= 0 or min_scale > max_scale, and an
  // init_scale outside [min_scale, max_scale] in dynamic mode.
  explicit LossScaler(LossScalerOptions options = {});

  // Names of the optimizer's parameters, in its order, for the overflow report (e.g. from
  // Module::named_parameters when the optimizer got Module::parameters).
  void set_param_names(std::vector<std::string> names);

  // Consulted once per step with this process's first overflowing parameter (none: no
  // inf/NaN here); returns the verdict to act on and where the overflow was.
  using FoundInfHook =
      std::function<FoundInfVerdict(std::optional<std::size_t> local_first_overflow)>;
  void set_found_inf_hook(FoundInfHook hook);

  // S·loss, differentiable. 16-bit losses are computed in f32 (S·loss would overflow f16).
  // Throws for an undefined, non-floating or multi-element loss.
  Tensor scale(const Tensor& loss) const;
  // Divides every defined gradient of the optimizer's parameters by S, in place, and records
  // whether any held inf/NaN (and which came first). At most once per step: a second call
  // before update() throws (as PyTorch). Only one optimizer per scaler.
  void unscale(Optimizer& optimizer);
  // Unscales if not done yet, then runs optimizer.step() unless inf/NaN was found. Returns
  // whether it stepped.
  bool step(Optimizer& optimizer);
  // Adjusts the scale for the next step (see the top of this file). Needs an unscale() or a
  // step() since the last update().
  void update();

  // ---- the report --------------------------------------------------------------------------
  double scale_value() const { return scale_; }
  int64_t skipped_steps() const { return skipped_; }
  int64_t steps() const { return steps_; }  // update() calls
  int64_t growth_tracker() const { return good_steps_; }
  bool found_inf() const { return found_inf_; }  // this step's verdict (after unscale)
  // The most recent overflow that made a step skip — on this process or, with a hook, on the
  // rank the hook named (its parameter, not a stale one of this process).
  const std::optional<OverflowInfo>& last_overflow() const { return last_overflow_; }
  // The record of the last update(); none before the first.
  const std::optional<ScalerStep>& last_step() const { return last_step_; }
  // The records of the steps since the previous call, oldest first, and forgets them: what a
  // loop sends to TensorBoard (the scale of every step, every skipped step and its cause). At
  // most kMaxHistory are kept between calls (the oldest go first), so a loop that never asks
  // does not grow without bound.
  std::vector<ScalerStep> take_history();
  static constexpr std::size_t kMaxHistory = 1 << 16;
  const LossScalerOptions& options() const { return options_; }

  // ---- checkpoints ---------------------------------------------------------------------------
  StateDict state_dict() const;  // metadata "scaler.*", no tensors
  // Restores what state_dict() saved; validates before changing anything; throws naming the key.
  // Keys outside "scaler." are ignored. Must not be called in the middle of a step.
  void load_state_dict(const StateDict& state);

 private:
  enum class Phase { idle, unscaled };

  LossScalerOptions options_;
  double scale_;
  int64_t good_steps_ = 0;
  int64_t skipped_ = 0;
  int64_t steps_ = 0;
  Phase phase_ = Phase::idle;
  bool found_inf_ = false;
  const Optimizer* optimizer_ = nullptr;  // the one optimizer this scaler serves
  std::vector<std::string> names_;
  FoundInfHook hook_;
  std::optional<OverflowInfo> last_overflow_;
  std::optional<OverflowInfo> step_overflow_;  // this step's, between unscale() and update()
  std::optional<ScalerStep> last_step_;
  std::deque<ScalerStep> history_;
};

}  // namespace rg
