#pragma once
// ZeroRedundancyOptimizer: ZeRO stage 1 (Rajbhandari et al. 2020; PyTorch's
// ZeroRedundancyOptimizer, llm.c's llmc/zero.cuh) on top of DDP. Under DDP every rank keeps the
// whole optimizer state — SGD's momentum, AdamW's two moments: one or two more copies of the
// model — and every rank computes the same update. ZeRO-1 shares the work out instead:
//
//   backward     each DDP bucket is reduce-scattered, not allreduced: rank r receives block r
//                of the averaged gradients (the ring's first half: (N−1)/N of the bytes)
//   step         rank r updates only the parameters' elements of its block, with the optimizer
//                state of its block — 1/N of the state — by the same multi-tensor update as
//                ever (optim/update_items.h), over "pieces": views of the parameters' slices
//   all-gather   the updated blocks go round the ring (its second half): every rank has every
//                parameter again
//
// The bytes on the wire are an allreduce's; the optimizer state and its update shrink N-fold.
//
//   auto ddp = std::make_shared<DistributedDataParallel>(net, group);
//   SGD sgd(ddp->parameters(), {.lr = 0.1, .momentum = 0.9});  // the hyperparameters
//   ZeroRedundancyOptimizer opt(*ddp, sgd);                     // the state, 1/N per rank
//   auto schedule = make_schedule(..., sgd, ...);               // LR schedules keep driving sgd
//   loop: opt.zero_grad(); loss(ddp->forward(x)).backward(); opt.step();
//
// Blocks are the bucket's flat buffer (parameters in DDP's bucket order, padded to a multiple
// of N) cut into N equal parts, so a parameter may be split between ranks, as in llm.c. The same
// sums in the same order as DDP's ring for 2 ranks (a sum of two values does not depend on the
// order), hence bit for bit the same weights; for 3 or more, where DDP's chunks and these blocks
// fall differently, the same up to rounding (tests/parallel/zero_test.cpp, check_equivalence).
//
// Mixed precision: the pieces are slices of what `like` updates — under O2 the f32 masters
// (amp.optimizer_params()): the reduced 16-bit gradients are widened to f32 for them, the f32
// blocks are all-gathered into every rank's masters, and MixedPrecision rounds them into the
// model as always. (The masters themselves stay whole on every rank; sharding them too, as llm.c
// does, is not done.) The loss scaler unscales and checks this rank's pieces (its found-inf
// verdict is shared by parallel::sync_found_inf as under DDP); clip_grad_norm() clips by the
// norm over every rank's pieces.
//
// Checkpoints: state_dict() is rank 0's after consolidate_state_dict(0), a collective that
// gathers the whole state there — the same keys as the plain optimizer's, so a ZeRO checkpoint
// resumes under plain DDP, and the other way: load_state_dict() (and the constructor, from
// `like`'s state) keeps this rank's slice of a whole state.

#include <memory>
#include <optional>
#include <vector>

#include "optim/optimizer.h"
#include "parallel/ddp.h"

namespace rg::parallel {

class ZeroRedundancyOptimizer final : public Optimizer {
 public:
  // like: SGD or AdamW over what the update writes — the model's parameters, or under AMP O2
  //   their masters — in any groups. Its hyperparameters drive every step (copied at each one);
  //   any state it holds is sharded and then dropped from it.
  // updated: for each of ddp.module().named_parameters(), the tensor the optimizer updates
  //   (amp.optimizer_params()); empty: the parameters themselves.
  // Every rank constructs it at the same point (it changes how DDP reduces).
  // compression: the gradients' dtype on the wire in the reduce-scatter (f16 or bf16; each rank
  //   divides by N first, as fp16_compress_hook does); nullopt: their own dtype.
  ZeroRedundancyOptimizer(DistributedDataParallel& ddp, Optimizer& like,
                          std::vector<Tensor> updated = {},
                          std::optional<DType> compression = std::nullopt);

  void step() override;
  void zero_grad() override;
  // Gradient clipping over every rank's pieces (a collective): ‖G‖ of the whole averaged
  // gradient, each rank's pieces scaled by max_norm / (‖G‖ + 1e-6) when that is < 1. Returns
  // ‖G‖ before clipping (a non-finite norm leaves the gradients alone, as clip_grad_norm does).
  double clip_grad_norm(double max_norm, double norm_type = 2.0);

  std::size_t num_groups() const override { return like_.num_groups(); }
  // This rank's pieces of the group (what the loss scaler unscales); maybe none.
  const std::vector<Tensor>& params(std::size_t group) const override {
    return piece_groups_.at(group);
  }
  double lr(std::size_t group) const override { return like_.lr(group); }
  void set_lr(std::size_t group, double lr) override { like_.set_lr(group, lr); }

  // A collective: every rank's shards of the state to `root`, whose state_dict() then returns
  // the whole state, as the plain optimizer's (until the next step).
  void consolidate_state_dict(int root = 0);
  StateDict state_dict() const override;
  // A whole state (every rank passes the same): validated by `like`, this rank's slice kept.
  void load_state_dict(const StateDict& state) override;

  int64_t state_bytes() const override;  // this rank's
  // The fraction of the model's elements this rank updates (≈ 1/N).
  double shard_fraction() const;

 protected:
  nlohmann::json options_json(std::size_t group) const override;
  void load_options_json(std::size_t group, const nlohmann::json& options) override;
  std::vector<std::string> state_names(std::size_t group) const override {
    return like_.buffer_names(group);
  }
  bool counts_steps() const override;

 private:
  // A parameter's elements in this rank's block of its bucket.
  struct Piece {
    std::size_t bucket;
    std::size_t like_index;  // the parameter's index in `like` (and in checkpoints)
    int64_t param_begin;     // first element of the parameter in the piece
    int64_t block_begin;     // where it sits in the rank's block
    int64_t length;
    Tensor tensor;  // a view of the updated tensor's slice: what the local optimizer steps
  };
  // A DDP bucket as ZeRO sees it: the bucket's buffer padded to N equal blocks, block r rank r's.
  struct Bucket {
    BucketInfo info;
    int64_t block = 0;  // elements per rank
    Tensor shard;       // (block): this rank's block of the averaged gradients (the wire dtype)
    Tensor gathered;    // (N · block): the updated tensors, all-gathered (their dtype)
  };
  void make_buckets(std::optional<DType> compression);
  void make_pieces(const std::vector<std::size_t>& group_of);
  std::shared_ptr<Work> reduce_scatter_hook(ProcessGroup& group, GradBucket& bucket);
  void bucket_reduced(std::size_t bucket);
  void all_gather_parameters();
  void take_shard_of(const StateDict& whole);

  DistributedDataParallel& ddp_;
  Optimizer& like_;
  ProcessGroup& group_;
  std::vector<Tensor> updated_;             // by DDP trained-parameter index; undefined: none
  std::vector<std::size_t> like_of_param_;  // by DDP trained-parameter index; npos: none
  std::vector<Bucket> buckets_;             // DDP's, in its order
  std::vector<Piece> pieces_;               // in local-optimizer order
  std::vector<std::vector<Tensor>> piece_groups_;
  std::unique_ptr<Optimizer> local_;  // null when this rank's blocks hold no parameter
  std::optional<StateDict> consolidated_;
  int64_t model_elements_ = 0;
};

}  // namespace rg::parallel
