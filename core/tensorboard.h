#pragma once
// A TensorBoard event-file writer for scalar curves, with no TensorFlow or protobuf library:
// the file is a sequence of records
//   uint64 length | uint32 masked_crc32c(length) | Event bytes | uint32 masked_crc32c(bytes)
// where Event is the protobuf message {wall_time=1 (double), step=2 (int64),
// file_version=3 (string) | summary=5 {value=1 {tag=1 (string), simple_value=2 (float)}}}.
// `tensorboard --logdir <folder>` shows the curves.

#include <cstdint>
#include <fstream>
#include <string>

namespace rg {

class TensorBoardWriter {
 public:
  // Creates <folder>/events.out.tfevents.<unix time>.<host> (the folder must exist).
  explicit TensorBoardWriter(const std::string& folder);
  void add_scalar(const std::string& tag, double value, int64_t step);
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

}  // namespace rg
