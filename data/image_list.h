#pragma once
// Datasets of image files, decoded with stb_image (jpg, png, bmp):
//   ImageFolder — root/<class>/<image>, classes in sorted order (torchvision's ImageFolder);
//   CsvList     — a CSV of "path,label" lines (the ann_file of mmcls-style configs), paths
//                 relative to the CSV's folder unless absolute; an optional header line.
// All images must share one size (the model's input). Decoded images are cached in memory
// when they fit in the budget — CIFAR-10 is 184 MB decoded — and decoded on every access
// otherwise.

#include <string>
#include <vector>

#include "data/dataset.h"

namespace rg::data {

struct ImageListOptions {
  int64_t cache_budget_bytes = int64_t{2} << 30;  // decode everything up front below this
  int64_t num_classes = 0;                        // CsvList: 0 = infer as max label + 1
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

class ImageFolder final : public ImageList {
 public:
  explicit ImageFolder(const std::string& root, const ImageListOptions& options = {});
};

class CsvList final : public ImageList {
 public:
  explicit CsvList(const std::string& csv_path, const ImageListOptions& options = {});
};

// Decodes one image file to (3, H, W) u8; throws rg::Error naming the file when it is missing
// or cannot be decoded.
Tensor decode_image(const std::string& path);

}  // namespace rg::data
