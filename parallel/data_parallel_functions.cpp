#include "parallel/data_parallel_functions.h"

#include "core/autograd.h"
#include "core/trace.h"

namespace rg::parallel {

namespace {

// Where a phase's seconds go: the times' member, or nowhere without times.
double* counter(const std::shared_ptr<DataParallelTimes>& times,
                double DataParallelTimes::*member) {
  return times ? &((*times).*member) : nullptr;
}

// A tensor sharing t's memory but not its autograd history: what a "copy" to t's own device
// returns, so that recording it as an output never touches t's own grad_fn.
Tensor alias(const Tensor& t) {
  return t.detach();
}

class ScatterBackward : public Node {  // = gather
 public:
  ScatterBackward(Device target, std::shared_ptr<DataParallelTimes> times)
      : target_(target), times_(std::move(times)) {}
  std::string name() const override { return "ScatterBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const trace::Span span("dp", "scatter's backward",
                           counter(times_, &DataParallelTimes::backward));
    return {gather(g, target_)};
  }

 private:
  Device target_;
  std::shared_ptr<DataParallelTimes> times_;
};

class GatherBackward : public Node {  // = scatter
 public:
  GatherBackward(std::vector<int64_t> sizes, std::vector<Device> devices,
                 std::shared_ptr<DataParallelTimes> times)
      : sizes_(std::move(sizes)), devices_(std::move(devices)), times_(std::move(times)) {}
  std::string name() const override { return "GatherBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const trace::Span span("dp", "gather's backward",
                           counter(times_, &DataParallelTimes::backward));
    return scatter(g[0], sizes_, devices_);
  }

 private:
  std::vector<int64_t> sizes_;
  std::vector<Device> devices_;
  std::shared_ptr<DataParallelTimes> times_;
};

class BroadcastBackward : public Node {  // = reduce-add
 public:
  BroadcastBackward(std::vector<Device> sources, int replicas,
                    std::shared_ptr<DataParallelTimes> times)
      : sources_(std::move(sources)), replicas_(replicas), times_(std::move(times)) {}
  std::string name() const override { return "BroadcastBackward"; }
  // g: replica-major, g[r * P + i] for tensor i of replica r.
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const trace::Span span("dp", "broadcast's backward: reduce-add",
                           counter(times_, &DataParallelTimes::reduce));
    const std::size_t count = sources_.size();
    std::vector<Tensor> sums(count);
    for (std::size_t i = 0; i < count; ++i) {
      if (!next_edges[i].node) continue;
      std::vector<Tensor> parts;
      for (int r = 0; r < replicas_; ++r)
        parts.push_back(g[static_cast<std::size_t>(r) * count + i]);
      sums[i] = reduce_add(parts, sources_[i]);
    }
    return sums;
  }

 private:
  std::vector<Device> sources_;
  int replicas_;
  std::shared_ptr<DataParallelTimes> times_;
};

}  // namespace

std::vector<int64_t> split_sizes(int64_t batch, int n) {
  RG_CHECK(n >= 1 && batch >= 0, "split_sizes: ", batch, " samples over ", n, " devices");
  std::vector<int64_t> sizes(static_cast<std::size_t>(n), batch / n);
  for (int64_t r = 0; r < batch % n; ++r) ++sizes[static_cast<std::size_t>(r)];
  return sizes;
}

std::vector<Tensor> scatter(const Tensor& x, const std::vector<int64_t>& sizes,
                            const std::vector<Device>& devices,
                            std::shared_ptr<DataParallelTimes> times) {
  const trace::Span span("dp", "scatter", counter(times, &DataParallelTimes::scatter));
  RG_CHECK(sizes.size() == devices.size() && !sizes.empty(), "scatter: ", sizes.size(),
           " sizes for ", devices.size(), " devices");
  RG_CHECK(x.defined() && x.dim() >= 1, "scatter: expected a tensor with a batch dimension, got ",
           x.defined() ? x.describe() : std::string("an undefined tensor"));
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  RG_CHECK(total == x.size(0), "scatter: sizes add up to ", total, " but ", x.describe(), " has ",
           x.size(0), " samples");
  std::vector<Tensor> parts;
  {
    NoGradGuard no_grad;  // one node for the whole scatter, recorded below
    int64_t start = 0;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      const Tensor piece = x.narrow(0, start, sizes[r]);
      parts.push_back(devices[r] == x.device() ? alias(piece) : piece.contiguous().to(devices[r]));
      start += sizes[r];
    }
  }
  if (needs_grad({x})) {
    std::vector<Tensor*> outputs;
    for (Tensor& p : parts) outputs.push_back(&p);
    record(std::make_shared<ScatterBackward>(x.device(), std::move(times)), {x}, outputs);
  }
  return parts;
}

Tensor gather(const std::vector<Tensor>& parts, const Device& target,
              std::shared_ptr<DataParallelTimes> times) {
  const trace::Span span("dp", "gather", counter(times, &DataParallelTimes::gather));
  RG_CHECK(!parts.empty(), "gather: no parts");
  const Tensor& first = parts[0];
  Shape shape = first.shape();
  RG_CHECK(!shape.empty(), "gather: parts need a batch dimension, part 0 is ", first.describe());
  shape[0] = 0;
  std::vector<int64_t> sizes;
  std::vector<Device> devices;
  for (std::size_t r = 0; r < parts.size(); ++r) {
    const Tensor& p = parts[r];
    RG_CHECK(p.dim() == first.dim() && p.dtype() == first.dtype(), "gather: part ", r, " is ",
             p.describe(), " but part 0 is ", first.describe());
    for (int64_t d = 1; d < p.dim(); ++d)
      RG_CHECK(p.size(d) == first.size(d), "gather: part ", r, " is ", p.describe(),
               " but part 0 is ", first.describe(), " (they may differ in dim 0 only)");
    shape[0] += p.size(0);
    sizes.push_back(p.size(0));
    devices.push_back(p.device());
  }
  Tensor out = empty(shape, {first.dtype(), target});
  int64_t start = 0;
  for (std::size_t r = 0; r < parts.size(); ++r) {
    copy_strided(out.narrow(0, start, sizes[r]), parts[r]);  // a device-to-device copy
    start += sizes[r];
  }
  if (needs_grad(parts))
    record(std::make_shared<GatherBackward>(sizes, devices, std::move(times)), parts, {&out});
  return out;
}

std::vector<std::vector<Tensor>> broadcast(const std::vector<Tensor>& tensors,
                                           const std::vector<Device>& devices,
                                           std::shared_ptr<DataParallelTimes> times) {
  const trace::Span span("dp", "broadcast", counter(times, &DataParallelTimes::replicate));
  std::vector<std::vector<Tensor>> replicas(devices.size());
  std::vector<Device> sources;
  {
    NoGradGuard no_grad;  // one node for the whole broadcast, recorded below
    for (std::size_t r = 0; r < devices.size(); ++r)
      for (const Tensor& t : tensors)
        replicas[r].push_back(t.device() == devices[r] ? alias(t) : t.to(devices[r]));
  }
  for (const Tensor& t : tensors) sources.push_back(t.device());
  if (needs_grad(tensors)) {
    std::vector<Tensor*> outputs;
    for (auto& replica : replicas)
      for (Tensor& t : replica) outputs.push_back(&t);
    record(std::make_shared<BroadcastBackward>(std::move(sources), static_cast<int>(devices.size()),
                                               std::move(times)),
           tensors, outputs);
  }
  return replicas;
}

Tensor reduce_add(const std::vector<Tensor>& parts, const Device& target) {
  RG_CHECK(!parts.empty(), "reduce_add: no parts");
  NoGradGuard no_grad;
  Tensor sum = parts[0].device() == target ? parts[0].clone() : parts[0].to(target).contiguous();
  for (std::size_t r = 1; r < parts.size(); ++r) {
    RG_CHECK(parts[r].shape() == sum.shape() && parts[r].dtype() == sum.dtype(),
             "reduce_add: part ", r, " is ", parts[r].describe(), " but part 0 is ",
             parts[0].describe());
    add_inplace(sum, parts[r].to(target));
  }
  return sum;
}

}  // namespace rg::parallel
