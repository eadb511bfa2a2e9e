#include "parallel/single_group.h"

#include <cstring>

#include "parallel/collective_checks.h"

namespace rg::parallel {

namespace {
std::shared_ptr<Work> done() {
  return std::make_shared<CompletedWork>();
}
}  // namespace

std::shared_ptr<Work> SingleGroup::allreduce(const Tensor& tensor, ReduceOp) {
  check_cpu_tensor("single", "allreduce", tensor);
  return done();
}

std::shared_ptr<Work> SingleGroup::broadcast(const Tensor& tensor, int root) {
  check_cpu_tensor("single", "broadcast", tensor);
  check_root("single", 1, root);
  return done();
}

std::shared_ptr<Work> SingleGroup::allgather(const Tensor& output, const Tensor& input) {
  check_allgather("single", 1, output, input);
  if (!output.same_as(input)) std::memmove(output.data_ptr(), input.data_ptr(), input.nbytes());
  return done();
}

std::shared_ptr<Work> SingleGroup::reduce_scatter(const Tensor& output, const Tensor& input,
                                                  ReduceOp) {
  check_reduce_scatter("single", 1, output, input);
  if (!output.same_as(input)) std::memmove(output.data_ptr(), input.data_ptr(), input.nbytes());
  return done();
}

std::shared_ptr<Work> SingleGroup::barrier() {
  return done();
}

}  // namespace rg::parallel
