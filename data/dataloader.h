#pragma once
// DataLoader: turns a Dataset + Sampler + Transform into batches, with N worker threads and a
// bounded prefetch queue. Batch b of an epoch is always built from the same samples with the
// same augmentation, whatever the worker count: workers claim batch numbers, and the
// consumer receives them strictly in order.
//
// Classification (Dataset + Transform) and segmentation (SegmentationDataset +
// SegmentationTransform) share this loader: only the making of one sample differs; workers,
// ordering, prefetch, pinning and samplers (the DistributedSampler included) are the same.
//
//   DataLoader loader(train_set, std::make_shared<RandomSampler>(n, seed), transform, opts);
//   for (int epoch = 0; epoch < E; ++epoch) {
//     loader.start_epoch(epoch);
//     while (auto batch = loader.next()) { ... batch->images, batch->labels ... }
//   }

#include <memory>
#include <optional>
#include <vector>

#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/sampler.h"
#include "data/segmentation.h"
#include "data/segmentation_transforms.h"
#include "data/transforms.h"

namespace rg::data {

enum class LastBatch { keep, drop };  // keep a short last batch, or drop it (drop_last)
// PinMemory::yes: batches come in pinned host memory, so that
// `batch->images.to(device, NonBlocking::yes)` overlaps the copy with the GPU's work. Where
// no GPU is usable, batches stay in ordinary memory (Tensor::pin_memory).
enum class PinMemory { no, yes };

// More worker threads than any machine can keep busy; a larger count is a typo (and 20,000
// threads fail with a bare "Resource temporarily unavailable").
inline constexpr int kMaxWorkers = 256;

struct DataLoaderOptions {
  int64_t batch_size = 128;
  LastBatch last_batch = LastBatch::keep;
  int num_workers = 2;  // 0: batches are built in the caller's thread; at most kMaxWorkers
  int prefetch = 4;     // batches built ahead of the consumer, at most
  uint64_t seed = 0;    // augmentation randomness
  PinMemory pin_memory = PinMemory::no;
};

class DataLoader final : public BatchSource {
 public:
  DataLoader(std::shared_ptr<Dataset> dataset, std::shared_ptr<Sampler> sampler,
             std::shared_ptr<Transform> transform, DataLoaderOptions options);
  // Segmentation: batches carry masks instead of labels.
  DataLoader(std::shared_ptr<SegmentationDataset> dataset, std::shared_ptr<Sampler> sampler,
             std::shared_ptr<SegmentationTransform> transform, DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Sets the sampler's epoch (a new shuffle) and starts producing that epoch's batches.
  void start_epoch(int64_t epoch) override;
  // The next batch of the epoch, or nullopt at its end. Rethrows a worker's error (e.g. an
  // undecodable image) when its batch is reached.
  std::optional<Batch> next() override;
  int64_t num_batches() const override;
  int64_t num_samples() const override;  // samples per epoch after drop_last
  // The data set (a classification loader's; segmentation_dataset() for a segmentation one).
  const Dataset& dataset() const;
  const SegmentationDataset& segmentation_dataset() const;
  bool is_segmentation() const { return segmentation_ != nullptr; }
  std::string describe() const override;  // the data set's describe()
  Sampler& sampler() { return *sampler_; }

 private:
  struct Epoch;
  struct Sample;
  void check_options() const;
  void start_worker(Epoch* e, int64_t total);  // throws std::system_error
  Sample sample(int64_t index) const;
  Batch build(int64_t batch_index) const;
  void stop();

  std::shared_ptr<Dataset> dataset_;                   // classification, or
  std::shared_ptr<SegmentationDataset> segmentation_;  // segmentation
  std::shared_ptr<Sampler> sampler_;
  std::shared_ptr<Transform> transform_;
  std::shared_ptr<SegmentationTransform> segmentation_transform_;
  DataLoaderOptions options_;
  std::vector<int64_t> order_;  // this epoch's indices
  int64_t epoch_ = -1;
  int64_t next_batch_ = 0;
  std::unique_ptr<Epoch> running_;
};

}  // namespace rg::data
