// The run-options parser (train/run_options.h) on a small options struct of its own: the layers
// in their order, the flags and --help made from the declarations, the errors, the checks, and
// the groups the apps share (train/common_options.h) read into the loop's structs.
#include "train/run_options.h"

#include <gtest/gtest.h>

#include <fstream>

#include "parallel/thread_group.h"
#include "tests/support/fixtures.h"
#include "train/common_options.h"
#include "train/model_card.h"
#include "train/trainer.h"

namespace rg::train {
namespace {
using rg::testing::throws_error;

struct Toy : RunOutputOptions {
  Toy() : RunOutputOptions{.out = "runs/toy"} {}
  int64_t epochs = 3;
  double lr = 0.5;
  std::string kind = "plain";
  bool fancy = false;
  bool nesterov = false;
  std::vector<int64_t> size{};
  std::vector<std::string> notes{};
  std::string preset{};
};

const RunOptions<Toy>& toy_options() {
  static const RunOptions<Toy> options = [] {
    RunOptions<Toy> o("toy", "a program that reads options");
    o.section("Toy");
    o.add("epochs", &Toy::epochs, "epochs to train", in_range<int64_t>(1, 10));
    o.add("lr", &Toy::lr, "learning rate", positive());
    o.add("kind", &Toy::kind, "plain or fancy", one_of({"plain", "fancy"}));
    o.add("fancy", &Toy::fancy, "be fancy");
    o.add("nesterov", &Toy::nesterov, "Nesterov momentum", {}, Flag::config_only);
    o.add("size", &Toy::size, "HxW")
        .reads_text([](const std::string& t) { return Json(parse_size(t, "size")); }, "HxW");
    o.add("notes", &Toy::notes, "a note (repeatable)", {}, Flag::command_line_only);
    o.include(run_output_options());
    o.presets(&Toy::preset, {{"long", {{"epochs", 9}, {"lr", 0.25}}}});
    o.derived_defaults([](Toy& t, const Json& given) {
      if (t.fancy && !given.contains("kind")) t.kind = "fancy";
    });
    o.check([](const Toy& t) { RG_CHECK(t.kind != "fancy" || t.fancy, "kind fancy needs fancy"); });
    return o;
  }();
  return options;
}

CommandLine<Toy> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "toy");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return toy_options().parse(static_cast<int>(argv.size()), argv.data());
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = rg::testing::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

TEST(RunOptions, LayersOverrideInOrderDefaultsPresetConfigFlagsSet) {
  EXPECT_EQ(parse({}).config.epochs, 3);                         // the struct's
  EXPECT_EQ(parse({"--preset", "long"}).config.epochs, 9);       // over defaults
  EXPECT_EQ(parse({"--preset", "long"}).config.preset, "long");  // recorded
  const std::string file = write_file("toy.json", R"({"epochs": 5, "lr": 2})");
  const Toy t =
      parse({"--set", "epochs=7", "--epochs", "6", "--config", file, "--preset", "long"}).config;
  EXPECT_EQ(t.epochs, 7);  // --set over the flag
  EXPECT_EQ(t.lr, 2);      // the file over the preset
  EXPECT_EQ(parse({"--config", file, "--preset", "long", "--epochs", "6"}).config.epochs, 6);
  EXPECT_EQ(parse({"--config", file, "--preset", "long"}).config.epochs, 5);
  EXPECT_EQ(parse({"--config", file, "--lr", "1e-3"}).config.lr, 1e-3);
}

TEST(RunOptions, FlagsComeFromTheDeclarations) {
  const Toy t = parse({"--fancy", "--no-progress", "--overwrite", "--size", "4x8", "--notes", "a",
                       "--notes", "b", "--stop-after-epochs", "2", "--kind", "plain"})
                    .config;
  EXPECT_TRUE(t.fancy);
  EXPECT_FALSE(t.progress);
  EXPECT_TRUE(t.overwrite);
  EXPECT_EQ(t.size, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(t.notes, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(t.stop_after_epochs, 2);
  EXPECT_EQ(t.kind, "plain");                          // given: no derived default
  EXPECT_EQ(parse({"--fancy"}).config.kind, "fancy");  // not given: derived from --fancy
  EXPECT_EQ(parse({"--set", "size=[2,3,4]"}).config.size, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(parse({"--set", "size=2x3"}).config.size, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(parse({"--set", "nesterov=true"}).config.nesterov);
  // A config-only key has no flag; a command-line-only one is no config key and is not recorded.
  EXPECT_TRUE(throws_error([] { parse({"--nesterov"}); }, {"toy: ", "--nesterov", "see --help"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--set", "notes=[\"x\"]"});
      },
      {"--set notes=", "unknown option 'notes'", "known: epochs, explain, fancy"}));
  const Json recorded = toy_options().to_json(parse({"--notes", "a"}).config);
  EXPECT_FALSE(recorded.contains("notes"));
  EXPECT_EQ(recorded, toy_options().defaults());
  EXPECT_EQ(recorded["out"], "runs/toy");  // the app's default for a shared option
  EXPECT_EQ(toy_options().read(recorded).epochs, 3);
}

TEST(RunOptions, ErrorsNameTheSourceTheKeyAndTheValue) {
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--epochs", "ten"});
      },
      {"toy: --epochs: option 'epochs' must be an integer, got \"ten\""}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--set", "lr=fast"});
      },
      {"--set lr=fast: option 'lr' must be a number, got \"fast\""}));
  const std::string file = write_file("toy_bad.json", R"({"fancy": 1})");
  EXPECT_TRUE(throws_error(
      [&] {
        parse({"--config", file});
      },
      {"toy_bad.json:1: option 'fancy' must be a boolean, got 1"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--preset", "short"});
      },
      {"unknown preset 'short' (known: long)"}));
  EXPECT_TRUE(throws_error([] { parse({"--size", "4"}); }, {"size '4'", "HxW or DxHxW"}));
  EXPECT_TRUE(throws_error([] { parse({"--out", "x\xff"}); }, {"toy: --out", "not valid UTF-8"}));
  // The checks: each value in the order declared, then the rules across options.
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--epochs", "11"});
      },
      {"epochs must be in [1, 10], got 11"}));
  EXPECT_TRUE(throws_error([] { parse({"--lr", "0"}); }, {"lr must be > 0, got 0"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--kind", "odd"});
      },
      {"kind must be plain or fancy, got 'odd'"}));
  EXPECT_TRUE(throws_error([] { parse({"--out", ""}); }, {"out must name a folder"}));
  EXPECT_TRUE(throws_error([] { parse({"--kind", "fancy"}); }, {"kind fancy needs fancy"}));
  Toy nan;
  nan.lr = std::nan("");
  EXPECT_TRUE(
      throws_error([&] { toy_options().validate(nan); }, {"lr must be a finite number, got nan"}));
}

// The message of the error parse(args) throws, the temporary folder's path cut off.
std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const Error& e) {
    std::string what = e.what();
    for (std::size_t at; (at = what.find(rg::testing::temp_path(""))) != std::string::npos;)
      what.erase(at, rg::testing::temp_path("").size());
    return what;
  }
  return "no error";
}

TEST(RunOptions, AConfigFilesErrorsNameTheFileAndTheLine) {
  const std::string file = write_file("lines.json",
                                      "{\n  \"epochs\": 5,\n  \"lr\": -1,\n"
                                      "  \"kind\":\n    \"odd\"\n}\n");
  // A value that fails its check, read after every layer: the line of its key.
  EXPECT_EQ(error_of({"--config", file}), "lr must be > 0, got -1 (lines.json:3)");
  EXPECT_EQ(error_of({"--config", file, "--lr", "1"}),
            "kind must be plain or fancy, got 'odd' (lines.json:4)");
  // Values that a flag or --set replaced are theirs: no file to name.
  EXPECT_EQ(error_of({"--config", file, "--set", "lr=0"}), "lr must be > 0, got 0");
  EXPECT_EQ(error_of({"--config", file, "--lr", "1", "--kind", "odd"}),
            "kind must be plain or fancy, got 'odd'");
  EXPECT_EQ(parse({"--config", file, "--lr", "1", "--kind", "plain"}).config.epochs, 5);
  // The key as JSON spells it (an escape), and the types and names of keys.
  const std::string escaped = write_file("escaped.json", "{\"lr\": 1,\n\"ep\\u006fchs\": 0}");
  EXPECT_EQ(error_of({"--config", escaped}), "epochs must be in [1, 10], got 0 (escaped.json:2)");
  const std::string typed = write_file("typed.json", "{\"lr\": 1,\n\n  \"fancy\": \"yes\"}");
  EXPECT_EQ(error_of({"--config", typed}),
            "typed.json:3: option 'fancy' must be a boolean, got \"yes\"");
  const std::string unknown = write_file("unknown.json", "{\n\"lr\": 1, \"epoch\": 2}");
  EXPECT_NE(error_of({"--config", unknown}).find("unknown.json:2: unknown option 'epoch'"),
            std::string::npos);
  // Text that is not JSON: where the parser stopped.
  const std::string broken = write_file("broken.json", "{\n  \"lr\": 1,\n}\n");
  EXPECT_TRUE(throws_error(
      [&] {
        parse({"--config", broken});
      },
      {"--config '", "broken.json' is not valid JSON at line 3, column 1: ", "syntax error"}));
  const std::string empty = write_file("empty.json", "");
  EXPECT_TRUE(throws_error(
      [&] {
        parse({"--config", empty});
      },
      {"empty.json' is not valid JSON at line 1, column 1"}));
  // A number too large for a double is nlohmann's out_of_range, not a parse error (fuzz finding).
  const std::string huge = write_file("huge.json", "{\"lr\": 8277293e700}");
  EXPECT_TRUE(throws_error(
      [&] {
        parse({"--config", huge});
      },
      {"huge.json' is not valid JSON: number overflow parsing '8277293e700'",
       "beyond a double's range"}));
}

TEST(RunOptions, ChecksSayTheirBounds) {
  EXPECT_EQ(number_text(1e6), "1e+06");
  EXPECT_EQ(number_text(1048576.0), "1048576");
  EXPECT_EQ(number_text(0.001), "0.001");
  auto message = [](const Check<double>& check, double v) {
    try {
      check("x", v);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(in_interval(0, 1, Interval::left_open), 0), "x must be in (0, 1], got 0");
  EXPECT_EQ(message(in_interval(0, 1, Interval::right_open), 1), "x must be in [0, 1), got 1");
  EXPECT_EQ(message(in_interval(0, 1, Interval::open), 1), "x must be in (0, 1), got 1");
  EXPECT_EQ(message(in_interval(0, 1, Interval::closed, "s"), 2), "x must be in [0, 1] s, got 2");
  EXPECT_EQ(message(in_interval(0, 1, Interval::closed), 1), "no error");
  EXPECT_EQ(message(at_least(0.5, "(0.5: half)"), 0), "x must be >= 0.5 (0.5: half), got 0");
}

TEST(RunOptions, HelpIsMadeFromTheDeclarations) {
  const CommandLine<Toy> cli = parse({"--help"});
  ASSERT_TRUE(cli.help_requested);
  for (const char* part : {"toy: a program that reads options",
                           "Toy:",
                           "--epochs INT=3",
                           "epochs to train",
                           "--lr NUMBER=0.5",
                           "--fancy",
                           "--size HxW",
                           "--notes TEXT",
                           "--preset NAME",
                           "--config FILE.json",
                           "--set KEY=VALUE",
                           "Output:",
                           "--out TEXT=runs/toy",
                           "--no-progress",
                           "no live progress bar",
                           "Options without a flag",
                           "nesterov = false",
                           "Nesterov momentum",
                           "preset = ",
                           "--batch-size is batch_size"})
    EXPECT_NE(cli.help.find(part), std::string::npos) << part << " in\n" << cli.help;
  EXPECT_EQ(cli.help.find("--nesterov"), std::string::npos);
}

// A default derived from other options, and a boolean with both flags: train_cifar's
// cudnn_benchmark (on for its GPU presets on a GPU, unless a layer says otherwise).
struct Tuned {
  std::string device = "cpu";
  bool exact = false;
  bool tuned = false;
};

const RunOptions<Tuned>& tuned_options() {
  static const RunOptions<Tuned> options = [] {
    RunOptions<Tuned> o("tuned", "");
    o.add("device", &Tuned::device, "cpu or gpu");
    o.add("exact", &Tuned::exact, "exact arithmetic");
    o.add("tuned", &Tuned::tuned, "time the kernels (default: on a gpu, unless exact)")
        .negated_by("never time the kernels")
        .derived_default();
    o.derived_defaults([](Tuned& t, const Json& given) {
      if (!given.contains("tuned")) t.tuned = t.device == "gpu" && !t.exact;
    });
    return o;
  }();
  return options;
}

CommandLine<Tuned> parse_tuned(std::vector<std::string> args) {
  args.insert(args.begin(), "tuned");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return tuned_options().parse(static_cast<int>(argv.size()), argv.data());
}

TEST(RunOptions, DerivedDefaultsAndANegatedTwin) {
  auto tuned = [](std::vector<std::string> args) {
    return parse_tuned(std::move(args)).config.tuned;
  };
  EXPECT_FALSE(tuned({}));
  EXPECT_TRUE(tuned({"--device", "gpu"}));
  EXPECT_FALSE(tuned({"--device", "gpu", "--exact"}));
  // Said outright, by any layer, it is what was said.
  EXPECT_TRUE(tuned({"--tuned"}));
  EXPECT_FALSE(tuned({"--device", "gpu", "--no-tuned"}));
  EXPECT_FALSE(tuned({"--device", "gpu", "--set", "tuned=false"}));
  const std::string off = write_file("tuned_off.json", R"({"device": "gpu", "tuned": false})");
  EXPECT_FALSE(tuned({"--config", off}));
  // Null asks for the derived default again, over the layers before.
  EXPECT_TRUE(tuned({"--config", off, "--set", "tuned=null"}));
  const std::string null = write_file("tuned_null.json", R"({"device": "gpu", "tuned": null})");
  EXPECT_TRUE(tuned({"--config", null}));
  EXPECT_TRUE(throws_error(
      [] {
        parse_tuned({"--tuned", "--no-tuned"});
      },
      {"tuned: ", "--no-tuned", "--tuned"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse_tuned({"--set", "tuned=3"});
      },
      {"option 'tuned' must be a boolean, got 3"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse_tuned({"--set", "exact=null"});
      },
      {"option 'exact' must be a boolean, got null"}));
  // A config records the value decided, never null; the defaults say which are derived.
  EXPECT_EQ(tuned_options().to_json(parse_tuned({"--device", "gpu"}).config),
            (Json{{"device", "gpu"}, {"exact", false}, {"tuned", true}}));
  EXPECT_EQ(tuned_options().defaults(),
            (Json{{"device", "cpu"}, {"exact", false}, {"tuned", nullptr}}));
  EXPECT_TRUE(tuned_options().read({{"device", "gpu"}, {"tuned", nullptr}}).tuned);
  const std::string help = parse_tuned({"--help"}).help;
  EXPECT_NE(help.find("--no-tuned"), std::string::npos) << help;
  EXPECT_NE(help.find("never time the kernels"), std::string::npos) << help;
}

TEST(RunOptions, AnOptionIsDeclaredOnce) {
  RunOptions<Toy> o("toy", "");
  o.add("epochs", &Toy::epochs, "epochs");
  EXPECT_TRUE(throws_error([&] { o.add("epochs", &Toy::epochs, "again"); },
                           {"toy: the option 'epochs' is declared twice"}));
}

// A group included into a member, or only some of its keys.
struct Inference {
  std::string checkpoint{};
  DeviceOptions compute{};
  PrecisionOptions precision{};
};

TEST(RunOptions, GroupsIncludeIntoMembersAndByKey) {
  RunOptions<Inference> o("infer", "", Sources::command_line);
  o.add("checkpoint", &Inference::checkpoint, "a checkpoint");
  o.include(device_options(), &Inference::compute);
  o.include(precision_options(), &Inference::precision, {"amp"});
  std::vector<std::string> args = {"infer", "--device", "cpu:1", "--amp", "O1", "--threads", "2"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  const Inference i = o.parse(static_cast<int>(argv.size()), argv.data()).config;
  EXPECT_EQ(i.compute.device, "cpu:1");
  EXPECT_EQ(i.compute.threads, 2);
  EXPECT_EQ(i.precision.amp, "O1");
  EXPECT_EQ(o.to_json(i),
            (Json{{"checkpoint", ""}, {"device", "cpu:1"}, {"threads", 2}, {"amp", "O1"}}));
  std::vector<std::string> more = {"infer", "--amp-dtype", "bf16"};
  std::vector<char*> more_argv;
  for (std::string& a : more) more_argv.push_back(a.data());
  EXPECT_TRUE(throws_error([&] { o.parse(2, more_argv.data()); }, {"infer: ", "--amp-dtype"}));
  std::vector<std::string> set = {"infer", "--set", "amp=O2"};  // a command line alone
  std::vector<char*> set_argv;
  for (std::string& a : set) set_argv.push_back(a.data());
  EXPECT_TRUE(throws_error([&] { o.parse(3, set_argv.data()); }, {"infer: ", "--set"}));
}

// The shared groups become the structs the loop takes.
TEST(CommonOptions, MachineOptionsBecomeTheWorldThePlacementAndTheWrap) {
  MachineOptions m;
  m.allreduce = "native";
  m.threads = 3;
  m.collective_timeout = 2.5;
  m.check_sequence = true;
  const WorldOptions w = m.world_options();
  EXPECT_EQ(w.allreduce, parallel::AllreduceAlgorithm::native);
  EXPECT_EQ(w.threads, 3);
  EXPECT_EQ(w.collective_timeout, std::chrono::milliseconds(2500));
  EXPECT_TRUE(w.check_sequence);
  const MachineOptions defaults;
  EXPECT_EQ(defaults.world_options().allreduce, parallel::AllreduceAlgorithm::ring);

  auto world = parallel::ThreadGroup::create(1)[0];
  m.dp_devices = "cpu:0,cpu:0";
  m.sync_bn = true;
  m.bucket_mb = 4;
  m.grad_compression = "fp16";
  const Placement p = place(m, world);
  EXPECT_EQ(p.device, Device::cpu(0));
  EXPECT_EQ(p.dp_devices, (std::vector<Device>{Device::cpu(0), Device::cpu(0)}));
  EXPECT_EQ(p.group, world);
  const WrapOptions wrap = wrap_options(m, p, {});
  EXPECT_EQ(wrap.dp_devices, p.dp_devices);
  EXPECT_EQ(wrap.batch_norm, parallel::BatchNormSync::across_devices);
  EXPECT_EQ(wrap.bucket_mb, 4);
  EXPECT_EQ(wrap.compression, parallel::GradCompression::fp16);
  EXPECT_EQ(wrap.zero, ZeroStage::off);
  m.dp_devices = "";
  m.dp = 0;
  m.device = "cpu:1";
  EXPECT_EQ(place(m, world).device, Device::cpu(1));
  EXPECT_TRUE(place(m, world).dp_devices.empty());
  m.zero = 1;
  EXPECT_EQ(wrap_options(m, place(m, world), {}).zero, ZeroStage::one);
  m.device = "cuda:0";
  if (cuda_device_count() == 0) {
    EXPECT_TRUE(throws_error([&] { place(m, world); }, {"cuda:0 requested"}));
  }

  PrecisionOptions amp{.amp = "O2", .amp_dtype = "bf16", .loss_scale = "1024"};
  EXPECT_EQ(amp.amp_options().level, OptLevel::O2);
  EXPECT_EQ(amp.amp_options().dtype, DType::bf16);
  EXPECT_EQ(amp.amp_options().scaler.init_scale, 1024);
  const RunOutputOptions out{
      .out = "o", .resume = "auto", .overwrite = true, .trace = "t.json", .trace_steps = "3:7"};
  EXPECT_EQ(out.folder("p").program, "p");
  EXPECT_EQ(out.folder("p").resume, "auto");
  EXPECT_TRUE(out.folder("p").overwrite);
  EXPECT_EQ(out.trace_options().path, "t.json");
  EXPECT_EQ(out.trace_options().first_step, 3);
  EXPECT_EQ(out.trace_options().last_step, 7);
  const RunOutputOptions untraced;
  EXPECT_EQ(untraced.trace_options().path, "");
  EXPECT_EQ(untraced.trace_options().first_step, 2);  // the window main's apps had
  EXPECT_EQ(untraced.trace_options().last_step, 4);
}

}  // namespace
}  // namespace rg::train
