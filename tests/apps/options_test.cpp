// train_cifar's options: values that used to wrap, be ignored or crash each give a named error.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "apps/train_cifar/config.h"
#include "apps/train_cifar/run.h"
#include "parallel/faults.h"
#include "tests/apps/tiny_cifar.h"
#include "tests/support/fixtures.h"

namespace rg::apps {
namespace {
using rg::testing::throws_error;

train::CommandLine<TrainConfig> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "train_cifar");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return train_cifar_options().parse(static_cast<int>(argv.size()), argv.data());
}

TEST(TrainCifarOptions, ValuesThatWrappedOrWereIgnoredAreNamedErrors) {
  // 1e300 MiB was an undefined float-to-int conversion of the bucket size.
  EXPECT_TRUE(throws_error([] { parse({"--bucket-mb", "1e300"}); }, {"bucket_mb", "1e+300"}));
  // 4294967297 became 1 thread through a cast to int.
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--threads", "4294967297"});
      },
      {"threads", "[0, 1024]", "4294967297"}));
  // -5 meant "no limit".
  EXPECT_TRUE(throws_error([] { parse({"--train-limit", "-5"}); }, {"train_limit", ">= 0", "-5"}));
  EXPECT_TRUE(throws_error([] { parse({"--test-limit", "-1"}); }, {"test_limit", ">= 0"}));
  // INT64_MAX epochs failed inside the LR scheduler.
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--epochs", "9223372036854775807"});
      },
      {"epochs", "[1, 1000000]"}));
  // 20,000 workers failed with a bare "Resource temporarily unavailable".
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--workers", "20000"});
      },
      {"workers", "[0, 256]", "20000"}));
  // --eval-only without a checkpoint evaluated random weights and exited 0.
  EXPECT_TRUE(
      throws_error([] { parse({"--eval-only"}); }, {"eval_only", "checkpoint", "--resume"}));
  EXPECT_TRUE(throws_error([] { parse({"--set", "lr=1e400"}); }, {"lr", "1e400"}));
  train::Json c = train_cifar_options().defaults();
  c["momentum"] = std::nan("");  // JSON text cannot hold NaN, a program's config can
  EXPECT_TRUE(throws_error([&] { train_cifar_options().read(c); }, {"momentum", "finite", "nan"}));
  EXPECT_TRUE(throws_error([] { parse({"--set", "clip_grad_norm=-1"}); }, {"clip_grad_norm"}));
  // A UNet failed only at the first loss, after building 31 M parameters, on a shape mismatch.
  EXPECT_TRUE(throws_error([] { parse({"--model", "unet2d"}); }, {"unet2d", "segmentation"}));
  EXPECT_TRUE(throws_error([] { parse({"--model", "unet3d@0.5"}); }, {"unet3d@0.5"}));
  // Limits are not errors where the value is sane.
  EXPECT_EQ(
      parse({"--workers", "256", "--threads", "1024", "--bucket-mb", "1048576"}).config.workers,
      256);
}

TEST(TrainCifarOptions, DeterministicAndCudnnBenchmarkFlagsAndSettings) {
  EXPECT_FALSE(parse({}).config.deterministic);
  EXPECT_TRUE(parse({"--deterministic"}).config.deterministic);
  EXPECT_TRUE(parse({"--set", "deterministic=true"}).config.deterministic);
  EXPECT_TRUE(parse({"--deterministic"}).config.to_json()["deterministic"].get<bool>());
  EXPECT_TRUE(throws_error([] { parse({"--set", "deterministic=3"}); }, {"deterministic"}));
  EXPECT_FALSE(parse({}).config.cudnn_benchmark);
  EXPECT_TRUE(parse({"--cudnn-benchmark"}).config.cudnn_benchmark);
  EXPECT_TRUE(parse({"--set", "cudnn_benchmark=true"}).config.cudnn_benchmark);
  EXPECT_TRUE(parse({"--cudnn-benchmark"}).config.to_json()["cudnn_benchmark"].get<bool>());
}

// PyTorch's airbench94 runs with torch.backends.cudnn.benchmark = True: the presets made for
// speed time cuDNN's plans too, on a GPU only, unless the run says otherwise.
TEST(TrainCifarOptions, GpuPresetsTimeCudnnPlansOnAGpuUnlessToldNo) {
  const auto benchmark = [](std::vector<std::string> args) {
    return parse(std::move(args)).config.cudnn_benchmark;
  };
  for (const std::string preset : {"airbench94", "quick", "resnet18"}) {
    EXPECT_TRUE(benchmark({"--preset", preset, "--device", "cuda"})) << preset;
    EXPECT_TRUE(benchmark({"--preset", preset, "--device", "cuda:1"})) << preset;
    EXPECT_FALSE(benchmark({"--preset", preset})) << preset;  // the CPU: untouched
    EXPECT_FALSE(benchmark({"--preset", preset, "--device", "cuda", "--no-cudnn-benchmark"}))
        << preset;
  }
  EXPECT_FALSE(benchmark({"--device", "cuda"}));  // no preset: the classic recipe, as before
  EXPECT_FALSE(benchmark({"--preset", "classic", "--device", "cuda"}));
  EXPECT_TRUE(benchmark({"--preset", "quick", "--dp-devices", "cuda:0,cuda:0"}));
  // An explicit choice wins, however it is made.
  EXPECT_FALSE(
      benchmark({"--preset", "airbench94", "--device", "cuda", "--set", "cudnn_benchmark=false"}));
  const std::string file = rg::testing::temp_path("no_benchmark.json");
  std::ofstream(file) << R"({"cudnn_benchmark": false})";
  EXPECT_FALSE(benchmark({"--preset", "airbench94", "--device", "cuda", "--config", file}));
  std::filesystem::remove(file);
  EXPECT_TRUE(benchmark({"--cudnn-benchmark"}));  // as asked, though the CPU ignores it
  // --deterministic overrides the timed plans; the resolved value says so.
  EXPECT_FALSE(benchmark({"--preset", "airbench94", "--device", "cuda", "--deterministic"}));
  // The saved config holds the resolved value, never null.
  EXPECT_TRUE(parse({"--preset", "quick", "--device", "cuda"})
                  .config.to_json()["cudnn_benchmark"]
                  .get<bool>());
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--cudnn-benchmark", "--no-cudnn-benchmark"});
      },
      {"--no-cudnn-benchmark", "--cudnn-benchmark"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--set", "cudnn_benchmark=3"});
      },
      {"cudnn_benchmark", "a boolean", "3"}));
}

// airbench94's warmup94 chooses its plans before its timer: the warm-up follows the timed plans.
TEST(TrainCifarOptions, TheWarmUpFollowsTheTimedPlansUnlessToldNo) {
  const auto warm_up = [](std::vector<std::string> args) {
    return parse(std::move(args)).config.warm_up;
  };
  EXPECT_TRUE(warm_up({"--preset", "airbench94", "--device", "cuda"}));
  EXPECT_FALSE(warm_up({"--preset", "airbench94"}));  // the CPU has no plans to choose
  EXPECT_FALSE(warm_up({"--preset", "airbench94", "--device", "cuda", "--no-cudnn-benchmark"}));
  EXPECT_FALSE(warm_up({"--preset", "airbench94", "--device", "cuda", "--no-warm-up"}));
  EXPECT_TRUE(warm_up({"--warm-up"}));  // as asked (tests run it on the CPU)
  EXPECT_TRUE(warm_up({"--cudnn-benchmark"}));
  EXPECT_FALSE(warm_up({"--cudnn-benchmark", "--set", "warm_up=false"}));
  EXPECT_TRUE(
      parse({"--preset", "quick", "--device", "cuda"}).config.to_json()["warm_up"].get<bool>());
}

TEST(TrainCifarOptions, BareCudaUnderMpirunTakesTheLocalRanksGpu) {
  EXPECT_EQ(training_device("cuda", 0, 1), Device::cuda(0));
  EXPECT_EQ(training_device("cuda", 2, 4), Device::cuda(2));    // one GPU per process
  EXPECT_EQ(training_device("cuda:1", 2, 4), Device::cuda(1));  // an index is taken as given
  EXPECT_EQ(training_device("cpu", 3, 4), Device::cpu());
  EXPECT_TRUE(throws_error([] { training_device("tpu", 0, 1); }, {"tpu"}));
}

// A non-UTF-8 --out (a Latin-1 file name) threw nlohmann's type_error 316 when the options
// were turned into JSON; so did a --set value with an overlong sequence (a fuzz finding).
TEST(TrainCifarOptions, NonUtf8TextIsANamedError) {
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--out", "runs/caf\xe9"});
      },
      {"--out", "not valid UTF-8", "byte 8"}));
  EXPECT_TRUE(throws_error([] { parse({"--set", "data=\xff"}); }, {"--set data", "UTF-8"}));
  EXPECT_EQ(parse({"--out", "runs/caf\xc3\xa9"}).config.out, "runs/caf\xc3\xa9");  // UTF-8 é
  // Shaped like UTF-8 but not well formed: overlong (C1 BE, E0 80 80, F0 80 80 80), a surrogate
  // (ED A0 80), past U+10FFFF (F4 90 80 80, F5 ...). Each is an error, never nlohmann's throw.
  for (const std::string bad : {"\xc1\xbe", "\xe0\x80\x80", "\xf0\x80\x80\x80", "\xed\xa0\x80",
                                "\xf4\x90\x80\x80", "\xf5\x80\x80\x80"}) {
    EXPECT_TRUE(throws_error(
        [&] {
          parse({"--set", "data=x" + bad});
        },
        {"--set data", "UTF-8"}))
        << bad.size();
    EXPECT_TRUE(throws_error([&] { parse({"--out", "runs/" + bad}); }, {"--out", "UTF-8"}));
  }
  // The edges that are well formed: U+0080, U+07FF, U+D7FF, U+E000, U+10000, U+10FFFF.
  const std::string good =
      "\xc2\x80\xdf\xbf\xed\x9f\xbf\xee\x80\x80\xf0\x90\x80\x80\xf4\x8f\xbf\xbf";
  EXPECT_EQ(parse({"--out", "runs/" + good}).config.out, "runs/" + good);
  EXPECT_EQ(parse({"--out", "runs/" + good}).config.to_json()["out"], "runs/" + good);
}

// Nested 300,000 lists deep, a value crashed train_cifar with a stack overflow while the error
// message dumped it.
TEST(TrainCifarOptions, DeeplyNestedJsonIsRefused) {
  const std::string deep = std::string(300000, '[') + std::string(300000, ']');
  EXPECT_TRUE(throws_error(
      [&] {
        parse({"--set", "epochs=" + deep});
      },
      {"--set epochs", "nests", "deeper than 8"}));
  const std::string path = rg::testing::temp_path("deep.json");
  std::ofstream(path) << R"({"epochs": )" << deep << "}";
  EXPECT_TRUE(throws_error([&] { parse({"--config", path}); }, {"deep.json", "nests"}));
  std::ofstream(path) << R"({"milestones": [[1]]})";  // shallow but the wrong type
  EXPECT_TRUE(throws_error(
      [&] {
        parse({"--config", path});
      },
      {"milestones", "a list of integers", "[[1]]"}));
  EXPECT_TRUE(throws_error([] { parse({"--config", "/dev/zero"}); }, {"/dev/zero", "regular"}));
  std::ofstream(path) << R"({"model": ")" << std::string(1 << 20, 'x') << R"(", "epochs": "x"})";
  try {
    parse({"--config", path});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u);  // values quoted clipped
  }
}

// --fault (repeatable), --collective-timeout and --check-sequence reach the config; a bad
// spec or timeout is a named error before anything runs.
TEST(TrainCifarOptions, FaultsTimeoutAndSequenceChecks) {
  const TrainConfig defaults = parse({}).config;
  EXPECT_EQ(defaults.collective_timeout, 300.0);
  EXPECT_FALSE(defaults.check_sequence);
  EXPECT_TRUE(defaults.faults.empty());
  const TrainConfig c =
      parse({"--fault", "kill:rank=1:step=50", "--fault", "delay:rank=0:step=3:seconds=20",
             "--collective-timeout", "2.5", "--check-sequence"})
          .config;
  const parallel::FaultPlan faults(c.faults);
  ASSERT_EQ(faults.faults().size(), 2u);
  EXPECT_EQ(faults.faults()[0].kind, parallel::FaultKind::kill);
  EXPECT_EQ(faults.faults()[1].seconds, 20.0);
  EXPECT_EQ(c.collective_timeout, 2.5);
  EXPECT_TRUE(c.check_sequence);
  EXPECT_EQ(c.to_json()["collective_timeout"].get<double>(), 2.5);
  EXPECT_EQ(parse({"--set", "collective_timeout=60"}).config.collective_timeout, 60.0);
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--fault", "kill:rank=1"});
      },
      {"fault 'kill:rank=1'", "needs step="}));
  for (const char* bad : {"0", "-3", "1e300", "0.0001"})
    EXPECT_TRUE(throws_error(
        [&] {
          parse({"--collective-timeout", bad});
        },
        {"collective_timeout must be in [0.001, 1e+06] seconds"}))
        << bad;
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--collective-timeout", "soon"});
      },
      {"collective_timeout"}));
  // A fault for a rank the job does not have would never fire: refused when the run starts.
  const std::string data = tiny_cifar("fault_data", 8);
  TrainConfig one = tiny_config(data, rg::testing::temp_path("fault_out"));
  one.faults = {"exit:rank=1:step=2"};
  EXPECT_TRUE(throws_error([&] { run(one); },
                           {"exit:rank=1:step=2", "rank 1 does not exist in a job of 1 process"}));
}

TEST(TrainCifarOptions, EvalOnlyWithNoCheckpointToFind) {
  const std::string data = tiny_cifar("data", 8);
  const std::string out = rg::testing::temp_path("out");
  std::filesystem::remove_all(out);
  TrainConfig cfg = tiny_config(data, out);
  cfg.eval_only = true;
  cfg.resume = "auto";
  EXPECT_TRUE(
      throws_error([&] { run(cfg); }, {"--eval-only", "no checkpoint", "last.safetensors"}));
}

// PyTorch's airbench94 trains a half-precision channels-last model: the presets made for speed
// do so on a GPU — channels-last activations, and O1 in bf16 where the GPU has bf16 (sm_80+) —
// unless the run says otherwise; the CPU and the classic recipe are untouched. This machine has
// no GPU (capability 0), so the precision's part is checked on the rule itself.
TEST(TrainCifarOptions, GpuPresetsTrainChannelsLastAndBf16UnlessToldNo) {
  for (const std::string preset : {"airbench94", "quick", "resnet18"}) {
    for (const std::string device : {"cuda", "cuda:1"}) {
      const GpuPresetDefaults h200 = gpu_preset_defaults(preset, device, "", 90);
      EXPECT_TRUE(h200.channels_last && h200.amp_bf16) << preset << " " << device;
      const GpuPresetDefaults a100 = gpu_preset_defaults(preset, device, "", 80);
      EXPECT_TRUE(a100.channels_last && a100.amp_bf16) << preset;
      const GpuPresetDefaults v100 = gpu_preset_defaults(preset, device, "", 70);
      EXPECT_TRUE(v100.channels_last) << preset;
      EXPECT_FALSE(v100.amp_bf16) << preset;  // no fast bf16: f32, as before
    }
    const GpuPresetDefaults cpu = gpu_preset_defaults(preset, "cpu", "", 90);
    EXPECT_FALSE(cpu.channels_last || cpu.amp_bf16) << preset;
    EXPECT_TRUE(gpu_preset_defaults(preset, "cpu", "cuda:0,cuda:0", 90).amp_bf16) << preset;

    const TrainConfig gpu = parse({"--preset", preset, "--device", "cuda"}).config;
    EXPECT_EQ(gpu.memory_format, "channels_last") << preset;
    EXPECT_EQ(gpu.to_json()["memory_format"], "channels_last") << preset;  // resolved, saved
    EXPECT_EQ(gpu.amp, "O0") << preset;  // no GPU here: no bf16 to choose
    const TrainConfig cpu_run = parse({"--preset", preset}).config;
    EXPECT_EQ(cpu_run.memory_format, "contiguous") << preset;
    EXPECT_EQ(cpu_run.amp, "O0") << preset;
    // An explicit choice wins, however it is made.
    EXPECT_EQ(parse({"--preset", preset, "--device", "cuda", "--memory-format", "contiguous"})
                  .config.memory_format,
              "contiguous");
    EXPECT_EQ(parse({"--preset", preset, "--device", "cuda", "--set", "memory_format=contiguous"})
                  .config.memory_format,
              "contiguous");
  }
  EXPECT_FALSE(gpu_preset_defaults("classic", "cuda", "", 90).channels_last);
  EXPECT_FALSE(gpu_preset_defaults("", "cuda", "", 90).amp_bf16);
  EXPECT_EQ(parse({"--device", "cuda"}).config.memory_format, "contiguous");
  EXPECT_EQ(parse({"--memory-format", "channels_last"}).config.memory_format, "channels_last");
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--memory-format", "nhwc"});
      },
      {"memory_format", "contiguous or channels_last", "nhwc"}));
}

}  // namespace
}  // namespace rg::apps
