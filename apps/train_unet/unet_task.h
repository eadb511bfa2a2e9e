#pragma once
// What train_unet tells the shared loop (train/task.h): the loss of a batch of images and
// masks, the evaluation (loss, Dice and IoU over every validation sample once, summed over
// ranks), and TensorBoard images after each epoch.

#include <memory>

#include "apps/train_unet/config.h"
#include "data/segmentation.h"
#include "parallel/distributed_sampler.h"
#include "train/model_card.h"
#include "train/task.h"

namespace rg::apps {

// The seeds' losses: one logit per position (binary masks) takes BCE + Dice (nn/dice_loss.h's
// bce_dice_loss); C logits take cross-entropy + soft Dice. logits (N, C, *) f32, masks (N, *)
// i64 class indices. A 0-d batch mean.
Tensor segmentation_loss(const Tensor& logits, const Tensor& masks);

// `preview` is the sample (image as the model sees it, and its mask) drawn into TensorBoard
// each epoch: input, ground truth and prediction (volumes: their middle slice). With several
// classes, `class_names` (the data set's) name the per-class Dice and IoU columns of the CSV.
// Validation segments each image by sliding windows of the crop (train/inference.h), as
// `predict` does.
train::Task unet_task(const UnetConfig& cfg, const parallel::DistributedSampler& test_sampler,
                      data::SegmentationExample preview, std::vector<std::string> class_names);

// What train_unet's checkpoints record of the model and its inputs (train/model_card.h).
train::ModelCard unet_model_card(const UnetConfig& cfg,
                                 const std::vector<std::string>& class_names);

}  // namespace rg::apps
