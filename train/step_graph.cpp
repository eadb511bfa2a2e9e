#include "train/step_graph.h"

#include "core/config.h"
#include "core/error.h"

namespace rg::train {

namespace {

bool same_shape(const Tensor& a, const Tensor& b) {
  return a.defined() == b.defined() && (!a.defined() || a.shape() == b.shape());
}

// A copy of `t` on `device` that stays where it is (the graph's input), or undefined. A batch
// from the host DataLoader is copied over here, outside the capture: a host-to-device copy
// inside it would wait for the host.
Tensor own_copy(const Tensor& t, const Device& device) {
  if (!t.defined()) return Tensor();
  return t.device() == device ? t.detach().clone() : t.detach().to(device);
}

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.defined()) copy_strided(dst, src);
}

std::vector<bool> trainable(const Optimizer& optimizer) {
  std::vector<bool> flags;
  for (const Tensor& p : optimizer.all_params()) flags.push_back(p.requires_grad());
  return flags;
}

}  // namespace

// The CUDA build's graph (step_graph_cuda.cpp).
std::unique_ptr<CapturedWork> cuda_graph_on(const Device& device);

std::unique_ptr<CapturedWork> make_cuda_graph(const Device& device) {
  RG_CHECK(device.is_cuda(), "--cuda-graphs: a CUDA graph needs a GPU, got ", device);
  if constexpr (kWithCuda) return cuda_graph_on(device);
  fail("--cuda-graphs on ", device, ": this ringgrad was built without CUDA");
}

StepGraph::StepGraph(const Device& device, int64_t warm_up_steps,
                     std::function<std::unique_ptr<CapturedWork>()> make_work)
    : device_(device), warm_up_steps_(warm_up_steps), make_work_(std::move(make_work)) {
  RG_CHECK(warm_up_steps_ >= 1, "StepGraph: at least one eager step must come before the capture ",
           "(the optimizer's state is made there), got ", warm_up_steps_);
  if (!make_work_) make_work_ = [device] { return make_cuda_graph(device); };
}

StepGraph::~StepGraph() = default;

void StepGraph::check(const std::string& program, const Device& device, const MixedPrecision& amp,
                      bool one_replica, bool tracing, Optimizer& optimizer,
                      int64_t accumulate_steps) {
  const std::string what = program + ": --cuda-graphs";
  RG_CHECK(accumulate_steps == 1, what, " captures the step of one batch; --accumulate-steps ",
           accumulate_steps, " makes a step of ", accumulate_steps,
           " batches (their forward and backward passes are not captured): drop one of the two");
  RG_CHECK(device.is_cuda(), what, " captures the step on a GPU; the device is ", device);
  RG_CHECK(!amp.scaler(), what,
           ": the loss scaler reads its verdict on the host every step, which a captured step "
           "cannot; train in bf16 (no scaler by default) or with --loss-scale none");
  RG_CHECK(one_replica, what,
           " captures one process's step on one GPU; DataParallel, DDP and ZeRO are not captured");
  RG_CHECK(!tracing, what, ": --trace times the step's parts with host-read events; not both");
  optimizer.keep_lr_on_device(device);
}

StepOutput StepGraph::step(const data::Batch& batch, Optimizer& optimizer,
                           const std::function<StepOutput(const data::Batch&)>& eager) {
  ++steps_;
  optimizer.write_lr_to_device();  // every step, eager or replayed, reads its rate there
  if (work_ && trainable(optimizer) != trainable_) {
    // Another set of parameters trains: another step. The last replay's outputs go first; the
    // graph holds their memory until it is destroyed, after that replay.
    outputs_ = {};
    inputs_ = {};
    work_.reset();
  }
  const bool fits = !work_ || (same_shape(batch.images, inputs_.images) &&
                               same_shape(batch.labels, inputs_.labels) &&
                               same_shape(batch.masks, inputs_.masks));
  if (steps_ <= warm_up_steps_ || !fits) {
    ++eager_steps_;
    return eager(batch);
  }
  if (!work_) {
    inputs_ = {own_copy(batch.images, device_), own_copy(batch.labels, device_),
               own_copy(batch.masks, device_), batch.indices};
    trainable_ = trainable(optimizer);
    std::unique_ptr<CapturedWork> work = make_work_();
    work->capture([&] { outputs_ = eager(inputs_); });
    work_ = std::move(work);
  } else {
    copy_into(inputs_.images, batch.images);
    copy_into(inputs_.labels, batch.labels);
    copy_into(inputs_.masks, batch.masks);
  }
  work_->replay();
  ++replays_;
  StepOutput out = outputs_;
  out.samples = batch.images.size(0);
  return out;
}

}  // namespace rg::train
