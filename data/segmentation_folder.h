#pragma once
// SegmentationFolder: images and their masks in two folders, paired by file stem:
//   root/images/<stem>.{png,jpg,jpeg,bmp,npy}
//   root/masks/<stem>.{png,npy}
// Images are decoded by image_decode.h (JPEG, PNG, BMP: (3, H, W) u8) or read as NumPy arrays
// (npy.h: (C, H, W), (C, D, H, W), or without C for one channel). Masks are 8-bit greyscale PNGs
// (mask_decode.h) or integer .npy arrays, (H, W) or (D, H, W), each value a class. Volumes
// are .npy pairs.
//
// Every image must have a mask and every mask an image; a mask whose size differs from its
// image's, or with a value >= num_classes, is an error naming the file (and the value). Files
// are read on every access (no cache): a volume set rarely fits in memory.

#include <string>
#include <vector>

#include "data/segmentation.h"

namespace rg::data {

struct SegmentationFolderOptions {
  int64_t num_classes = 2;  // binary (background, foreground) by default; at most 256
  // Channels of decoded (PNG, JPEG, BMP) images: 3 (RGB) or 1 (luma, ITU-R BT.601). .npy
  // images keep the channels they hold...
  int64_t channels = 3;
  // ...which must be these many when it is not 0: a model takes one channel count.
  int64_t npy_channels = 0;
  // 2: every mask is (H, W); 3: every mask is (D, H, W) (a set of volumes); 0: either.
  int64_t spatial_dims = 0;
};

class SegmentationFolder final : public SegmentationDataset {
 public:
  explicit SegmentationFolder(const std::string& root,
                              const SegmentationFolderOptions& options = {});
  int64_t size() const override { return static_cast<int64_t>(images_.size()); }
  SegmentationExample get(int64_t index) const override;
  int64_t num_classes() const override { return options_.num_classes; }
  std::string describe() const override { return "segmentation folder " + root_; }
  const std::vector<std::string>& image_files() const { return images_; }
  const std::vector<std::string>& mask_files() const { return masks_; }

 private:
  std::string root_;
  SegmentationFolderOptions options_;
  std::vector<std::string> images_, masks_;  // paired by position
};

// The mask in `path` (PNG or .npy) as u8, every value checked against num_classes.
Tensor read_mask_file(const std::string& path, int64_t num_classes);
// The image in `path` (PNG, JPEG, BMP or .npy) as (C, ...) u8 or f32.
Tensor read_segmentation_image(const std::string& path, int64_t channels, int64_t mask_dims);
// Whether `path` names a file the folder reads as an image (by extension: .png, .jpg, .jpeg,
// .bmp, .npy; case-insensitive).
bool is_segmentation_image_file(const std::string& path);

// The number of classes the masks in `mask_files` show: their highest value + 1 (at least 2:
// a set whose masks hold only background still has a foreground to learn).
int64_t classes_in_masks(const std::vector<std::string>& mask_files);

// Writes a mask (H, W) as an 8-bit greyscale PNG or, for a path ending in .npy, a mask of any
// rank as a u8 .npy array; atomically (core/atomic_file.h). Values are written as they are:
// read_mask_file gives the same tensor back.
void write_mask_file(const std::string& path, const Tensor& mask);

}  // namespace rg::data
