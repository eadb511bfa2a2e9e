#pragma once
// A labelled image set held in memory, for the device data path's tests: pseudo-random u8
// pixels (an LCG: the same bytes on every machine), label (7 i) mod 10.

#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace rg::testing {

class MemoryImages final : public data::Dataset {
 public:
  MemoryImages(int64_t n, int64_t channels, int64_t height, int64_t width, uint32_t seed = 1)
      : images_(empty({n, channels, height, width}, {DType::u8, Device::cpu()})) {
    uint32_t state = seed * 2654435761u + 1;
    uint8_t* p = images_.data<uint8_t>();
    for (int64_t i = 0; i < images_.numel(); ++i) {
      state = state * 1664525u + 1013904223u;
      p[i] = static_cast<uint8_t>(state >> 24);
    }
  }
  int64_t size() const override { return images_.size(0); }
  data::Example get(int64_t index) const override {
    check_index(index);
    return {images_.select(0, index), index * 7 % 10};
  }
  int64_t num_classes() const override { return 10; }
  std::string describe() const override { return "memory images " + images_.describe(); }

 private:
  Tensor images_;
};

}  // namespace rg::testing
