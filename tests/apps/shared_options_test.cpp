// The run-options parser (train/run_options.h) as the apps use it: train_cifar and train_unet
// read the shared machine, precision and output options under the same names, with the same
// values and errors (predict its device, threads and precision); train_unet takes --config and
// --set; --help lists every option; and what checkpoints record is what it was, and reads back.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "apps/predict/options.h"
#include "apps/train_cifar/config.h"
#include "apps/train_unet/config.h"
#include "tests/support/fixtures.h"

namespace rg::apps {
namespace {
using rg::testing::throws_error;
using train::Json;

template <class Config>
train::CommandLine<Config> parse(const train::RunOptions<Config>& options,
                                 std::vector<std::string> args) {
  args.insert(args.begin(), options.program());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return options.parse(static_cast<int>(argv.size()), argv.data());
}

// The message of the error, its program's name replaced by APP.
template <class Config>
std::string error(const train::RunOptions<Config>& options, const std::vector<std::string>& args) {
  try {
    parse(options, args);
  } catch (const Error& e) {
    std::string what = e.what();
    for (std::size_t at; (at = what.find(options.program())) != std::string::npos;)
      what.replace(at, options.program().size(), "APP");
    return what;
  }
  return "no error";
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = rg::testing::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

TEST(SharedOptions, TrainCifarAndTrainUnetReadThemAlike) {
  const std::vector<std::string> args = words(
      "--device cpu:1 --threads 3 --workers 0 --seed 5 --dp 2 --sync-bn --allreduce native "
      "--backend mpi --bucket-mb 4 --first-bucket-mb 0.5 --grad-compression fp16 "
      "--collective-timeout 9.5 --check-sequence --accumulate-steps 3 --amp O1 --amp-dtype bf16 "
      "--loss-scale 1024 --out o --resume auto "
      "--overwrite --no-progress --stop-after-epochs 1 --trace t.json --trace-steps 3:5");
  const Json cifar = parse(train_cifar_options(), args).config.to_json();
  const Json unet = parse(train_unet_options(), args).config.to_json();
  std::size_t shared = 0;
  for (const auto* group :
       {&train::machine_options().options(), &train::precision_options().options(),
        &train::run_output_options().options()})
    for (const train::OptionInfo& o : *group) {
      EXPECT_EQ(cifar.at(o.key), unet.at(o.key)) << o.key;
      ++shared;
    }
  EXPECT_EQ(shared, 27u);
  EXPECT_EQ(cifar["first_bucket_mb"], 0.5);
  EXPECT_EQ(cifar["collective_timeout"], 9.5);
  EXPECT_EQ(unet["accumulate_steps"], 3);
  EXPECT_EQ(unet["backend"], "mpi");
  EXPECT_EQ(unet["progress"], false);
  EXPECT_EQ(cifar["out"], "o");
  EXPECT_EQ(unet["trace_steps"], "3:5");
  const Json zero = parse(train_unet_options(), words("--zero 1")).config.to_json();
  EXPECT_EQ(zero["zero"], 1);
  EXPECT_EQ(parse(train_cifar_options(), words("--set zero=1")).config.to_json()["zero"], 1);

  // Bad values: the same error in each app, predict included for the options it shares.
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--device", "tpu"},
                                             {"--threads", "4294967297"},
                                             {"--threads", "many"},
                                             {"--amp", "O7"},
                                             {"--amp-dtype", "fp8"},
                                             {"--device", "x\xff"}}) {
    const std::string expected = error(train_cifar_options(), bad);
    EXPECT_NE(expected, "no error");
    EXPECT_EQ(error(train_unet_options(), bad), expected);
    std::vector<std::string> predict_args = {"--checkpoint", "c", "a.png"};
    predict_args.insert(predict_args.end(), bad.begin(), bad.end());
    EXPECT_EQ(error(predict_options(), predict_args), expected);
  }
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--workers", "300"},
                                             {"--seed", "-1"},
                                             {"--dp", "65"},
                                             {"--dp-devices", "cuda:0,cpu:1"},
                                             {"--sync-bn", "yes"},
                                             {"--allreduce", "tree"},
                                             {"--backend", "gloo"},
                                             {"--bucket-mb", "0"},
                                             {"--first-bucket-mb", "-1"},
                                             {"--grad-compression", "int8"},
                                             {"--collective-timeout", "0"},
                                             {"--loss-scale", "-1"},
                                             {"--out", ""},
                                             {"--stop-after-epochs", "-1"},
                                             {"--set", "stop_after_epochs=true"},
                                             {"--zero", "2"},
                                             {"--zero", "1", "--dp", "2"},
                                             {"--zero", "1", "--dp-devices", "cpu:0,cpu:1"},
                                             {"--trace-steps", "5:3"},
                                             {"--trace-steps", "0:2"}}) {
    const std::string expected = error(train_cifar_options(), bad);
    EXPECT_NE(expected, "no error") << bad[0];
    EXPECT_EQ(error(train_unet_options(), bad), expected);
  }
  EXPECT_EQ(error(train_unet_options(), {"--seed", "-1"}), "seed must be >= 0, got -1");
  // main's words for ZeRO and the trace window (train_cifar's, where the apps differed).
  EXPECT_EQ(error(train_unet_options(), {"--zero", "2"}),
            "zero must be 0 (off) or 1 (ZeRO stage 1: optimizer state sharded across processes), "
            "got 2");
  EXPECT_EQ(error(train_unet_options(), {"--zero", "1", "--dp", "2"}),
            "zero shards the optimizer across processes (mpirun); it does not combine with dp");
  EXPECT_EQ(error(train_cifar_options(), {"--trace-steps", "5:3"}),
            "--trace-steps '5:3': the first step comes after the last");
  EXPECT_EQ(error(train_cifar_options(), {"--threads", "many"}),
            "APP: --threads: option 'threads' must be an integer, got \"many\"");
}

TEST(SharedOptions, TrainUnetTakesAConfigFileAndSet) {
  const std::string file =
      write_file("unet.json", R"({"depth": 2, "width": 8, "image_size": [32, 32], "amp": "O1"})");
  const UnetConfig c = parse(train_unet_options(), {"--config", file, "--width", "4", "--set",
                                                    "amp=O2", "--set", "image_size=16x16"})
                           .config;
  EXPECT_EQ(c.depth, 2);   // the file
  EXPECT_EQ(c.width, 4);   // the flag over the file
  EXPECT_EQ(c.amp, "O2");  // --set over the file
  EXPECT_EQ(c.image_size, (std::vector<int64_t>{16, 16}));
  EXPECT_TRUE(throws_error(
      [] {
        parse(train_unet_options(), {"--set", "model=resnet18"});
      },
      {"--set model=resnet18", "unknown option 'model'", "known: accumulate_steps, allreduce"}));
  // Files are multiclass and RGB unless a layer says otherwise, the file's layer too.
  const std::string files =
      write_file("unet_files.json", R"({"data": "folder", "data_root": "d"})");
  const UnetConfig folder = parse(train_unet_options(), {"--config", files}).config;
  EXPECT_EQ(folder.classes, "multiclass");
  EXPECT_EQ(folder.channels, 3);
  const UnetConfig binary =
      parse(train_unet_options(), {"--config", files, "--set", "classes=binary"}).config;
  EXPECT_EQ(binary.classes, "binary");
  EXPECT_EQ(binary.channels, 3);
  EXPECT_TRUE(throws_error(
      [] {
        parse(train_unet_options(), {"--set", "image_size=[[1]]"});
      },
      {"--set image_size", "image_size '[[1]]'"}));
}

// The JSON a checkpoint records (train.config): train_cifar's defaults as they were recorded
// before the options had one parser, and any recorded config reads back as --config.
TEST(SharedOptions, CheckpointsRecordTheOptionsAsBeforeAndTheyReadBack) {
  EXPECT_EQ(TrainConfig{}.to_json().dump(),
            R"({"accumulate_steps":1,"allreduce":"ring","amp":"O0","amp_dtype":"fp16",)"
            R"("augmentation":"classic",)"
            R"("backend":"auto","batch_size":128,"bucket_mb":25.0,"check_sequence":false,)"
            R"("clip_grad_norm":0.0,"collective_timeout":300.0,"cuda_graphs":false,)"
            R"("cudnn_benchmark":false,"data":"",)"
            R"("data_format":"auto","data_on_device":"auto","deterministic":false,"device":"cpu",)"
            R"("dp":0,"dp_devices":"","epochs":200,"eval_only":false,"explain":"",)"
            R"("first_bucket_mb":1.0,"float64":false,"grad_compression":"none","init_from":"",)"
            R"("label_smoothing":0.0,"lookahead":false,"loss_scale":"auto","lr":0.1,)"
            R"("lr_scaling":"none","memory_format":"contiguous","milestones":[100,150],)"
            R"("model":"resnet18","momentum":0.9,)"
            R"("nesterov":false,"norm_bias_lr_scale":1.0,"out":"runs/cifar10","overwrite":false,)"
            R"("preset":"","progress":true,"resume":"","schedule":"cosine","seed":0,)"
            R"("stop_after_epochs":0,"sync_bn":false,"test_limit":0,"threads":0,"trace":"",)"
            R"("trace_steps":"2:4","train_limit":0,)"
            R"("tta":false,"tta_epochs":"every","tta_translate":false,"warm_up":false,)"
            R"("warmup_epochs":0.0,)"
            R"("weight_decay":0.0005,"whiten_bias_epochs":0,"workers":2,"zero":0})");
  // cudnn_benchmark's default is derived (null: on for the GPU presets on a GPU), as main's was;
  // warm_up's follows it.
  Json defaults = train_cifar_options().defaults();
  EXPECT_TRUE(defaults.at("cudnn_benchmark").is_null());
  EXPECT_TRUE(defaults.at("warm_up").is_null());
  defaults["cudnn_benchmark"] = false;
  defaults["warm_up"] = false;
  EXPECT_TRUE(defaults.at("memory_format").is_null());  // likewise: channels_last on a GPU preset
  defaults["memory_format"] = "contiguous";
  EXPECT_EQ(defaults, TrainConfig{}.to_json());
  const TrainConfig airbench =
      parse(train_cifar_options(), {"--preset", "airbench94", "--amp", "O1", "--dp", "2"}).config;
  const std::string recorded = write_file("recorded_cifar.json", airbench.to_json().dump());
  EXPECT_EQ(parse(train_cifar_options(), {"--config", recorded}).config.to_json(),
            airbench.to_json());
  const UnetConfig unet =
      parse(train_unet_options(), {"--data", "npy", "vols", "--image-size", "8x16x16"}).config;
  const std::string unet_recorded = write_file("recorded_unet.json", unet.to_json().dump());
  EXPECT_EQ(parse(train_unet_options(), {"--config", unet_recorded}).config.to_json(),
            unet.to_json());
}

TEST(SharedOptions, HelpListsEveryOption) {
  auto every_option_in_help = [](const auto& options) {
    const std::string help = parse(options, {"--help"}).help;
    for (const train::OptionInfo& o : options.options()) {
      const std::string named =
          o.flag == train::Flag::config_only ? "  " + o.key + " = " : o.flag_name();
      EXPECT_NE(help.find(named), std::string::npos) << options.program() << " " << named;
      EXPECT_NE(help.find(o.help), std::string::npos) << options.program() << " " << o.help;
      if (!o.negated_help.empty()) {
        EXPECT_NE(help.find(o.negated_help), std::string::npos) << o.key;
      }
    }
    return help;
  };
  const std::string unet = every_option_in_help(train_unet_options());
  EXPECT_NE(unet.find("--config FILE.json"), std::string::npos);
  EXPECT_NE(unet.find("--set KEY=VALUE"), std::string::npos);
  EXPECT_NE(unet.find("--data KIND [DIR]=shapes2d"), std::string::npos);
  const std::string cifar = every_option_in_help(train_cifar_options());
  EXPECT_NE(cifar.find("--preset NAME"), std::string::npos);
  EXPECT_NE(cifar.find("classic, quick, resnet18 or airbench94"), std::string::npos);
  EXPECT_NE(cifar.find("--no-cudnn-benchmark"), std::string::npos);
  const std::string predict = every_option_in_help(predict_options());
  EXPECT_EQ(predict.find("--config"), std::string::npos);  // a command, not a recipe
}

}  // namespace
}  // namespace rg::apps
