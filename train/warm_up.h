#pragma once
// A warm-up before the timed run, as PyTorch's airbench94 does in warmup94() before its timer
// starts. cuDNN's benchmark mode (set_benchmark_convolutions) times every candidate plan of a
// convolution the first time its shape runs, the host waiting: on a GPU, seconds of the first
// epoch spent choosing plans rather than training. warm_up() runs those shapes first, on a
// throwaway model of the run's architecture and precision, so that Trainer::fit finds its
// plans chosen (and the allocator's blocks cached):
//   - forward and backward on zero-filled batches of the run's batch sizes: the full one and
//     the epoch's last, smaller one where the epoch ends on one;
//   - the task's evaluations over the test loader: an epoch's and the last one (airbench94
//     augments only its last, with other batch shapes).
// Nothing of the run is touched: not its model, optimizer or train loader (its epochs are a
// function of the seed and the epoch), and the default generator, which the throwaway's
// initialisation draws from, is put back. A run with a warm-up trains exactly as one without
// (test train_cifar.warm_up_leaves_the_run_unchanged).

#include <cstdint>
#include <functional>
#include <memory>

#include "data/batch_source.h"
#include "nn/module.h"
#include "optim/amp.h"
#include "parallel/process_group.h"
#include "train/task.h"

namespace rg::train {

struct WarmUpOptions {
  std::function<std::shared_ptr<nn::Module>()> make_model;  // the run's architecture, anew
  AmpOptions amp{};                                         // the run's precision
  int64_t batch_size = 0;                                   // the training batch, per process
  int64_t last_batch_size = 0;  // the epoch's last training batch (batch_size: all full)
};

// Returns the wall-clock seconds it took. A collective when the group has several processes
// (the evaluations combine their figures): every rank calls it.
double warm_up(const WarmUpOptions& options, const Task& task, data::BatchSource& test_loader,
               const Device& device, parallel::ProcessGroup& group);

}  // namespace rg::train
