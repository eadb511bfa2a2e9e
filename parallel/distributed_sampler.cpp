#include "parallel/distributed_sampler.h"

#include <algorithm>
#include <iostream>
#include <numeric>

#include "core/autograd.h"
#include "ops/cross_entropy/cross_entropy.h"

namespace rg::parallel {

DistributedSampler::DistributedSampler(int64_t dataset_size, int num_replicas, int rank,
                                       DistributedSamplerOptions options)
    : dataset_size_(dataset_size), num_replicas_(num_replicas), rank_(rank), options_(options) {
  RG_CHECK(dataset_size >= 0, "DistributedSampler: dataset size must be >= 0, got ", dataset_size);
  RG_CHECK(num_replicas >= 1, "DistributedSampler: num_replicas must be >= 1, got ", num_replicas);
  RG_CHECK(rank >= 0 && rank < num_replicas, "DistributedSampler: rank ", rank, " is not in [0, ",
           num_replicas, ")");
  const int64_t n = dataset_size, r = num_replicas;
  num_samples_ = options.last == LastSamples::drop ? n / r : (n + r - 1) / r;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, const ProcessGroup& group,
                                       DistributedSamplerOptions options)
    : DistributedSampler(dataset_size, group.size(), group.rank(), options) {}

void DistributedSampler::set_epoch(int64_t epoch) {
  data::Sampler::set_epoch(epoch);
}

std::vector<int64_t> DistributedSampler::indices() const {
  if (options_.shuffle == Shuffle::on) {
    if (last_iterated_epoch_ == epoch_ && !warned_) {
      warned_ = true;
      std::cerr << "warning: DistributedSampler (rank " << rank_ << "): epoch " << epoch_
                << " is iterated again without set_epoch(), so it repeats the same shuffle; call "
                   "sampler.set_epoch(epoch) (DataLoader::start_epoch(epoch) does) at the start "
                   "of every epoch\n";
    }
    last_iterated_epoch_ = epoch_;
  }
  std::vector<int64_t> order;
  if (options_.shuffle == Shuffle::on) {
    order = data::random_permutation(dataset_size_, options_.seed, static_cast<uint64_t>(epoch_));
  } else {
    order.resize(static_cast<std::size_t>(dataset_size_));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  // Global position g of the padded (or truncated) order is order[g mod n]: padding repeats
  // the order from its start, as often as needed (n may be smaller than the padding).
  std::vector<int64_t> mine;
  mine.reserve(static_cast<std::size_t>(num_samples_));
  for (int64_t k = 0; k < num_samples_; ++k) {
    const int64_t g = rank_ + k * num_replicas_;
    mine.push_back(order[static_cast<std::size_t>(g % dataset_size_)]);
  }
  return mine;
}

int64_t DistributedSampler::num_real_samples() const {
  // Positions k with rank + k·N < n.
  if (rank_ >= dataset_size_) return 0;
  return std::min(num_samples_, (dataset_size_ - rank_ + num_replicas_ - 1) / num_replicas_);
}

bool DistributedSampler::is_padding(int64_t position) const {
  RG_CHECK(position >= 0 && position < num_samples_, "DistributedSampler::is_padding: position ",
           position, " is outside this rank's ", num_samples_, " samples");
  return rank_ + position * num_replicas_ >= dataset_size_;
}

// ---- evaluation ----------------------------------------------------------------------------

RealSampleCursor::RealSampleCursor(const DistributedSampler& sampler)
    : real_(sampler.num_real_samples()), size_(sampler.size()) {}

int64_t RealSampleCursor::advance(int64_t b, const char* who) {
  RG_CHECK(b >= 0 && position_ + b <= size_, who, ": ", position_ + b,
           " samples added, but this rank's sampler has only ", size_,
           " per epoch (start a new evaluator for each evaluation)");
  // Positions [position_, position_ + b) of this rank's list; [0, real_) are real.
  const int64_t real = std::max<int64_t>(0, std::min(real_, position_ + b) - position_);
  position_ += b;
  return real;
}

DistributedEvaluator::DistributedEvaluator(const DistributedSampler& sampler) : cursor_(sampler) {}

void DistributedEvaluator::add(const std::vector<double>& loss, const std::vector<bool>& correct) {
  RG_CHECK(loss.size() == correct.size(), "DistributedEvaluator::add: ", loss.size(),
           " losses but ", correct.size(), " correctness flags");
  // The rest of the batch past `real` are padded duplicates: counted on the ranks that own them.
  const int64_t real =
      cursor_.advance(static_cast<int64_t>(loss.size()), "DistributedEvaluator::add");
  for (int64_t i = 0; i < real; ++i) {
    local_.loss_sum += loss[static_cast<std::size_t>(i)];
    local_.correct += correct[static_cast<std::size_t>(i)] ? 1 : 0;
    ++local_.count;
  }
}

void DistributedEvaluator::add(const Tensor& logits, const Tensor& labels) {
  RG_CHECK(logits.dim() == 2 && labels.dim() == 1 && labels.size(0) == logits.size(0) &&
               labels.dtype() == DType::i64,
           "DistributedEvaluator::add: expected logits (B, K) and labels (B) i64, got ",
           logits.describe(), " and ", labels.describe());
  NoGradGuard no_grad;
  // Scored on the host, where the per-sample flags are needed anyway: GPU logits come back
  // once per batch (in f64, so the loss is the CPU's) and meet their labels there.
  const Tensor z64 = logits.to(DType::f64).to(Device::cpu());
  const Tensor y_host = labels.to(Device::cpu());
  const std::vector<double> loss =
      cross_entropy(z64, y_host, Tensor(), Reduction::none).to_vector<double>();
  const std::vector<double> z = z64.to_vector<double>();
  const std::vector<int64_t> y = y_host.to_vector<int64_t>();
  const int64_t b = logits.size(0), k = logits.size(1);
  std::vector<bool> correct(static_cast<std::size_t>(b));
  for (int64_t i = 0; i < b; ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < k; ++c)
      if (z[static_cast<std::size_t>(i * k + c)] > z[static_cast<std::size_t>(i * k + best)])
        best = c;
    correct[static_cast<std::size_t>(i)] = best == y[static_cast<std::size_t>(i)];
  }
  add(loss, correct);
}

EvalTotals DistributedEvaluator::all_ranks(ProcessGroup& group) const {
  // f64 holds counts exactly up to 2^53.
  Tensor t = from_vector<double>(
      {static_cast<double>(local_.correct), local_.loss_sum, static_cast<double>(local_.count)},
      {3}, {DType::f64});
  group.allreduce(t, ReduceOp::sum)->wait();
  const std::vector<double> v = t.to_vector<double>();
  return {static_cast<int64_t>(v[0]), v[1], static_cast<int64_t>(v[2])};
}

}  // namespace rg::parallel
