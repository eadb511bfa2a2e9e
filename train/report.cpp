#include "train/report.h"

#include "core/allocator.h"

#include <cstdio>
#include <iostream>

namespace rg::train {

std::string format_fixed(double value, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string format_metric(double value, Display display, int digits) {
  return display == Display::percent ? format_fixed(100 * value, digits - 2) + "%"
                                     : format_fixed(value, digits);
}

void log_scaler_steps(const std::vector<ScalerStep>& record, TensorBoardWriter& tensorboard,
                      CsvLog& csv) {
  for (const ScalerStep& s : record) {
    tensorboard.add_scalar("amp/loss_scale", s.scale, s.step + 1);
    if (s.skipped) tensorboard.add_scalar("amp/skipped_step", 1, s.step + 1);
    csv.write({{"step", static_cast<double>(s.step + 1)},
               {"loss_scale", s.scale},
               {"skipped", s.skipped ? 1.0 : 0.0}});
  }
}

namespace {

// "loss 1.2345 acc 55.10%": the loss, then the task's metrics.
std::string figures(const EpochResult& r, const std::vector<Metric>& metrics) {
  std::string s = "loss " + format_fixed(r.loss, 4);
  for (std::size_t m = 0; m < metrics.size() && m < r.values.size(); ++m)
    if (metrics[m].display != Display::log_only)
      s += " " + metrics[m].label + " " + format_metric(r.values[m], metrics[m].display, 4);
  return s;
}

const Metric& best_metric(const Task& task) {
  for (const Metric& m : task.eval_metrics)
    if (m.name == task.best_metric) return m;
  return task.eval_metrics.front();  // Trainer checks the name exists
}
}  // namespace

void log_epoch(const Task& task, const EpochReport& report, CsvLog& csv,
               TensorBoardWriter& tensorboard) {
  const EpochResult &train = report.train, &test = report.test;
  // eval_metrics[0] is the loss, reported as EpochResult::loss.
  const std::vector<Metric> test_metrics(task.eval_metrics.begin() + 1, task.eval_metrics.end());
  const double peak_mib = static_cast<double>(report.peak_memory_bytes) / (1 << 20);
  std::cout << "epoch " << report.epoch << "/" << report.epochs << "  train "
            << figures(train, task.train_metrics) << "  test " << figures(test, test_metrics)
            << "  best " << format_metric(report.best, best_metric(task).display, 4) << "  lr "
            << format_fixed(report.lr, 4) << "  " << static_cast<int64_t>(train.images_per_second)
            << " img/s  " << format_duration(train.seconds + test.seconds) << "  peak "
            << format_bytes(report.peak_memory_bytes) << std::endl;

  std::vector<std::pair<std::string, double>> row = {
      {"epoch", static_cast<double>(report.epoch)}, {"lr", report.lr}, {"train_loss", train.loss}};
  for (std::size_t m = 0; m < task.train_metrics.size(); ++m)
    row.push_back({"train_" + task.train_metrics[m].name, train.values.at(m)});
  row.push_back({"test_loss", test.loss});
  for (std::size_t m = 0; m < test_metrics.size(); ++m)
    row.push_back({"test_" + test_metrics[m].name, test.values.at(m)});
  row.push_back({"images_per_second", train.images_per_second});
  row.push_back({"epoch_seconds", train.seconds + test.seconds});
  row.push_back({"peak_memory_mib", peak_mib});
  // The device's own time (CUDA events on a GPU): what airbench94-style timings compare.
  row.push_back({"train_device_seconds", train.device_seconds});
  row.push_back({"test_device_seconds", test.device_seconds});
  const int64_t step = report.epoch;
  if (train.loss_scale > 0) {  // mixed precision: the scaler's course over the run
    row.push_back({"loss_scale", train.loss_scale});
    row.push_back({"skipped_steps", static_cast<double>(train.skipped_steps)});
    tensorboard.add_scalar("amp/loss_scale", train.loss_scale, step);
    tensorboard.add_scalar("amp/skipped_steps", static_cast<double>(train.skipped_steps), step);
  }
  csv.write(row);
  tensorboard.add_scalar("train/loss", train.loss, step);
  for (std::size_t m = 0; m < task.train_metrics.size(); ++m)
    tensorboard.add_scalar("train/" + task.train_metrics[m].name, train.values[m], step);
  tensorboard.add_scalar("test/loss", test.loss, step);
  for (std::size_t m = 0; m < test_metrics.size(); ++m)
    tensorboard.add_scalar("test/" + test_metrics[m].name, test.values[m], step);
  tensorboard.add_scalar("lr", report.lr, step);
  tensorboard.add_scalar("images_per_second", train.images_per_second, step);
  tensorboard.add_scalar("peak_memory_mib", peak_mib, step);
  tensorboard.flush();
}

}  // namespace rg::train
