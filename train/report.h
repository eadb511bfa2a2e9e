#pragma once
// The end of an epoch, for people and for plots: a one-line summary on stdout, a row of
// metrics.csv and TensorBoard scalars (the epoch number, from 1, is their step).

#include <cstdint>
#include <string>
#include <vector>

#include "optim/loss_scaler.h"
#include "train/epoch.h"
#include "train/metrics_log.h"
#include "train/task.h"
#include "train/tensorboard.h"

namespace rg::train {

// A figure as text with `digits` decimals; a metric shown as a percent (Display::percent) gets
// 100·value with two decimals fewer: the bar uses 3 (55.1%, 0.123), the summary 4 (55.10%, 0.1234).
std::string format_fixed(double value, int digits);
std::string format_metric(double value, Display display, int digits);

// The loss scaler's record, a TensorBoard step per optimizer step (from 1): amp/loss_scale (the
// scale the step's loss was multiplied by) and, at each skipped step, amp/skipped_step = 1; and
// the same as rows of loss_scale.csv (step, loss_scale, skipped), for a plot without TensorBoard.
void log_scaler_steps(const std::vector<ScalerStep>& record, TensorBoardWriter& tensorboard,
                      CsvLog& csv);

struct EpochReport {
  int64_t epoch = 0;   // completed epochs (from 1)
  int64_t epochs = 0;  // in the whole run
  double lr = 0;       // at the start of the epoch
  EpochResult train, test;
  double best = 0;                // best value of Task::best_metric so far
  int64_t peak_memory_bytes = 0;  // the training device's allocator peak during the epoch
};

// Prints the summary line, appends the CSV row (epoch, lr, train_loss, train_<metric>...,
// test_loss, test_<metric>..., images_per_second, epoch_seconds, peak_memory_mib,
// train_device_seconds, test_device_seconds (train/device_timer.h), and under
// mixed precision loss_scale, skipped_steps) and writes the same scalars to TensorBoard.
void log_epoch(const Task& task, const EpochReport& report, CsvLog& csv,
               TensorBoardWriter& tensorboard);

}  // namespace rg::train
