#include "data/transforms.h"

#include "core/dispatch.h"
#include "core/rng.h"

namespace rg::data {

// The draws themselves are augment_geometry.h's, which the device data path's kernels share.
double SampleRng::uniform() {
  return sample_uniform(seed_, epoch_, index_, draw_++);
}

int64_t SampleRng::below(int64_t n) {
  return sample_below(uniform(), n);
}

SampleRng SampleRng::same_every_epoch() const {
  return SampleRng(same_every_epoch_key(seed_), 0, index_);
}

namespace {
void check_image(const Tensor& image, const std::string& who) {
  RG_CHECK(image.dim() == 3, who, ": expected an image (C, H, W), got ", image.describe());
}

// Pointwise and per-channel transforms work on volumes as well (segmentation in 3-D).
void check_image_or_volume(const Tensor& image, const std::string& who) {
  RG_CHECK(image.dim() == 3 || image.dim() == 4, who,
           ": expected an image (C, H, W) or a volume (C, D, H, W), got ", image.describe());
}

// The image (C, H, W) mirrored left-right.
Tensor mirror(const Tensor& image) {
  const int64_t C = image.size(0), H = image.size(1), W = image.size(2);
  Tensor src = image.contiguous();
  Tensor out = empty(image.shape(), {image.dtype()});
  dispatch_all(image.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = src.data<T>();
    T* o = out.data<T>();
    for (int64_t r = 0; r < C * H; ++r)
      for (int64_t x = 0; x < W; ++x) o[r * W + x] = in[r * W + (W - 1 - x)];
  });
  return out;
}
}  // namespace

Tensor ToFloat::apply(const Tensor& image, SampleRng&) const {
  check_image_or_volume(image, "ToFloat");
  image.check_dtype(DType::u8, "ToFloat");
  Tensor src = image.contiguous();
  Tensor out = empty(image.shape(), {DType::f32});
  const uint8_t* in = src.data<uint8_t>();
  float* o = out.data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = static_cast<float>(in[i]) * (1.0f / 255.0f);
  return out;
}

RandomCrop::RandomCrop(int64_t size, int64_t padding, Padding mode)
    : size_(size), padding_(padding), mode_(mode) {
  RG_CHECK(size > 0 && padding >= 0, "RandomCrop: size must be > 0 and padding >= 0, got size ",
           size, " padding ", padding);
}

Tensor RandomCrop::apply(const Tensor& image, SampleRng& rng) const {
  check_image(image, "RandomCrop");
  const int64_t C = image.size(0), H = image.size(1), W = image.size(2);
  RG_CHECK(H + 2 * padding_ >= size_ && W + 2 * padding_ >= size_, "RandomCrop: a ", size_, "x",
           size_, " crop does not fit image ", image.describe(), " padded by ", padding_);
  RG_CHECK(mode_ == Padding::zeros || (padding_ < H && padding_ < W),
           "RandomCrop: reflect padding ", padding_, " must be smaller than the image ",
           image.describe());
  // A padded coordinate's source pixel; -1 for zero padding. Reflection: -1 -> 1, n -> n - 2.
  auto source = [mode = mode_](int64_t i, int64_t n) { return padded_source(i, n, mode); };
  // Offsets of the window in padded coordinates.
  const int64_t top = rng.below(H + 2 * padding_ - size_ + 1);
  const int64_t left = rng.below(W + 2 * padding_ - size_ + 1);
  Tensor src = image.contiguous();
  Tensor out = zeros({C, size_, size_}, {image.dtype()});
  dispatch_all(image.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = src.data<T>();
    T* o = out.data<T>();
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < size_; ++y) {
        const int64_t sy = source(top + y - padding_, H);
        if (sy < 0) continue;
        for (int64_t x = 0; x < size_; ++x) {
          const int64_t sx = source(left + x - padding_, W);
          if (sx >= 0) o[(c * size_ + y) * size_ + x] = in[(c * H + sy) * W + sx];
        }
      }
  });
  return out;
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  RG_CHECK(p >= 0 && p <= 1, "RandomHorizontalFlip: p must be in [0, 1], got ", p);
}

Tensor RandomHorizontalFlip::apply(const Tensor& image, SampleRng& rng) const {
  check_image(image, "RandomHorizontalFlip");
  if (rng.uniform() >= p_) return image;
  return mirror(image);
}

Tensor AlternatingFlip::apply(const Tensor& image, SampleRng& rng) const {
  check_image(image, "AlternatingFlip");
  const bool first = rng.same_every_epoch().uniform() < 0.5;
  const bool odd_epoch = rng.epoch() % 2 == 1;
  return first != odd_epoch ? mirror(image) : image;
}

Normalize::Normalize(std::vector<float> mean, std::vector<float> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  RG_CHECK(mean_.size() == std_.size() && !mean_.empty(), "Normalize: mean has ", mean_.size(),
           " values and std ", std_.size(), "; expected one per channel");
  for (float s : std_) RG_CHECK(s > 0, "Normalize: std must be positive, got ", s);
}

Tensor Normalize::apply(const Tensor& image, SampleRng&) const {
  check_image_or_volume(image, "Normalize");
  image.check_dtype(DType::f32, "Normalize (apply ToFloat first)");
  RG_CHECK(image.size(0) == static_cast<int64_t>(mean_.size()), "Normalize: image ",
           image.describe(), " has ", image.size(0), " channels but mean/std have ", mean_.size());
  Tensor src = image.contiguous();
  Tensor out = empty(image.shape(), {DType::f32});
  const int64_t plane = image.numel() / image.size(0);
  const float* in = src.data<float>();
  float* o = out.data<float>();
  for (int64_t c = 0; c < image.size(0); ++c) {
    const float m = mean_[c], inv = 1.0f / std_[c];
    for (int64_t i = 0; i < plane; ++i) o[c * plane + i] = (in[c * plane + i] - m) * inv;
  }
  return out;
}

Preprocess::Preprocess(std::vector<float> mean, std::vector<float> std) {
  RG_CHECK(mean.empty() == std.empty(), "Preprocess: mean and std come together (", mean.size(),
           " and ", std.size(), " values)");
  if (!mean.empty()) normalize_ = std::make_shared<Normalize>(std::move(mean), std::move(std));
}

Tensor Preprocess::apply(const Tensor& image, SampleRng& rng) const {
  RG_CHECK(image.dtype() == DType::u8 || image.dtype() == DType::f32,
           "Preprocess: images are u8 (scaled to [0, 1]) or f32 (used as stored), got ",
           image.describe());
  const Tensor x = image.dtype() == DType::u8 ? to_float_.apply(image, rng) : image;
  return normalize_ ? normalize_->apply(x, rng) : x;
}

Compose::Compose(std::vector<std::shared_ptr<Transform>> transforms)
    : transforms_(std::move(transforms)) {}

Tensor Compose::apply(const Tensor& image, SampleRng& rng) const {
  Tensor x = image;
  for (const auto& t : transforms_) x = t->apply(x, rng);
  return x;
}

std::string Compose::name() const {
  std::string s = "Compose(";
  for (std::size_t i = 0; i < transforms_.size(); ++i)
    s += (i ? ", " : "") + transforms_[i]->name();
  return s + ")";
}

bool Compose::moves_pixels() const {
  for (const auto& t : transforms_)
    if (t->moves_pixels()) return true;
  return false;
}

std::shared_ptr<Transform> cifar10_train_transform() {
  return std::make_shared<Compose>(std::vector<std::shared_ptr<Transform>>{
      std::make_shared<RandomCrop>(32, 4), std::make_shared<RandomHorizontalFlip>(0.5),
      std::make_shared<ToFloat>(), std::make_shared<Normalize>(kCifar10Mean, kCifar10Std)});
}

std::shared_ptr<Transform> cifar10_airbench94_transform() {
  return std::make_shared<Compose>(std::vector<std::shared_ptr<Transform>>{
      std::make_shared<RandomCrop>(32, 2, Padding::reflect), std::make_shared<AlternatingFlip>(),
      std::make_shared<ToFloat>(), std::make_shared<Normalize>(kCifar10Mean, kCifar10Std)});
}

std::shared_ptr<Transform> cifar10_test_transform() {
  return std::make_shared<Compose>(std::vector<std::shared_ptr<Transform>>{
      std::make_shared<ToFloat>(), std::make_shared<Normalize>(kCifar10Mean, kCifar10Std)});
}

}  // namespace rg::data
