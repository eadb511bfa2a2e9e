#pragma once
// Argument checks shared by the process-group backends, so that every backend rejects the
// same mistakes with the same words: "allreduce: the mpi backend takes a contiguous cpu tensor,
// got [2, 3] f32 cuda:0".

#include <vector>

#include "core/tensor.h"
#include "parallel/process_group.h"

namespace rg::parallel {

// Every tensor defined (before its device is looked at).
void check_defined(const char* collective, const std::vector<Tensor>& tensors);
// Defined, on the cpu, contiguous.
void check_cpu_tensor(const char* backend, const char* collective, const Tensor& tensor);
// Defined, contiguous, on cuda:device (the NCCL backend's one GPU).
void check_cuda_tensor(const char* collective, const Tensor& tensor, int device);
// output: size · n elements, input: n elements, same dtype.
void check_allgather(const char* backend, int size, const Tensor& output, const Tensor& input);
void check_allgather_sizes(int size, const Tensor& output, const Tensor& input);
// input: size · n elements, output: n elements, same dtype.
void check_reduce_scatter(const char* backend, int size, const Tensor& output, const Tensor& input);
void check_reduce_scatter_sizes(int size, const Tensor& output, const Tensor& input);
void check_root(const char* backend, int size, int root);
// A positive timeout; ring_chunk_bytes in [1, 2^31 - 1] (one MPI message).
void check_options(const ProcessGroupOptions& options);

}  // namespace rg::parallel
