#pragma once
// Transforms on one image (C, H, W); ToFloat and Normalize also take volumes (C, D, H, W).
// Randomness comes from a SampleRng keyed by the loader's seed, the epoch and the sample's index,
// so a sample is augmented the same way whichever worker thread handles it — batches are identical
// for any worker count.

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rg::data {

class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t epoch, uint64_t index)
      : seed_(seed), epoch_(epoch), index_(index) {}
  double uniform();          // [0, 1)
  int64_t below(int64_t n);  // uniform integer in [0, n)

 private:
  uint64_t seed_, epoch_, index_, draw_ = 0;
};

class Transform {
 public:
  virtual ~Transform() = default;
  virtual Tensor apply(const Tensor& image, SampleRng& rng) const = 0;
  virtual std::string name() const = 0;
  // Whether it moves pixels (a crop, a flip): such a transform cannot run on a segmentation
  // image alone, without its mask (ImageOnly in segmentation_transforms.h refuses it).
  virtual bool moves_pixels() const { return false; }
};

// u8 [0, 255] -> f32 [0, 1].
class ToFloat final : public Transform {
 public:
  Tensor apply(const Tensor& image, SampleRng& rng) const override;
  std::string name() const override { return "ToFloat"; }
};

// Pads every side with `padding` zeros, then crops a random size x size window.
class RandomCrop final : public Transform {
 public:
  RandomCrop(int64_t size, int64_t padding);
  Tensor apply(const Tensor& image, SampleRng& rng) const override;
  std::string name() const override { return "RandomCrop"; }
  bool moves_pixels() const override { return true; }

 private:
  int64_t size_, padding_;
};

// Mirrors left-right with probability p.
class RandomHorizontalFlip final : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor apply(const Tensor& image, SampleRng& rng) const override;
  std::string name() const override { return "RandomHorizontalFlip"; }
  bool moves_pixels() const override { return true; }

 private:
  double p_;
};

// (x - mean[c]) / std[c] per channel, on f32 images.
class Normalize final : public Transform {
 public:
  Normalize(std::vector<float> mean, std::vector<float> std);
  Tensor apply(const Tensor& image, SampleRng& rng) const override;
  std::string name() const override { return "Normalize"; }

 private:
  std::vector<float> mean_, std_;
};

class Compose final : public Transform {
 public:
  explicit Compose(std::vector<std::shared_ptr<Transform>> transforms);
  Tensor apply(const Tensor& image, SampleRng& rng) const override;
  std::string name() const override;
  bool moves_pixels() const override;

 private:
  std::vector<std::shared_ptr<Transform>> transforms_;
};

// The classic CIFAR-10 recipe: random crop 32 with padding 4, flip, scale, normalise with
// the data set's per-channel mean and std. Test: scale and normalise only.
std::shared_ptr<Transform> cifar10_train_transform();
std::shared_ptr<Transform> cifar10_test_transform();
inline const std::vector<float> kCifar10Mean = {0.4914f, 0.4822f, 0.4465f};
inline const std::vector<float> kCifar10Std = {0.2470f, 0.2435f, 0.2616f};

}  // namespace rg::data
