#include "apps/check_equivalence/training.h"

#include <map>

#include "core/autograd.h"
#include "core/rng.h"
#include "nn/layers.h"
#include "ops/ops.h"
#include "parallel/zero.h"

namespace rg::apps {

using parallel::DistributedDataParallel;
using parallel::ZeroRedundancyOptimizer;

namespace {
Tensor loss_of(const Tensor& out, const Tensor& labels, const Perturbation& p) {
  Tensor loss = cross_entropy(out, labels);
  if (p.count > 0) loss = add(loss, mul(sum(out.narrow(0, p.first, p.count)), p.eps));
  return loss;
}
}  // namespace

std::shared_ptr<nn::Module> make_net(DType dtype, const Device& device, Norms norms) {
  manual_seed(1);  // every process and every replica starts from the same weights
  std::vector<std::shared_ptr<nn::Module>> layers{
      std::make_shared<nn::Conv2d>(3, 8, nn::Size2{3, 3},
                                   nn::Conv2dOptions{.padding = {1, 1}, .bias = nn::Bias::without}),
      std::make_shared<nn::BatchNorm2d>(8),
      std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Conv2d>(
          8, 16, nn::Size2{3, 3},
          nn::Conv2dOptions{.stride = {2, 2}, .padding = {1, 1}, .bias = nn::Bias::without}),
      std::make_shared<nn::BatchNorm2d>(16),
      std::make_shared<nn::ReLU>(),
      std::make_shared<nn::AdaptiveAvgPool2d>(nn::Size2{1, 1}),
      std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(16, 10)};
  if (norms == Norms::none)
    std::erase_if(layers, [](const auto& m) { return m->type_name() == "BatchNorm2d"; });
  auto net = std::make_shared<nn::Sequential>(std::move(layers));
  net->to(dtype);
  net->to(device);
  return net;
}

Batch batch(int64_t size, int step, DType dtype, const Device& device) {
  // The values randn and rand draw after manual_seed(1000 + step), computed from the counters
  // themselves (core/rng.h), so that rank threads may call it at once.
  const uint64_t seed = 1000 + static_cast<uint64_t>(step);
  std::vector<double> pixels(static_cast<std::size_t>(size * 3 * 8 * 8));
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = philox_normal(seed, 0, i);
  std::vector<int64_t> labels(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int64_t>(philox_uniform_f64(seed, 1, i) * 10);
  return {from_vector(pixels, {size, 3, 8, 8}, {.dtype = dtype}).to(device),
          from_vector(labels, {size}, {DType::i64}).to(device)};
}

SGD make_sgd(std::vector<Tensor> params) {
  return SGD(std::move(params), {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4});
}

State train_steps(nn::Module& model, std::vector<Tensor> params, const Setup& s, int64_t first,
                  int64_t count, const Perturbation& perturb, DistributedDataParallel* zero) {
  SGD sgd = make_sgd(std::move(params));
  std::unique_ptr<ZeroRedundancyOptimizer> sharded;
  if (zero) sharded = std::make_unique<ZeroRedundancyOptimizer>(*zero, sgd);
  Optimizer& opt = sharded ? static_cast<Optimizer&>(*sharded) : sgd;
  for (int step = 0; step < s.steps; ++step) {
    const Batch b = batch(s.global_batch, step, s.dtype, s.device);
    opt.zero_grad();
    loss_of(model.forward(b.images.narrow(0, first, count)), b.labels.narrow(0, first, count),
            perturb)
        .backward();
    opt.step();
  }
  return model.state_dict();
}

State train_share_by_share(const Setup& s, const std::vector<int64_t>& shares) {
  auto model = make_net(s.dtype, s.device);
  SGD opt = make_sgd(model->parameters());
  for (int step = 0; step < s.steps; ++step) {
    const Batch b = batch(s.global_batch, step, s.dtype, s.device);
    opt.zero_grad();
    std::vector<Tensor> outs;
    std::map<std::string, Tensor> share0_buffers;
    int64_t first = 0;
    for (std::size_t r = 0; r < shares.size(); ++r) {
      outs.push_back(model->forward(b.images.narrow(0, first, shares[r])));
      first += shares[r];
      if (r == 0)
        for (auto& [name, buffer] : model->named_buffers()) share0_buffers[name] = buffer.clone();
    }
    {
      NoGradGuard no_grad;
      for (auto& [name, member] : model->buffer_members())
        copy_strided(*member, share0_buffers.at(name));
    }
    cross_entropy(cat(outs), b.labels).backward();
    opt.step();
  }
  return model->state_dict();
}

}  // namespace rg::apps
