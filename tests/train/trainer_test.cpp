// The shared training loop (train/trainer.h) on a tiny task: a linear classifier of 2×2 images
// whose class is whether the top row is brighter than the bottom one. Logs, checkpoints, the
// best-metric choice, resume, per-epoch peak memory, the logging hook and bad tasks.
#include "train/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>
#include <tuple>

#include "core/rng.h"
#include "core/safetensors.h"
#include "nn/layers.h"
#include "ops/ops.h"
#include "parallel/distributed_sampler.h"
#include "parallel/world.h"
#include "tests/support/fixtures.h"
#include "tests/support/trace_check.h"
#include "train/outputs.h"
#include "train/schedule.h"

namespace rg::train {
namespace {
namespace fs = std::filesystem;
using rg::testing::all_close;
using rg::testing::read_csv;
using rg::testing::throws_error;

// 2×2 one-channel images: class 1 when the top row is the brighter one.
class RowsDataset final : public data::Dataset {
 public:
  explicit RowsDataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  data::Example get(int64_t i) const override {
    check_index(i);
    const auto label = static_cast<uint8_t>(i % 2);
    const auto bright = static_cast<uint8_t>(150 + (i * 37) % 100);
    const auto dark = static_cast<uint8_t>((i * 53) % 100);
    const std::vector<uint8_t> px = label ? std::vector<uint8_t>{bright, bright, dark, dark}
                                          : std::vector<uint8_t>{dark, dark, bright, bright};
    return {from_vector<uint8_t>(px, {1, 2, 2}, {DType::u8}), label};
  }
  int64_t num_classes() const override { return 2; }
  std::string describe() const override { return "rows"; }

 private:
  int64_t n_;
};

// The task: cross-entropy of a linear layer over the 4 pixels; "hits" counts right answers.
// While *big_steps_left > 0, a step also holds 64 MiB more (and counts it down).
Task rows_task(const parallel::DistributedSampler& test_sampler, std::vector<int64_t>* logged,
               int64_t* big_steps_left = nullptr) {
  Task task;
  task.step = [big_steps_left](nn::Module& model, const data::Batch& batch,
                               const StepContext& context) {
    Tensor ballast;
    if (big_steps_left && *big_steps_left > 0) {
      ballast = zeros({int64_t{64} << 18}, {DType::f32, context.device});  // 64 MiB
      --*big_steps_left;
    }
    const Tensor x =
        context.amp.cast_input(batch.images.to(context.device).reshape({batch.images.size(0), 4}));
    const Tensor labels = batch.labels.to(context.device);
    const Tensor logits = model.forward(x);
    // Right answers: d = predicted − label is 0 or ±1, so relu(1 − d²) counts the zeros.
    const Tensor d = sub(max(logits.detach(), 1).indices.to(DType::f64), labels.to(DType::f64));
    const Tensor hits = sum(relu(add(neg(mul(d, d)), 1.0)));
    return StepOutput{.loss = cross_entropy(logits, labels),
                      .samples = labels.numel(),
                      .sums = hits.reshape({1})};
  };
  task.train_metrics = {{"hits", "hit", Display::percent}};
  struct RowsEvaluation : Evaluation {
    explicit RowsEvaluation(const parallel::DistributedSampler& s) : evaluator(s) {}
    void add(nn::Module& model, const data::Batch& batch, const StepContext& context) override {
      evaluator.add(
          model.forward(context.amp.cast_input(batch.images.to(context.device).reshape({-1, 4}))),
          batch.labels);
    }
    Totals all_ranks(parallel::ProcessGroup& group) override {
      const parallel::EvalTotals t = evaluator.all_ranks(group);
      return {.values = {t.mean_loss(), t.accuracy()}, .samples = t.count};
    }
    parallel::DistributedEvaluator evaluator;
  };
  task.evaluation = [&test_sampler](const EvalPass&) {
    return std::make_unique<RowsEvaluation>(test_sampler);
  };
  task.eval_metrics = {{"loss", "loss"}, {"hits", "hit", Display::percent}};
  task.best_metric = "hits";
  // The hook a segmenter uses for its images (input, ground truth, prediction).
  if (logged)
    task.log = [logged](const EpochLog& log) {
      logged->push_back(log.epoch);
      log.tensorboard.add_image("sample", full({1, 2, 2}, 0.5), log.epoch);
    };
  return task;
}

// One whole run: init, data, model, wrap, loop — what an app does.
struct TinyRun {
  std::string out{};
  int64_t epochs = 3;
  int64_t stop_after = 0;
  bool resume = false;
  bool overwrite = false;
  std::vector<int64_t> logged{};
  int64_t big_steps = 0;  // steps that hold 64 MiB more (from the first)
  int64_t peak_bytes = 0;
  std::function<void(Task&)> edit_task{};  // changes the task before the run
  AmpOptions amp_options{};
  std::vector<int64_t> hooks{};  // before_step(s) records -s, after_step(s) records s
  std::function<void(int64_t, const Tensor&)> during_backward{};  // the fault points
  std::function<void(int64_t, int64_t, const std::string&)> during_checkpoint_write{};
  TraceOptions trace{};
  ZeroStage zero = ZeroStage::off;
  int64_t state_bytes = 0;  // the optimizer's, at the end

  TrainingState run() {
    auto group = parallel::init();
    manual_seed(7);
    const std::string checkpoint =
        prepare_run_folder({.out = out, .resume = resume ? "auto" : "", .overwrite = overwrite},
                           RunKind::train, *group);
    auto train_set = std::make_shared<RowsDataset>(32),
         test_set = std::make_shared<RowsDataset>(10);
    auto train_sampler = std::make_shared<parallel::DistributedSampler>(32, *group);
    auto test_sampler = std::make_shared<parallel::DistributedSampler>(
        10, *group, parallel::DistributedSamplerOptions{.shuffle = parallel::Shuffle::off});
    auto to_float = std::make_shared<data::ToFloat>();
    data::DataLoader train_loader(train_set, train_sampler, to_float,
                                  {.batch_size = 8, .num_workers = 0});
    data::DataLoader test_loader(test_set, test_sampler, to_float,
                                 {.batch_size = 4, .num_workers = 0});
    auto model = std::make_shared<nn::Linear>(4, 2);
    MixedPrecision amp(*model, amp_options);
    SGD optimizer(amp.optimizer_params(), {.lr = 0.5, .momentum = 0.9});
    auto schedule =
        make_schedule({.name = "cosine", .epochs = epochs}, optimizer, train_loader.num_batches());
    Task task = rows_task(*test_sampler, &logged, &big_steps);
    if (edit_task) edit_task(task);
    Trainer trainer({group, Device::cpu(), model, amp, optimizer, *schedule}, std::move(task),
                    {.program = "tiny",
                     .out = out,
                     .epochs = epochs,
                     .stop_after_epochs = stop_after,
                     .progress = false,
                     .resumed = resume,
                     .before_step = [this](int64_t s) { hooks.push_back(-s); },
                     .after_step = [this](int64_t s) { hooks.push_back(s); },
                     .during_backward = during_backward,
                     .during_checkpoint_write = during_checkpoint_write,
                     .checkpoint_extra = {{"note", "tiny"}},
                     .trace = trace});
    trainer.resume(checkpoint);
    trainer.wrap({.zero = zero});
    const TrainingState state = trainer.fit(train_loader, test_loader);
    peak_bytes = trainer.peak_memory_bytes();
    state_bytes = trainer.optimizer_state_bytes();
    return state;
  }
};

TEST(Trainer, TrainsLogsAndCheckpointsThroughTheTask) {
  TinyRun run{.out = rg::testing::temp_path("trainer_run")};
  fs::remove_all(run.out);
  const TrainingState state = run.run();
  EXPECT_EQ(state.epoch, 3);
  EXPECT_EQ(state.step, 3 * 4);                            // 32 images, batches of 8
  EXPECT_EQ(run.logged, (std::vector<int64_t>{1, 2, 3}));  // the task's log hook, per epoch
  // before_step and after_step around each of the 12 steps, numbered from 1 across epochs.
  std::vector<int64_t> hooks;
  for (int64_t s = 1; s <= 12; ++s) hooks.insert(hooks.end(), {-s, s});
  EXPECT_EQ(run.hooks, hooks);

  const auto csv = read_csv(run.out + "/metrics.csv");
  ASSERT_EQ(csv.size(), 1u + 3u);
  EXPECT_EQ(csv[0], (std::vector<std::string>{"epoch", "lr", "train_loss", "train_hits",
                                              "test_loss", "test_hits", "images_per_second",
                                              "epoch_seconds", "peak_memory_mib",
                                              "train_device_seconds", "test_device_seconds"}));
  // The rows are easy to separate: the last epoch gets every test image right.
  EXPECT_EQ(std::stod(csv[3][5]), 1.0);
  EXPECT_LT(std::stod(csv[3][2]), std::stod(csv[1][2]));  // the train loss falls
  EXPECT_DOUBLE_EQ(state.best_accuracy, 1.0);             // the best "hits"
  for (std::size_t r = 1; r < csv.size(); ++r) EXPECT_GT(std::stod(csv[r][8]), 0) << r;

  const auto last = load_safetensors(run.out + "/last.safetensors");
  EXPECT_EQ(last.metadata.at("train.epoch"), "3");
  EXPECT_TRUE(fs::exists(run.out + "/best.safetensors"));
  int tags = 0;
  for (const auto& e : fs::directory_iterator(run.out))
    if (e.path().filename().string().starts_with("events.out.tfevents."))
      for (const EventRecord& r : read_event_records(e.path().string()))
        tags += r.tag == "train/hits" || r.tag == "test/hits" || r.tag == "peak_memory_mib" ||
                r.tag == "sample";
  EXPECT_EQ(tags, 3 * 4);
}

TEST(Trainer, AResumedRunEndsLikeAnUninterruptedOne) {
  TinyRun straight{.out = rg::testing::temp_path("trainer_straight")};
  TinyRun first{.out = rg::testing::temp_path("trainer_resumed"), .stop_after = 1};
  fs::remove_all(straight.out);
  fs::remove_all(first.out);
  straight.run();
  first.run();
  TinyRun second{.out = first.out, .resume = true};
  second.run();
  EXPECT_EQ(second.logged, (std::vector<int64_t>{2, 3}));
  const auto a = load_safetensors(straight.out + "/last.safetensors").tensors;
  const auto b = load_safetensors(second.out + "/last.safetensors").tensors;
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TRUE(all_close(b.at(name), t, 0, 0)) << name;
  EXPECT_EQ(read_csv(second.out + "/metrics.csv").size(), 1u + 3u);
}

// The fault points: during_backward once in each step's backward; during_checkpoint_write in
// each checkpoint write, with the new file complete under its temporary name and the old one
// still in place — best.safetensors (when the epoch improved) before last.safetensors.
TEST(Trainer, CallsTheFaultPointsInsideBackwardAndCheckpointWrites) {
  TinyRun run{.out = rg::testing::temp_path("trainer_fault_points")};
  fs::remove_all(run.out);
  std::vector<int64_t> backward_steps;
  run.during_backward = [&](int64_t step, const Tensor& param) {
    backward_steps.push_back(step);
    EXPECT_TRUE(param.defined());  // the parameter whose gradient just arrived
    // Inside backward: this step's before_step has run, its after_step has not.
    EXPECT_EQ(run.hooks.back(), -step);
  };
  std::vector<std::tuple<int64_t, int64_t, std::string>> writes;
  run.during_checkpoint_write = [&](int64_t first, int64_t last, const std::string& file) {
    writes.emplace_back(first, last, file);
    int temporaries = 0;
    for (const auto& e : fs::directory_iterator(run.out))
      temporaries += e.path().filename().string().starts_with("." + file + ".tmp.");
    EXPECT_EQ(temporaries, 1) << file;
    const std::string path = run.out + "/" + file;
    if (fs::exists(path)) {  // the previous file, still whole
      EXPECT_LT(std::stoll(load_safetensors(path).metadata.at("train.step")), last) << file;
    } else {
      EXPECT_EQ(first, 1) << file;  // none yet: the first epoch
    }
  };
  run.run();
  std::vector<int64_t> steps(12);
  std::iota(steps.begin(), steps.end(), 1);
  EXPECT_EQ(backward_steps, steps);
  std::vector<std::tuple<int64_t, int64_t, std::string>> lasts;
  for (const auto& w : writes)
    if (std::get<2>(w) == "last.safetensors") lasts.push_back(w);
  EXPECT_EQ(
      lasts,
      (std::vector<std::tuple<int64_t, int64_t, std::string>>{
          {1, 4, "last.safetensors"}, {5, 8, "last.safetensors"}, {9, 12, "last.safetensors"}}));
  ASSERT_FALSE(writes.empty());
  EXPECT_EQ(writes[0], std::make_tuple(int64_t{1}, int64_t{4}, std::string("best.safetensors")));
  // Every best.safetensors comes before its epoch's last.safetensors.
  for (std::size_t i = 0; i + 1 < writes.size(); ++i) {
    if (std::get<2>(writes[i]) != "best.safetensors") continue;
    EXPECT_EQ(writes[i + 1], std::make_tuple(std::get<0>(writes[i]), std::get<1>(writes[i]),
                                             std::string("last.safetensors")));
  }
}

// A crash while an epoch's checkpoints are written — here an error thrown from inside the write
// of best.safetensors or of last.safetensors in epoch 1, whose accuracy (100 %) no later epoch
// beats — then --resume auto: both files end as an uninterrupted run's. (With last.safetensors
// written first, a crash in the write of best.safetensors left the epoch counted as done, with
// its accuracy as the best so far, and best.safetensors was never written.)
TEST(Trainer, ACrashWhileWritingCheckpointsLosesNothingOnResume) {
  TinyRun straight{.out = rg::testing::temp_path("trainer_crash_straight"), .epochs = 2};
  fs::remove_all(straight.out);
  straight.run();
  for (const std::string& file :
       {std::string("best.safetensors"), std::string("last.safetensors")}) {
    TinyRun first{.out = rg::testing::temp_path("trainer_crash_" + file), .epochs = 2};
    fs::remove_all(first.out);
    bool crashed = false;
    first.during_checkpoint_write = [&](int64_t, int64_t last, const std::string& f) {
      if (f != file || last != 4) return;
      crashed = true;
      fail("a crash in the write of ", f);
    };
    EXPECT_TRUE(throws_error([&] { first.run(); }, {"a crash in the write of " + file}));
    ASSERT_TRUE(crashed) << "epoch 1 wrote no " << file;
    TinyRun second{.out = first.out, .epochs = 2, .resume = true};
    // Both crashes come before the first last.safetensors is in place: nothing to resume, and
    // --resume auto will not start over the files the crashed run wrote (its metrics.csv row,
    // its events, best.safetensors) unasked. --overwrite starts over, as the run did before.
    EXPECT_TRUE(throws_error([&] { second.run(); }, {"no last.safetensors", "metrics.csv"}));
    second.resume = false;
    second.overwrite = true;
    second.run();
    for (const char* name : {"best.safetensors", "last.safetensors"}) {
      const auto a = load_safetensors(straight.out + "/" + name);
      const auto b = load_safetensors(second.out + "/" + name);
      EXPECT_EQ(b.metadata.at("train.epoch"), a.metadata.at("train.epoch")) << file << ": " << name;
      ASSERT_EQ(a.tensors.size(), b.tensors.size()) << file << ": " << name;
      for (const auto& [key, t] : a.tensors)
        EXPECT_TRUE(all_close(b.tensors.at(key), t, 0, 0)) << file << ": " << name << " " << key;
    }
    EXPECT_EQ(read_csv(second.out + "/metrics.csv").size(), 1u + 2u) << file;
  }
}

// --trace: the window's steps and nothing else, across the end of epoch 1 (steps 1-4): its
// evaluation and checkpoint are in it.
TEST(Trainer, WritesATimelineOfItsWindow) {
  TinyRun run{.out = rg::testing::temp_path("trainer_trace"), .epochs = 2};
  fs::remove_all(run.out);
  run.trace = {
      .path = rg::testing::temp_path("trainer_trace.json"), .first_step = 3, .last_step = 5};
  run.run();
  const rg::testing::TraceCheck c = rg::testing::check_trace_file(run.trace.path);
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  // Steps 3, 4 and 5, and the loader saying that epoch 1 has no batch left.
  EXPECT_EQ(c.with_name_containing("wait for the next batch").size(), 4u);
  EXPECT_EQ(c.with_name_containing("forward and loss").size(), 3u);
  EXPECT_EQ(c.with_name_containing("optimizer step").size(), 3u);
  EXPECT_EQ(c.with_name_containing("write last.safetensors").size(), 1u);
  EXPECT_EQ(c.with_name_containing("evaluate").size(), 1u);
  EXPECT_EQ(c.thread_names.at({0, c.find("optimizer step")->tid}), "main");
  // A window that starts after the run's last step writes nothing; a bad one is refused.
  TraceOptions parsed;
  parse_trace_steps("7:9", parsed);
  EXPECT_EQ(parsed.first_step, 7);
  EXPECT_EQ(parsed.last_step, 9);
  for (const char* bad : {"0:3", "3:2", "a:b", "2:", ":4", "2:3:4"})
    EXPECT_TRUE(throws_error([&] { parse_trace_steps(bad, parsed); }, {"--trace-steps", bad}))
        << bad;
  EXPECT_TRUE(throws_error(
      [&] { StepTrace(TraceOptions{.path = run.out + "/no/such/folder/t.json"}, nullptr); },
      {"--trace", "does not exist"}));
  EXPECT_TRUE(throws_error([&] { StepTrace(TraceOptions{.path = run.out}, nullptr); },
                           {"--trace", "is a folder"}));  // the run made it
}

// ZeRO-1 (one process here: its code paths, the whole state in one shard) resumes from a plain
// checkpoint and the other way, ending where an uninterrupted plain run ends.
TEST(Trainer, ZeroCheckpointsResumeWithoutZeroAndBack) {
  TinyRun straight{.out = rg::testing::temp_path("trainer_zero_straight")};
  fs::remove_all(straight.out);
  straight.run();
  for (ZeroStage first_mode : {ZeroStage::one, ZeroStage::off}) {
    const ZeroStage second_mode = first_mode == ZeroStage::one ? ZeroStage::off : ZeroStage::one;
    TinyRun first{.out = rg::testing::temp_path("trainer_zero_resumed"), .stop_after = 1};
    first.zero = first_mode;
    fs::remove_all(first.out);
    first.run();
    TinyRun second{.out = first.out, .resume = true};
    second.zero = second_mode;
    second.run();
    EXPECT_GT(second.state_bytes, 0);
    const auto a = load_safetensors(straight.out + "/last.safetensors").tensors;
    const auto b = load_safetensors(second.out + "/last.safetensors").tensors;
    ASSERT_EQ(a.size(), b.size());
    for (const auto& [name, t] : a)
      EXPECT_TRUE(all_close(b.at(name), t, 0, 0))
          << name << " (first run zero=" << (first_mode == ZeroStage::one) << ")";
  }
}

// The (loss scale, skipped) record of every step of every rank-0 event file under out/steps,
// by step.
std::vector<std::tuple<int64_t, std::string, float>> step_log(const std::string& out) {
  std::vector<std::tuple<int64_t, std::string, float>> records;
  for (const auto& e : fs::directory_iterator(out + "/steps"))
    for (const EventRecord& r : read_event_records(e.path().string()))
      if (!r.tag.empty()) records.emplace_back(r.step, r.tag, r.value);
  std::sort(records.begin(), records.end());
  return records;
}

// Under mixed precision every optimizer step's loss scale goes to TensorBoard (out/steps, a run
// of its own), skipped steps marked; a resumed run's record equals an uninterrupted one's.
// Under O2 (f16 weights) a start at 2^24 overflows their gradients: the first steps are
// skipped, halving the scale each time.
TEST(Trainer, LogsTheLossScaleOfEveryStep) {
  const AmpOptions o2{.level = OptLevel::O2,
                      .dtype = DType::f16,
                      .scaler = {.init_scale = 16777216.0, .growth_interval = 3}};
  TinyRun straight{.out = rg::testing::temp_path("trainer_scale"), .amp_options = o2};
  TinyRun first{
      .out = rg::testing::temp_path("trainer_scale_resumed"), .stop_after = 2, .amp_options = o2};
  fs::remove_all(straight.out);
  fs::remove_all(first.out);
  straight.run();
  const auto log = step_log(straight.out);
  std::vector<double> scales;
  std::vector<int64_t> skipped;
  for (const auto& [step, tag, value] : log) {
    if (tag == "amp/loss_scale") {
      EXPECT_EQ(step, static_cast<int64_t>(scales.size()) + 1);
      scales.push_back(value);
    } else {
      ASSERT_EQ(tag, "amp/skipped_step");
      skipped.push_back(step);
    }
  }
  ASSERT_EQ(scales.size(), 12u);  // 3 epochs of 4 steps
  EXPECT_EQ(scales[0], 16777216.0);
  ASSERT_FALSE(skipped.empty());
  for (int64_t s : skipped) {
    if (s < 12) {
      EXPECT_EQ(scales[s], scales[s - 1] / 2) << "after skipped step " << s;
    }
  }

  // The same record as rows of loss_scale.csv beside metrics.csv, exact (2^24 too).
  const auto rows = rg::testing::read_csv(straight.out + "/loss_scale.csv");
  ASSERT_EQ(rows.size(), 1u + scales.size());
  EXPECT_EQ(rows[0], (std::vector<std::string>{"step", "loss_scale", "skipped"}));
  EXPECT_EQ(rows[1][1], "16777216");
  for (std::size_t s = 1; s <= scales.size(); ++s) {
    EXPECT_EQ(rows[s][0], std::to_string(s));
    EXPECT_EQ(std::stod(rows[s][1]), scales[s - 1]) << "step " << s;
    const bool was_skipped = std::count(skipped.begin(), skipped.end(), int64_t(s)) > 0;
    EXPECT_EQ(rows[s][2], was_skipped ? "1" : "0") << "step " << s;
  }

  first.run();
  TinyRun second{.out = first.out, .resume = true, .amp_options = o2};
  second.run();
  EXPECT_EQ(step_log(second.out), log);
  // Cut back to the checkpoint's step on resume, like the event files: no step twice.
  EXPECT_EQ(rg::testing::read_csv(second.out + "/loss_scale.csv"), rows);
}

// Each epoch's peak starts afresh: 64 MiB held during epoch 1's steps show in epoch 1's row
// and not in epoch 2's.
TEST(Trainer, PeakMemoryIsMeasuredPerEpoch) {
  TinyRun run{.out = rg::testing::temp_path("trainer_memory"), .epochs = 2, .big_steps = 4};
  fs::remove_all(run.out);
  run.run();
  const auto csv = read_csv(run.out + "/metrics.csv");
  ASSERT_EQ(csv.size(), 1u + 2u);
  ASSERT_EQ(csv[0][8], "peak_memory_mib");
  const double first = std::stod(csv[1][8]), second = std::stod(csv[2][8]);
  EXPECT_GE(first, 64.0);
  EXPECT_LT(second, first - 60.0);
  EXPECT_GE(static_cast<double>(run.peak_bytes) / (1 << 20), first - 0.5);
}

TEST(Trainer, StopsWhenTheLossIsNoLongerFinite) {
  TinyRun run{.out = rg::testing::temp_path("trainer_nan")};
  fs::remove_all(run.out);
  run.edit_task = [](Task& task) {
    task.step = [step = task.step](nn::Module& model, const data::Batch& batch,
                                   const StepContext& context) {
      StepOutput out = step(model, batch, context);
      out.loss = mul(out.loss, std::numeric_limits<double>::quiet_NaN());
      return out;
    };
  };
  EXPECT_TRUE(throws_error([&] { run.run(); }, {"tiny", "the loss became", "nan", "epoch 1/3"}));
}

// A step whose sums do not match the task's train metrics is a named error, not a misreport.
TEST(Trainer, RefusesSumsThatDoNotMatchTheMetrics) {
  TinyRun run{.out = rg::testing::temp_path("trainer_sums")};
  fs::remove_all(run.out);
  run.edit_task = [](Task& task) {
    task.train_metrics.push_back({"other", "o"});  // two metrics, one sum
  };
  EXPECT_TRUE(throws_error([&] { run.run(); }, {"tiny", "2 train metrics"}));
}

TEST(Trainer, RefusesATaskItCannotRun) {
  auto group = parallel::init();
  auto model = std::make_shared<nn::Linear>(4, 2);
  MixedPrecision amp(*model, {});
  SGD optimizer(amp.optimizer_params(), {.lr = 0.1});
  auto schedule = make_schedule({}, optimizer, 1);
  parallel::DistributedSampler sampler(4, *group);
  auto make = [&](Task task) {
    Trainer({group, Device::cpu(), model, amp, optimizer, *schedule}, std::move(task),
            {.program = "tiny"});
  };
  Task no_best = rows_task(sampler, nullptr);
  no_best.best_metric = "dice";
  EXPECT_TRUE(throws_error([&] { make(no_best); }, {"best metric", "dice"}));
  Task no_step = rows_task(sampler, nullptr);
  no_step.step = nullptr;
  EXPECT_TRUE(throws_error([&] { make(no_step); }, {"tiny", "step"}));
  Task no_loss = rows_task(sampler, nullptr);
  no_loss.eval_metrics.erase(no_loss.eval_metrics.begin());
  EXPECT_TRUE(throws_error([&] { make(no_loss); }, {"loss"}));
  EXPECT_TRUE(throws_error([&] { make_schedule({.name = "cyclic"}, optimizer, 1); },
                           {"unknown schedule", "cyclic"}));
}

// airbench94.py's get_lr(step), written out as it is there, times each group's lr.
double airbench94_factor(int64_t step, int64_t total) {
  const auto warmup_steps = static_cast<int64_t>(static_cast<double>(total) * 0.23);
  const int64_t warmdown_steps = total - warmup_steps;
  if (step < warmup_steps) {
    const double frac = static_cast<double>(step) / static_cast<double>(warmup_steps);
    return 0.2 * (1 - frac) + 1.0 * frac;
  }
  const double frac =
      static_cast<double>(step - warmup_steps) / static_cast<double>(warmdown_steps);
  return 1.0 * (1 - frac) + 0.07 * frac;
}

TEST(Schedule, Airbench94FollowsItsGetLr) {
  Tensor a = zeros({1}).set_requires_grad(true), b = zeros({1}).set_requires_grad(true);
  // Two groups as airbench94's (BatchNorm biases at 64x the lr): both follow one curve.
  SGD optimizer(std::vector<ParamGroup<SGDOptions>>{{{a}, {.lr = 96}}, {{b}, {.lr = 1.5}}});
  const int64_t steps_per_epoch = 48, epochs = 10, total = steps_per_epoch * epochs;
  auto schedule =
      make_schedule({.name = "airbench94", .epochs = epochs}, optimizer, steps_per_epoch);
  for (int64_t t = 0; t <= total; ++t) {
    if (t > 0) schedule->step();
    const double f = airbench94_factor(t, total);
    ASSERT_NEAR(optimizer.lr(0), 96 * f, 1e-12) << "step " << t;
    ASSERT_NEAR(optimizer.lr(1), 1.5 * f, 1e-14) << "step " << t;
  }
  EXPECT_NEAR(optimizer.lr(1), 1.5 * 0.07, 1e-14);
  EXPECT_TRUE(throws_error(
      [&] { make_schedule({.name = "airbench94", .epochs = 2, .warmup_epochs = 1}, optimizer, 4); },
      {"airbench94", "warmup_epochs must be 0"}));
}

}  // namespace
}  // namespace rg::train
