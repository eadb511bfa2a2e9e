#include "parallel/found_inf.h"

namespace rg::parallel {

FoundInfVerdict exchange_found_inf(ProcessGroup& group,
                                   std::optional<std::size_t> local_first_overflow) {
  // One f64 per rank on the CPU (every backend carries CPU tensors): the index of the rank's
  // first overflowing parameter, exact in f64 up to 2^53, or -1 for none.
  const double mine = local_first_overflow ? static_cast<double>(*local_first_overflow) : -1.0;
  Tensor all = empty({group.size()}, {DType::f64});
  group.allgather(all, full({1}, mine, {DType::f64}))->wait();
  const std::vector<double> firsts = all.to_vector<double>();
  for (int r = 0; r < group.size(); ++r) {
    const double index = firsts[static_cast<std::size_t>(r)];
    if (index >= 0) return {true, r, static_cast<std::size_t>(index)};
  }
  return {};
}

void sync_found_inf(LossScaler& scaler, std::shared_ptr<ProcessGroup> group) {
  RG_CHECK(group != nullptr, "sync_found_inf: the process group is null");
  scaler.set_found_inf_hook([group = std::move(group)](std::optional<std::size_t> local) {
    return exchange_found_inf(*group, local);
  });
}

}  // namespace rg::parallel
