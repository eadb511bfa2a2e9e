// Whole train_cifar runs on a tiny synthetic CIFAR-10 (binary layout): options, resume,
// checkpoints, logs and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "apps/train_cifar/cifar_task.h"
#include "apps/train_cifar/config.h"
#include "apps/train_cifar/run.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "nn/models/zoo.h"
#include "tests/apps/tiny_cifar.h"
#include "tests/support/fixtures.h"

namespace rg::apps {
namespace {
namespace fs = std::filesystem;
using rg::testing::all_close;
using rg::testing::throws_error;

std::map<std::string, Tensor> weights(const std::string& path) {
  return load_safetensors(path).tensors;
}

TEST(TrainCifar, ResumedRunEndsWithTheSameWeights) {
  const std::string data = tiny_cifar("data", 8);  // 40 train, 8 test images
  const std::string straight = rg::testing::temp_path("straight");
  const std::string resumed = rg::testing::temp_path("resumed");
  fs::remove_all(straight);
  fs::remove_all(resumed);
  ASSERT_EQ(run(tiny_config(data, straight)), 0);

  TrainConfig first = tiny_config(data, resumed);
  first.stop_after_epochs = 1;  // "interrupted" after one epoch
  ASSERT_EQ(run(first), 0);
  manual_seed(12345);  // the new process starts from another generator state
  TrainConfig second = tiny_config(data, resumed);
  second.resume = "auto";
  ASSERT_EQ(run(second), 0);

  auto a = weights(straight + "/last.safetensors"), b = weights(resumed + "/last.safetensors");
  ASSERT_EQ(a.size(), b.size());
  for (auto& [name, t] : a) EXPECT_TRUE(all_close(b.at(name), t, 0, 0)) << name;
  EXPECT_EQ(load_safetensors(resumed + "/last.safetensors").metadata.at("train.epoch"), "3");

  // Logs: one CSV row per epoch across both runs, TensorBoard events, a best checkpoint.
  std::ifstream csv(resumed + "/metrics.csv");
  int lines = 0;
  for (std::string line; std::getline(csv, line);) ++lines;
  EXPECT_EQ(lines, 1 + 3);
  EXPECT_TRUE(fs::exists(resumed + "/best.safetensors"));
  int events = 0;
  for (auto& e : fs::directory_iterator(resumed))
    events += e.path().filename().string().starts_with("events.out.tfevents.");
  EXPECT_GE(events, 1);
}

// A run on a device other than the host's — cpu:1 here, standing in for a GPU: batches, labels,
// metrics, evaluation (with test-time augmentation), checkpoints and the loss scaler all cross
// between the loader's host tensors and the model's device, so a path that mixes devices fails
// here without a GPU. The same kernels run on both logical devices: the weights are identical.
TEST(TrainCifar, TrainsOnANonHostDeviceLikeOnTheHost) {
  const std::string data = tiny_cifar("data", 8);
  for (const std::string amp : {"O0", "O2"}) {
    std::map<std::string, Tensor> last[2];
    for (int d = 0; d < 2; ++d) {
      const std::string out = rg::testing::temp_path("device" + std::to_string(d) + amp);
      fs::remove_all(out);
      TrainConfig cfg = tiny_config(data, out);
      cfg.epochs = 1;
      cfg.tta = true;
      cfg.amp = amp;
      cfg.amp_dtype = "bf16";
      cfg.device = d == 0 ? "cpu" : "cpu:1";
      ASSERT_EQ(run(cfg), 0) << cfg.device << " " << amp;
      last[d] = weights(out + "/last.safetensors");
    }
    ASSERT_EQ(last[0].size(), last[1].size());
    for (auto& [name, t] : last[0]) EXPECT_TRUE(all_close(last[1].at(name), t, 0, 0)) << name;
  }
}

// --dp 2 --sync-bn: DataParallel over cpu:0 and cpu:1 with SyncBatchNorm computes the weights
// one device computes, to f32 rounding, after one epoch (5 steps) — and so does
// --dp-devices cpu:0,cpu:0 --sync-bn, two replicas sharing one device; --dp 2 alone (per-device
// BatchNorm, 4 images each) does not. (Over more steps of this tiny-batch training the f32
// rounding differences grow chaotically — 0.2 after 15 steps — so the exactness itself is
// proved in f64, in tests/parallel/data_parallel_test.cpp.) The optimizer's momentum buffers in
// the checkpoint are not compared: they hold the last step's gradients, which a ReLU input
// within rounding of zero can send either way (measured: one unit of layer3.2 flipped in the
// last step, 2.4e-3 in the momentum of every layer below it, 1.1e-5 in the weights).
TEST(TrainCifar, DataParallelWithSyncBatchNormTrainsLikeOneDevice) {
  train::Json bad = train_cifar_options().defaults();
  train_cifar_options().apply_set(bad, "dp=-1");
  EXPECT_TRUE(
      throws_error([&] { train_cifar_options().read(bad); }, {"dp must be in [0, 64]", "-1"}));
  const std::string data = tiny_cifar("data", 8);  // 40 train, 8 test images
  std::map<std::string, std::map<std::string, Tensor>> results;
  // dp_shared: --dp-devices cpu:0,cpu:0, both replicas on one device (as cuda:0,cuda:0 on a GPU).
  for (const std::string kind : {"one", "dp", "dp_sync", "dp_shared"}) {
    TrainConfig cfg = tiny_config(data, rg::testing::temp_path(kind));
    fs::remove_all(cfg.out);
    cfg.epochs = 1;
    cfg.dp = kind == "one" || kind == "dp_shared" ? 0 : 2;
    if (kind == "dp_shared") cfg.dp_devices = "cpu:0,cpu:0";
    cfg.sync_bn = kind == "dp_sync" || kind == "dp_shared";
    ::testing::internal::CaptureStdout();
    const int status = run(cfg);
    const std::string printed = ::testing::internal::GetCapturedStdout();
    ASSERT_EQ(status, 0) << printed;
    // One process holds the optimizer state once, however many replicas it drives.
    EXPECT_TRUE(printed.find("optimizer state ") != std::string::npos) << printed;
    EXPECT_EQ(printed.find("on every rank"), std::string::npos) << printed;
    results[kind] = weights(cfg.out + "/last.safetensors");
  }
  double sync_worst = 0, per_device_worst = 0;
  for (const auto& [name, t] : results["one"]) {
    if (name.starts_with("optim.")) continue;
    const auto one = t.to_vector<double>(), dp = results["dp"].at(name).to_vector<double>();
    for (const char* synced : {"dp_sync", "dp_shared"}) {
      const auto sync = results[synced].at(name).to_vector<double>();
      for (std::size_t i = 0; i < one.size(); ++i)
        sync_worst = std::max(sync_worst, std::abs(sync[i] - one[i]));
    }
    for (std::size_t i = 0; i < one.size(); ++i)
      per_device_worst = std::max(per_device_worst, std::abs(dp[i] - one[i]));
  }
  EXPECT_LT(sync_worst, 1e-4);  // measured 1.1e-5
  EXPECT_GT(per_device_worst, 1e-2);
  RecordProperty("sync_worst", std::to_string(sync_worst));
  RecordProperty("per_device_worst", std::to_string(per_device_worst));
}

std::vector<std::string> csv_header(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> columns;
  for (std::size_t start = 0, comma = 0; comma != std::string::npos; start = comma + 1) {
    comma = line.find(',', start);
    columns.push_back(line.substr(start, comma - start));
  }
  return columns;
}

// O2 keeps f32 masters beside the bf16 model: an interrupted run must resume them (and the
// scaler), not rebuild them from the rounded model, to end bit-identical.
TEST(TrainCifar, MixedPrecisionResumesMastersAndScalerAndLogsTheScale) {
  const std::string data = tiny_cifar("data", 8);
  const std::string straight = rg::testing::temp_path("straight");
  const std::string resumed = rg::testing::temp_path("resumed");
  fs::remove_all(straight);
  fs::remove_all(resumed);
  auto config = [&](const std::string& out) {
    TrainConfig cfg = tiny_config(data, out);
    cfg.amp = "O2";
    cfg.amp_dtype = "bf16";
    cfg.loss_scale = "dynamic";  // bf16's default is none: the scaler's state is under test
    return cfg;
  };
  ASSERT_EQ(run(config(straight)), 0);
  TrainConfig first = config(resumed);
  first.stop_after_epochs = 1;
  ASSERT_EQ(run(first), 0);
  manual_seed(777);
  TrainConfig second = config(resumed);
  second.resume = "auto";
  ASSERT_EQ(run(second), 0);

  const SafetensorsFile a = load_safetensors(straight + "/last.safetensors");
  const SafetensorsFile b = load_safetensors(resumed + "/last.safetensors");
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (auto& [name, t] : a.tensors) EXPECT_TRUE(all_close(b.tensors.at(name), t, 0, 0)) << name;
  EXPECT_EQ(a.tensors.at("conv1.weight").dtype(), DType::bf16);
  EXPECT_EQ(a.tensors.at("amp.master.conv1.weight").dtype(), DType::f32);
  EXPECT_EQ(b.metadata.at("amp.level"), "O2");
  EXPECT_TRUE(b.metadata.count("scaler.scale"));

  const auto columns = csv_header(resumed + "/metrics.csv");
  EXPECT_NE(std::find(columns.begin(), columns.end(), "loss_scale"), columns.end());
  EXPECT_NE(std::find(columns.begin(), columns.end(), "skipped_steps"), columns.end());

  // A mixed-precision run cannot resume a checkpoint of another precision.
  TrainConfig other = config(resumed);
  other.amp = "O1";
  other.resume = "auto";
  other.epochs = 4;
  EXPECT_TRUE(throws_error([&] { run(other); }, {"last.safetensors", "O2", "O1"}));
}

// --accumulate-steps K: K batches per optimizer step. The schedule, the step counter, the loss
// scaler's record and the checkpoints count optimizer steps (40 images in batches of 4: 10
// batches, 5 steps an epoch, onecycle over 15), and an interrupted run resumes to the same
// weights; --cuda-graphs refuses it by name (tests/train/accumulate_test.cpp proves the step
// equals the larger batch's, check_equivalence judges it; BatchNorm normalises each batch).
TEST(TrainCifar, AccumulationStepsOncePerKBatches) {
  const std::string data = tiny_cifar("data", 8);  // 40 train images
  const std::string straight = rg::testing::temp_path("acc_straight");
  const std::string resumed = rg::testing::temp_path("acc_resumed");
  fs::remove_all(straight);
  fs::remove_all(resumed);
  auto config = [&](const std::string& out) {
    TrainConfig cfg = tiny_config(data, out);
    cfg.batch_size = 4;
    cfg.accumulate_steps = 2;
    cfg.schedule = "onecycle";  // refuses a step past its cycle: the step count must be right
    cfg.amp = "O1";             // fp16: a dynamic loss scaler, checked once per optimizer step
    return cfg;
  };
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(run(config(straight)), 0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("gradient accumulation: 2 batches of 4 per optimizer step: 1 rank × batch 4 "
                     "× 2 accumulation steps = 8 images a step, 5 steps an epoch"),
            std::string::npos)
      << out;
  const SafetensorsFile a = load_safetensors(straight + "/last.safetensors");
  EXPECT_EQ(a.metadata.at("train.step"), "15");
  EXPECT_EQ(a.metadata.at("batch.accumulate_steps"), "2");
  EXPECT_EQ(a.metadata.at("batch.global"), "8");
  std::ifstream scales(straight + "/loss_scale.csv");
  int rows = 0;
  for (std::string line; std::getline(scales, line);) ++rows;
  EXPECT_EQ(rows, 1 + 15);  // one row per optimizer step

  TrainConfig first = config(resumed);
  first.stop_after_epochs = 1;
  ASSERT_EQ(run(first), 0);
  manual_seed(4242);
  TrainConfig second = config(resumed);
  second.resume = "auto";
  ASSERT_EQ(run(second), 0);
  const SafetensorsFile b = load_safetensors(resumed + "/last.safetensors");
  for (auto& [name, t] : a.tensors) EXPECT_TRUE(all_close(b.tensors.at(name), t, 0, 0)) << name;

  TrainConfig graphs = config(rg::testing::temp_path("acc_graphs"));
  fs::remove_all(graphs.out);
  graphs.cuda_graphs = true;
  EXPECT_TRUE(throws_error([&] { run(graphs); },
                           {"train_cifar: --cuda-graphs", "--accumulate-steps 2", "drop one"}));
}

// Issue 53's `--batch-size 32 --accumulate-steps 4` against `--batch-size 128`, scaled down: 4
// batches of 4 per step end where batches of 16 end, for a model without BatchNorm (LeNet), to
// float order — in f64 (--float64), whose rounding no ReLU's kink notices: every weight and
// momentum within 1e-12 relative after 4 steps (a step's samples or weights off moves them by
// 1e-3). --float64 is the CPU's at --amp O0, and says so otherwise.
TEST(TrainCifar, AccumulatedBatchesEqualTheLargerBatch) {
  const std::string data = tiny_cifar("data", 8);
  auto config = [&](const std::string& name, int64_t batch, int64_t accumulate) {
    TrainConfig cfg = tiny_config(data, rg::testing::temp_path(name));
    fs::remove_all(cfg.out);
    cfg.model = "lenet";
    cfg.float64 = true;
    cfg.train_limit = 32;  // 2 steps an epoch either way
    cfg.epochs = 2;
    cfg.batch_size = batch;
    cfg.accumulate_steps = accumulate;
    return cfg;
  };
  const TrainConfig larger = config("acc_larger", 16, 1), micro = config("acc_micro", 4, 4);
  ASSERT_EQ(run(larger), 0);
  ASSERT_EQ(run(micro), 0);
  const SafetensorsFile a = load_safetensors(larger.out + "/last.safetensors");
  const SafetensorsFile b = load_safetensors(micro.out + "/last.safetensors");
  EXPECT_EQ(b.metadata.at("train.step"), "4");
  int64_t compared = 0;
  for (auto& [name, t] : a.tensors) {
    if (!is_floating(t.dtype())) continue;
    EXPECT_EQ(t.dtype(), DType::f64) << name;
    EXPECT_TRUE(all_close(b.tensors.at(name), t, 1e-14, 1e-12)) << name;
    ++compared;
  }
  EXPECT_GE(compared, 20);  // LeNet's 10 parameters and their momenta

  train::Json mixed = larger.to_json();
  mixed["amp"] = "O1";
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(mixed); },
                           {"float64", "--amp O0", "got --amp O1"}));
}

// --cuda-graphs captures the step on a GPU: on the CPU, and with a loss scaler (fp16's default),
// the run stops before its first step, naming why (tests/train/step_graph_test.cpp has the rest).
TEST(TrainCifar, CudaGraphsSayWhatTheyNeed) {
  const std::string data = tiny_cifar("data", 8);
  const std::string out = rg::testing::temp_path("graphs");
  fs::remove_all(out);
  TrainConfig cfg = tiny_config(data, out);
  cfg.epochs = 1;
  cfg.cuda_graphs = true;
  EXPECT_TRUE(throws_error([&] { run(cfg); }, {"train_cifar: --cuda-graphs", "on a GPU", "cpu"}));
}

// A loss scale far too large for f16: every step overflows, is skipped and reported by the
// first parameter whose gradient held inf/NaN, and the weights never move.
TEST(TrainCifar, OverflowingStepsAreSkippedAndReported) {
  const std::string data = tiny_cifar("data", 8);
  const std::string out = rg::testing::temp_path("out");
  fs::remove_all(out);
  TrainConfig cfg = tiny_config(data, out);
  cfg.epochs = 1;
  cfg.amp = "O1";
  cfg.amp_dtype = "fp16";
  cfg.loss_scale = "1e30";  // a fixed scale: it never backs off
  ::testing::internal::CaptureStdout();
  const int status = run(cfg);
  const std::string printed = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(status, 0);
  EXPECT_NE(printed.find("step 1: gradient overflow in conv1.weight, step skipped"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("5 steps skipped on gradient overflow"), std::string::npos) << printed;

  manual_seed(static_cast<uint64_t>(cfg.seed));  // the run's initial weights
  auto initial = nn::make_model(cfg.model, 10)->named_parameters();
  const auto saved = weights(out + "/last.safetensors");
  for (auto& [name, p] : initial) EXPECT_TRUE(all_close(saved.at(name), p, 0, 0)) << name;
}

TEST(TrainCifar, EvalOnlyAndWrongModelCheckpoint) {
  const std::string data = tiny_cifar("data", 8);
  const std::string out = rg::testing::temp_path("out");
  fs::remove_all(out);
  TrainConfig cfg = tiny_config(data, out);
  cfg.epochs = 1;
  ASSERT_EQ(run(cfg), 0);
  TrainConfig eval = cfg;
  eval.eval_only = true;
  eval.resume = out + "/best.safetensors";
  EXPECT_EQ(run(eval), 0);
  TrainConfig other = eval;
  other.model = "resnet20@0.5";
  EXPECT_TRUE(
      throws_error([&] { run(other); }, {"best.safetensors", "shape mismatches", "conv1.weight"}));
}

TEST(TrainCifar, BadOptionsAndMissingData) {
  train::Json c = train_cifar_options().defaults();
  EXPECT_TRUE(throws_error([&] { train_cifar_options().apply_set(c, "epochs=ten"); },
                           {"epochs", "integer"}));
  EXPECT_TRUE(throws_error([&] { train_cifar_options().apply_set(c, "optimizer=adam"); },
                           {"unknown option 'optimizer'"}));
  EXPECT_TRUE(throws_error([&] { train_cifar_options().apply_set(c, "lr"); }, {"key=value"}));
  train_cifar_options().apply_set(c, "schedule=multistep");
  train_cifar_options().apply_set(c, "milestones=[2, 4]");
  EXPECT_EQ(train_cifar_options().read(c).milestones, (std::vector<int64_t>{2, 4}));
  train_cifar_options().apply_set(c, "schedule=linear");
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(c); }, {"schedule", "'linear'"}));
  EXPECT_TRUE(throws_error([] { train_cifar_options().preset("fast"); },
                           {"unknown preset 'fast'", "quick"}));
  train::Json d = train_cifar_options().defaults();
  train_cifar_options().apply_set(d, "allreduce=tree");
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(d); },
                           {"allreduce", "ring or native", "'tree'"}));
  d = train_cifar_options().defaults();
  train_cifar_options().apply_set(d, "bucket_mb=0");
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(d); }, {"bucket_mb", "(0, 1048576]"}));
  d = train_cifar_options().defaults();
  train_cifar_options().apply_set(d, "amp=O4");
  EXPECT_TRUE(
      throws_error([&] { train_cifar_options().read(d); }, {"amp", "O4", "O0, O1, O2 or O3"}));
  d = train_cifar_options().defaults();
  train_cifar_options().apply_set(d, "amp_dtype=fp8");
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(d); }, {"fp8", "fp16 or bf16"}));
  d = train_cifar_options().defaults();
  train_cifar_options().apply_set(d, "loss_scale=-1");
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(d); }, {"loss-scale", "-1"}));
  d = train_cifar_options().defaults();
  train_cifar_options().apply_set(d, "lr_scaling=sqrt");
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(d); }, {"lr_scaling", "'sqrt'"}));

  TrainConfig cfg =
      tiny_config(rg::testing::temp_path("nothing-here"), rg::testing::temp_path("o"));
  EXPECT_TRUE(throws_error([&] { run(cfg); }, {"CIFAR-10 not found", "nothing-here"}));
  cfg.device = "cuda:0";
  if (cuda_device_count() == 0) {
    EXPECT_TRUE(throws_error([&] { run(cfg); }, {"cuda:0"}));
  }
}

// Every named recipe is a valid config, and the GPU recipe is pytorch-cifar's ResNet18.
TEST(TrainCifar, EveryPresetParses) {
  for (const std::string& name : train_cifar_options().preset_names()) {
    train::Json c = train_cifar_options().defaults();
    train_cifar_options().merge(c, train_cifar_options().preset(name), "--preset " + name);
    EXPECT_NO_THROW(train_cifar_options().read(c)) << name;
  }
  train::Json c = train_cifar_options().defaults();
  train_cifar_options().merge(c, train_cifar_options().preset("resnet18"), "--preset resnet18");
  const TrainConfig cfg = train_cifar_options().read(c);
  EXPECT_EQ(cfg.model, "resnet18");
  EXPECT_EQ(cfg.schedule, "onecycle");
  EXPECT_EQ(cfg.epochs, 30);
}

// airbench94.py's hyperparameters (per 1024 examples of a summed loss) in our mean-loss form.
TEST(TrainCifar, Airbench94PresetIsTheRecipe) {
  train::Json c = train_cifar_options().defaults();
  train_cifar_options().merge(c, train_cifar_options().preset("airbench94"), "--preset airbench94");
  const TrainConfig cfg = train_cifar_options().read(c);
  EXPECT_EQ(cfg.model, "airbench94");
  EXPECT_EQ(cfg.batch_size, 1024);
  const double kilostep_scale = 1024 * (1 + 1 / (1 - 0.85));
  EXPECT_NEAR(cfg.lr, 11.5 / kilostep_scale * 1024, 1e-12);  // 1.5
  // airbench94.py: p -= lr_s · (Σ_batch g + (wd_s / lr_s) · p): the decay per step is wd_s.
  const double wd_s = 0.0153 * 1024 / kilostep_scale;
  EXPECT_NEAR(cfg.lr * cfg.weight_decay, wd_s, 1e-15);
  EXPECT_DOUBLE_EQ(cfg.norm_bias_lr_scale, 64);
  EXPECT_DOUBLE_EQ(cfg.momentum, 0.85);
  EXPECT_TRUE(cfg.nesterov);
  EXPECT_DOUBLE_EQ(cfg.label_smoothing, 0.2);
  EXPECT_EQ(cfg.schedule, "airbench94");
  EXPECT_EQ(cfg.augmentation, "airbench94");
  EXPECT_EQ(cfg.whiten_bias_epochs, 3);
  EXPECT_TRUE(cfg.lookahead && cfg.tta && cfg.tta_translate);
  EXPECT_EQ(cfg.tta_epochs, "last");
  EXPECT_EQ(cfg.epochs, 10);
  c["model"] = "airbench";
  EXPECT_TRUE(
      throws_error([&] { train_cifar_options().read(c); }, {"whiten_bias_epochs", "airbench"}));
  c = train_cifar_options().defaults();
  c["tta_translate"] = true;
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(c); }, {"tta_translate", "tta"}));
}

// tta_epochs=last (airbench94's): the evaluations before the last are plain, the last one
// augmented. Evaluation draws no random numbers, so the three runs train identically and their
// test losses tell which evaluations were augmented.
TEST(TrainCifar, TtaOnlyAtTheLastEpochAugmentsOnlyTheLastEvaluation) {
  train::Json bad = train_cifar_options().defaults();
  train_cifar_options().apply_set(bad, "tta_epochs=first");
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(bad); },
                           {"tta_epochs", "every or last", "first"}));
  const std::string data = tiny_cifar("data", 8);
  std::map<std::string, std::vector<std::vector<std::string>>> rows;
  for (const std::string kind : {"plain", "every", "last"}) {
    TrainConfig cfg = tiny_config(data, rg::testing::temp_path("tta_" + kind));
    fs::remove_all(cfg.out);
    cfg.epochs = 2;
    cfg.tta = kind != "plain";
    cfg.tta_translate = cfg.tta;
    cfg.tta_epochs = kind == "last" ? "last" : "every";
    ASSERT_EQ(run(cfg), 0) << kind;
    rows[kind] = rg::testing::read_csv(cfg.out + "/metrics.csv");
  }
  const auto& header = rows["plain"].at(0);
  const std::size_t loss = std::find(header.begin(), header.end(), "test_loss") - header.begin();
  ASSERT_LT(loss, header.size());
  auto test_loss = [&](const std::string& kind, int epoch) {
    return rows[kind].at(epoch).at(loss);
  };
  for (int epoch = 1; epoch <= 2; ++epoch)
    EXPECT_NE(test_loss("plain", epoch), test_loss("every", epoch)) << "epoch " << epoch;
  EXPECT_EQ(test_loss("last", 1), test_loss("plain", 1));
  EXPECT_EQ(test_loss("last", 2), test_loss("every", 2));
}

// out[y][x] = in[y ± 1][x ± 1], reflected: the crops [0:H, 0:W] and [2:H+2, 2:W+2] of
// F.pad(x, (1, 1, 1, 1), 'reflect').
TEST(TrainCifar, ShiftReflectIsAirbench94sTranslation) {
  const Tensor img = arange(0, 9, 1).reshape({1, 1, 3, 3});  // rows 0 1 2 / 3 4 5 / 6 7 8
  EXPECT_EQ(shift_reflect(img, -1).to_vector<float>(),
            (std::vector<float>{4, 3, 4, 1, 0, 1, 4, 3, 4}));
  EXPECT_EQ(shift_reflect(img, 1).to_vector<float>(),
            (std::vector<float>{4, 5, 4, 7, 8, 7, 4, 5, 4}));
  EXPECT_TRUE(throws_error([&] { shift_reflect(img, 2); }, {"shift_reflect"}));
}

TEST(TrainCifar, CommandLineLayering) {
  const char* argv[] = {"train_cifar",  "--preset",    "quick",         "--epochs",    "3",
                        "--set",        "lr=0.3",      "--no-progress", "--data",      "x",
                        "--sync-bn",    "--allreduce", "native",        "--bucket-mb", "4",
                        "--lr-scaling", "linear"};
  const auto cli = train_cifar_options().parse(17, const_cast<char**>(argv));
  EXPECT_EQ(cli.config.model, "airbench@0.5");  // from the preset
  EXPECT_EQ(cli.config.epochs, 3);              // flag over preset
  EXPECT_DOUBLE_EQ(cli.config.lr, 0.3);         // --set over everything
  EXPECT_FALSE(cli.config.progress);
  EXPECT_EQ(cli.config.data, "x");
  EXPECT_TRUE(cli.config.sync_bn);
  EXPECT_EQ(cli.config.allreduce, "native");
  EXPECT_DOUBLE_EQ(cli.config.bucket_mb, 4);
  EXPECT_EQ(cli.config.lr_scaling, "linear");
  EXPECT_EQ(train_cifar_options().preset("quick")["epochs"], 8);  // the recipe the README measured
  const char* bad[] = {"train_cifar", "--epoch", "3"};
  EXPECT_TRUE(
      throws_error([&] { train_cifar_options().parse(3, const_cast<char**>(bad)); }, {"--epoch"}));
}

// Checkpoints hold the model's parameters as they are — NCHW, f32 — whatever the layout of its
// activations or the precision it trained in: a channels-last run (and a channels-last O1 bf16
// run) writes the file an NCHW f32 run writes, tensor for tensor, with weights equal to f32
// rounding (BatchNorm's sums run over the rows in another order).
TEST(TrainCifar, ChannelsLastRunsWriteTheNchwF32Checkpoint) {
  const std::string data = tiny_cifar("data", 8);
  struct Run {
    std::string memory_format, amp, data_on_device;
  };
  std::vector<std::map<std::string, Tensor>> last;
  // The last: batches gathered channels-last on the device (cpu:1 standing in for a GPU).
  for (const Run& r : {Run{"contiguous", "O0", "off"}, Run{"channels_last", "O0", "off"},
                       Run{"channels_last", "O1", "off"}, Run{"channels_last", "O0", "on"}}) {
    const std::string out =
        rg::testing::temp_path("layout_" + r.memory_format + r.amp + r.data_on_device);
    fs::remove_all(out);
    TrainConfig cfg = tiny_config(data, out);
    cfg.epochs = 1;
    cfg.memory_format = r.memory_format;
    cfg.amp = r.amp;
    cfg.amp_dtype = "bf16";
    cfg.data_on_device = r.data_on_device;
    if (r.data_on_device == "on") cfg.device = "cpu:1";
    ASSERT_EQ(run(cfg), 0) << r.memory_format << " " << r.amp;
    const SafetensorsFile file = load_safetensors(out + "/last.safetensors");
    EXPECT_EQ(train::Json::parse(file.metadata.at("config"))["memory_format"], r.memory_format);
    last.push_back(file.tensors);
  }
  for (std::size_t k = 1; k < last.size(); ++k) {
    ASSERT_EQ(last[k].size(), last[0].size()) << k;
    for (const auto& [name, t] : last[0]) {
      ASSERT_TRUE(last[k].contains(name)) << name;
      const Tensor& u = last[k].at(name);
      EXPECT_EQ(u.dtype(), t.dtype()) << name;
      EXPECT_EQ(u.shape(), t.shape()) << name;
      EXPECT_TRUE(u.is_contiguous()) << name;
    }
  }
  // f32 with either layout: the same training, to rounding; with the batches made on the device
  // in channels-last, exactly the host's channels-last run.
  for (const auto& [name, t] : last[0]) {
    if (is_floating(t.dtype())) {
      EXPECT_TRUE(all_close(last[1].at(name), t, 1e-4, 1e-3)) << name;
    }
    EXPECT_TRUE(all_close(last[3].at(name), last[1].at(name), 0, 0)) << name;
  }
}

}  // namespace
}  // namespace rg::apps
