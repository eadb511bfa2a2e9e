#include "data/dataset.h"

#include "data/evenly_spaced.h"

namespace rg::data {

void Dataset::check_index(int64_t index) const {
  RG_CHECK(index >= 0 && index < size(), "dataset ", describe(), ": index ", index,
           " is out of range [0, ", size(), ")");
}

std::shared_ptr<Dataset> take(std::shared_ptr<Dataset> dataset, int64_t limit) {
  return detail::take_evenly_spaced(std::move(dataset), limit);
}

}  // namespace rg::data
