#include "data/segmentation_transforms.h"

#include "core/dispatch.h"

namespace rg::data {
namespace {

// An image and its mask seen as (C, D, H, W) and (D, H, W), with D = 1 for a 2-D sample: one
// code path for both.
struct Dims {
  int64_t C, D, H, W;
  bool volume;
};

Dims dims_of(const SegmentationExample& ex, const std::string& who) {
  check_segmentation_example(ex, kMaxSegmentationClasses, who);
  const Tensor& m = ex.mask;
  if (m.dim() == 3) return {ex.image.size(0), m.size(0), m.size(1), m.size(2), true};
  return {ex.image.size(0), 1, m.size(0), m.size(1), false};
}

// Reverses axis `axis` (of extent n) of a contiguous tensor seen as (outer, n, inner).
Tensor flip_axis(const Tensor& t, int64_t outer, int64_t n, int64_t inner) {
  Tensor src = t.contiguous();
  Tensor out = empty(t.shape(), {t.dtype()});
  dispatch_all(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = src.data<T>();
    T* o = out.data<T>();
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t i = 0; i < n; ++i) {
        const T* from = in + (a * n + (n - 1 - i)) * inner;
        T* to = o + (a * n + i) * inner;
        for (int64_t k = 0; k < inner; ++k) to[k] = from[k];
      }
  });
  return out;
}

// The window of `t` (planes, D, H, W) starting at (z0, y0, x0) in coordinates padded by
// (pz, py, px), of size (d, h, w); outside the source it holds `fill`.
Tensor crop_padded(const Tensor& t, int64_t planes, const Dims& s, int64_t z0, int64_t y0,
                   int64_t x0, int64_t pz, int64_t py, int64_t px, int64_t d, int64_t h, int64_t w,
                   double fill, Shape out_shape) {
  Tensor src = t.contiguous();
  Tensor out = full(out_shape, fill, {t.dtype()});
  dispatch_all(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = src.data<T>();
    T* o = out.data<T>();
    for (int64_t c = 0; c < planes; ++c)
      for (int64_t z = 0; z < d; ++z) {
        const int64_t sz = z0 + z - pz;
        if (sz < 0 || sz >= s.D) continue;
        for (int64_t y = 0; y < h; ++y) {
          const int64_t sy = y0 + y - py;
          if (sy < 0 || sy >= s.H) continue;
          const T* row = in + ((c * s.D + sz) * s.H + sy) * s.W;
          T* orow = o + ((c * d + z) * h + y) * w;
          for (int64_t x = 0; x < w; ++x) {
            const int64_t sx = x0 + x - px;
            if (sx >= 0 && sx < s.W) orow[x] = row[sx];
          }
        }
      }
  });
  return out;
}

}  // namespace

RandomFlipPair::RandomFlipPair(FlipAxis axis, double p) : axis_(axis), p_(p) {
  RG_CHECK(p >= 0 && p <= 1, "RandomFlipPair: p must be in [0, 1], got ", p);
}

std::string RandomFlipPair::name() const {
  switch (axis_) {
    case FlipAxis::horizontal:
      return "RandomFlipPair(horizontal)";
    case FlipAxis::vertical:
      return "RandomFlipPair(vertical)";
    case FlipAxis::depth:
      return "RandomFlipPair(depth)";
  }
  return "RandomFlipPair";
}

SegmentationExample RandomFlipPair::apply(const SegmentationExample& ex, SampleRng& rng) const {
  const Dims s = dims_of(ex, name());
  RG_CHECK(axis_ != FlipAxis::depth || s.volume, name(), ": a depth flip needs a volume, got mask ",
           ex.mask.describe());
  // The draw happens whether or not the sample flips, so later transforms see the same stream.
  if (rng.uniform() >= p_) return ex;
  // (outer, n, inner) of the flipped axis, for the mask (D, H, W); the image adds C outside.
  int64_t n = s.W, inner = 1;
  if (axis_ == FlipAxis::vertical) n = s.H, inner = s.W;
  if (axis_ == FlipAxis::depth) n = s.D, inner = s.H * s.W;
  const int64_t outer = s.D * s.H * s.W / (n * inner);
  return {flip_axis(ex.image, s.C * outer, n, inner), flip_axis(ex.mask, outer, n, inner)};
}

RandomCropPair::RandomCropPair(std::vector<int64_t> size, int64_t padding, uint8_t mask_fill,
                               SmallerThanCrop smaller)
    : size_(std::move(size)), padding_(padding), mask_fill_(mask_fill), smaller_(smaller) {
  RG_CHECK(size_.size() == 2 || size_.size() == 3,
           "RandomCropPair: size must be {H, W} or {D, H, W}, got ", size_.size(), " values");
  for (int64_t v : size_) RG_CHECK(v > 0, "RandomCropPair: every size must be > 0, got ", v);
  RG_CHECK(padding_ >= 0, "RandomCropPair: padding must be >= 0, got ", padding_);
}

SegmentationExample RandomCropPair::apply(const SegmentationExample& ex, SampleRng& rng) const {
  const Dims s = dims_of(ex, "RandomCropPair");
  RG_CHECK(static_cast<int64_t>(size_.size()) == ex.mask.dim(), "RandomCropPair: a crop of ",
           size_.size(), " sizes does not fit mask ", ex.mask.describe());
  // A 2-D sample is a volume of depth 1 that is neither padded nor cropped in depth.
  const int64_t d = s.volume ? size_[0] : 1, h = size_[size_.size() - 2], w = size_.back();
  // The padding of one side: `padding_`, or under SmallerThanCrop::pad enough for the crop.
  auto pad_of = [&](int64_t side, int64_t crop) {
    if (smaller_ == SmallerThanCrop::pad && side + 2 * padding_ < crop)
      return (crop - side + 1) / 2;
    return padding_;
  };
  const int64_t pz = s.volume ? pad_of(s.D, d) : 0, py = pad_of(s.H, h), px = pad_of(s.W, w);
  RG_CHECK(s.D + 2 * pz >= d && s.H + 2 * py >= h && s.W + 2 * px >= w,
           "RandomCropPair: a crop of ", s.volume ? std::to_string(d) + "x" : "", h, "x", w,
           " does not fit mask ", ex.mask.describe(), " padded by ", padding_);
  const int64_t z0 = s.volume ? rng.below(s.D + 2 * pz - d + 1) : 0;
  const int64_t y0 = rng.below(s.H + 2 * py - h + 1);
  const int64_t x0 = rng.below(s.W + 2 * px - w + 1);
  Shape image_shape = s.volume ? Shape{s.C, d, h, w} : Shape{s.C, h, w};
  Shape mask_shape = s.volume ? Shape{d, h, w} : Shape{h, w};
  return {crop_padded(ex.image, s.C, s, z0, y0, x0, pz, py, px, d, h, w, 0.0, image_shape),
          crop_padded(ex.mask, 1, s, z0, y0, x0, pz, py, px, d, h, w, mask_fill_, mask_shape)};
}

ImageOnly::ImageOnly(std::shared_ptr<Transform> transform) : transform_(std::move(transform)) {
  RG_CHECK(transform_ != nullptr, "ImageOnly: a transform is required");
  RG_CHECK(!transform_->moves_pixels(), "ImageOnly: ", transform_->name(),
           " moves pixels and would move the image without its mask; use RandomFlipPair or "
           "RandomCropPair");
}

SegmentationExample ImageOnly::apply(const SegmentationExample& ex, SampleRng& rng) const {
  return {transform_->apply(ex.image, rng), ex.mask};
}

ComposePair::ComposePair(std::vector<std::shared_ptr<SegmentationTransform>> transforms)
    : transforms_(std::move(transforms)) {
  for (const auto& t : transforms_) RG_CHECK(t != nullptr, "ComposePair: a transform is null");
}

SegmentationExample ComposePair::apply(const SegmentationExample& ex, SampleRng& rng) const {
  SegmentationExample x = ex;
  for (const auto& t : transforms_) x = t->apply(x, rng);
  return x;
}

std::string ComposePair::name() const {
  std::string s = "ComposePair(";
  for (std::size_t i = 0; i < transforms_.size(); ++i)
    s += (i ? ", " : "") + transforms_[i]->name();
  return s + ")";
}

}  // namespace rg::data
