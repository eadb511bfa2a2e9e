#pragma once
// Mixed precision (AMP) the way Apex's opt levels and torch.amp define it, in one small class
// a training loop drives in a few lines. The pieces it wires together are visible on their own:
// the autocast state (core/autocast.h), the per-op policy (ops/autocast), the 16-bit kernels,
// and the loss scaler (optim/loss_scaler.h).
//
//   level  model weights          forward                          optimizer updates
//   O0     f32                    f32                              the model's f32 weights
//   O1     f32                    autocast: conv/linear/matmul in  the model's f32 weights
//                                 16 bits (a CPU's bf16 conv2d:
//                                 f32 where that is faster),
//                                 softmax/losses/sums f32
//   O2     16-bit, BatchNorm f32  16 bits (BatchNorm stats in f64) f32 master copies, rounded
//                                                                  back into the model
//   O3     16-bit, BatchNorm too  16 bits                          the model's 16-bit weights
//
// Loss scaling applies at O1, O2 and O3 (O3 is the speed baseline, not a recipe: f16 weights
// lose updates smaller than half an ulp, which is why O2 keeps masters). O0 never scales.
//
// O2, one step:
//
//   model (f16) ──forward──▶ loss ──×S, backward──▶ model grads (f16)
//                                                        │ backward(): copied to f32, added
//                                                        ▼ into the masters' grads
//   masters (f32) ◀──opt.step()── master grads ◀──unscale: ÷S, inf/NaN check
//        │
//        └──step(): rounded (to nearest even) into the model's f16 weights
//
// BatchNorm's f32 parameters need no copy: they are their own masters.
//
//   MixedPrecision amp(model, {OptLevel::O2, DType::f16});
//   SGD opt(amp.optimizer_params(), {...});
//   for (...) {
//     Tensor x16 = amp.cast_input(x);
//     Tensor logits;
//     { auto autocast = amp.autocast(); logits = model.forward(x16); }
//     Tensor loss = cross_entropy(logits, y);
//     opt.zero_grad();
//     amp.backward(loss);
//     amp.unscale(opt); clip_grad_norm(amp.optimizer_params(), 5.0);  // optional
//     amp.step(opt);  // false: skipped on overflow
//     amp.update();
//   }
//
// Checkpoints: pass the object to save_checkpoint / load_checkpoint (optim/checkpoint.h). It
// adds the scaler's state ("scaler.*") and, under O2, the f32 masters ("amp.master.<name>"),
// which are the true weights: load_checkpoint restores them, so a checkpoint saved under O2
// loads at full precision into an O2 run — and into a plain f32 model too.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/autocast.h"
#include "nn/module.h"
#include "optim/loss_scaler.h"
#include "optim/optimizer.h"

namespace rg {

enum class OptLevel { O0, O1, O2, O3 };

// "O0".."O3" (also "o0".."o3"); throws naming the accepted values.
OptLevel parse_opt_level(std::string_view text);
std::string_view opt_level_name(OptLevel level);
// "fp16" / "bf16" (also "f16", "float16", "bfloat16"); throws naming the accepted values.
DType parse_amp_dtype(std::string_view text);

// The loss scaling a 16-bit type needs unless told otherwise (--loss-scale auto): dynamic for f16,
// whose gradients underflow; none for bf16, whose exponent range is f32's (PyTorch's autocast in
// bf16 runs without a GradScaler).
LossScalerOptions default_loss_scale(DType dtype);

// After a backward under O2: move the model's 16-bit gradients into the f32 masters', or leave
// them in the model for a later backward to add to (MixedPrecision::backward).
enum class MasterGrads { move, defer };

struct AmpOptions {
  OptLevel level = OptLevel::O0;
  DType dtype = DType::f16;  // f16 or bf16 (ignored at O0)
  LossScalerOptions scaler;  // ignored at O0; mode none: no scaler
};

class MixedPrecision {
 public:
  // Converts the model as the level says (O2: to dtype with BatchNorm f32; O3: all of it) and,
  // under O2, makes the f32 masters. Call it before making the optimizer, and before wrapping
  // the model for DDP (so the broadcast and the buckets see the final dtypes).
  MixedPrecision(nn::Module& model, AmpOptions options);

  const AmpOptions& options() const { return options_; }
  OptLevel level() const { return options_.level; }

  // What the optimizer should update: the f32 masters under O2, the model's parameters
  // otherwise (in Module::named_parameters order).
  const std::vector<Tensor>& optimizer_params() const { return opt_params_; }
  // Their names ("layer1.0.conv1.weight"), for reports.
  const std::vector<std::string>& param_names() const { return names_; }

  // x in the model's dtype under O2/O3 (floating inputs only); x itself otherwise.
  Tensor cast_input(const Tensor& x) const;
  // An autocast guard for the forward pass: on at O1, a no-op guard otherwise.
  AutocastGuard autocast() const;

  // Scaled backward; under O2 the model's 16-bit gradients are then moved into the masters'
  // gradients (added, so that several backwards accumulate) — or, with MasterGrads::defer, left
  // in the model, where the next backward adds to them: gradient accumulation under DDP, whose
  // last, synchronised backward averages the model's gradients (so they must still be there).
  // Throws for a non-floating or multi-element loss.
  void backward(const Tensor& loss, MasterGrads grads = MasterGrads::move);
  // Unscales the gradients in place (no-op at O0); for clipping before step().
  void unscale(Optimizer& optimizer);
  // Steps unless the gradients overflowed; under O2 then rounds the masters into the model.
  // Returns whether it stepped (always true at O0).
  bool step(Optimizer& optimizer);
  // The scaler's end of step (no-op at O0).
  void update();

  // The scaler; nullptr at O0. For the overflow report (scale, skipped steps, first
  // offending parameter) and the found-inf hook.
  LossScaler* scaler() { return scaler_ ? &*scaler_ : nullptr; }
  const LossScaler* scaler() const { return scaler_ ? &*scaler_ : nullptr; }

  // Copies the model's current weights into the masters (O2; no-op otherwise): after loading
  // 16-bit weights into the model by other means.
  void sync_masters_from_model();

  // metadata "amp.level", "amp.dtype", "scaler.*"; tensors "amp.master.<name>" under O2.
  StateDict state_dict() const;
  // Restores it (the level and dtype must match); under O2 the masters are copied and rounded
  // into the model. Throws naming the key at fault.
  void load_state_dict(const StateDict& state);

 private:
  nn::Module& model_;
  AmpOptions options_;
  std::vector<Tensor> model_params_;  // the model's parameters, named_parameters order
  std::vector<Tensor> opt_params_;    // masters under O2, else model_params_
  std::vector<std::string> names_;
  std::optional<LossScaler> scaler_;
};

}  // namespace rg
