#pragma once
// What the training loop draws batches from (train/epoch.h): the DataLoader (dataloader.h:
// samples decoded and augmented on the host by worker threads) or the DeviceLoader
// (device_loader.h: the whole data set on the training device, batches made there by kernels).
// Both deliver the batches of an epoch in the sampler's order, the same batches for the same
// seed, epoch and indices.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rg::data {

struct Batch {
  Tensor images;  // (B, C, H, W) f32; (B, C, D, H, W) for volumes
  Tensor labels;  // (B) i64 — classification only (undefined for segmentation)
  Tensor masks;   // (B, H, W) or (B, D, H, W) i64 class indices — segmentation only
  std::vector<int64_t> indices;  // dataset indices of the samples
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Sets the sampler's epoch (a new shuffle) and starts that epoch's batches.
  virtual void start_epoch(int64_t epoch) = 0;
  // The next batch of the epoch, or nullopt at its end.
  virtual std::optional<Batch> next() = 0;
  virtual int64_t num_batches() const = 0;
  virtual int64_t num_samples() const = 0;  // samples per epoch after drop_last
  virtual std::string describe() const = 0;
};

}  // namespace rg::data
