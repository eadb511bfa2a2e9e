#pragma once
// Segmentation data: an image with a class index per pixel (or voxel), beside dataset.h's
// image + one label. 2-D and 3-D share the interface; the letters are
//   C channels, D depth, H height, W width.
//
//   image: (C, H, W) or (C, D, H, W), u8 (scale it with ToFloat) or f32 (used as stored)
//   mask:  (H, W)    or (D, H, W),    u8 class indices in [0, num_classes())
//
// Masks are u8 in a data set, and become i64 only in the loader's batch (the target dtype
// cross_entropy and nll_loss take): a 32x160x160 volume's mask is 800 KiB as u8 instead of
// 6.4 MiB as i64, cheap to cache, crop and flip, and a PNG mask cannot hold a class above
// 255 anyway. So a segmentation data set has at most kMaxSegmentationClasses classes.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rg::data {

inline constexpr int64_t kMaxSegmentationClasses = 256;

struct SegmentationExample {
  Tensor image;  // (C, H, W) or (C, D, H, W), u8 or f32
  Tensor mask;   // (H, W) or (D, H, W) u8
};

class SegmentationDataset {
 public:
  virtual ~SegmentationDataset() = default;
  virtual int64_t size() const = 0;
  // Thread-safe: DataLoader workers call it concurrently.
  virtual SegmentationExample get(int64_t index) const = 0;
  // Mask values are in [0, num_classes()); 2 for a binary mask (background, foreground).
  virtual int64_t num_classes() const = 0;
  virtual std::vector<std::string> class_names() const { return {}; }
  // Where the examples come from, for messages ("shapes 2-D 64x64, seed 1, 1000 samples").
  virtual std::string describe() const = 0;

 protected:
  void check_index(int64_t index) const;
};

// `limit` examples of a segmentation set, evenly spaced over it (limit <= 0: all). For quick
// runs, as take() in dataset.h.
std::shared_ptr<SegmentationDataset> take(std::shared_ptr<SegmentationDataset> dataset,
                                          int64_t limit);

// Checks that `ex` is one image and its mask as described above (shapes agree, dtypes, mask
// values below `num_classes`); `who` names the sample in the message. Data sets call it on what
// they read; the loader calls it on what the transforms return.
void check_segmentation_example(const SegmentationExample& ex, int64_t num_classes,
                                const std::string& who);

}  // namespace rg::data
