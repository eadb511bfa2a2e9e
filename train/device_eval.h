#pragma once
// Evaluation counts kept on the device: the DistributedEvaluator's sums (parallel/
// distributed_sampler.h) — correct predictions and the cross-entropy of each test sample, the
// padded duplicates of a DistributedSampler left out — added up where the logits are, and read
// back once, by all_ranks(). DistributedEvaluator scores every batch on the host, one copy of
// the logits and a wait for the device per batch; this one adds nothing to a GPU's queue but
// kernels.
//
//   DeviceEvaluator eval(sampler, device);
//   loader.start_epoch(0);
//   while (auto b = loader.next()) eval.add(model(b->images), b->labels);
//   EvalTotals t = eval.all_ranks(group);   // the one read of the device, then one allreduce
//
// Its totals equal DistributedEvaluator's: the same count of correct predictions (arg-max,
// first on ties), and the same loss up to the order of the f64 sum.

#include "core/device.h"
#include "core/tensor.h"
#include "parallel/distributed_sampler.h"
#include "parallel/process_group.h"

namespace rg::train {

class DeviceEvaluator {
 public:
  DeviceEvaluator(const parallel::DistributedSampler& sampler, const Device& device);
  // The next B samples: logits (B, K) (any floating dtype) and labels (B) i64, both on the
  // evaluator's device. Queues the sums; waits for nothing.
  void add(const Tensor& logits, const Tensor& labels);
  // Reads the sums back (the one wait for the device) and adds them over the group (one
  // allreduce of three f64 values). Every rank must call it.
  parallel::EvalTotals all_ranks(parallel::ProcessGroup& group) const;
  int64_t position() const { return cursor_.position(); }  // padding included

 private:
  parallel::RealSampleCursor cursor_;
  Device device_;
  Tensor correct_;   // 0-d f64 on the device
  Tensor loss_sum_;  // 0-d f64 on the device
  int64_t count_ = 0;
};

}  // namespace rg::train
