#pragma once
// DistributedDataParallel: one model replica per rank, gradients averaged across ranks during
// backward, so that N ranks × batch B/N train exactly like one process with batch B.
//
//   auto model = std::make_shared<DistributedDataParallel>(net, group);
//   SGD opt(model->parameters(), {...});
//   for (batch : loader) {
//     opt.zero_grad();
//     Tensor loss = cross_entropy(model->forward(x), y);
//     loss.backward();          // returns with every rank's gradients averaged, in place
//     opt.step();
//   }
//
// How it works (docs/learn/3-ddp.md is the lesson, with a traced timeline;
// parallel/textbook/ddp.cpp the one-page version):
// - Construction: rank 0's parameters and buffers are broadcast, so every replica starts equal
//   (after checking that every rank holds the same parameter shapes). The parameters are put
//   in buckets — in reverse registration order, because backward produces the last layer's
//   gradients first; the first bucket is small (1 MB) so that communication starts early, the
//   others up to 25 MB — each bucket one flat buffer, and a post-accumulate hook is registered
//   on each parameter.
// - Gradients are views into the buckets (PyTorch's gradient_as_bucket_view): the first
//   backward copies each gradient into its bucket once and makes the bucket's slice the
//   parameter's .grad; from then on backward accumulates straight into the buckets and
//   zero_grad() zeroes them there, so a step copies nothing in or out.
// - Forward: with grad mode on (and outside no_sync()) it marks the iteration as one to
//   synchronise; in training it first broadcasts rank 0's buffers (BatchNorm's running stats)
//   so the replicas stay alike — except SyncBatchNorm's, equal already. A forward under
//   NoGradGuard communicates nothing and leaves a pending iteration alone.
// - Backward: each hook marks its parameter ready; when all of a bucket's parameters are
//   ready, the bucket goes to the communication hook (allreduce_hook unless another is
//   registered), which starts its reduction while backward goes on with earlier layers.
//   Buckets go in bucket order on every rank (a bucket ready early waits for the ones before
//   it), so the ranks issue their collectives in the same order.
// - End of backward: the first hook of the iteration queued an autograd callback
//   (queue_backward_callback) that the engine runs when backward has finished. It waits for
//   the buckets' reductions. So when loss.backward() returns the gradients are synchronised:
//   there is no finalize() to forget before optimizer.step().
// - A parameter that got no gradient would leave its bucket waiting forever. With
//   UnusedParameters::error (the default) the callback throws from backward() naming every
//   such parameter. With UnusedParameters::allow, forward walks the autograd graph and marks
//   the parameters it cannot reach as ready straight away (so the buckets still go early),
//   they count as zero, and a parameter no rank used keeps an undefined gradient (the optimizer
//   skips it, as it would in one process).
//
// state_dict(), parameters(), named_parameters() are the wrapped module's, with no prefix: a
// checkpoint saved through DDP loads into the plain model.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "parallel/comm_hooks.h"
#include "parallel/process_group.h"

namespace rg::parallel {

enum class UnusedParameters { error, allow };
enum class BroadcastBuffers { forward, off };  // PyTorch's broadcast_buffers = true / false

struct DDPOptions {
  int64_t bucket_cap_bytes = int64_t{25} << 20;
  int64_t first_bucket_bytes = int64_t{1} << 20;
  UnusedParameters unused_parameters = UnusedParameters::error;
  BroadcastBuffers broadcast_buffers = BroadcastBuffers::forward;
};

// What one bucket holds, for hooks, tests and the lessons.
struct BucketInfo {
  std::vector<std::string> params;       // in the order their gradients are expected
  std::vector<std::size_t> param_index;  // into trained_parameters()
  std::vector<int64_t> offsets;          // of each parameter in the bucket's buffer
  int64_t numel = 0;                     // the gradients' elements (the buffer may be padded)
  DType dtype = DType::f32;              // of the gradients and the buffer
};

class DistributedDataParallel : public nn::Module {
 public:
  // group: nullptr means the world (parallel/world.h). A collective: every rank constructs
  // its DDP at the same point.
  DistributedDataParallel(std::shared_ptr<nn::Module> module,
                          std::shared_ptr<ProcessGroup> group = nullptr, DDPOptions options = {});
  ~DistributedDataParallel() override;

  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "DistributedDataParallel"; }
  std::string extra_repr() const override;
  nn::Module& module() const { return *module_; }
  const std::shared_ptr<nn::Module>& module_ptr() const { return module_; }
  ProcessGroup& group() const;
  const DDPOptions& options() const;

  // Replaces how a bucket is reduced (PyTorch's register_comm_hook): allreduce_hook by default;
  // fp16_compress_hook, bf16_compress_hook, ZeRO's reduce-scatter, or a learner's own
  // (comm_hooks.h says what a hook must do). `pad_to`: every bucket's buffer is padded with
  // zeros to a multiple of it (a reduce-scatter cuts the buffer into equal blocks). Between
  // iterations only; every rank registers the same hook.
  void register_comm_hook(CommHook hook, int64_t pad_to = 1);
  bool has_comm_hook() const;  // one other than the default was registered

  // Gradient accumulation: forwards run while the guard lives do not synchronise their
  // backward; gradients accumulate locally, and the first synchronised backward after them
  // averages the accumulated sums.
  //   { auto guard = model.no_sync(); model(x1) ... backward(); }   model(x2) ... backward();
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp) : ddp_(ddp), previous_(ddp.no_sync_) {
      ddp.no_sync_ = true;
    }
    ~NoSync() { ddp_.no_sync_ = previous_; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  std::vector<BucketInfo> buckets() const;
  // Bucket b's buffer (after register_comm_hook's padding): the gradients' views live in it.
  const Tensor& bucket_buffer(std::size_t b) const;
  // How the last synchronised backward went.
  struct IterationStats {
    bool synchronized = false;  // the gradients were averaged
    // Launched before backward ended: from its hooks (or at forward, all of whose parameters
    // were unused) — what communication could overlap.
    int buckets_launched_in_hooks = 0;
    int buckets = 0;
    double backward_wait_ms = 0;  // waiting for the reductions after backward ended
  };
  IterationStats last_iteration() const;

  // The parameters DDP synchronises (trainable, each once, registration order) and their names.
  const std::vector<Tensor>& trained_parameters() const;
  const std::vector<std::string>& trained_parameter_names() const;

  struct Reducer;  // the bucket state the hooks share (ddp.cpp)

 private:
  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<Reducer> reducer_;
  bool no_sync_ = false;
};

}  // namespace rg::parallel
