#pragma once
// Transforms on one image (C, H, W); ToFloat and Normalize also take volumes (C, D, H, W).
// Randomness comes from a SampleRng keyed by the loader's seed, the epoch and the sample's index,
// so a sample is augmented the same way whichever worker thread handles it — batches are identical
// for any worker count.

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/augment_geometry.h"  // Padding, and the draws SampleRng makes

namespace rg::data {

class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t epoch, uint64_t index)
      : seed_(seed), epoch_(epoch), index_(index) {}
  double uniform();          // [0, 1)
  int64_t below(int64_t n);  // uniform integer in [0, n)
  uint64_t epoch() const { return epoch_; }
  // A generator of this sample that draws the same numbers in every epoch (and none that this
  // one draws): for a choice made once per sample, such as AlternatingFlip's first flip.
  SampleRng same_every_epoch() const;

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

// Pads every side with `padding` zeros (or the mirror image of the pixels inside, without
// repeating the edge: PyTorch's F.pad mode 'reflect'; padding < H and W), then crops a random
// size x size window.
class RandomCrop final : public Transform {
 public:
  RandomCrop(int64_t size, int64_t padding, Padding mode = Padding::zeros);
  Tensor apply(const Tensor& image, SampleRng& rng) const override;
  std::string name() const override { return "RandomCrop"; }
  bool moves_pixels() const override { return true; }

 private:
  int64_t size_, padding_;
  Padding mode_;
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

// airbench94's alternating flip: each image is mirrored in every other epoch — in even epochs
// (0, 2, ...) when a coin drawn once for the image says so, in odd epochs when it does not. Each
// image is seen both ways in any two consecutive epochs, where independent random flips repeat
// the same view half of the time.
class AlternatingFlip final : public Transform {
 public:
  Tensor apply(const Tensor& image, SampleRng& rng) const override;
  std::string name() const override { return "AlternatingFlip"; }
  bool moves_pixels() const override { return true; }
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

// A model's input preprocessing, as train/model_card.h records it in a checkpoint: u8 images
// to [0, 1] (ToFloat), f32 ones (volumes, .npy images) used as stored, then Normalize when
// mean and std are given (empty: none). On u8 images with CIFAR-10's mean and std it computes
// exactly what cifar10_test_transform() does (the same transforms, in the same order).
class Preprocess final : public Transform {
 public:
  explicit Preprocess(std::vector<float> mean = {}, std::vector<float> std = {});
  Tensor apply(const Tensor& image, SampleRng& rng) const override;
  std::string name() const override { return "Preprocess"; }

 private:
  ToFloat to_float_;
  std::shared_ptr<Normalize> normalize_;  // null: none
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
// airbench94's training augmentation: translate by up to 2 pixels (reflect-pad 2, random 32x32
// crop), alternating flip, scale, normalise.
std::shared_ptr<Transform> cifar10_airbench94_transform();
inline const std::vector<float> kCifar10Mean = {0.4914f, 0.4822f, 0.4465f};
inline const std::vector<float> kCifar10Std = {0.2470f, 0.2435f, 0.2616f};

}  // namespace rg::data
