#pragma once
// A TensorBoard event-file writer for scalar curves and images, with no TensorFlow or protobuf
// library: the file is a sequence of records
//   uint64 length | uint32 masked_crc32c(length) | Event bytes | uint32 masked_crc32c(bytes)
// where Event is the protobuf message {wall_time=1 (double), step=2 (int64),
// file_version=3 (string) | summary=5 {value=1 {tag=1 (string), simple_value=2 (float) |
// image=4 {height=1, width=2, colorspace=3 (int32), encoded_image_string=4 (PNG bytes)}}}}.
// `tensorboard --logdir <folder>` shows the curves (Scalars) and images (Images).

#include <cstdint>
#include <fstream>
#include <string>

#include "core/tensor.h"

namespace rg::train {

class TensorBoardWriter {
 public:
  // Creates <folder>/events.out.tfevents.<unix time>.<host> (the folder must exist).
  explicit TensorBoardWriter(const std::string& folder);
  void add_scalar(const std::string& tag, double value, int64_t step);
  // image: (C, H, W) with C = 1 (grey) or 3 (RGB), u8, or f32 / f64 in [0, 1] (scaled by 255
  // and rounded), on any device; written as a PNG (data/png_encode.h). Throws rg::Error naming
  // a bad shape, dtype, or a value outside [0, 1] (NaN included).
  void add_image(const std::string& tag, const Tensor& image, int64_t step);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& event);
  std::string path_;
  std::ofstream out_;
};

// CRC-32C (Castagnoli), as TFRecord uses; and TensorFlow's masking of it.
uint32_t crc32c(const void* data, std::size_t n);
uint32_t masked_crc32c(const void* data, std::size_t n);

}  // namespace rg::train
