#pragma once
// What every run of check_equivalence trains: a small net with two BatchNorms, the same batches
// on every process, K steps of SGD; and the one-device references the runs must equal.

#include <cstdint>
#include <memory>
#include <vector>

#include "apps/check_equivalence/judge.h"
#include "nn/module.h"
#include "optim/sgd.h"
#include "parallel/ddp.h"

namespace rg::apps {

// conv(3→8) BN ReLU → conv(8→16, stride 2) BN ReLU → global average pool → linear(16→10):
// small, but with BatchNorm at two depths. A Sequential, so SyncBatchNorm can replace its BNs.
// The same weights every call (it reseeds the default generator: call it from one thread).
// Norms::none: the same net without its BatchNorms (gradient accumulation matches the larger
// batch exactly only without them: each micro-batch would be normalised on its own).
enum class Norms { batch_norm, none };
std::shared_ptr<nn::Module> make_net(DType dtype, const Device& device,
                                     Norms norms = Norms::batch_norm);

struct Batch {
  Tensor images, labels;
};
// Batch `step`: the same on every process and thread (drawn from the seed and the step only;
// it leaves the default generator alone).
Batch batch(int64_t size, int step, DType dtype, const Device& device);

// A deliberate fault, for proving that the verdict can fail (--perturb, hidden): the loss gains
// eps·Σ of the rows [first, first + count) of the output — one replica's or rank's share —
// so that exactly that share's backward gets a gradient off by eps.
struct Perturbation {
  int64_t first = 0, count = 0;
  double eps = 0;
};

struct Setup {
  Device device = Device::cpu();
  int steps = 3;
  int64_t global_batch = 12;
  DType dtype = DType::f64;
};

// lr 0.05, momentum 0.9, weight decay 5e-4.
SGD make_sgd(std::vector<Tensor> params);

// K steps of `model` on rows [first, first + count) of each batch; returns the final state.
// With `zero`, ZeRO-1 over that DDP steps instead of the plain SGD.
State train_steps(nn::Module& model, std::vector<Tensor> params, const Setup& s, int64_t first,
                  int64_t count, const Perturbation& perturb = {},
                  parallel::DistributedDataParallel* zero = nullptr);

// One device, BatchNorm per share: each share of the batch goes through the model on its own
// (normalised with its own statistics), the loss is over all of them, and only share 0's update
// of the running statistics is kept — what DP and DDP with per-device BatchNorm compute.
State train_share_by_share(const Setup& s, const std::vector<int64_t>& shares);

}  // namespace rg::apps
