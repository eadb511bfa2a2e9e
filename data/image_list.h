#pragma once
// Datasets of image files (jpg, png, bmp; decoded by data/image_decode.h):
//   ImageFolder — root/<class>/<image>, classes in sorted order (torchvision's ImageFolder);
//   CsvList     — a CSV of "path,label" lines (the ann_file of mmcls-style configs), paths
//                 relative to the CSV's folder unless absolute; an optional header line.
// All images must share one size (the model's input). Decoded images are cached in memory
// when they fit in the budget — CIFAR-10 is 184 MB decoded — and decoded on every access
// otherwise.

#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image_decode.h"

namespace rg::data {

// The most classes a CSV list may have: far above any classification data set (ImageNet-21k
// has 21,841), far below a label that would make the model's last layer exhaust memory.
inline constexpr int64_t kMaxClasses = int64_t{1} << 20;
// The largest CSV list read (ten million lines of 100 characters).
inline constexpr int64_t kMaxCsvBytes = int64_t{1} << 30;

struct ImageListOptions {
  int64_t cache_budget_bytes = int64_t{2} << 30;  // decode everything up front below this
  int64_t num_classes = 0;  // CsvList: 0 = infer as max label + 1 (at most kMaxClasses)
};

class ImageList : public Dataset {
 public:
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Example get(int64_t index) const override;
  int64_t num_classes() const override { return num_classes_; }
  std::vector<std::string> class_names() const override { return class_names_; }
  std::string describe() const override { return description_; }
  bool cached() const { return cache_.defined(); }

 protected:
  // Validates labels, probes the image size from the first file and fills the cache.
  void finish(const ImageListOptions& options);

  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
  std::vector<std::string> class_names_;
  int64_t num_classes_ = 0;
  std::string description_;

 private:
  Tensor decode(int64_t index) const;
  int64_t channels_ = 3, height_ = 0, width_ = 0;
  Tensor cache_;  // (N, C, H, W) u8 when cached
};

// The class sub-folders of an image folder, sorted: label i is the i-th name.
std::vector<std::string> image_folder_classes(const std::string& root);

class ImageFolder final : public ImageList {
 public:
  explicit ImageFolder(const std::string& root, const ImageListOptions& options = {});
};

class CsvList final : public ImageList {
 public:
  explicit CsvList(const std::string& csv_path, const ImageListOptions& options = {});
};

}  // namespace rg::data
