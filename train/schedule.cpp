#include "train/schedule.h"

#include <cmath>

#include "core/error.h"

namespace rg::train {

std::unique_ptr<LRScheduler> make_schedule(const ScheduleOptions& options, Optimizer& optimizer,
                                           int64_t steps_per_epoch) {
  const int64_t total = options.epochs * steps_per_epoch;
  const auto warmup = static_cast<int64_t>(
      std::llround(options.warmup_epochs * static_cast<double>(steps_per_epoch)));
  std::unique_ptr<LRScheduler> main;
  if (options.name == "airbench94") {
    RG_CHECK(warmup == 0, "schedule airbench94 has its own warm-up; warmup_epochs must be 0, got ",
             options.warmup_epochs);
    // Python's int(): truncation.
    const auto rise = static_cast<int64_t>(static_cast<double>(total) * 0.23);
    RG_CHECK(rise > 0 && rise < total, "schedule airbench94: ", total,
             " steps are too few for its warm-up (23 % of them)");
    return std::make_unique<LinearWarmup>(
        optimizer, std::make_unique<LinearLR>(optimizer, 1.0, 0.07, total - rise), rise, 0.2);
  }
  if (options.name == "cosine") {
    main = std::make_unique<CosineAnnealingLR>(optimizer, total - warmup);
  } else if (options.name == "onecycle") {
    main = std::make_unique<OneCycleLR>(optimizer, options.peak_lr, total - warmup);
  } else if (options.name == "multistep") {
    std::vector<int64_t> steps;
    for (int64_t m : options.milestones) steps.push_back(m * steps_per_epoch - warmup);
    main = std::make_unique<MultiStepLR>(optimizer, steps, 0.1);
  } else if (options.name == "constant") {
    main = std::make_unique<MultiStepLR>(optimizer, std::vector<int64_t>{}, 1.0);
  } else {
    fail("unknown schedule '", options.name,
         "' (known: cosine, multistep, onecycle, constant, airbench94)");
  }
  if (warmup == 0) return main;
  return std::make_unique<LinearWarmup>(optimizer, std::move(main), warmup);
}

}  // namespace rg::train
