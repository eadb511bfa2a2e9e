#include "data/dataloader.h"

#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "core/trace.h"

namespace rg::data {

// The workers of one epoch and the batches they finished but the consumer has not taken.
struct DataLoader::Epoch {
  std::mutex mutex;
  std::condition_variable produced, consumed;
  std::map<int64_t, Batch> ready;
  std::map<int64_t, std::exception_ptr> errors;
  int64_t next_claim = 0;  // next batch number a worker may take
  int64_t taken = 0;       // batches handed to the consumer so far
  bool stopping = false;
  std::vector<std::thread> workers;
};

// One sample after its transforms: the image as f32, and its label or its mask.
struct DataLoader::Sample {
  Tensor image;  // contiguous f32
  int64_t label = 0;
  Tensor mask;  // contiguous u8, segmentation only
};

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, std::shared_ptr<Sampler> sampler,
                       std::shared_ptr<Transform> transform, DataLoaderOptions options)
    : dataset_(std::move(dataset)),
      sampler_(std::move(sampler)),
      transform_(std::move(transform)),
      options_(options) {
  RG_CHECK(dataset_ && sampler_, "DataLoader: dataset and sampler are required");
  check_options();
}

DataLoader::DataLoader(std::shared_ptr<SegmentationDataset> dataset,
                       std::shared_ptr<Sampler> sampler,
                       std::shared_ptr<SegmentationTransform> transform, DataLoaderOptions options)
    : segmentation_(std::move(dataset)),
      sampler_(std::move(sampler)),
      segmentation_transform_(std::move(transform)),
      options_(options) {
  RG_CHECK(segmentation_ && sampler_, "DataLoader: dataset and sampler are required");
  check_options();
}

void DataLoader::check_options() const {
  RG_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be > 0, got ",
           options_.batch_size);
  RG_CHECK(options_.num_workers >= 0 && options_.num_workers <= kMaxWorkers,
           "DataLoader: num_workers must be in [0, ", kMaxWorkers, "], got ", options_.num_workers);
  RG_CHECK(options_.prefetch >= 1, "DataLoader: prefetch must be >= 1, got ", options_.prefetch);
}

const Dataset& DataLoader::dataset() const {
  RG_CHECK(dataset_ != nullptr, "DataLoader: dataset() of a segmentation loader (",
           segmentation_->describe(), "); use segmentation_dataset()");
  return *dataset_;
}

const SegmentationDataset& DataLoader::segmentation_dataset() const {
  RG_CHECK(segmentation_ != nullptr,
           "DataLoader: segmentation_dataset() of a classification "
           "loader (",
           dataset_->describe(), "); use dataset()");
  return *segmentation_;
}

std::string DataLoader::describe() const {
  return segmentation_ ? segmentation_->describe() : dataset_->describe();
}

DataLoader::~DataLoader() {
  stop();
}

int64_t DataLoader::num_samples() const {
  const int64_t n = sampler_->size();
  return options_.last_batch == LastBatch::drop ? n / options_.batch_size * options_.batch_size : n;
}

int64_t DataLoader::num_batches() const {
  return (num_samples() + options_.batch_size - 1) / options_.batch_size;
}

DataLoader::Sample DataLoader::sample(int64_t index) const {
  SampleRng rng(options_.seed, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(index));
  Sample s;
  if (segmentation_) {
    SegmentationExample ex = segmentation_->get(index);
    if (segmentation_transform_) ex = segmentation_transform_->apply(ex, rng);
    // After the transforms: a user's transform may have broken the pairing.
    check_segmentation_example(ex, segmentation_->num_classes(),
                               "DataLoader: sample " + std::to_string(index) + " of " +
                                   segmentation_->describe() + " after transforms");
    s.image = ex.image;
    s.mask = ex.mask.contiguous();
  } else {
    Example ex = dataset_->get(index);
    s.image = transform_ ? transform_->apply(ex.image, rng) : ex.image;
    s.label = ex.label;
  }
  s.image = s.image.to(DType::f32).contiguous();
  return s;
}

Batch DataLoader::build(int64_t batch_index) const {
  const int64_t begin = batch_index * options_.batch_size;
  const int64_t end = std::min(begin + options_.batch_size, num_samples());
  const int64_t n = end - begin;
  Batch batch;
  if (!segmentation_) batch.labels = empty({n}, {DType::i64});
  for (int64_t i = begin; i < end; ++i) {
    const int64_t index = order_[static_cast<std::size_t>(i)];
    const Sample s = sample(index);
    if (i == begin) {
      Shape shape = s.image.shape();
      shape.insert(shape.begin(), n);
      batch.images = empty(shape, {DType::f32});
      if (segmentation_) {
        Shape mask_shape = s.mask.shape();
        mask_shape.insert(mask_shape.begin(), n);
        batch.masks = empty(mask_shape, {DType::i64});
      }
    }
    RG_CHECK(s.image.numel() * n == batch.images.numel() &&
                 (!segmentation_ || s.mask.numel() * n == batch.masks.numel()),
             "DataLoader: sample ", index, " of ", describe(), " became ", s.image.describe(),
             segmentation_ ? " (mask " + s.mask.describe() + ")" : "",
             " after transforms, unlike the rest of its batch ", batch.images.describe());
    const int64_t k = i - begin;
    std::memcpy(batch.images.data<float>() + k * s.image.numel(), s.image.data<float>(),
                s.image.nbytes());
    if (segmentation_) {
      const uint8_t* m = s.mask.data<uint8_t>();
      int64_t* out = batch.masks.data<int64_t>() + k * s.mask.numel();
      for (int64_t j = 0; j < s.mask.numel(); ++j) out[j] = m[j];
    } else {
      batch.labels.data<int64_t>()[k] = s.label;
    }
    batch.indices.push_back(index);
  }
  if (options_.pin_memory == PinMemory::yes) {
    // In the worker thread, as PyTorch's pin-memory thread: one copy per batch, off the
    // training loop.
    batch.images = batch.images.pin_memory();
    if (batch.labels.defined()) batch.labels = batch.labels.pin_memory();
    if (batch.masks.defined()) batch.masks = batch.masks.pin_memory();
  }
  return batch;
}

void DataLoader::stop() {
  if (!running_) return;
  {
    std::lock_guard lock(running_->mutex);
    running_->stopping = true;
  }
  running_->consumed.notify_all();
  for (auto& w : running_->workers) w.join();
  running_.reset();
}

void DataLoader::start_epoch(int64_t epoch) {
  stop();
  sampler_->set_epoch(epoch);
  epoch_ = epoch;
  order_ = sampler_->indices();
  next_batch_ = 0;
  if (options_.num_workers == 0) return;
  running_ = std::make_unique<Epoch>();
  Epoch* e = running_.get();
  const int64_t total = num_batches();
  for (int w = 0; w < options_.num_workers; ++w) {
    try {
      start_worker(e, total);
    } catch (const std::system_error& err) {
      stop();  // joins the workers already started
      fail("DataLoader: cannot start worker thread ", w + 1, " of ", options_.num_workers, " (",
           err.what(), "); use fewer workers");
    }
  }
}

void DataLoader::start_worker(Epoch* e, int64_t total) {
  e->workers.emplace_back([this, e, total, w = e->workers.size()] {
    trace::name_this_thread("data worker " + std::to_string(w));
    for (;;) {
      int64_t b;
      {
        std::unique_lock lock(e->mutex);
        // Bounded prefetch: never run more than `prefetch` batches ahead of the consumer.
        e->consumed.wait(lock, [&] {
          return e->stopping || e->next_claim >= total ||
                 e->next_claim < e->taken + options_.prefetch;
        });
        if (e->stopping || e->next_claim >= total) return;
        b = e->next_claim++;
      }
      try {
        trace::Span span("data", [&] { return "load batch " + std::to_string(b); });
        Batch batch = build(b);
        span.finish();
        std::lock_guard lock(e->mutex);
        e->ready.emplace(b, std::move(batch));
      } catch (...) {
        std::lock_guard lock(e->mutex);
        e->errors.emplace(b, std::current_exception());
      }
      e->produced.notify_all();
    }
  });
}

std::optional<Batch> DataLoader::next() {
  RG_CHECK(epoch_ >= 0, "DataLoader: call start_epoch(epoch) before next()");
  if (next_batch_ >= num_batches()) return std::nullopt;
  const int64_t b = next_batch_++;
  if (!running_) return build(b);
  Epoch* e = running_.get();
  std::unique_lock lock(e->mutex);
  e->produced.wait(lock, [&] { return e->ready.count(b) || e->errors.count(b); });
  if (auto err = e->errors.find(b); err != e->errors.end()) {
    std::exception_ptr ex = err->second;
    lock.unlock();
    stop();
    next_batch_ = num_batches();
    std::rethrow_exception(ex);
  }
  Batch batch = std::move(e->ready.at(b));
  e->ready.erase(b);
  e->taken = b + 1;
  lock.unlock();
  e->consumed.notify_all();
  return batch;
}

}  // namespace rg::data
