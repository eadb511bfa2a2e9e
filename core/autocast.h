#pragma once
// Autocast state: which 16-bit dtype (if any) the lower-precision ops run in on this thread, and
// the per-step cache of weight casts — the device-independent half of torch.autocast. The ops
// read the state through ops/autocast (which decides what each op does with it); the CUDA
// backend will read the very same state.
//
//   {
//     AutocastGuard autocast(DType::f16);   // conv2d, linear, matmul now run in f16
//     Tensor logits = model.forward(x);     // each weight is cast to f16 once, then reused
//   }                                       // outermost guard exits: the cast cache is cleared
//
// The state is thread-local (as in PyTorch): a thread that runs part of a forward on behalf of
// another (a DataParallel replica) enters its own guard, e.g. with the dtype read from
// autocast_dtype() on the launching thread.

#include <cstddef>
#include <optional>

#include "core/dtype.h"
#include "core/tensor.h"

namespace rg {

// The dtype autocast runs lower-precision ops in on this thread, or nullopt when autocast is off.
std::optional<DType> autocast_dtype();
inline bool autocast_enabled() {
  return autocast_dtype().has_value();
}

// Turns autocast on (dtype f16 or bf16) or off (nullopt) for its scope; restores the previous
// state on exit, so guards nest. When the outermost enabled guard exits, the weight-cast cache
// is cleared: casts live for one forward pass (one step), as in PyTorch.
class AutocastGuard {
 public:
  explicit AutocastGuard(std::optional<DType> dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<DType> previous_;
};

// x converted to dtype, differentiably (the gradient flows back in x's dtype). A weight — a leaf
// that requires grad, in f32 — cast to the autocast dtype while autocast is on is converted once
// per step: later calls with the same weight return the cached cast (keyed by the weight's
// TensorImpl), so a weight used twice in one forward costs one conversion and one cast node.
Tensor autocast_to(const Tensor& x, DType dtype);

// Casts held in this thread's cache (for tests and the learner's curiosity).
std::size_t autocast_cache_size();

}  // namespace rg
