#pragma once
// The learning-rate schedule of a run, stepped once per optimizer step (not per epoch), so
// that warm-up and one-cycle follow the same curve whatever the batch count.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "optim/optim.h"

namespace rg::train {

struct ScheduleOptions {
  std::string name = "constant";  // cosine | multistep | onecycle | constant | airbench94
  double peak_lr = 0;             // onecycle's peak (the optimizer's lr for the others)
  int64_t epochs = 1;
  double warmup_epochs = 0;           // a linear warm-up in front when > 0
  std::vector<int64_t> milestones{};  // epochs, for multistep (lr x 0.1 at each)
};

// airbench94 is airbench94.py's get_lr over T = epochs · steps_per_epoch steps, W = ⌊0.23·T⌋:
// the lr rises linearly from 0.2 to 1 times the optimizer's lr over W steps, then falls
// linearly to 0.07 times it at step T (warmup_epochs must be 0: the warm-up is its own).
// Throws rg::Error naming an unknown schedule.
std::unique_ptr<LRScheduler> make_schedule(const ScheduleOptions& options, Optimizer& optimizer,
                                           int64_t steps_per_epoch);

}  // namespace rg::train
