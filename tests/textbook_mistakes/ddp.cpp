// A mistake for the grader to catch: the wrapper never communicates (README.md), so each rank
// steps with its own share's gradient.
#include "parallel/textbook/textbook.h"

namespace rg::textbook {

std::shared_ptr<parallel::Work> allreduce_average(parallel::ProcessGroup& group,
                                                  parallel::GradBucket& bucket) {
  return group.allreduce(bucket.buffer, parallel::ReduceOp::average);
}

std::shared_ptr<nn::Module> ddp(std::shared_ptr<nn::Module> module,
                                std::shared_ptr<parallel::ProcessGroup>, int64_t,
                                parallel::CommHook) {
  return module;
}

}  // namespace rg::textbook
