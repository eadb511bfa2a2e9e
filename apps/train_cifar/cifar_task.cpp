#include "apps/train_cifar/cifar_task.h"

#include <filesystem>
#include <optional>

#include "data/transforms.h"
#include "ops/ops.h"
#include "parallel/distributed_sampler.h"
#include "train/device_eval.h"

namespace rg::apps {
namespace fs = std::filesystem;

namespace {
// Cross-entropy and accuracy over this rank's share of the test set; padded duplicates are
// left out and the totals summed over ranks, so every test image counts exactly once.
class CifarEvaluation : public train::Evaluation {
 public:
  CifarEvaluation(const parallel::DistributedSampler& sampler, EvalCounts counts, bool tta,
                  bool tta_translate, MemoryFormat format, bool float64)
      : sampler_(sampler),
        host_(sampler),
        counts_(counts),
        tta_(tta),
        tta_translate_(tta_translate),
        format_(format),
        float64_(float64) {}

  void add(nn::Module& model, const data::Batch& batch,
           const train::StepContext& context) override {
    auto autocast = context.amp.autocast();  // O1 only
    // On the device first: the test-time views are made there (data/batch_views.h).
    const Tensor images = batch.images.to(context.device, NonBlocking::yes);
    auto forward = [&](const Tensor& x) {
      const Tensor input = context.amp.cast_input(x).contiguous(format_);
      return model.forward(float64_ ? input.to(DType::f64) : input).to(DType::f32);
    };
    // Test-time augmentation: logits averaged over each image and its mirror image.
    auto mirrored = [&](const Tensor& x) {
      Tensor logits = forward(x);
      return tta_ ? (logits + forward(flip_horizontal(x))) * 0.5 : logits;
    };
    Tensor logits = mirrored(images);
    // airbench94's level 2: half the weight on the image, half on its shifts by one pixel up-left
    // and down-right (reflect-padded), each with its mirror.
    if (tta_translate_) {
      const Tensor shifted =
          (mirrored(shift_reflect(images, -1)) + mirrored(shift_reflect(images, 1))) * 0.5;
      logits = (logits + shifted) * 0.5;
    }
    if (counts_ == EvalCounts::host) return host_.add(logits, batch.labels);
    if (!device_) device_.emplace(sampler_, context.device);
    device_->add(logits, batch.labels.to(context.device, NonBlocking::yes));
  }

  Totals all_ranks(parallel::ProcessGroup& group) override {
    // Without a batch on this rank there is nothing on the device: the host's zeros join the
    // same one allreduce.
    const parallel::EvalTotals totals =
        device_ ? device_->all_ranks(group) : host_.all_ranks(group);
    return {.values = {totals.mean_loss(), totals.accuracy()}, .samples = totals.count};
  }

 private:
  const parallel::DistributedSampler& sampler_;
  parallel::DistributedEvaluator host_;
  std::optional<train::DeviceEvaluator> device_;  // made at the first batch, on its device
  EvalCounts counts_;
  bool tta_, tta_translate_;
  MemoryFormat format_;  // of the model's input (--memory-format)
  bool float64_;         // an f64 model (--float64)
};
}  // namespace

train::Task cifar_task(const TrainConfig& cfg, const parallel::DistributedSampler& test_sampler,
                       EvalCounts counts) {
  train::Task task;
  // --memory-format: the model's input is converted once, here; every layer after it keeps the
  // layout (or converts where it has no kernel for it: ops/README.md).
  const MemoryFormat format = parse_memory_format(cfg.memory_format);
  task.step = [label_smoothing = cfg.label_smoothing, format, float64 = cfg.float64](
                  nn::Module& model, const data::Batch& batch, const train::StepContext& context) {
    // Pinned batches (the loader pins them for a GPU) are copied while the device still works.
    Tensor images = context.amp.cast_input(batch.images.to(context.device, NonBlocking::yes))
                        .contiguous(format);
    if (float64) images = images.to(DType::f64);
    const Tensor labels = batch.labels.to(context.device, NonBlocking::yes);
    Tensor logits;
    {
      auto autocast = context.amp.autocast();  // O1 only
      logits = model.forward(images);
    }
    // The loss in f32 whatever the model's precision (16-bit logits under O2/O3), f64 under
    // --float64.
    if (!float64) logits = logits.to(DType::f32);
    Tensor loss = cross_entropy(logits, labels, Tensor(), Reduction::mean, -100, label_smoothing);
    return train::StepOutput{.loss = loss,
                             .samples = labels.numel(),
                             // One kernel on a GPU (ops/count_correct), no host read.
                             .sums = count_correct(logits, labels).reshape({1})};
  };
  const train::Metric accuracy{"accuracy", "acc", train::Display::percent};
  task.train_metrics = {accuracy};
  task.evaluation = [&test_sampler, counts, tta = cfg.tta, translate = cfg.tta_translate,
                     last_only = cfg.tta_epochs == "last", format,
                     float64 = cfg.float64](const train::EvalPass& pass) {
    const bool augment = tta && (pass.last || !last_only);
    return std::make_unique<CifarEvaluation>(test_sampler, counts, augment, augment && translate,
                                             format, float64);
  };
  task.eval_metrics = {{"loss", "loss", train::Display::plain}, accuracy};
  task.best_metric = "accuracy";
  return task;
}

train::ModelCard cifar_model_card(const TrainConfig& cfg, const data::Dataset& train_set,
                                  const data::Dataset& test_set) {
  std::vector<std::string> names = train_set.class_names();
  if (names.empty())
    for (int64_t c = 0; c < train_set.num_classes(); ++c) names.push_back(std::to_string(c));
  const Tensor image = test_set.get(0).image;  // (C, H, W): the test transform keeps its size
  // cifar10_test_transform(): ToFloat, then Normalize with CIFAR-10's mean and std.
  return {.task = train::ModelTask::classification,
          .model = cfg.model,
          .outputs = train_set.num_classes(),
          .class_names = names,
          .channels = image.size(0),
          .input_size = {image.size(1), image.size(2)},
          .mean = data::kCifar10Mean,
          .std = data::kCifar10Std};
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

}  // namespace rg::apps
