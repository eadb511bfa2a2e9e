#pragma once
// Samplers decide which dataset indices an epoch visits, in which order. The distributed
// sampler (parallel/) implements the same interface.

#include <cstdint>
#include <vector>

namespace rg::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The indices of the current epoch, in order.
  virtual std::vector<int64_t> indices() const = 0;
  virtual int64_t size() const = 0;
  virtual void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

 protected:
  int64_t epoch_ = 0;
};

class SequentialSampler final : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  std::vector<int64_t> indices() const override;
  int64_t size() const override { return n_; }

 private:
  int64_t n_;
};

// A fresh permutation every epoch, a function of (seed, epoch) only.
class RandomSampler final : public Sampler {
 public:
  RandomSampler(int64_t n, uint64_t seed);
  std::vector<int64_t> indices() const override;
  int64_t size() const override { return n_; }

 private:
  int64_t n_;
  uint64_t seed_;
};

// A permutation of [0, n) (Fisher-Yates on Philox draws keyed by seed and epoch).
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, uint64_t epoch);

}  // namespace rg::data
