#pragma once
// The textbook versions: each idea of data parallelism in a page, no tracing, no faults, no
// options — what a learner reads before the real implementation beside it, and replaces with
// their own. `check_equivalence --textbook NAME` grades a version against one device and
// against the real implementation; a learner's own file takes the textbook's place with one
// CMake flag:
//
//   cmake -B build -DRG_LEARN_RING=$HOME/my_ring.cpp && cmake --build build -t check_equivalence
//   build/apps/check_equivalence --textbook ring
//
// (RG_LEARN_DATA_PARALLEL, RG_LEARN_DDP, RG_LEARN_SYNC_BN, RG_LEARN_LOSS_SCALER, RG_LEARN_ZERO
// likewise). A file must define the functions of its lesson below, in namespace rg::textbook.
// docs/learn/ has the lessons.

#include <functional>
#include <memory>
#include <vector>

#include "nn/module.h"
#include "parallel/comm_hooks.h"
#include "parallel/process_group.h"
#include "parallel/transport.h"

namespace rg::textbook {

// ---- 1. the ring (ring.cpp; real: parallel/ring_allreduce.cpp) --------------------------------
// `data`: n floats on every rank; afterwards each holds the sum over the ranks, on every rank.
// Only transport.send_recv, rank() and size() may move data.
void ring_allreduce(parallel::Transport& transport, float* data, int64_t n);

// ---- 2. DataParallel (data_parallel.cpp; real: parallel/data_parallel.cpp) --------------------
// A module whose forward splits the batch over `devices`, runs a replica of `master` (built by
// make_replica, given the master's parameters) on each share, and concatenates the outputs on
// devices[0]; after backward the master's parameters hold the gradient of the whole batch.
using ReplicaFactory = std::function<std::shared_ptr<nn::Module>()>;
std::shared_ptr<nn::Module> data_parallel(std::shared_ptr<nn::Module> master,
                                          ReplicaFactory make_replica, std::vector<Device> devices);

// ---- 3. DDP: buckets and a communication hook (ddp.cpp; real: parallel/ddp.cpp) ---------------
// A module whose backward leaves every rank's gradients averaged over the group's ranks:
// gradients gathered into buckets of about bucket_cap_bytes (last layers first), each bucket
// handed to `hook` as soon as it is complete, while backward goes on.
std::shared_ptr<nn::Module> ddp(std::shared_ptr<nn::Module> module,
                                std::shared_ptr<parallel::ProcessGroup> group,
                                int64_t bucket_cap_bytes, parallel::CommHook hook);
// The default hook, written out: the bucket averaged over the ranks, in place.
std::shared_ptr<parallel::Work> allreduce_average(parallel::ProcessGroup& group,
                                                  parallel::GradBucket& bucket);

// ---- 4. SyncBatchNorm (sync_bn.cpp; real: parallel/sync_batch_norm.cpp) -----------------------
// Training-mode batch normalisation over the batch of every rank of the group: x (N, C, *) is
// this rank's share. Differentiable in x, weight and bias; no running statistics.
Tensor sync_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                       std::shared_ptr<parallel::ProcessGroup> group);

// ---- 5. the loss scaler (loss_scaler.cpp; real: optim/loss_scaler.cpp) ------------------------
// Dynamic loss scaling: scale(loss) multiplies by S; unscale(params) divides their gradients by S
// and says whether any is inf or NaN; update(found_inf) halves S after an overflow (the step is
// skipped) and doubles it after `growth_interval` clean steps in a row.
class LossScaler {
 public:
  virtual ~LossScaler() = default;
  virtual Tensor scale(const Tensor& loss) = 0;
  virtual bool unscale(const std::vector<Tensor>& params) = 0;  // true: found inf/NaN
  virtual void update(bool found_inf) = 0;
  virtual double scale_value() const = 0;
};
std::unique_ptr<LossScaler> loss_scaler(double init_scale, int growth_interval);

// ---- 6. ZeRO-1 (zero.cpp; real: parallel/zero.cpp) --------------------------------------------
// SGD with momentum whose state is sharded: step() is called after a local backward (every
// rank's own gradients in .grad); it averages the gradients over the ranks, updates this rank's
// 1/N of the elements with its 1/N of the momentum, and gives every rank every parameter again.
class Zero1 {
 public:
  virtual ~Zero1() = default;
  virtual void step() = 0;
  virtual int64_t state_elements() const = 0;  // momentum values this rank keeps
};
std::unique_ptr<Zero1> zero1(std::vector<Tensor> params,
                             std::shared_ptr<parallel::ProcessGroup> group, double lr,
                             double momentum);

}  // namespace rg::textbook
