#pragma once
// Transforms on an image and its mask together (data/segmentation.h): whatever moves pixels —
// a flip, a crop — moves the image's and the mask's alike, with one draw of the sample's
// SampleRng, so an augmented sample is the same whichever worker builds it (transforms.h).
// Photometric transforms (ToFloat, Normalize) reach the image alone through ImageOnly.
//
// 2-D and 3-D alike: image (C, H, W) with mask (H, W), or image (C, D, H, W) with mask (D, H, W).

#include <memory>
#include <string>
#include <vector>

#include "data/segmentation.h"
#include "data/transforms.h"

namespace rg::data {

class SegmentationTransform {
 public:
  virtual ~SegmentationTransform() = default;
  virtual SegmentationExample apply(const SegmentationExample& ex, SampleRng& rng) const = 0;
  virtual std::string name() const = 0;
};

// The axis a flip mirrors: W (left-right), H (up-down) or D (front-back, volumes only).
enum class FlipAxis { horizontal, vertical, depth };

// Mirrors image and mask along `axis` with probability p (one uniform draw).
class RandomFlipPair final : public SegmentationTransform {
 public:
  explicit RandomFlipPair(FlipAxis axis, double p = 0.5);
  SegmentationExample apply(const SegmentationExample& ex, SampleRng& rng) const override;
  std::string name() const override;

 private:
  FlipAxis axis_;
  double p_;
};

// What RandomCropPair does with a sample smaller than its crop (after padding): refuse it, or
// pad that side further — evenly on both ends — until the crop fits (albumentations'
// PadIfNeeded before a crop), so that a set of images of many sizes trains at one crop size.
enum class SmallerThanCrop { refuse, pad };

// Pads every spatial side by `padding` (the image with 0, the mask with `mask_fill`, a class —
// background by default), then crops a random window of `size`: {H, W} for 2-D samples,
// {D, H, W} for volumes. Draws one offset per spatial dimension, outermost first.
class RandomCropPair final : public SegmentationTransform {
 public:
  RandomCropPair(std::vector<int64_t> size, int64_t padding = 0, uint8_t mask_fill = 0,
                 SmallerThanCrop smaller = SmallerThanCrop::refuse);
  SegmentationExample apply(const SegmentationExample& ex, SampleRng& rng) const override;
  std::string name() const override { return "RandomCropPair"; }

 private:
  std::vector<int64_t> size_;
  int64_t padding_;
  uint8_t mask_fill_;
  SmallerThanCrop smaller_;
};

// Applies an image transform to the image alone, the mask unchanged. Refuses a transform that
// moves pixels (RandomCrop, RandomHorizontalFlip): it would move the image without its mask.
class ImageOnly final : public SegmentationTransform {
 public:
  explicit ImageOnly(std::shared_ptr<Transform> transform);
  SegmentationExample apply(const SegmentationExample& ex, SampleRng& rng) const override;
  std::string name() const override { return "ImageOnly(" + transform_->name() + ")"; }

 private:
  std::shared_ptr<Transform> transform_;
};

class ComposePair final : public SegmentationTransform {
 public:
  explicit ComposePair(std::vector<std::shared_ptr<SegmentationTransform>> transforms);
  SegmentationExample apply(const SegmentationExample& ex, SampleRng& rng) const override;
  std::string name() const override;

 private:
  std::vector<std::shared_ptr<SegmentationTransform>> transforms_;
};

}  // namespace rg::data
