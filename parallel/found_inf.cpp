#include "parallel/found_inf.h"

namespace rg::parallel {

bool allreduce_found_inf(ProcessGroup& group, bool local_found_inf) {
  // One f32 element on the CPU: 0 or 1, exact under MAX on every backend that carries CPU
  // tensors (MPI, threads). A NCCL group will want the flag on its device.
  Tensor flag = full({1}, local_found_inf ? 1.0 : 0.0);
  group.allreduce(flag, ReduceOp::max)->wait();
  return flag.item() > 0;
}

void sync_found_inf(LossScaler& scaler, std::shared_ptr<ProcessGroup> group) {
  RG_CHECK(group != nullptr, "sync_found_inf: the process group is null");
  scaler.set_found_inf_hook(
      [group = std::move(group)](bool local) { return allreduce_found_inf(*group, local); });
}

}  // namespace rg::parallel
