// predict, in-process, on checkpoints of whole runs: a classifier's answers are those of
// train_cifar's evaluation on the same test images (its loss and accuracy recomputed from
// predict's logits), a segmenter's masks are those train_unet's validation scored (its Dice
// and IoU per class recomputed from the written masks), for 2-D PNGs and 3-D volumes; outputs
// are never overwritten unasked; bad checkpoints, inputs and devices are named errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/predict/options.h"
#include "apps/predict/run.h"
#include "apps/train_cifar/run.h"
#include "apps/train_unet/run.h"
#include "core/device.h"
#include "core/safetensors.h"
#include "nn/models/zoo.h"
#include "nn/segmentation_metrics.h"
#include "tests/apps/segmentation_files.h"
#include "tests/apps/tiny_cifar.h"
#include "tests/support/fixtures.h"
#include "tests/support/zoo_fill.h"
#include "train/predict.h"

namespace rg::apps {
namespace {
namespace fs = std::filesystem;
using rg::testing::read_csv;
using rg::testing::throws_error;
using testing::fresh_dir;

// A CSV figure as metrics.csv writes it.
std::string g6(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string last_row(const std::string& csv_path, const std::string& column) {
  const auto csv = read_csv(csv_path);
  for (std::size_t i = 0; i < csv[0].size(); ++i)
    if (csv[0][i] == column) return csv.back()[i];
  ADD_FAILURE() << "no column " << column;
  return "";
}

std::string run(const PredictOptions& o) {
  std::ostringstream out;
  EXPECT_EQ(run_predict(o, out), 0);
  return out.str();
}

// The test batch of a tiny CIFAR as PNG files img_<i>.png, and their labels.
std::vector<int64_t> cifar_test_pngs(const std::string& data, const std::string& dir) {
  std::ifstream in(data + "/test_batch.bin", std::ios::binary);
  std::vector<int64_t> labels;
  for (char label; in.get(label);) {
    Tensor image = empty({3, 32, 32}, {DType::u8});
    in.read(reinterpret_cast<char*>(image.data<uint8_t>()), 3072);
    testing::write_bytes(dir + "/img_" + std::to_string(labels.size()) + ".png",
                         testing::image_png(image));
    labels.push_back(label);
  }
  return labels;
}

// The mean cross-entropy of (N, 10) logits against labels, in f64, as the evaluation scores it;
// and how many of the arg-maxes are right.
std::pair<double, int64_t> score(const Tensor& logits, const std::vector<int64_t>& labels) {
  const std::vector<double> z = logits.to_vector<double>();
  double loss = 0;
  int64_t correct = 0;
  const auto n = static_cast<int64_t>(labels.size());
  for (int64_t i = 0; i < n; ++i) {
    const double* row = z.data() + i * 10;
    const double top = *std::max_element(row, row + 10);
    double sum = 0;
    for (int c = 0; c < 10; ++c) sum += std::exp(row[c] - top);
    loss += top + std::log(sum) - row[labels[static_cast<std::size_t>(i)]];
    correct += std::max_element(row, row + 10) - row == labels[static_cast<std::size_t>(i)];
  }
  return {loss / static_cast<double>(n), correct};
}

TEST(Predict, AClassifiersAnswersAreItsEvaluations) {
  const std::string data = tiny_cifar("predict_cifar", 8);
  const std::string out = rg::testing::temp_path("predict_cifar_run");
  fs::remove_all(out);
  TrainConfig cfg = tiny_config(data, out);
  cfg.epochs = 1;
  ASSERT_EQ(apps::run(cfg), 0);
  const std::string images = fresh_dir("predict_cifar_pngs");
  const std::vector<int64_t> labels = cifar_test_pngs(data, images);
  ASSERT_EQ(labels.size(), 8u);

  const train::Predictor predictor({.checkpoint = out + "/last.safetensors"});
  const std::vector<std::string> files = train::list_inputs({images}, predictor.card().task);
  ASSERT_EQ(files.size(), 8u);
  EXPECT_EQ(predictor.card().class_names[3], "cat");
  const Tensor logits = predictor.classify(files, 256);
  const auto [loss, correct] = score(logits, labels);
  EXPECT_EQ(g6(loss), last_row(out + "/metrics.csv", "test_loss"));
  EXPECT_EQ(g6(static_cast<double>(correct) / 8), last_row(out + "/metrics.csv", "test_accuracy"));

  // The app prints each file's top-k, the arg-max first.
  const std::string printed =
      run({.checkpoint = out + "/best.safetensors", .inputs = {images}, .top_k = 3});
  const std::vector<train::TopK> top = train::top_k(logits, 3);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string line =
        files[i] + ": " +
        predictor.card().class_names[static_cast<std::size_t>(top[i].classes[0])] + " ";
    EXPECT_NE(printed.find(line), std::string::npos) << line << " in\n" << printed;
  }
  // Mixed precision runs too (its logits are bf16's: not compared).
  EXPECT_NE(run({.checkpoint = out + "/last.safetensors",
                 .inputs = {files[0]},
                 .precision = {.amp = "O1", .amp_dtype = "bf16"}})
                .find(files[0] + ": "),
            std::string::npos);
}

// A checkpoint of a --float64 run (train_cifar's checking mode) predicts in f32, as any other:
// its weights converted on load, its answers the evaluation's up to f32's rounding.
TEST(Predict, AFloat64RunsCheckpointPredictsInF32) {
  const std::string data = tiny_cifar("predict_cifar_f64", 8);
  const std::string out = rg::testing::temp_path("predict_cifar_f64_run");
  fs::remove_all(out);
  TrainConfig cfg = tiny_config(data, out);
  cfg.epochs = 1;
  cfg.float64 = true;
  ASSERT_EQ(apps::run(cfg), 0);
  EXPECT_EQ(load_safetensors(out + "/last.safetensors").tensors.at("conv1.weight").dtype(),
            DType::f64);
  const std::string images = fresh_dir("predict_cifar_f64_pngs");
  const std::vector<int64_t> labels = cifar_test_pngs(data, images);
  const train::Predictor predictor({.checkpoint = out + "/last.safetensors"});
  const Tensor logits =
      predictor.classify(train::list_inputs({images}, predictor.card().task), 256);
  EXPECT_EQ(logits.dtype(), DType::f32);
  const double loss = score(logits, labels).first;
  const double recorded = std::stod(last_row(out + "/metrics.csv", "test_loss"));
  EXPECT_NEAR(loss, recorded, 1e-5 * recorded);
}

// A PyTorch user's ResNet18 — pytorch-cifar's names, its weights and BatchNorm statistics (the
// formula's, tests/support/zoo_fill.h), saved as a plain state_dict, as DataParallel's, and as
// tools/convert_pytorch_checkpoint.py writes one (with a card of pytorch-cifar's normalisation) —
// gives in predict the probabilities PyTorch's eval mode gives on the same PNGs, with ringgrad's
// normalisation (the default) and with pytorch-cifar's (--mean/--std, or the card): to 1e-4
// (tests/fixtures/pytorch_predict.safetensors, tools/pytorch_cifar_zoo.py).
TEST(Predict, APyTorchUsersResNet18GivesPyTorchsProbabilities) {
  const std::string dir = fresh_dir("predict_pytorch");
  std::vector<std::string> files;
  const std::vector<double> u = rg::testing::zoo_uniform("images", 4 * 3072);
  for (int64_t i = 0; i < 4; ++i) {
    Tensor image = empty({3, 32, 32}, {DType::u8});
    for (int64_t j = 0; j < 3072; ++j)
      image.data<uint8_t>()[j] = static_cast<uint8_t>(
          std::floor((u[static_cast<std::size_t>(i * 3072 + j)] + 1.0) * 128.0));
    files.push_back(dir + "/img_" + std::to_string(i) + ".png");
    testing::write_bytes(files.back(), testing::image_png(image));
  }
  auto model = nn::make_model("resnet18", 10);
  std::map<std::string, Tensor> plain, prefixed;
  for (const auto& [key, t] : model->state_dict()) {
    plain[key] = rg::testing::zoo_fill(key, t.shape());
    prefixed["module." + key] = plain[key];
  }
  const std::string plain_file = dir + "/resnet18.safetensors";
  const std::string prefixed_file = dir + "/resnet18_dp.safetensors";
  const std::string converted_file = dir + "/resnet18_converted.safetensors";
  save_safetensors(plain_file, plain);
  save_safetensors(prefixed_file, prefixed);
  train::ModelCard card;
  card.model = "resnet18";
  card.outputs = 10;
  card.class_names = {"airplane", "automobile", "bird",  "cat",  "deer",
                      "dog",      "frog",       "horse", "ship", "truck"};
  card.input_size = {32, 32};
  card.mean = train::kPytorchCifarMean;
  card.std = train::kPytorchCifarStd;
  save_safetensors(converted_file, plain, train::model_card_metadata(card));

  const rg::testing::Fixture expected("pytorch_predict");
  auto probabilities = [&](const std::string& checkpoint, const train::CardFlags& flags) {
    const train::Predictor predictor({.checkpoint = checkpoint, .flags = flags});
    const std::vector<double> z = predictor.classify(files, 4).to_vector<double>();
    std::vector<double> p(z.size());
    for (std::size_t i = 0; i < 4; ++i) {
      const double* row = z.data() + i * 10;
      const double top = *std::max_element(row, row + 10);
      double sum = 0;
      for (int c = 0; c < 10; ++c) sum += std::exp(row[c] - top);
      for (int c = 0; c < 10; ++c) p[i * 10 + c] = std::exp(row[c] - top) / sum;
    }
    return from_vector(p, {4, 10}, {.dtype = DType::f64});
  };
  const train::CardFlags resnet18{.model = "resnet18", .classes = 10};
  train::CardFlags pytorch_cifar = resnet18;
  pytorch_cifar.mean = "0.4914,0.4822,0.4465";
  pytorch_cifar.std = "0.2023,0.1994,0.2010";
  const Tensor ringgrads = expected["resnet18.probabilities.ringgrad"];
  const Tensor theirs = expected["resnet18.probabilities.pytorch_cifar"];
  for (const std::string& file : {plain_file, prefixed_file}) {
    SCOPED_TRACE(file);
    EXPECT_TRUE(rg::testing::all_close(probabilities(file, resnet18), ringgrads, 1e-4, 0));
    EXPECT_TRUE(rg::testing::all_close(probabilities(file, pytorch_cifar), theirs, 1e-4, 0));
  }
  EXPECT_TRUE(rg::testing::all_close(probabilities(converted_file, {}), theirs, 1e-4, 0));
  // The two normalisations are told apart at this tolerance.
  EXPECT_FALSE(rg::testing::all_close(ringgrads, theirs, 1e-3, 0));

  // The app says what it stripped, and a converted file needs no flags.
  const std::string printed = run({.checkpoint = prefixed_file,
                                   .inputs = {files[0]},
                                   .flags = {.model = "resnet18", .classes = 10}});
  EXPECT_NE(printed.find("'module.' prefix stripped"), std::string::npos) << printed;
  EXPECT_NE(run({.checkpoint = converted_file, .inputs = {files[0]}}).find(files[0] + ": "),
            std::string::npos);
  EXPECT_TRUE(throws_error(
      [&] {
        run({.checkpoint = converted_file, .inputs = {files[0]}, .flags = {.mean = "0,0,0"}});
      },
      {"records its model and preprocessing", "--mean"}));
  EXPECT_TRUE(throws_error(
      [&] {
        run({.checkpoint = plain_file,
             .inputs = {files[0]},
             .flags = {.model = "resnet18", .classes = 10, .mean = "0.5,x,0.5"}});
      },
      {"--mean '0.5,x,0.5'", "one number per channel"}));
  EXPECT_TRUE(throws_error(
      [&] {
        run({.checkpoint = plain_file,
             .inputs = {files[0]},
             .flags = {.model = "resnet34", .classes = 10}});
      },
      {"resnet18.safetensors", "do not fit resnet34", "missing, the first: layer1.2."}));
}

// Dice and IoU per class of the masks in `predicted` against those of `truth`, file by file,
// compared with the last validation in `csv`.
void expect_validation_scores(const std::string& predicted, const std::string& truth,
                              const std::vector<std::string>& names, const std::string& csv) {
  nn::SegmentationCounts counts(static_cast<int64_t>(names.size()));
  int masks = 0;
  for (const auto& e : fs::directory_iterator(truth)) {
    const Tensor t = data::read_mask_file(e.path().string(), 256);
    const Tensor p = data::read_mask_file(predicted + "/" + e.path().filename().string(), 256);
    ASSERT_EQ(p.shape(), t.shape()) << e.path();
    const uint8_t *pv = p.data<uint8_t>(), *tv = t.data<uint8_t>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      counts.predicted[pv[i]] += 1;
      counts.target[tv[i]] += 1;
      counts.intersection[tv[i]] += pv[i] == tv[i];
    }
    ++masks;
  }
  EXPECT_GE(masks, 2);
  double dice = 0, iou = 0;
  for (std::size_t c = 0; c < names.size(); ++c) {
    EXPECT_EQ(g6(counts.dice(static_cast<int64_t>(c))), last_row(csv, "test_dice_" + names[c]));
    EXPECT_EQ(g6(counts.iou(static_cast<int64_t>(c))), last_row(csv, "test_iou_" + names[c]));
    if (c > 0)
      dice += counts.dice(static_cast<int64_t>(c)), iou += counts.iou(static_cast<int64_t>(c));
  }
  const auto n = static_cast<double>(names.size() - 1);
  EXPECT_EQ(g6(dice / n), last_row(csv, "test_dice"));
  EXPECT_EQ(g6(iou / n), last_row(csv, "test_iou"));
}

UnetConfig unet_files(const std::string& data, const std::string& root, const std::string& out) {
  UnetConfig c;
  c.data = data;
  c.data_root = root;
  c.classes = "multiclass";
  c.channels = data == "npy" ? 1 : 3;
  c.image_size = data == "npy" ? std::vector<int64_t>{8, 16, 16} : std::vector<int64_t>{32, 32};
  c.depth = 2;
  c.width = 8;
  c.epochs = 2;
  c.batch_size = 4;
  c.workers = 0;
  c.progress = false;
  c.out = rg::testing::temp_path(out);
  fs::remove_all(c.out);
  return c;
}

TEST(Predict, MasksWrittenAreTheOnesValidationScored) {
  const std::string root = testing::png_split("predict_png");
  const UnetConfig c = unet_files("folder", root, "predict_png_run");
  ASSERT_EQ(run_unet(c), 0);
  const std::string masks = rg::testing::temp_path("predict_png_masks");
  fs::remove_all(masks);
  const std::string printed = run(
      {.checkpoint = c.out + "/last.safetensors", .inputs = {root + "/val/images"}, .out = masks});
  EXPECT_NE(printed.find("v0.png -> " + masks + "/v0.png ([40, 80])"), std::string::npos)
      << printed;
  expect_validation_scores(masks, root + "/val/masks", {"background", "disc", "box", "triangle"},
                           c.out + "/metrics.csv");
}

TEST(Predict, VolumesGetNpyMasksAndTheValidationsScores) {
  const std::string root = testing::npy_split("predict_npy");
  UnetConfig c = unet_files("npy", root, "predict_npy_run");
  c.epochs = 1;
  ASSERT_EQ(run_unet(c), 0);
  const std::string masks = rg::testing::temp_path("predict_npy_masks");
  fs::remove_all(masks);
  run({.checkpoint = c.out + "/last.safetensors", .inputs = {root + "/val/images"}, .out = masks});
  EXPECT_EQ(data::read_mask_file(masks + "/v1.npy", 256).shape(), (Shape{10, 16, 20}));
  expect_validation_scores(masks, root + "/val/masks", {"0", "1", "2"}, c.out + "/metrics.csv");
}

// Masks beside their inputs (<stem>_mask.png), never over a file unasked, and never read back
// as inputs; a checkpoint without a card works with the flags its error names, and gives the
// same masks.
TEST(Predict, MasksBesideInputsAndCheckpointsWithoutACard) {
  const std::string root = testing::png_split("predict_beside");
  UnetConfig c = unet_files("folder", root, "predict_beside_run");
  c.epochs = 1;
  ASSERT_EQ(run_unet(c), 0);
  const std::string inputs = fresh_dir("predict_beside_inputs");
  fs::copy(root + "/val/images", inputs);
  const PredictOptions o{.checkpoint = c.out + "/last.safetensors", .inputs = {inputs}};
  run(o);
  ASSERT_TRUE(fs::exists(inputs + "/v1_mask.png"));
  const Tensor first = data::read_mask_file(inputs + "/v1_mask.png", 256);
  EXPECT_TRUE(throws_error([&] { run(o); }, {"v0_mask.png", "exists already", "--overwrite"}));
  PredictOptions again = o;
  again.overwrite = true;  // the *_mask.png beside them are outputs, not inputs
  const std::string lines = run(again);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 2 + 3);  // two header lines

  // The same weights without the card: the error names the flags; with them, the same masks.
  SafetensorsFile file = load_safetensors(c.out + "/last.safetensors");
  std::erase_if(file.metadata, [](const auto& kv) {
    return kv.first.starts_with("model.") || kv.first.starts_with("preprocess.") ||
           kv.first.starts_with("inference.");
  });
  const std::string old = c.out + "/old.safetensors";
  save_safetensors(old, file.tensors, file.metadata);
  EXPECT_TRUE(throws_error([&] { run({.checkpoint = old, .inputs = {inputs}}); },
                           {"old.safetensors", "does not record its model", "--model unet",
                            "--input-size", "train_unet's"}));
  const std::string legacy = fresh_dir("predict_beside_legacy");
  run({.checkpoint = old,
       .inputs = {inputs + "/v1.png"},
       .out = legacy,
       .flags = {.model = "unet", .input_size = {32, 32}}});
  // v1 is 32x32, one window: its logits do not depend on the overlap and windows per pass,
  // which a checkpoint without a card cannot tell (the flags' card takes the defaults).
  EXPECT_TRUE(rg::testing::all_close(data::read_mask_file(legacy + "/v1.png", 256), first, 0, 0));
}

TEST(Predict, BadCheckpointsInputsAndDevicesAreNamedErrors) {
  const std::string root = testing::png_split("predict_bad");
  UnetConfig c = unet_files("folder", root, "predict_bad_run");
  c.epochs = 1;
  ASSERT_EQ(run_unet(c), 0);
  const std::string ckpt = c.out + "/last.safetensors";
  const std::string dir = fresh_dir("predict_bad_inputs");
  const std::string out = rg::testing::temp_path("predict_bad_out");
  auto fails = [&](const std::vector<std::string>& inputs, std::vector<std::string> parts,
                   const std::string& checkpoint = "") {
    return throws_error(
        [&] {
          run({.checkpoint = checkpoint.empty() ? ckpt : checkpoint, .inputs = inputs, .out = out});
        },
        parts);
  };
  EXPECT_TRUE(fails({root + "/val/images"}, {"nothing.safetensors", "does not exist"},
                    dir + "/nothing.safetensors"));
  EXPECT_TRUE(fails({dir + "/none.png"}, {"none.png", "does not exist"}));
  EXPECT_TRUE(fails({dir}, {"folder", "holds no image"}));
  data::write_npy(dir + "/two.npy", zeros({2, 8, 8}));  // the model takes 3 channels
  EXPECT_TRUE(fails({dir + "/two.npy"}, {"two.npy", "2 channel(s)", "takes 3"}));
  data::write_npy(dir + "/vol.npy", zeros({3, 4, 8, 8}));
  EXPECT_TRUE(fails({dir + "/vol.npy"}, {"vol.npy", "[3, 4, 8, 8]"}));
  testing::write_bytes(dir + "/bad.png", "not a png");
  EXPECT_TRUE(fails({dir + "/bad.png"}, {"bad.png"}));
  // A card naming a model this build does not know.
  SafetensorsFile file = load_safetensors(ckpt);
  file.metadata["model.name"] = "unet99";
  save_safetensors(dir + "/unknown.safetensors", file.tensors, file.metadata);
  EXPECT_TRUE(fails({root + "/val/images"}, {"unknown.safetensors", "\"unet\"", "unet99"},
                    dir + "/unknown.safetensors"));
  // A card that does not match its weights is refused before a model is built from it.
  file = load_safetensors(ckpt);
  file.metadata["model.unet.depth"] = "8";
  file.metadata["model.unet.width"] = "1024";
  save_safetensors(dir + "/other.safetensors", file.tensors, file.metadata);
  EXPECT_TRUE(fails({root + "/val/images"},
                    {"other.safetensors", "depth 8, width 1024", "weights", "depth 2, width 8"},
                    dir + "/other.safetensors"));
  // Two inputs of one name into one --out.
  fs::create_directories(dir + "/a");
  fs::create_directories(dir + "/b");
  fs::copy(root + "/val/images/v0.png", dir + "/a/x.png");
  fs::copy(root + "/val/images/v0.png", dir + "/b/x.png");
  EXPECT_TRUE(fails({dir + "/a", dir + "/b"}, {"two inputs would write", "x.png"}));
  // The machine: this one has no GPU (or this build no CUDA).
  EXPECT_TRUE(throws_error(
      [&] {
        run({.checkpoint = ckpt, .inputs = {root + "/val/images"}, .compute = {.device = "cuda"}});
      },
      {"cuda:0 requested but this"}));

  // A classifier: images of another size are refused, and --out means nothing to it.
  const std::string data = tiny_cifar("predict_bad_cifar", 8);
  const std::string cifar_out = rg::testing::temp_path("predict_bad_cifar_run");
  fs::remove_all(cifar_out);
  TrainConfig cfg = tiny_config(data, cifar_out);
  cfg.epochs = 1;
  ASSERT_EQ(apps::run(cfg), 0);
  EXPECT_TRUE(throws_error(
      [&] {
        run({.checkpoint = cifar_out + "/last.safetensors",
             .inputs = {root + "/val/images/v0.png"}});
      },
      {"v0.png", "is 40x80", "takes 32x32 images"}));
  EXPECT_TRUE(throws_error(
      [&] { run({.checkpoint = cifar_out + "/last.safetensors", .inputs = {dir + "/two.npy"}}); },
      {"two.npy", "PNG, JPEG or BMP"}));
  file = load_safetensors(cifar_out + "/last.safetensors");
  file.metadata["model.name"] = "resnet99";
  save_safetensors(dir + "/resnet99.safetensors", file.tensors, file.metadata);
  EXPECT_TRUE(throws_error(
      [&] {
        run({.checkpoint = dir + "/resnet99.safetensors", .inputs = {root + "/val/images/v1.png"}});
      },
      {"unknown model 'resnet99'", "known:"}));
  file.metadata["model.name"] = "resnet20@1000";
  file.metadata["model.outputs"] = "7";
  file.metadata["model.classes"] = R"(["a","b","c","d","e","f","g"])";
  save_safetensors(dir + "/vast.safetensors", file.tensors, file.metadata);
  EXPECT_TRUE(throws_error(
      [&] {
        run({.checkpoint = dir + "/vast.safetensors", .inputs = {root + "/val/images/v1.png"}});
      },
      {"vast.safetensors", "says 7 classes", "no 2-D weight"}));
  EXPECT_TRUE(throws_error(
      [&] {
        run({.checkpoint = cifar_out + "/last.safetensors",
             .inputs = {root + "/val/images/v1.png"},
             .out = out});
      },
      {"--out", "classifies"}));
}

// On a GPU (scripts/gpu_quick_check.sh's `predict` step; skipped here): predict on cuda, in
// f32 and under --amp, gives the CPU's answers — logits within cuDNN's rounding, the same
// masks but at near-ties, the same top-1 where the CPU's margin is clear.
TEST(PredictOnGpu, CudaAndAmpGiveTheCpusAnswers) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  const std::string root = testing::png_split("predict_gpu_png");
  UnetConfig c = unet_files("folder", root, "predict_gpu_unet");
  c.epochs = 1;
  ASSERT_EQ(run_unet(c), 0);
  const std::string image = root + "/val/images/v0.png";  // 40x80: sliding windows
  const train::Predictor cpu({.checkpoint = c.out + "/last.safetensors"});
  const train::Predictor gpu({.checkpoint = c.out + "/last.safetensors", .device = "cuda"});
  const Tensor expected = cpu.segment_logits(image);
  EXPECT_TRUE(rg::testing::all_close(gpu.segment_logits(image), expected, 1e-3, 1e-3));
  const std::vector<int64_t> a = cpu.segment(image).to_vector<int64_t>();
  const std::vector<int64_t> b = gpu.segment(image).to_vector<int64_t>();
  int64_t same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_GE(static_cast<double>(same), 0.999 * static_cast<double>(a.size()));
  for (const char* amp : {"O1", "O2"}) {
    const std::string masks = fresh_dir(std::string("predict_gpu_masks_") + amp);
    run({.checkpoint = c.out + "/last.safetensors",
         .inputs = {root + "/val/images"},
         .out = masks,
         .overwrite = true,
         .compute = {.device = "cuda"},
         .precision = {.amp = amp, .amp_dtype = "bf16"}});
    EXPECT_EQ(data::read_mask_file(masks + "/v0.png", 256).shape(), (Shape{40, 80})) << amp;
  }

  const std::string data = tiny_cifar("predict_gpu_cifar", 8);
  const std::string out = rg::testing::temp_path("predict_gpu_cifar_run");
  fs::remove_all(out);
  TrainConfig cfg = tiny_config(data, out);
  cfg.epochs = 1;
  ASSERT_EQ(apps::run(cfg), 0);
  const std::string images = fresh_dir("predict_gpu_cifar_pngs");
  cifar_test_pngs(data, images);
  const std::vector<std::string> files =
      train::list_inputs({images}, train::ModelTask::classification);
  const Tensor z_cpu =
      train::Predictor({.checkpoint = out + "/last.safetensors"}).classify(files, 256);
  const Tensor z_gpu = train::Predictor({.checkpoint = out + "/last.safetensors", .device = "cuda"})
                           .classify(files, 256);
  EXPECT_TRUE(rg::testing::all_close(z_gpu, z_cpu, 1e-3, 1e-3));
}

train::CommandLine<PredictOptions> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "predict");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return predict_options().parse(static_cast<int>(argv.size()), argv.data());
}

TEST(PredictOptions, BadValuesAreNamedErrors) {
  const PredictOptions o = parse({"--checkpoint", "c.safetensors", "a.png", "dir", "--model",
                                  "unet", "--input-size", "8x16x16", "--top-k", "2"})
                               .config;
  EXPECT_EQ(o.inputs, (std::vector<std::string>{"a.png", "dir"}));
  EXPECT_EQ(o.flags.input_size, (std::vector<int64_t>{8, 16, 16}));
  EXPECT_EQ(o.top_k, 2);
  EXPECT_TRUE(throws_error([] { parse({"a.png"}); }, {"predict", "--checkpoint"}));
  EXPECT_TRUE(throws_error([] { parse({"--checkpoint", "c"}); }, {"give the images"}));
  EXPECT_TRUE(throws_error([] { parse({"--checkpoint", "c", "a", "--top-k", "0"}); }, {"top_k"}));
  EXPECT_TRUE(throws_error([] { parse({"--checkpoint", "c", "a", "--amp", "O9"}); }, {"O9"}));
  EXPECT_TRUE(throws_error([] { parse({"--checkpoint", "c", "a", "--device", "tpu"}); }, {"tpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--checkpoint", "c", "a", "--input-size", "8"});
      },
      {"input_size", "HxW"}));
}

}  // namespace
}  // namespace rg::apps
