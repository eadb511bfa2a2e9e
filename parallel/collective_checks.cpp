#include "parallel/collective_checks.h"

#include <climits>

namespace rg::parallel {

void check_defined(const char* collective, const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) RG_CHECK(t.defined(), collective, ": got an undefined tensor");
}

void check_cuda_tensor(const char* collective, const Tensor& tensor, int device) {
  RG_CHECK(tensor.defined(), collective, ": the nccl backend got an undefined tensor");
  RG_CHECK(tensor.device().is_cuda() && tensor.is_contiguous(), collective,
           ": the nccl backend takes a contiguous cuda tensor, got ", tensor.describe());
  RG_CHECK(tensor.device().index == device, collective,
           ": this process's NCCL communicator is on cuda:", device, " (one GPU per process), got ",
           tensor.describe());
}

void check_cpu_tensor(const char* backend, const char* collective, const Tensor& tensor) {
  RG_CHECK(tensor.defined(), collective, ": the ", backend, " backend got an undefined tensor");
  RG_CHECK(
      tensor.device().is_cpu() && tensor.is_contiguous(), collective, ": the ", backend,
      " backend takes a contiguous cpu tensor, got ", tensor.describe(),
      tensor.device().is_cpu() ? " (not contiguous)" : " (cuda tensors need the NCCL backend)");
}

void check_allgather(const char* backend, int size, const Tensor& output, const Tensor& input) {
  check_cpu_tensor(backend, "allgather", output);
  check_cpu_tensor(backend, "allgather", input);
  check_allgather_sizes(size, output, input);
}

void check_allgather_sizes(int size, const Tensor& output, const Tensor& input) {
  RG_CHECK(output.dtype() == input.dtype() && output.numel() == input.numel() * size,
           "allgather: output ", output.describe(), " must hold ", size, " x input ",
           input.describe(), " (one slice per rank, same dtype)");
}

void check_reduce_scatter(const char* backend, int size, const Tensor& output,
                          const Tensor& input) {
  check_cpu_tensor(backend, "reduce_scatter", output);
  check_cpu_tensor(backend, "reduce_scatter", input);
  check_reduce_scatter_sizes(size, output, input);
}

void check_reduce_scatter_sizes(int size, const Tensor& output, const Tensor& input) {
  RG_CHECK(output.dtype() == input.dtype() && input.numel() == output.numel() * size,
           "reduce_scatter: input ", input.describe(), " must hold ", size, " x output ",
           output.describe(), " (one slice per rank, same dtype)");
}

void check_root(const char* backend, int size, int root) {
  RG_CHECK(root >= 0 && root < size, "broadcast: root ", root, " is not a rank of this ", backend,
           " group of size ", size);
}

void check_options(const ProcessGroupOptions& options) {
  RG_CHECK(options.timeout.count() > 0, "process group: timeout must be positive, got ",
           options.timeout.count(), " ms");
  RG_CHECK(options.ring_chunk_bytes > 0 && options.ring_chunk_bytes <= INT_MAX,
           "process group: ring_chunk_bytes must be in [1, 2^31 - 1], got ",
           options.ring_chunk_bytes);
}

}  // namespace rg::parallel
