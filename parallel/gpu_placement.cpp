#include "parallel/gpu_placement.h"

#include "core/error.h"

namespace rg::parallel {

void check_one_rank_per_gpu(const std::vector<GpuPlacement>& placements) {
  for (std::size_t b = 0; b < placements.size(); ++b)
    for (std::size_t a = 0; a < b; ++a) {
      const GpuPlacement &first = placements[a], &second = placements[b];
      if (first.host != second.host || first.device != second.device) continue;
      fail("the NCCL backend needs a GPU per rank, but ranks ", first.rank, " and ", second.rank,
           " are both on cuda:", first.device,
           " of one machine (NCCL refuses two ranks on one GPU: \"Duplicate GPU detected\"). "
           "To run several ranks on one GPU — to learn or test DDP on a machine with fewer "
           "GPUs than ranks — use the MPI backend (train_cifar --backend mpi: the ranks share "
           "the GPU and reduce gradients through host memory); for speed, one rank per GPU");
    }
}

}  // namespace rg::parallel
