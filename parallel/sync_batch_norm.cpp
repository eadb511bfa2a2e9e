#include "parallel/sync_batch_norm.h"

#include "core/autograd.h"
#include "core/trace.h"
#include "nn/layers.h"
#include "ops/batch_norm/batch_norm.h"
#include "parallel/world.h"

namespace rg::parallel {

namespace {

std::shared_ptr<ProcessGroup> group_or_world(std::shared_ptr<ProcessGroup> group) {
  return group ? std::move(group) : world_ptr();
}

// ---- text: the two exchanges as the timeline and --explain show them, the input's checks ----
std::string forward_label(int64_t per_rank) {
  return "SyncBatchNorm forward: allgather of (n, mean, M2) (" + std::to_string(per_rank) +
         " x f64 per rank)";
}
std::string backward_label(int64_t c) {
  return "SyncBatchNorm backward: allreduce of Σgy, Σgy·x̂ (" + std::to_string(2 * c) + " x f64)";
}
void check_input(const Tensor& x, const ProcessGroup* group) {
  RG_CHECK(group != nullptr, "sync_batch_norm: the process group is null");
  RG_CHECK(x.defined() && x.dim() >= 2, "sync_batch_norm: input must be (N, C, *), got ",
           x.describe());
}
void check_count(const BatchNormStats& stats, const Tensor& x, const ProcessGroup& group) {
  RG_CHECK(stats.count > 1, "sync_batch_norm: expected more than 1 value per channel over all ",
           group.size(), " ranks when training, got ", stats.count, " (this rank's input is ",
           x.describe(), ")");
}

class SyncBatchNormBackward : public Node {
 public:
  SyncBatchNormBackward(Tensor x, Tensor weight, Tensor mean, Tensor invstd, int64_t count,
                        std::shared_ptr<ProcessGroup> group)
      : x_(std::move(x)),
        weight_(std::move(weight)),
        mean_(std::move(mean)),
        invstd_(std::move(invstd)),
        count_(count),
        group_(std::move(group)) {}
  std::string name() const override { return "SyncBatchNormBackward"; }

  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gy = g[0].contiguous();
    const int64_t c = x_.size(1);
    // This rank's Σ gy and Σ gy·x̂ (f64, (C) each).
    const BatchNormGradSums local = batch_norm_backward_reduce(gy, x_, mean_, invstd_);
    Tensor gw, gb, gx;
    // The parameters' dtype: f32 beside a 16-bit input in mixed precision (as in BatchNorm).
    const DType param_dtype = weight_.defined() ? weight_.dtype() : x_.dtype();
    if (next_edges[1].node) gw = local.sum_dy_xhat.to(param_dtype);
    if (next_edges[2].node) gb = local.sum_dy.to(param_dtype);
    // Every rank joins the allreduce, whatever it needs: a rank that skipped it would leave
    // the others waiting. One message for both sums.
    Tensor both = empty({2 * c}, {DType::f64});
    copy_strided(both.narrow(0, 0, c), local.sum_dy);
    copy_strided(both.narrow(0, c, c), local.sum_dy_xhat);
    trace::Span span("sync_bn", [&] { return backward_label(c); });
    group_->allreduce(both, ReduceOp::sum)->wait();
    span.finish();
    if (next_edges[0].node) {
      // The exchange is in host memory; the sums join x on its device.
      const BatchNormGradSums global{both.narrow(0, 0, c).to(x_.device()),
                                     both.narrow(0, c, c).to(x_.device())};
      gx = batch_norm_backward_elemt(gy, x_, weight_, mean_, invstd_, global, count_);
    }
    return {gx, gw, gb};
  }
  void release_saved() override { x_ = weight_ = mean_ = invstd_ = Tensor(); }

 private:
  Tensor x_, weight_, mean_, invstd_;  // x contiguous; mean, invstd (C) f64, global
  int64_t count_;                      // values per channel over all ranks
  std::shared_ptr<ProcessGroup> group_;
};

// Every rank's (count, mean, M2), gathered in one message of 1 + 2C f64 values per rank.
std::vector<BatchNormStats> gather_stats(ProcessGroup& group, const BatchNormStats& mine,
                                         int64_t c) {
  const int64_t per_rank = 1 + 2 * c;
  Tensor packed = empty({per_rank}, {DType::f64});
  fill_(packed.narrow(0, 0, 1), static_cast<double>(mine.count));  // exact below 2^53
  copy_strided(packed.narrow(0, 1, c), mine.mean);
  copy_strided(packed.narrow(0, 1 + c, c), mine.m2);
  Tensor all = empty({per_rank * group.size()}, {DType::f64});
  const trace::Span span("sync_bn", [&] { return forward_label(per_rank); });
  group.allgather(all, packed)->wait();
  std::vector<BatchNormStats> parts;
  for (int r = 0; r < group.size(); ++r) {
    const Tensor row = all.narrow(0, r * per_rank, per_rank);
    parts.push_back({static_cast<int64_t>(row.narrow(0, 0, 1).item()),
                     row.narrow(0, 1, c).contiguous(), row.narrow(0, 1 + c, c).contiguous()});
  }
  return parts;
}

}  // namespace

Tensor sync_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, double momentum,
                       double eps, std::shared_ptr<ProcessGroup> group) {
  check_input(x, group.get());
  const int64_t c = x.size(1);
  const Tensor xc = x.detach().contiguous();
  BatchNormStats stats = batch_norm_combine_stats(gather_stats(*group, batch_norm_stats(xc), c));
  // Gathered and combined in host memory; the statistics join x on its device.
  stats.mean = stats.mean.to(x.device());
  stats.m2 = stats.m2.to(x.device());
  check_count(stats, x, *group);
  batch_norm_update_running_stats(running_mean, running_var, stats, momentum);
  const Tensor invstd = batch_norm_invstd(stats, eps);
  Tensor y = batch_norm_elemt(xc, weight, bias, stats.mean, invstd);
  if (needs_grad({x, weight, bias})) {
    auto node = std::make_shared<SyncBatchNormBackward>(saved(xc), saved(weight), stats.mean,
                                                        invstd, stats.count, std::move(group));
    record(node, {x, weight, bias}, {&y});
  }
  return y;
}

SyncBatchNorm::SyncBatchNorm(int64_t channels, std::shared_ptr<ProcessGroup> group, double momentum,
                             double eps)
    : nn::BatchNorm2d(channels, momentum, eps), group_(group_or_world(std::move(group))) {}

void SyncBatchNorm::set_group(std::shared_ptr<ProcessGroup> group) {
  RG_CHECK(group != nullptr, "SyncBatchNorm::set_group: the process group is null");
  group_ = std::move(group);
}

Tensor SyncBatchNorm::forward(const Tensor& x) {
  RG_CHECK(x.defined() && x.dim() >= 2, "SyncBatchNorm: expected input (N, C, *), got ",
           x.describe());
  if (!is_training())
    return batch_norm(x, weight_, bias_, running_mean_, running_var_, BatchNormMode::eval,
                      momentum_, eps_);
  nn::count_batch(num_batches_tracked_);
  return sync_batch_norm(x, weight_, bias_, running_mean_, running_var_, momentum_, eps_, group_);
}

std::shared_ptr<nn::Module> convert_sync_batchnorm(std::shared_ptr<nn::Module> module,
                                                   std::shared_ptr<ProcessGroup> group) {
  RG_CHECK(module != nullptr, "convert_sync_batchnorm: the module is null");
  group = group_or_world(std::move(group));
  if (std::dynamic_pointer_cast<SyncBatchNorm>(module)) return module;
  if (auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(module)) {
    auto sync =
        std::make_shared<SyncBatchNorm>(bn->weight_.size(0), group, bn->momentum_, bn->eps_);
    // Share, not copy: the parameters an optimizer already holds stay the ones trained.
    sync->weight_ = bn->weight_;
    sync->bias_ = bn->bias_;
    sync->running_mean_ = bn->running_mean_;
    sync->running_var_ = bn->running_var_;
    sync->num_batches_tracked_ = bn->num_batches_tracked_;
    sync->set_mode(bn->is_training() ? nn::Mode::train : nn::Mode::eval);
    return sync;
  }
  const auto children = module->children();  // a copy: replace_child edits the list
  for (const auto& [name, child] : children) {
    std::shared_ptr<nn::Module> converted = convert_sync_batchnorm(child, group);
    if (converted != child) module->replace_child(name, converted);
  }
  return module;
}

}  // namespace rg::parallel
