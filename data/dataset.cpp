#include "data/dataset.h"

namespace rg::data {

void Dataset::check_index(int64_t index) const {
  RG_CHECK(index >= 0 && index < size(), "dataset ", describe(), ": index ", index,
           " is out of range [0, ", size(), ")");
}

namespace {
class Subset final : public Dataset {
 public:
  Subset(std::shared_ptr<Dataset> base, int64_t n) : base_(std::move(base)), n_(n) {}
  int64_t size() const override { return n_; }
  // Evenly spaced over the base: image folders are sorted by class, so the first n would
  // hold only the first classes.
  Example get(int64_t index) const override {
    check_index(index);
    return base_->get(index * base_->size() / n_);
  }
  int64_t num_classes() const override { return base_->num_classes(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }
  std::string describe() const override {
    return base_->describe() + ", " + std::to_string(n_) + " evenly spaced";
  }

 private:
  std::shared_ptr<Dataset> base_;
  int64_t n_;
};
}  // namespace

std::shared_ptr<Dataset> take(std::shared_ptr<Dataset> dataset, int64_t limit) {
  if (limit <= 0 || limit >= dataset->size()) return dataset;
  return std::make_shared<Subset>(std::move(dataset), limit);
}

}  // namespace rg::data
