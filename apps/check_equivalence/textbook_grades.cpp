#include "apps/check_equivalence/textbook_grades.h"

#include <cmath>
#include <map>

#include "apps/check_equivalence/training.h"
#include "core/autograd.h"
#include "core/rng.h"
#include "nn/layers.h"
#include "ops/ops.h"
#include "optim/loss_scaler.h"
#include "parallel/data_parallel.h"
#include "parallel/ring_allreduce.h"
#include "parallel/sync_batch_norm.h"
#include "parallel/textbook/textbook.h"
#include "parallel/thread_group.h"
#include "parallel/thread_transport.h"
#include "parallel/zero.h"

namespace rg::apps {

using namespace rg::parallel;

namespace {

std::string ranks_text(int n) {
  return std::to_string(n) + (n == 1 ? " rank" : " ranks");
}

// ---- 1. the ring ------------------------------------------------------------------------------
Graded grade_ring() {
  Graded g{"the textbook ring allreduce (f32 sums) on 2, 3 and 5 ranks, sizes 0 to 1000",
           {},
           DType::f32};
  for (int n : {2, 3, 5}) {
    State mine, real, one_device;
    for (int64_t size : {0, 1, 4, 7, 100, 1000}) {
      std::vector<Tensor> inputs;
      Tensor sum64 = zeros({size}, {.dtype = DType::f64});
      for (int r = 0; r < n; ++r) {
        manual_seed(static_cast<uint64_t>(100 * r + size));
        inputs.push_back(randn({size}));
        sum64 = sum64 + inputs.back().to(DType::f64);
      }
      std::vector<Tensor> a(static_cast<std::size_t>(n)), b(a.size());
      Wires wires_a(n), wires_b(n);
      run_ranks(n, [&](int r) {
        const auto k = static_cast<std::size_t>(r);
        a[k] = inputs[k].clone();
        ThreadTransport ta(wires_a, r);
        textbook::ring_allreduce(ta, a[k].data<float>(), size);
        b[k] = inputs[k].clone();
        ThreadTransport tb(wires_b, r);
        ring_allreduce(tb, b[k].data_ptr(), size, DType::f32, ReduceOp::sum, {});
      });
      for (int r = 0; r < n; ++r) {
        const std::string key = "size " + std::to_string(size) + ", rank " + std::to_string(r);
        mine[key] = a[static_cast<std::size_t>(r)];
        real[key] = b[static_cast<std::size_t>(r)];
        one_device[key] = sum64.to(DType::f32);
      }
    }
    g.runs.push_back({.name = "textbook ring, " + ranks_text(n),
                      .reference = "the sum on one device (f64, rounded)",
                      .state = mine,
                      .expected = one_device,
                      .why = "the ring adds in another order than one device's loop"});
    g.runs.push_back({.name = "textbook ring, " + ranks_text(n),
                      .reference = "the real ring (parallel/ring_allreduce.cpp)",
                      .state = mine,
                      .expected = real,
                      .why = "bit-exact when its chunks are the real ring's (the first n mod N "
                             "one longer): then every sum is added in the same order"});
  }
  return g;
}

// ---- 2. DataParallel and 3. DDP: K steps of check_equivalence's net --------------------------
const Setup kSetup{.steps = 3, .global_batch = 12, .dtype = DType::f64};

Graded grade_data_parallel() {
  Graded g{
      "the textbook DataParallel: 3 SGD steps of check_equivalence's net, batch 12, f64, "
      "over 2 and 3 logical cpu devices",
      {},
      DType::f64};
  for (int n : {2, 3}) {
    std::vector<Device> devices;
    for (int r = 0; r < n; ++r) devices.push_back(Device::cpu(r));
    const auto shares = split_sizes(kSetup.global_batch, n);
    auto make = [] { return make_net(kSetup.dtype, Device::cpu()); };
    auto textbook_dp = textbook::data_parallel(make(), make, devices);
    const State mine = train_steps(*textbook_dp, textbook_dp->parameters(), kSetup, 0, 12);
    DataParallel real(make(), make, devices);
    const State theirs = train_steps(real, real.parameters(), kSetup, 0, 12);
    const std::string name = "textbook DataParallel, " + std::to_string(n) + " devices";
    g.runs.push_back(
        {.name = name,
         .reference = "one device, BatchNorm per share",
         .state = mine,
         .expected = train_share_by_share(kSetup, shares),
         .why = "DataParallel's BatchNorm normalises each share by its own statistics"});
    g.runs.push_back({.name = name,
                      .reference = "the real DataParallel (parallel/data_parallel.cpp)",
                      .state = mine,
                      .expected = theirs,
                      .why = "the same shares; the reduce-add may sum in another order"});
  }
  return g;
}

// Each rank of a ThreadGroup trains its share; rank 0's final state. The nets are made before
// the threads start (their initialisation draws from the one default generator).
template <class Wrap>
State train_on_ranks(int n, Wrap wrap) {
  auto groups = ThreadGroup::create(n);
  const int64_t share = kSetup.global_batch / n;
  std::vector<std::shared_ptr<nn::Module>> nets;
  for (int r = 0; r < n; ++r) nets.push_back(make_net(kSetup.dtype, Device::cpu()));
  State state;
  run_ranks(n, [&](int r) {
    auto group = groups[static_cast<std::size_t>(r)];
    std::shared_ptr<nn::Module> model = wrap(nets[static_cast<std::size_t>(r)], group);
    const State mine = train_steps(*model, model->parameters(), kSetup, r * share, share);
    if (r == 0) state = mine;
  });
  return state;
}

Graded grade_ddp() {
  Graded g{
      "the textbook DDP with its allreduce_average hook: 3 SGD steps of check_equivalence's "
      "net, batch 12, f64, on 2 and 3 ranks (threads); rank 0's state",
      {},
      DType::f64};
  for (int n : {2, 3}) {
    const State mine = train_on_ranks(n, [](std::shared_ptr<nn::Module> net, auto group) {
      return textbook::ddp(net, group, 512, textbook::allreduce_average);
    });
    const State theirs = train_on_ranks(n, [](std::shared_ptr<nn::Module> net, auto group) {
      return std::make_shared<DistributedDataParallel>(
          net, group, DDPOptions{.bucket_cap_bytes = 512, .first_bucket_bytes = 512});
    });
    const std::string name = "textbook DDP, " + ranks_text(n);
    g.runs.push_back({.name = name,
                      .reference = "one device, BatchNorm per share",
                      .state = mine,
                      .expected = train_share_by_share(
                          kSetup, std::vector<int64_t>(static_cast<std::size_t>(n), 12 / n)),
                      .why = "each rank's BatchNorm normalises its share by its own statistics"});
    g.runs.push_back({.name = name,
                      .reference = "the real DDP (parallel/ddp.cpp)",
                      .state = mine,
                      .expected = theirs,
                      .why = "the same averages; bit-exact when the buckets match the real ones"});
  }
  return g;
}

// ---- 4. SyncBatchNorm -------------------------------------------------------------------------
Graded grade_sync_bn() {
  Graded g{
      "the textbook SyncBatchNorm: forward and backward of x (12, 4, 3, 3), f64, split over "
      "2, 3 and 4 ranks (threads)",
      {},
      DType::f64};
  manual_seed(7);
  const Tensor x = randn({12, 4, 3, 3}, {.dtype = DType::f64}) * 3.0 + 1.5;
  const Tensor w = randn({4}, {.dtype = DType::f64}), b = randn({4}, {.dtype = DType::f64});
  const Tensor gy = randn({12, 4, 3, 3}, {.dtype = DType::f64});
  auto leaf = [](const Tensor& t) { return t.clone().set_requires_grad(true); };
  // One device, the whole batch.
  State whole;
  {
    Tensor xl = leaf(x), wl = leaf(w), bl = leaf(b);
    const Tensor y = batch_norm(xl, wl, bl, zeros({4}, {.dtype = DType::f64}),
                                ones({4}, {.dtype = DType::f64}), BatchNormMode::train, 0.1, 1e-5);
    sum(y * gy).backward();
    whole = {{"y", y.detach()},
             {"x.grad", xl.grad()},
             {"weight.grad", wl.grad()},
             {"bias.grad", bl.grad()}};
  }
  using Norm = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&,
                                    std::shared_ptr<ProcessGroup>)>;
  auto on_ranks = [&](int n, const Norm& norm) {
    auto groups = ThreadGroup::create(n);
    const std::vector<int64_t> shares = split_sizes(12, n);
    std::vector<Tensor> ys(shares.size()), gxs(shares.size());
    std::vector<Tensor> gws(shares.size()), gbs(shares.size());
    run_ranks(n, [&](int r) {
      const auto k = static_cast<std::size_t>(r);
      int64_t first = 0;
      for (std::size_t q = 0; q < k; ++q) first += shares[q];
      Tensor xl = leaf(x.narrow(0, first, shares[k])), wl = leaf(w), bl = leaf(b);
      const Tensor y = norm(xl, wl, bl, groups[k]);
      sum(y * gy.narrow(0, first, shares[k])).backward();
      ys[k] = y.detach();
      gxs[k] = xl.grad();
      gws[k] = wl.grad();
      gbs[k] = bl.grad();
    });
    // The parameters' gradients are each rank's share of the sum (DDP then adds them up).
    Tensor gw = gws[0], gb = gbs[0];
    for (std::size_t k = 1; k < gws.size(); ++k) {
      gw = gw + gws[k];
      gb = gb + gbs[k];
    }
    return State{{"y", cat(ys)}, {"x.grad", cat(gxs)}, {"weight.grad", gw}, {"bias.grad", gb}};
  };
  for (int n : {2, 3, 4}) {
    const State mine = on_ranks(n, [](const Tensor& xr, const Tensor& wr, const Tensor& br,
                                      std::shared_ptr<ProcessGroup> group) {
      return textbook::sync_batch_norm(xr, wr, br, 1e-5, group);
    });
    const State theirs = on_ranks(n, [](const Tensor& xr, const Tensor& wr, const Tensor& br,
                                        std::shared_ptr<ProcessGroup> group) {
      return parallel::sync_batch_norm(xr, wr, br, zeros({4}, {.dtype = DType::f64}),
                                       ones({4}, {.dtype = DType::f64}), 0.1, 1e-5, group);
    });
    const std::string name = "textbook SyncBN, " + ranks_text(n);
    g.runs.push_back({.name = name,
                      .reference = "BatchNorm on one device, whole batch",
                      .state = mine,
                      .expected = whole,
                      .why = "statistics from per-rank sums, not one pass: rounding"});
    g.runs.push_back({.name = name,
                      .reference = "the real SyncBatchNorm (parallel/sync_batch_norm.cpp)",
                      .state = mine,
                      .expected = theirs,
                      .why = "the real one merges counts, means and M2 (Chan): rounding"});
  }
  return g;
}

// ---- 5. the loss scaler -----------------------------------------------------------------------
// 12 steps of SGD on loss = Σ c_t·p in f32 with a dynamic scaler (initial scale 2^10, growth
// every 3 clean steps); in steps 3, 4 and 9 one coefficient is 3e38, so that S·c overflows.
Graded grade_loss_scaler() {
  Graded g{
      "the textbook loss scaler: 12 steps, overflows at steps 3, 4 and 9, initial scale 1024, "
      "growth every 3 clean steps",
      {},
      DType::f32};
  auto coefficients = [](int step) {
    std::vector<float> c{0.5f, -0.25f, 1e-6f * static_cast<float>(step + 1), 2.0f, 0.125f};
    if (step == 3 || step == 4 || step == 9) c[1] = 3e38f;
    return from_vector(c, {5});
  };
  const Tensor start = from_vector(std::vector<float>{1, 2, 3, 4, 5}, {5});
  auto run = [&](auto&& step_with_scaler) {
    Tensor p = start.clone().set_requires_grad(true);
    SGD sgd({p}, {.lr = 0.1});
    std::vector<float> scales, skipped;
    for (int step = 0; step < 12; ++step) {
      sgd.zero_grad();
      const auto [scale, skip] = step_with_scaler(p, sgd, sum(coefficients(step) * p), step);
      scales.push_back(static_cast<float>(scale));
      skipped.push_back(skip ? 1.f : 0.f);
    }
    return State{{"p", p.detach()},
                 {"scale after each step", from_vector(scales, {12})},
                 {"skipped", from_vector(skipped, {12})}};
  };
  auto textbook_scaler = textbook::loss_scaler(1024, 3);
  const State mine = run([&](Tensor& p, SGD& sgd, const Tensor& loss, int) {
    textbook_scaler->scale(loss).backward();
    const bool found_inf = textbook_scaler->unscale({p});
    if (!found_inf) sgd.step();
    textbook_scaler->update(found_inf);
    return std::pair{textbook_scaler->scale_value(), found_inf};
  });
  LossScaler real({.init_scale = 1024, .growth_interval = 3});
  const State theirs = run([&](Tensor&, SGD& sgd, const Tensor& loss, int) {
    real.scale(loss).backward();
    const bool stepped = real.step(sgd);
    real.update();
    return std::pair{real.scale_value(), !stepped};
  });
  // One device without a scaler: the same SGD on the true gradients, the poisoned steps left out.
  const State plain = run([&](Tensor&, SGD& sgd, const Tensor& loss, int step) {
    loss.backward();
    const bool poisoned = step == 3 || step == 4 || step == 9;
    if (!poisoned) sgd.step();
    return std::pair{0.0, poisoned};
  });
  State plain_params = mine, plain_expected = plain;
  plain_params.erase("scale after each step");
  plain_expected.erase("scale after each step");
  g.runs.push_back({.name = "textbook loss scaler",
                    .reference = "f32 SGD without scaling, the overflowing steps skipped",
                    .state = plain_params,
                    .expected = plain_expected,
                    .exact = true,
                    .why = "a power-of-two scale is exact both ways"});
  g.runs.push_back({.name = "textbook loss scaler",
                    .reference = "the real LossScaler (optim/loss_scaler.cpp), its scale each step",
                    .state = mine,
                    .expected = theirs,
                    .exact = true,
                    .why = "the same rule: halve after an overflow, double after 3 clean steps"});
  return g;
}

// ---- 6. ZeRO-1 --------------------------------------------------------------------------------
// conv(3→8) ReLU → global average pool → linear(8→10), no BatchNorm: N ranks × B/N are one
// device with batch B exactly (up to rounding).
std::shared_ptr<nn::Module> make_plain_net() {
  manual_seed(3);
  auto net = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(3, 8, nn::Size2{3, 3}, nn::Conv2dOptions{.padding = {1, 1}}),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::AdaptiveAvgPool2d>(nn::Size2{1, 1}),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(8, 10)});
  net->to(DType::f64);
  return net;
}

Graded grade_zero() {
  Graded g{
      "the textbook ZeRO-1 (SGD, lr 0.05, momentum 0.9): 3 steps of a net without "
      "BatchNorm, batch 12, f64, on 2 and 3 ranks (threads); rank 0's parameters",
      {},
      DType::f64};
  constexpr double lr = 0.05, momentum = 0.9;
  auto train = [&](nn::Module& net, int64_t first, int64_t count, auto&& step) {
    for (int s = 0; s < 3; ++s) {
      const Batch b = batch(12, s, DType::f64, Device::cpu());
      for (const Tensor& p : net.parameters()) Tensor(p).zero_grad();
      cross_entropy(net.forward(b.images.narrow(0, first, count)), b.labels.narrow(0, first, count))
          .backward();
      step();
    }
    return net.state_dict();
  };
  auto one = make_plain_net();
  SGD plain(one->parameters(), {.lr = lr, .momentum = momentum});
  const State whole = train(*one, 0, 12, [&] { plain.step(); });
  for (int n : {2, 3}) {
    auto groups = ThreadGroup::create(n);
    State mine, theirs;
    int64_t elements = 0, total = 0;
    std::vector<std::shared_ptr<nn::Module>> nets, ddp_nets;  // made before the threads start
    for (int r = 0; r < n; ++r) {
      nets.push_back(make_plain_net());
      ddp_nets.push_back(make_plain_net());
    }
    run_ranks(n, [&](int r) {
      auto group = groups[static_cast<std::size_t>(r)];
      const int64_t share = 12 / n;
      auto net = nets[static_cast<std::size_t>(r)];
      auto zero = textbook::zero1(net->parameters(), group, lr, momentum);
      const State a = train(*net, r * share, share, [&] { zero->step(); });
      auto ddp =
          std::make_shared<DistributedDataParallel>(ddp_nets[static_cast<std::size_t>(r)], group);
      SGD like(ddp->parameters(), {.lr = lr, .momentum = momentum});
      ZeroRedundancyOptimizer real(*ddp, like);
      const State b = train(*ddp, r * share, share, [&] { real.step(); });
      if (r != 0) return;
      mine = a;
      theirs = b;
      elements = zero->state_elements();
      for (const Tensor& p : net->parameters()) total += p.numel();
    });
    const std::string name = "textbook ZeRO-1, " + ranks_text(n);
    g.runs.push_back({.name = name,
                      .reference = "SGD on one device, whole batch",
                      .state = mine,
                      .expected = whole,
                      .why = "averaged gradients summed in another order: rounding"});
    g.runs.push_back({.name = name,
                      .reference = "the real ZeRO-1 (parallel/zero.cpp) over DDP",
                      .state = mine,
                      .expected = theirs,
                      .why = "the real one cuts DDP's buckets into blocks, not one flat vector"});
    // The memory: a rank keeps ⌈P/N⌉ momentum values of the P parameters' elements.
    g.runs.push_back(
        {.name = name,
         .reference = "momentum values kept per rank: ⌈P/N⌉",
         .state = {{"state elements", full({1}, static_cast<double>(elements))}},
         .expected = {{"state elements", full({1}, static_cast<double>((total + n - 1) / n))}},
         .exact = true,
         .why = std::to_string(total) + " parameter elements over " + ranks_text(n)});
  }
  return g;
}

}  // namespace

Graded grade_textbook(const std::string& lesson) {
  if (lesson == "ring") return grade_ring();
  if (lesson == "data_parallel") return grade_data_parallel();
  if (lesson == "ddp") return grade_ddp();
  if (lesson == "sync_bn") return grade_sync_bn();
  if (lesson == "loss_scaler") return grade_loss_scaler();
  if (lesson == "zero") return grade_zero();
  std::string names;
  for (const std::string& l : kTextbookLessons) names += (names.empty() ? "" : ", ") + l;
  fail("check_equivalence --textbook: no lesson '", lesson, "' (the lessons: ", names, ")");
}

}  // namespace rg::apps
