#pragma once
// SyncBatchNorm: BatchNorm2d whose training statistics are those of the global batch — the
// union of every rank's batch — so that N ranks × B/N samples normalise exactly as one
// process with B samples does. The math (ops/batch_norm/batch_norm.h has the pieces):
//
// forward, per channel; rank r holds n_r values with mean μ_r and M2_r = Σ (x − μ_r)²:
//   allgather (n_r, μ_r, M2_r) from every rank, then merge them pairwise (Chan et al.):
//     n = n_a + n_b,  δ = μ_b − μ_a,  μ = μ_a + δ·n_b/n,  M2 = M2_a + M2_b + δ²·n_a·n_b/n
//   σ² = M2/n (biased, for normalising), M2/(n − 1) (unbiased, for running_var)
//   y = (x − μ)/sqrt(σ² + eps)·weight + bias
// Never E[x²] − E[x]² (it cancels catastrophically in f32 when |μ| ≫ σ); all in f64. Every
// rank merges the same list in the same order, so μ, σ and the running statistics are
// bit-identical on every rank.
//
// backward: with x̂ = (x − μ)/σ, the global sums
//   Σdy = allreduce_sum(Σ_local gy),   Σdy·x̂ = allreduce_sum(Σ_local gy·x̂)
//   gx = (weight/σ)·(gy − Σdy/n − x̂·Σdy·x̂/n)
//   gweight = Σ_local gy·x̂,  gbias = Σ_local gy  — this rank's share: DDP averages them
//                                                   across ranks like every other gradient.
//
// A rank with an empty batch (n_r = 0) still joins both collectives: it contributes nothing
// to the statistics and gets an empty gx. (It must still run backward — e.g. on a zero loss
// built from its empty output — so that the other ranks' backward allreduce completes.)
// Eval mode uses the running statistics, no communication.
//
// Parameter and buffer names are BatchNorm2d's (weight, bias, running_mean, running_var,
// num_batches_tracked), so checkpoints move freely between BatchNorm2d and SyncBatchNorm.

#include <memory>

#include "nn/layers.h"
#include "parallel/process_group.h"

namespace rg::parallel {

class SyncBatchNorm : public nn::BatchNorm2d {
 public:
  // group: nullptr means the world (parallel/world.h).
  explicit SyncBatchNorm(int64_t channels, std::shared_ptr<ProcessGroup> group = nullptr,
                         double momentum = 0.1, double eps = 1e-5);
  // x: (N, C, *) with N >= 0 per rank; more than one value per channel over all ranks.
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "SyncBatchNorm"; }
  ProcessGroup& group() const { return *group_; }
  // DataParallel gives each replica, at each step, the group of the devices that step uses
  // (fewer than all of them when the batch has fewer samples than devices).
  void set_group(std::shared_ptr<ProcessGroup> group);

 private:
  std::shared_ptr<ProcessGroup> group_;
};

// Training-mode batch norm over the group's global batch (what SyncBatchNorm::forward calls).
// running_mean / running_var: updated in place with the global statistics, or undefined.
Tensor sync_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, double momentum,
                       double eps, std::shared_ptr<ProcessGroup> group);

// Replaces every BatchNorm2d in the tree by a SyncBatchNorm over `group` (nullptr: the world)
// that shares its parameters and buffers (so an optimizer built before still updates them)
// and its train/eval mode. Returns the root: `module` itself, unless it is a BatchNorm2d.
// Uses Module::replace_child: models must hold their BatchNorms through members registered
// by address, or in a Sequential.
std::shared_ptr<nn::Module> convert_sync_batchnorm(std::shared_ptr<nn::Module> module,
                                                   std::shared_ptr<ProcessGroup> group = nullptr);

}  // namespace rg::parallel
