#include "apps/train_cifar/loop.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/autograd.h"
#include "ops/ops.h"
#include "parallel/horovod.h"

namespace rg::apps {
namespace fs = std::filesystem;

namespace {
std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The number of correct predictions (argmax over classes equal to the label) as a 0-d f64 on
// the logits' device, so that counting never waits for the device. With d = predicted − label
// (whole numbers, exact in f64), relu(1 − d²) is 1 where they agree and 0 elsewhere.
Tensor count_correct(const Tensor& logits, const Tensor& labels) {
  const Tensor predicted = max(logits.detach(), 1).indices.to(DType::f64);
  const Tensor d = sub(predicted, labels.to(DType::f64));
  return sum(relu(add(neg(mul(d, d)), 1.0)));
}

// The training loss and hits of an epoch, summed on the model's device. Reading them waits for
// the device, so the loop reads them only when the progress bar draws (every step on the CPU,
// where there is nothing to wait for and a diverging run stops at once) and at the end.
struct RunningMetrics {
  Tensor loss_sum, correct;  // 0-d f64 on the device
  int64_t seen = 0;
  double loss() const { return loss_sum.item() / static_cast<double>(std::max<int64_t>(seen, 1)); }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

EpochResult train_epoch(nn::Module& model, data::DataLoader& loader, Optimizer& optimizer,
                        LRScheduler& scheduler, MixedPrecision& amp, const TrainConfig& cfg,
                        const Device& device, int64_t epoch, int64_t& step,
                        parallel::ProcessGroup& group) {
  model.train();
  ProgressBar bar("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(cfg.epochs),
                  loader.num_batches(), cfg.progress);
  const auto start = std::chrono::steady_clock::now();
  RunningMetrics metrics{zeros({}, {DType::f64, device}), zeros({}, {DType::f64, device})};
  int64_t done = 0;
  // Pinned batches (the loader pins them for a GPU) are copied while the device still works.
  while (auto batch = loader.next()) {
    cfg.faults.at_step(group.rank(), step + 1);  // --fault: this run's injected faults
    Tensor images = amp.cast_input(batch->images.to(device, NonBlocking::yes));
    const Tensor labels = batch->labels.to(device, NonBlocking::yes);
    optimizer.zero_grad();
    Tensor logits;
    {
      auto autocast = amp.autocast();  // O1 only
      logits = model.forward(images);
    }
    // The loss in f32 whatever the model's precision (16-bit logits under O2/O3).
    logits = logits.to(DType::f32);
    Tensor loss =
        cross_entropy(logits, labels, Tensor(), Reduction::mean, -100, cfg.label_smoothing);
    amp.backward(loss);  // scaled by the loss scale under O1-O3
    if (cfg.clip_grad_norm > 0) {
      amp.unscale(optimizer);  // clip the true gradients, not the scaled ones
      clip_grad_norm(amp.optimizer_params(), cfg.clip_grad_norm);
    }
    const bool stepped = amp.step(optimizer);  // skipped when a gradient overflowed
    amp.update();
    scheduler.step();
    ++step;
    if (!stepped && group.rank() == 0)  // names the rank and parameter that overflowed
      std::cout << "\r" << describe_skip(*amp.scaler()->last_step()) << "\n";

    const int64_t n = labels.numel();
    metrics.loss_sum =
        add(metrics.loss_sum, mul(loss.detach().to(DType::f64), static_cast<double>(n)));
    metrics.correct = add(metrics.correct, count_correct(logits, labels));
    metrics.seen += n;
    std::vector<std::pair<std::string, std::string>> shown;
    if (device.is_cpu() || bar.will_draw(done + 1)) {
      const double mean_loss = metrics.loss();
      RG_CHECK(std::isfinite(mean_loss), "train_cifar: the loss became ", mean_loss, " by epoch ",
               epoch + 1, " step ", step, " (lower the learning rate?)");
      const double seen = static_cast<double>(metrics.seen);
      shown = {{"loss", fixed(mean_loss, 3)},
               {"acc", fixed(100.0 * metrics.correct.item() / seen, 1) + "%"},
               {"lr", fixed(optimizer.lr(0), 4)}};
    }
    bar.update(++done, n, shown);
  }
  bar.finish();
  const double loss_sum = metrics.loss_sum.item(), correct = metrics.correct.item();
  const auto seen = static_cast<double>(metrics.seen);
  // The epoch's figures over all ranks, not rank 0's share (what Horovod's metric averaging
  // is for): sums of losses, hits and samples travel in one allreduce.
  const std::vector<double> totals =
      parallel::allreduce_metric(from_vector<double>({loss_sum, correct, seen}, {3}, {DType::f64}),
                                 "train metrics", parallel::ReduceOp::sum, group)
          .to_vector<double>();
  EpochResult r;
  r.samples = static_cast<int64_t>(totals[2]);
  r.loss = totals[0] / std::max(totals[2], 1.0);
  r.accuracy = totals[1] / std::max(totals[2], 1.0);
  r.seconds = seconds_since(start);
  r.images_per_second = totals[2] / r.seconds;
  if (const LossScaler* scaler = amp.scaler()) {
    r.loss_scale = scaler->scale_value();
    r.skipped_steps = scaler->skipped_steps();
  }
  return r;
}

Tensor flip_horizontal(const Tensor& images) {
  RG_CHECK(images.dim() == 4 && images.dtype() == DType::f32 && images.device().is_cpu(),
           "flip_horizontal: expected f32 cpu images (N, C, H, W), got ", images.describe());
  Tensor src = images.contiguous();
  Tensor out = empty_like(src);
  const int64_t rows = src.size(0) * src.size(1) * src.size(2), w = src.size(3);
  const float* in = src.data<float>();
  float* o = out.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t x = 0; x < w; ++x) o[r * w + x] = in[r * w + (w - 1 - x)];
  return out;
}

Tensor sample_images(const data::Dataset& dataset, int64_t n) {
  n = std::min(n, dataset.size());
  RG_CHECK(n > 0, "sample_images: the data set ", dataset.describe(), " is empty");
  auto transform = data::cifar10_test_transform();
  std::vector<Tensor> images;
  for (int64_t i = 0; i < n; ++i) {
    data::SampleRng rng(0, 0, static_cast<uint64_t>(i));
    images.push_back(transform->apply(dataset.get(i * dataset.size() / n).image, rng).unsqueeze(0));
  }
  return cat(images, 0);
}

EpochResult evaluate(nn::Module& model, data::DataLoader& loader,
                     const parallel::DistributedSampler& sampler, const MixedPrecision& amp,
                     const Device& device, const TrainConfig& cfg, parallel::ProcessGroup& group) {
  model.eval();
  NoGradGuard no_grad;
  loader.start_epoch(0);
  ProgressBar bar("  test", loader.num_batches(), cfg.progress);
  const auto start = std::chrono::steady_clock::now();
  parallel::DistributedEvaluator evaluator(sampler);
  int64_t done = 0;
  while (auto batch = loader.next()) {
    auto autocast = amp.autocast();  // O1 only
    auto forward = [&](const Tensor& images) {
      return model.forward(amp.cast_input(images.to(device, NonBlocking::yes))).to(DType::f32);
    };
    Tensor logits = forward(batch->images);
    if (cfg.tta) logits = (logits + forward(flip_horizontal(batch->images))) * 0.5;
    evaluator.add(logits, batch->labels);
    bar.update(++done, batch->labels.numel(), {});
  }
  bar.finish();
  model.train();
  const parallel::EvalTotals totals = evaluator.all_ranks(group);
  EpochResult r;
  r.samples = totals.count;
  r.loss = totals.mean_loss();
  r.accuracy = totals.accuracy();
  r.seconds = seconds_since(start);
  r.images_per_second = static_cast<double>(totals.count) / r.seconds;
  return r;
}

std::unique_ptr<LRScheduler> make_schedule(const TrainConfig& cfg, Optimizer& optimizer,
                                           int64_t steps_per_epoch) {
  const int64_t total = cfg.epochs * steps_per_epoch;
  const auto warmup =
      static_cast<int64_t>(std::llround(cfg.warmup_epochs * static_cast<double>(steps_per_epoch)));
  std::unique_ptr<LRScheduler> main;
  if (cfg.schedule == "cosine") {
    main = std::make_unique<CosineAnnealingLR>(optimizer, total - warmup);
  } else if (cfg.schedule == "onecycle") {
    main = std::make_unique<OneCycleLR>(optimizer, cfg.lr, total - warmup);
  } else if (cfg.schedule == "multistep") {
    std::vector<int64_t> steps;
    for (int64_t m : cfg.milestones) steps.push_back(m * steps_per_epoch - warmup);
    main = std::make_unique<MultiStepLR>(optimizer, steps, 0.1);
  } else {
    main = std::make_unique<MultiStepLR>(optimizer, std::vector<int64_t>{}, 1.0);
  }
  if (warmup == 0) return main;
  return std::make_unique<LinearWarmup>(optimizer, std::move(main), warmup);
}

void log_epoch(CsvLog& csv, TensorBoardWriter& tensorboard, int64_t epoch, int64_t epochs,
               double lr, const EpochResult& train, const EpochResult& test, double best) {
  std::cout << "epoch " << epoch + 1 << "/" << epochs << "  train loss " << fixed(train.loss, 4)
            << " acc " << fixed(100 * train.accuracy, 2) << "%  test loss " << fixed(test.loss, 4)
            << " acc " << fixed(100 * test.accuracy, 2) << "%  best " << fixed(100 * best, 2)
            << "%  lr " << fixed(lr, 4) << "  " << static_cast<int64_t>(train.images_per_second)
            << " img/s  " << format_duration(train.seconds + test.seconds) << std::endl;
  std::vector<std::pair<std::string, double>> row = {
      {"epoch", static_cast<double>(epoch + 1)},
      {"lr", lr},
      {"train_loss", train.loss},
      {"train_accuracy", train.accuracy},
      {"test_loss", test.loss},
      {"test_accuracy", test.accuracy},
      {"images_per_second", train.images_per_second},
      {"epoch_seconds", train.seconds + test.seconds}};
  if (train.loss_scale > 0) {  // mixed precision: the scaler's course over the run
    row.push_back({"loss_scale", train.loss_scale});
    row.push_back({"skipped_steps", static_cast<double>(train.skipped_steps)});
    tensorboard.add_scalar("amp/loss_scale", train.loss_scale, epoch + 1);
    tensorboard.add_scalar("amp/skipped_steps", static_cast<double>(train.skipped_steps),
                           epoch + 1);
  }
  csv.write(row);
  const int64_t step = epoch + 1;
  tensorboard.add_scalar("train/loss", train.loss, step);
  tensorboard.add_scalar("train/accuracy", train.accuracy, step);
  tensorboard.add_scalar("test/loss", test.loss, step);
  tensorboard.add_scalar("test/accuracy", test.accuracy, step);
  tensorboard.add_scalar("lr", lr, step);
  tensorboard.add_scalar("images_per_second", train.images_per_second, step);
  tensorboard.flush();
}

std::string find_cifar10(const std::string& configured) {
  if (!configured.empty()) return configured;
  std::vector<std::string> candidates = {"data/cifar10", "../shared/data/cifar10-jpg",
                                         "../../shared/data/cifar10-jpg"};
  if (const char* env = std::getenv("RINGGRAD_DATA")) candidates.insert(candidates.begin(), env);
  for (const std::string& c : candidates)
    if (fs::exists(c)) return c;
  std::string looked;
  for (const std::string& c : candidates) looked += "\n  " + fs::absolute(c).string();
  fail("CIFAR-10 not found; looked in:", looked,
       "\nPass --data <folder>, set RINGGRAD_DATA, or download it with "
       "scripts/download_cifar10.sh (needs internet).");
}

std::string resume_path(const TrainConfig& cfg) {
  if (cfg.resume != "auto") return cfg.resume;
  const std::string last = cfg.out + "/last.safetensors";
  return fs::exists(last) ? last : "";
}

}  // namespace rg::apps
