#pragma once
// take() of dataset.h and segmentation.h: the first `limit` samples of a data set would often
// be alike (folders sorted by class or name group similar cases), so a limit keeps `limit`
// samples evenly spaced over the whole set instead. One template for both kinds of data set.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace rg::data::detail {

template <class DatasetKind>
class EvenlySpaced final : public DatasetKind {
 public:
  using ExampleKind = decltype(std::declval<const DatasetKind&>().get(0));

  EvenlySpaced(std::shared_ptr<DatasetKind> base, int64_t n) : base_(std::move(base)), n_(n) {}
  int64_t size() const override { return n_; }
  ExampleKind get(int64_t index) const override {
    this->check_index(index);
    return base_->get(index * base_->size() / n_);
  }
  int64_t num_classes() const override { return base_->num_classes(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }
  std::string describe() const override {
    return base_->describe() + ", " + std::to_string(n_) + " evenly spaced";
  }

 private:
  std::shared_ptr<DatasetKind> base_;
  int64_t n_;
};

template <class DatasetKind>
std::shared_ptr<DatasetKind> take_evenly_spaced(std::shared_ptr<DatasetKind> dataset,
                                                int64_t limit) {
  RG_CHECK(dataset != nullptr, "take: a data set is required");
  if (limit <= 0 || limit >= dataset->size()) return dataset;
  return std::make_shared<EvenlySpaced<DatasetKind>>(std::move(dataset), limit);
}

}  // namespace rg::data::detail
