#include "parallel/single_group.h"

#include "parallel/collective_checks.h"

namespace rg::parallel {

namespace {
std::shared_ptr<Work> done() {
  return std::make_shared<CompletedWork>();
}

// The world of one process holds tensors on any device (a single-GPU run wraps its model in
// DDP all the same): collectives are the identity there.
void check_tensor(const char* collective, const Tensor& tensor) {
  check_defined(collective, {tensor});
  RG_CHECK(tensor.is_contiguous(), collective,
           ": the single backend takes a contiguous tensor, got ", tensor.describe(),
           " (not contiguous)");
}

void copy_flat(const Tensor& output, const Tensor& input) {
  if (!output.same_as(input)) copy_strided(output.view({-1}), input.view({-1}));
}
}  // namespace

std::shared_ptr<Work> SingleGroup::allreduce(const Tensor& tensor, ReduceOp) {
  check_tensor("allreduce", tensor);
  return done();
}

std::shared_ptr<Work> SingleGroup::broadcast(const Tensor& tensor, int root) {
  check_tensor("broadcast", tensor);
  check_root("single", 1, root);
  return done();
}

std::shared_ptr<Work> SingleGroup::allgather(const Tensor& output, const Tensor& input) {
  check_tensor("allgather", output);
  check_tensor("allgather", input);
  check_allgather_sizes(1, output, input);
  copy_flat(output, input);
  return done();
}

std::shared_ptr<Work> SingleGroup::reduce_scatter(const Tensor& output, const Tensor& input,
                                                  ReduceOp) {
  check_tensor("reduce_scatter", output);
  check_tensor("reduce_scatter", input);
  check_reduce_scatter_sizes(1, output, input);
  copy_flat(output, input);
  return done();
}

std::shared_ptr<Work> SingleGroup::barrier() {
  return done();
}

}  // namespace rg::parallel
