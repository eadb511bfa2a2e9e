#pragma once
// Dataset: random access to labelled images. An image is a u8 tensor (C, H, W) — the form the
// files hold; transforms turn it into the f32 tensor the model sees.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rg::data {

struct Example {
  Tensor image;  // (C, H, W) u8
  int64_t label = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Thread-safe: DataLoader workers call it concurrently.
  virtual Example get(int64_t index) const = 0;
  virtual int64_t num_classes() const = 0;
  virtual std::vector<std::string> class_names() const { return {}; }
  // Where the examples come from, for messages ("CIFAR-10 binary at /data/cifar, train").
  virtual std::string describe() const = 0;

 protected:
  void check_index(int64_t index) const;
};

// `limit` examples of another dataset, evenly spaced over it (limit <= 0: all), so every class
// is represented. For quick runs.
std::shared_ptr<Dataset> take(std::shared_ptr<Dataset> dataset, int64_t limit);

}  // namespace rg::data
