#include "data/dataloader.h"

#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

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

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, std::shared_ptr<Sampler> sampler,
                       std::shared_ptr<Transform> transform, DataLoaderOptions options)
    : dataset_(std::move(dataset)),
      sampler_(std::move(sampler)),
      transform_(std::move(transform)),
      options_(options) {
  RG_CHECK(dataset_ && sampler_, "DataLoader: dataset and sampler are required");
  RG_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be > 0, got ",
           options_.batch_size);
  RG_CHECK(options_.num_workers >= 0 && options_.num_workers <= kMaxWorkers,
           "DataLoader: num_workers must be in [0, ", kMaxWorkers, "], got ", options_.num_workers);
  RG_CHECK(options_.prefetch >= 1, "DataLoader: prefetch must be >= 1, got ", options_.prefetch);
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

Batch DataLoader::build(int64_t batch_index) const {
  const int64_t begin = batch_index * options_.batch_size;
  const int64_t end = std::min(begin + options_.batch_size, num_samples());
  Batch batch;
  batch.labels = empty({end - begin}, {DType::i64});
  int64_t* labels = batch.labels.data<int64_t>();
  for (int64_t i = begin; i < end; ++i) {
    const int64_t index = order_[static_cast<std::size_t>(i)];
    Example ex = dataset_->get(index);
    SampleRng rng(options_.seed, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(index));
    Tensor image = transform_ ? transform_->apply(ex.image, rng) : ex.image;
    image = image.to(DType::f32).contiguous();
    if (i == begin) {
      Shape shape = image.shape();
      shape.insert(shape.begin(), end - begin);
      batch.images = empty(shape, {DType::f32});
    }
    RG_CHECK(image.numel() * (end - begin) == batch.images.numel(), "DataLoader: sample ", index,
             " of ", dataset_->describe(), " became ", image.describe(),
             " after transforms, unlike the rest of its batch ", batch.images.describe());
    std::memcpy(batch.images.data<float>() + (i - begin) * image.numel(), image.data<float>(),
                image.nbytes());
    labels[i - begin] = ex.label;
    batch.indices.push_back(index);
  }
  if (options_.pin_memory == PinMemory::yes) {
    // In the worker thread, as PyTorch's pin-memory thread: one copy per batch, off the
    // training loop.
    batch.images = batch.images.pin_memory();
    batch.labels = batch.labels.pin_memory();
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
  e->workers.emplace_back([this, e, total] {
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
        Batch batch = build(b);
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
