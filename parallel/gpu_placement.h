#pragma once
// Where each rank's GPU is, and the rule NCCL imposes on it: one rank per GPU. NCCL refuses two
// ranks of one communicator on the same GPU ("Duplicate GPU detected", since NCCL 2.5; NVIDIA
// says it would not work without the check either). Checked on the host, from every rank's
// (host, device), before NCCL is called, so the error can say what to do instead: on a machine
// with fewer GPUs than ranks — to learn or test DDP on one GPU — the MPI backend lets ranks
// share a GPU (gradients staged through host memory; train_cifar --backend mpi).

#include <vector>

namespace rg::parallel {

struct GpuPlacement {
  int rank = 0;
  int host = 0;    // any number equal for the ranks of one machine (Engine::host_of)
  int device = 0;  // the CUDA ordinal on that machine
};

// Throws rg::Error naming the first two ranks on one GPU of one host, NCCL's refusal and
// --backend mpi; nothing when every rank has a GPU of its own.
void check_one_rank_per_gpu(const std::vector<GpuPlacement>& placements);

}  // namespace rg::parallel
