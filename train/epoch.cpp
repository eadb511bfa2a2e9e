#include "train/epoch.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include "core/autograd.h"
#include "core/trace.h"
#include "ops/ops.h"
#include "parallel/horovod.h"
#include "train/accumulate.h"
#include "train/device_timer.h"
#include "train/metrics_log.h"
#include "train/report.h"
#include "train/step_graph.h"

namespace rg::train {

namespace {
// The training loss and the task's sums over an epoch, added up on the model's device. Reading
// them waits for the device, so the loop reads them only when the progress bar draws (every
// step on the CPU, where there is nothing to wait for and a diverging run stops at once) and at
// the end.
struct RunningMetrics {
  Tensor loss_sum;  // 0-d f64 on the device
  Tensor sums;      // (M) f64 on the device; undefined when the task has no train metrics
  int64_t seen = 0;
  double loss() const { return loss_sum.item() / static_cast<double>(std::max<int64_t>(seen, 1)); }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

EpochResult train_epoch(nn::Module& model, data::BatchSource& loader, const Task& task,
                        Optimizer& optimizer, LRScheduler& scheduler, MixedPrecision& amp,
                        const Device& device, const EpochOptions& options, int64_t& step,
                        parallel::ProcessGroup& group) {
  model.train();
  ProgressBar bar(options.label, loader.num_batches(), options.progress);
  const auto start = std::chrono::steady_clock::now();
  DeviceTimer device_time(device);
  const auto metric_count = static_cast<int64_t>(task.train_metrics.size());
  RunningMetrics metrics{zeros({}, {DType::f64, device}),
                         metric_count > 0 ? zeros({metric_count}, {DType::f64, device}) : Tensor()};
  const StepContext context{device, amp};
  RG_CHECK(options.accumulate_steps >= 1, options.program, ": accumulate_steps must be >= 1, got ",
           options.accumulate_steps);
  RG_CHECK(options.accumulate_steps == 1 || !options.step_graph, options.program,
           ": a captured step (--cuda-graphs) takes one batch, not ", options.accumulate_steps);
  const auto per_step = static_cast<std::size_t>(options.accumulate_steps);
  int64_t done = 0;
  for (;;) {
    // The step's micro-batches (one without accumulation), drawn before any runs: their sizes
    // weight their losses (train/accumulate.h).
    std::vector<data::Batch> micro;
    trace::Span waiting("data", "wait for the next batch");  // the timeline (--trace)
    while (micro.size() < per_step)
      if (std::optional<data::Batch> batch = loader.next())
        micro.push_back(std::move(*batch));
      else
        break;
    waiting.finish();
    if (micro.empty()) break;
    if (options.before_step) options.before_step(step + 1);
    std::vector<int64_t> sizes;
    for (const data::Batch& b : micro) sizes.push_back(b.images.size(0));
    const std::vector<double> weights = micro_batch_weights(sizes);
    bool stepped = true;
    std::vector<StepOutput> outs;
    // The step from zeroed gradients to the update: run here, or captured once and replayed
    // (--cuda-graphs, train/step_graph.h), so nothing in it may wait for the host.
    const auto run_step = [&](const data::Batch* batches, std::size_t count) {
      optimizer.zero_grad();
      outs.assign(count, {});
      for (std::size_t i = 0; i < count; ++i) {
        const MicroBatch which = i + 1 < count ? MicroBatch::more_follow : MicroBatch::last;
        {
          MicroBatchForward in(options.ddp, which);  // DDP's no_sync() but for the last
          trace::Span forward("forward", "forward and loss");
          outs[i] = task.step(model, batches[i], context);
        }
        trace::Span backward("backward", "backward");
        // Scaled by the loss scale under O1-O3; weighted by the micro-batch's share.
        backward_micro_batch(outs[i].loss, weights[i], which, options.ddp, amp);
      }
      if (options.clip_grad_norm > 0) {
        trace::Span span("optimizer", "unscale and clip the gradients");
        amp.unscale(optimizer);  // clip the true gradients, not the scaled ones
        if (options.clip_gradients)
          options.clip_gradients(options.clip_grad_norm);
        else
          clip_grad_norm_tensor(amp.optimizer_params(), options.clip_grad_norm);  // no host read
      }
      trace::Span stepping("optimizer", "optimizer step");
      trace::DeviceSpan on_device(device, "optimizer step");
      stepped = amp.step(optimizer);  // skipped when a gradient overflowed
      on_device.finish();
      stepping.finish();
    };
    if (options.step_graph)
      outs = {options.step_graph->step(micro[0], optimizer, [&](const data::Batch& b) {
        run_step(&b, 1);
        return outs[0];
      })};
    else
      run_step(micro.data(), micro.size());
    amp.update();
    scheduler.step();
    ++step;
    if (options.after_step) options.after_step(step);
    if (!stepped && group.rank() == 0)  // names the rank and parameter that overflowed
      std::cout << "\r" << describe_skip(*amp.scaler()->last_step()) << "\n";

    int64_t n = 0;  // the step's samples, over its micro-batches
    for (const StepOutput& out : outs) {
      metrics.loss_sum = add(metrics.loss_sum, mul(out.loss.detach().to(DType::f64),
                                                   static_cast<double>(out.samples)));
      if (metric_count > 0) {
        RG_CHECK(out.sums.defined() && out.sums.numel() == metric_count, options.program,
                 ": the task's step returned ",
                 out.sums.defined() ? out.sums.describe() : "no sums", " for its ", metric_count,
                 " train metrics");
        metrics.sums = add(metrics.sums, out.sums.reshape({metric_count}).to(DType::f64));
      }
      n += out.samples;
    }
    metrics.seen += n;
    std::vector<std::pair<std::string, std::string>> bar_metrics;
    const auto batches_done = done + static_cast<int64_t>(micro.size());
    if (device.is_cpu() || bar.will_draw(batches_done)) {
      const double mean_loss = metrics.loss();
      RG_CHECK(std::isfinite(mean_loss), options.program, ": the loss became ", mean_loss, " by ",
               options.label, " step ", step, " (lower the learning rate?)");
      bar_metrics.push_back({"loss", format_fixed(mean_loss, 3)});
      if (metric_count > 0) {
        const std::vector<double> sums = metrics.sums.to_vector<double>();
        for (int64_t m = 0; m < metric_count; ++m)
          if (task.train_metrics[m].display != Display::log_only)
            bar_metrics.push_back({task.train_metrics[m].label,
                                   format_metric(sums[m] / static_cast<double>(metrics.seen),
                                                 task.train_metrics[m].display, 3)});
      }
      bar_metrics.push_back({"lr", format_fixed(optimizer.lr(0), 4)});
    }
    done = batches_done;
    bar.update(done, n, bar_metrics);
  }
  bar.finish();
  device_time.stop();  // before the reads below, which wait for the device
  // The epoch's figures over all ranks, not rank 0's share (what Horovod's metric averaging
  // is for): the sums of losses, of the task's metrics and the sample count travel in one
  // allreduce.
  std::vector<double> local = {metrics.loss_sum.item()};
  if (metric_count > 0)
    for (double s : metrics.sums.to_vector<double>()) local.push_back(s);
  local.push_back(static_cast<double>(metrics.seen));
  const auto size = static_cast<int64_t>(local.size());
  const std::vector<double> totals =
      parallel::allreduce_metric(from_vector<double>(local, {size}, {DType::f64}), "train metrics",
                                 parallel::ReduceOp::sum, group)
          .to_vector<double>();
  const double seen = std::max(totals.back(), 1.0);
  EpochResult r;
  r.samples = static_cast<int64_t>(totals.back());
  r.loss = totals[0] / seen;
  for (int64_t m = 0; m < metric_count; ++m) r.values.push_back(totals[1 + m] / seen);
  r.seconds = seconds_since(start);
  r.device_seconds = device_time.seconds();
  r.images_per_second = totals.back() / r.seconds;
  if (const LossScaler* scaler = amp.scaler()) {
    r.loss_scale = scaler->scale_value();
    r.skipped_steps = scaler->skipped_steps();
  }
  return r;
}

EpochResult evaluate(nn::Module& model, data::BatchSource& loader, const Task& task,
                     const EvalPass& pass, const MixedPrecision& amp, const Device& device,
                     bool progress, parallel::ProcessGroup& group) {
  model.eval();
  NoGradGuard no_grad;
  DeviceTimer device_time(device);  // the device loader's epoch set-up included
  loader.start_epoch(0);
  ProgressBar bar("  test", loader.num_batches(), progress);
  const auto start = std::chrono::steady_clock::now();
  const std::unique_ptr<Evaluation> evaluation = task.evaluation(pass);
  const StepContext context{device, amp};
  int64_t done = 0;
  while (auto batch = loader.next()) {
    evaluation->add(model, *batch, context);
    bar.update(++done, batch->images.size(0), {});
  }
  bar.finish();
  model.train();
  // The totals' read is part of an evaluation (airbench94 times its .item() too).
  const Evaluation::Totals totals = evaluation->all_ranks(group);
  device_time.stop();
  RG_CHECK(totals.values.size() == task.eval_metrics.size() && !totals.values.empty(),
           "train: the task's evaluation returned ", totals.values.size(), " values for its ",
           task.eval_metrics.size(), " eval metrics (loss first)");
  EpochResult r;
  r.samples = totals.samples;
  r.loss = totals.values[0];
  r.values.assign(totals.values.begin() + 1, totals.values.end());
  r.seconds = seconds_since(start);
  r.device_seconds = device_time.seconds();
  r.images_per_second = static_cast<double>(totals.samples) / r.seconds;
  return r;
}

}  // namespace rg::train
