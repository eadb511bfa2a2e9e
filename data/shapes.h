#pragma once
// A generated segmentation data set: shapes over a noisy background with an intensity gradient.
//   2-D: discs, boxes and triangles in (C, H, W) images, masks (H, W);
//   3-D: spheres and boxes in (C, D, H, W) volumes, masks (D, H, W) — one channel and a binary
//        mask, at 32x160x160, is the form of the seeds' 3-D UNet data.
// Sample i is a function of (seed, i) alone (Philox draws keyed by the seed, counted from the
// index), so the data set costs no memory at any size and every worker and every rank draws the
// same sample for the same index.
//
// Geometry is in coordinates normalised to [0, 1] on each axis (pixel centres at
// (x + 0.5) / W): a disc in a square image is round; in a 32x160x160 volume a "sphere" is an
// ellipsoid of the volume's proportions, as an organ scanned with thick slices.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "data/segmentation.h"

namespace rg::data {

// binary: classes background (0) and shape (1). per_kind: background and one class per kind —
// disc 1, box 2, triangle 3 in 2-D; sphere 1, box 2 in 3-D.
enum class ShapeClasses { binary, per_kind };
enum class ShapeKind { disc, box, triangle, sphere };

struct ShapesOptions {
  int64_t size = 1000;                         // samples
  std::vector<int64_t> image_size = {64, 64};  // {H, W}, or {D, H, W} for volumes
  int64_t channels = 1;
  int64_t max_shapes = 3;  // each sample holds 1 to max_shapes shapes (uniform count)
  uint64_t seed = 0;
  ShapeClasses classes = ShapeClasses::binary;
  double noise = 0.08;     // standard deviation of the Gaussian pixel noise (intensity in [0, 1])
  double gradient = 0.25;  // the background's intensity rises by up to this across the image
};

// One drawn shape, in normalised (z, y, x) coordinates (z unused in 2-D). Later shapes cover
// earlier ones.
struct DrawnShape {
  ShapeKind kind;
  std::array<double, 3> center;  // (z, y, x)
  std::array<double, 3> extent;  // radii (disc, sphere) or half sizes (box), per axis
  std::array<std::array<double, 2>, 3> vertices;  // triangle only: (y, x) of each corner
  std::vector<double> intensity;                  // per channel, in [0, 1]
  uint8_t label;                                  // its class in the mask
};

class Shapes final : public SegmentationDataset {
 public:
  explicit Shapes(ShapesOptions options);
  int64_t size() const override { return options_.size; }
  SegmentationExample get(int64_t index) const override;  // image u8, mask u8
  int64_t num_classes() const override;
  std::vector<std::string> class_names() const override;
  std::string describe() const override;

  // The shapes sample `index` holds, in drawing order: what get() rasterises.
  std::vector<DrawnShape> layout(int64_t index) const;
  bool volume() const { return options_.image_size.size() == 3; }
  // Whether the normalised point (z, y, x) lies inside `shape`.
  static bool contains(const DrawnShape& shape, double z, double y, double x);

 private:
  ShapesOptions options_;
};

// Limits of the options: beyond them a value is a typo, and a sample would not fit in memory.
inline constexpr int64_t kMaxShapesSide = 4096;
inline constexpr int64_t kMaxShapesVoxels = int64_t{1} << 27;  // 128 MiB per channel
inline constexpr int64_t kMaxShapesChannels = 16;
inline constexpr int64_t kMaxShapesPerSample = 64;

}  // namespace rg::data
