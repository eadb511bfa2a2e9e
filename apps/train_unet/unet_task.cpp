#include "apps/train_unet/unet_task.h"

#include <algorithm>

#include "core/autograd.h"
#include "nn/dice_loss.h"
#include "ops/ops.h"
#include "parallel/segmentation_eval.h"
#include "train/inference.h"

namespace rg::apps {
namespace {

Tensor forward(nn::Module& model, const Tensor& images, const train::StepContext& context) {
  // Pinned batches (the loader pins them for a GPU) are copied while the device still works.
  const Tensor x = context.amp.cast_input(images.to(context.device, NonBlocking::yes));
  auto autocast = context.amp.autocast();  // O1 only
  return model.forward(x).to(DType::f32);  // losses and metrics in f32 whatever the precision
}

train::SlidingWindow sliding_window(const UnetConfig& cfg) {
  return {.window = cfg.resolved_image_size(), .overlap = cfg.overlap, .batch = cfg.batch_size};
}

// The logits (N, K, *S) on the host of whole images (N, C, *S), window by window — as predict
// computes them (train/predict.h).
Tensor whole_logits(nn::Module& model, const Tensor& images, const train::SlidingWindow& sw,
                    const train::StepContext& context) {
  return train::sliding_window_logits(images.to(Device::cpu()), sw, [&](const Tensor& x) {
    return train::infer(model, x, context);
  });
}

// Validation over this rank's share: the loss of the real samples (padded duplicates left
// out, as parallel/segmentation_eval.h leaves them out of the counts), Dice and IoU from
// integer counts summed over ranks, overall and (several classes) per class.
class UnetEvaluation final : public train::Evaluation {
 public:
  UnetEvaluation(const parallel::DistributedSampler& sampler, int64_t model_classes,
                 train::SlidingWindow sw)
      : binary_(model_classes == 1),
        counts_(sampler, {.kind = binary_ ? parallel::SegmentationKind::binary
                                          : parallel::SegmentationKind::multiclass,
                          .num_classes = model_classes}),
        cursor_(sampler),
        sw_(std::move(sw)) {}

  void add(nn::Module& model, const data::Batch& batch,
           const train::StepContext& context) override {
    const Tensor logits = whole_logits(model, batch.images, sw_, context);
    const Tensor masks = batch.masks.to(Device::cpu());
    const int64_t real = cursor_.advance(logits.size(0), "train_unet evaluation");
    if (real > 0) {
      // The loss is a mean over samples of equal size: times `real` it is their sum.
      const Tensor loss = segmentation_loss(logits.narrow(0, 0, real), masks.narrow(0, 0, real));
      loss_sum_ += loss.item() * static_cast<double>(real);
      samples_ += real;
    }
    if (binary_) {
      counts_.add(logits.squeeze(1), masks.to(DType::f32));  // a soft-mask road: floating targets
    } else {
      counts_.add(logits, masks);
    }
  }

  Totals all_ranks(parallel::ProcessGroup& group) override {
    Tensor t = from_vector<double>({loss_sum_, static_cast<double>(samples_)}, {2}, {DType::f64});
    group.allreduce(t, parallel::ReduceOp::sum)->wait();
    const std::vector<double> v = t.to_vector<double>();
    const nn::SegmentationCounts counts = counts_.all_ranks(group);
    // Binary: the foreground's scores. Several classes: the mean over the classes but the
    // background (class 0), most of every image, which would flatter the figure.
    double dice = 0, iou = 0;
    const int64_t first = binary_ ? 0 : 1;
    for (int64_t c = first; c < counts.num_classes(); ++c) {
      dice += counts.dice(c);
      iou += counts.iou(c);
    }
    const auto n = static_cast<double>(counts.num_classes() - first);
    Totals totals{.values = {v[1] > 0 ? v[0] / v[1] : 0.0, dice / n, iou / n},
                  .samples = static_cast<int64_t>(v[1])};
    if (!binary_)
      for (int64_t c = 0; c < counts.num_classes(); ++c) {
        totals.values.push_back(counts.dice(c));
        totals.values.push_back(counts.iou(c));
      }
    return totals;
  }

 private:
  bool binary_;
  parallel::DistributedSegmentationEvaluator counts_;
  parallel::RealSampleCursor cursor_;
  train::SlidingWindow sw_;
  double loss_sum_ = 0;
  int64_t samples_ = 0;
};

// (H, W) or (D, H, W) -> a (1, H, W) f32 image in [0, 1]; volumes show their middle slice.
Tensor picture(const Tensor& plane_or_volume, double scale) {
  Tensor x = plane_or_volume.to(Device::cpu()).to(DType::f32);
  if (x.dim() == 3) x = x.select(0, x.size(0) / 2);
  std::vector<float> v = x.contiguous().to_vector<float>();
  for (float& p : v) p = std::clamp(static_cast<float>(p * scale), 0.0f, 1.0f);
  return from_vector<float>(v, {1, x.size(0), x.size(1)});
}

// The preview's input (first channel), ground truth and the model's prediction, as images.
void log_preview(const train::EpochLog& log, const data::SegmentationExample& preview,
                 const train::SlidingWindow& sw, int64_t data_classes) {
  const bool was_training = log.model.is_training();
  log.model.eval();
  const Tensor logits = whole_logits(log.model, preview.image.unsqueeze(0), sw, log.context);
  if (was_training) log.model.train();
  const Tensor predicted = train::predicted_masks(logits).squeeze(0);
  const double class_scale = 1.0 / static_cast<double>(data_classes - 1);
  log.tensorboard.add_image("preview/input", picture(preview.image.select(0, 0), 1.0), log.epoch);
  log.tensorboard.add_image("preview/ground_truth", picture(preview.mask, class_scale), log.epoch);
  log.tensorboard.add_image("preview/prediction", picture(predicted, class_scale), log.epoch);
}

}  // namespace

Tensor segmentation_loss(const Tensor& logits, const Tensor& masks) {
  if (logits.size(1) == 1) return nn::bce_dice_loss(logits.squeeze(1), masks.to(DType::f32));
  return add(cross_entropy(logits, masks), nn::soft_dice_loss(logits, masks));
}

train::Task unet_task(const UnetConfig& cfg, const parallel::DistributedSampler& test_sampler,
                      data::SegmentationExample preview, std::vector<std::string> class_names) {
  train::Task task;
  task.step = [](nn::Module& model, const data::Batch& batch, const train::StepContext& context) {
    const Tensor logits = forward(model, batch.images, context);
    const Tensor masks = batch.masks.to(context.device, NonBlocking::yes);
    return train::StepOutput{
        .loss = segmentation_loss(logits, masks), .samples = masks.size(0), .sums = Tensor()};
  };
  task.evaluation = [&test_sampler, classes = cfg.model_classes(),
                     sw = sliding_window(cfg)](const train::EvalPass&) {
    return std::make_unique<UnetEvaluation>(test_sampler, classes, sw);
  };
  task.eval_metrics = {{"loss", "loss", train::Display::plain},
                       {"dice", "dice", train::Display::plain},
                       {"iou", "iou", train::Display::plain}};
  if (cfg.model_classes() > 1) {
    RG_CHECK(static_cast<int64_t>(class_names.size()) == cfg.model_classes(),
             "train_unet: ", class_names.size(), " class names for ", cfg.model_classes(),
             " classes");
    for (const std::string& name : class_names) {
      task.eval_metrics.push_back({"dice_" + name, "dice_" + name, train::Display::log_only});
      task.eval_metrics.push_back({"iou_" + name, "iou_" + name, train::Display::log_only});
    }
  }
  task.best_metric = "dice";
  task.log = [preview = std::move(preview), sw = sliding_window(cfg),
              data_classes = cfg.data_classes()](const train::EpochLog& log) {
    log_preview(log, preview, sw, data_classes);
  };
  return task;
}

train::ModelCard unet_model_card(const UnetConfig& cfg,
                                 const std::vector<std::string>& class_names) {
  return {.task = train::ModelTask::segmentation,
          .model = "unet",
          .unet = cfg.unet(),
          .outputs = cfg.model_classes(),
          .class_names = class_names,
          .channels = cfg.channels,
          .input_size = cfg.resolved_image_size(),
          .overlap = cfg.overlap,
          .window_batch = cfg.batch_size};
}

}  // namespace rg::apps
