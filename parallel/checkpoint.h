#pragma once
// Resuming a data-parallel run: rank 0 reads the checkpoint, every rank ends up with its state.
//
//   auto resumed = load_checkpoint_on_root(rank() == 0 ? path : "", model, &opt, &sched);
//   if (resumed) start_epoch = resumed->state.epoch;
//
// Only the root touches the file (on a cluster the others may not even see it). It loads the
// model, optimizer and scheduler as load_checkpoint() does, then the state travels:
//   1. a JSON verdict — no checkpoint, the error the root met, or the training state, the
//      scheduler's metadata and the root's generator state;
//   2. the model's parameters and buffers (broadcast_parameters);
//   3. the optimizer's state (broadcast_optimizer_state);
//   4. with mixed precision, the loss scaler's state and O2's f32 master weights (the true
//      weights: the others must not rebuild them from the 16-bit model).
// A bad checkpoint therefore fails on every rank with the root's message, instead of the root
// dying and the others reporting a lost peer.
// Saving needs nothing of the kind: rank 0 calls save_checkpoint() (optim/checkpoint.h).

#include <optional>
#include <string>

#include "optim/checkpoint.h"
#include "parallel/world.h"

namespace rg::parallel {

struct Resumed {
  std::string path;  // the root's file
  TrainingState state;
};

// `path` is read on `root` only (empty there: nothing to resume, nullopt on every rank).
// Pass nullptr for the optimizer and scheduler to load only the weights (evaluation), and for
// amp without mixed precision. Every rank must call it with the same kinds of objects.
std::optional<Resumed> load_checkpoint_on_root(const std::string& path, nn::Module& model,
                                               Optimizer* optimizer, LRScheduler* scheduler,
                                               MixedPrecision* amp = nullptr, int root = 0,
                                               ProcessGroup& group = world());

}  // namespace rg::parallel
