#pragma once
// CIFAR-10 in the official binary layout, and a finder that accepts any of the layouts
// ringgrad reads (binary batches, image folder, CSV list) under one root.
//
// Binary layout: data_batch_1.bin .. data_batch_5.bin (train) and test_batch.bin (test), each
// 10000 records of 3073 bytes: one label byte, then 1024 R, 1024 G, 1024 B bytes (32x32,
// row-major) — already the (C, H, W) order the model wants.

#include <memory>
#include <string>

#include "data/dataset.h"

namespace rg::data {

enum class Split { train, test };
enum class DataFormat { automatic, binary, image_folder, csv };

DataFormat parse_data_format(const std::string& text);  // auto|binary|folder|csv

class Cifar10Binary final : public Dataset {
 public:
  // `root` holds the .bin files (or a cifar-10-batches-bin/ folder that does).
  Cifar10Binary(const std::string& root, Split split);
  int64_t size() const override { return images_.size(0); }
  Example get(int64_t index) const override;
  int64_t num_classes() const override { return 10; }
  std::vector<std::string> class_names() const override;
  std::string describe() const override { return description_; }

 private:
  Tensor images_;  // (N, 3, 32, 32) u8
  std::vector<int64_t> labels_;
  std::string description_;
};

// Opens the CIFAR-10 split under root in `format`, detecting it when automatic:
//   root/{data_batch_1.bin,...} or root/cifar-10-batches-bin/  -> binary
//   root/train/<class>/*.jpg|png|bmp and root/test/...           -> image folder
//   root/train.csv and root/test.csv (path,label)                 -> CSV list
// With nothing found, the error lists every place it looked and how to get CIFAR-10.
std::shared_ptr<Dataset> open_cifar10(const std::string& root, Split split,
                                      DataFormat format = DataFormat::automatic);

inline constexpr const char* kCifar10Classes[10] = {
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};

}  // namespace rg::data
