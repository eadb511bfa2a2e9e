#include "train/warm_up.h"

#include <chrono>
#include <numeric>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/rng.h"
#include "train/epoch.h"

namespace rg::train {

namespace {

// A zero-filled batch of `n` samples shaped as `like`'s (its images and, as the task needs,
// labels or masks).
data::Batch zero_batch(const data::Batch& like, int64_t n) {
  const auto resized = [n](const Tensor& t) {
    if (!t.defined()) return Tensor();
    Shape shape = t.shape();
    shape[0] = n;
    return zeros(shape, {t.dtype(), t.device()});
  };
  data::Batch batch{.images = resized(like.images),
                    .labels = resized(like.labels),
                    .masks = resized(like.masks),
                    .indices = std::vector<int64_t>(static_cast<std::size_t>(n))};
  std::iota(batch.indices.begin(), batch.indices.end(), 0);
  return batch;
}

}  // namespace

double warm_up(const WarmUpOptions& options, const Task& task, data::BatchSource& test_loader,
               const Device& device, parallel::ProcessGroup& group) {
  RG_CHECK(options.make_model, "warm_up: no model to build");
  RG_CHECK(options.batch_size > 0 && options.last_batch_size > 0 &&
               options.last_batch_size <= options.batch_size,
           "warm_up: batch sizes ", options.batch_size, " and ", options.last_batch_size,
           " (the last must be in [1, the batch size])");
  const auto start = std::chrono::steady_clock::now();
  const PhiloxState generator = default_generator().state();
  std::shared_ptr<nn::Module> model = options.make_model();
  model->to(device);
  MixedPrecision amp(*model, options.amp);
  const StepContext context{device, amp};

  test_loader.start_epoch(0);
  const std::optional<data::Batch> first = test_loader.next();
  RG_CHECK(first.has_value(), "warm_up: the test loader has no batch");
  model->train();
  std::vector<int64_t> sizes = {options.batch_size};
  if (options.last_batch_size != options.batch_size) sizes.push_back(options.last_batch_size);
  for (const int64_t n : sizes) {
    const StepOutput out = task.step(*model, zero_batch(*first, n), context);
    amp.backward(out.loss);
    model->zero_grad();
  }
  for (const bool last : {false, true})
    (void)evaluate(*model, test_loader, task, {.last = last}, amp, device, /*progress=*/false,
                   group);
  synchronize(device);  // the timed run's first CUDA event must not wait for these kernels
  default_generator().set_state(generator);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace rg::train
