// train/model_card.h: a card survives the checkpoint's metadata exactly, bad cards are named
// errors, checkpoints without one get an error naming the flags (and work with them), and the
// card builds its model and preprocessing.
#include <gtest/gtest.h>

#include "nn/models/unet.h"
#include "tests/support/fixtures.h"
#include "train/model_card.h"
#include "train/predict.h"  // build_model, preprocessing

namespace rg::train {
namespace {
using rg::testing::throws_error;

ModelCard classifier() {
  return {.task = ModelTask::classification,
          .model = "resnet20@0.25",
          .outputs = 3,
          .class_names = {"cat", "dog, big", "\xc3\xa9l\xc3\xa9phant"},
          .channels = 3,
          .input_size = {32, 32},
          .mean = data::kCifar10Mean,
          .std = data::kCifar10Std};
}

ModelCard segmenter() {
  return {.task = ModelTask::segmentation,
          .model = "unet",
          .unet = {.dims = 3, .depth = 2, .base_width = 4, .decoder = nn::UNetDecoder::interpolate},
          .outputs = 1,
          .class_names = {"background", "tumour"},
          .channels = 2,
          .input_size = {8, 16, 16},
          .overlap = 0.5,
          .window_batch = 3};
}

TEST(ModelCard, SurvivesTheMetadataExactly) {
  for (const ModelCard& card : {classifier(), segmenter()}) {
    const auto meta = model_card_metadata(card);
    ASSERT_TRUE(has_model_card(meta));
    const ModelCard back = read_model_card(meta, "ckpt");
    EXPECT_EQ(back.task, card.task);
    EXPECT_EQ(back.model, card.model);
    EXPECT_EQ(back.outputs, card.outputs);
    EXPECT_EQ(back.class_names, card.class_names);
    EXPECT_EQ(back.channels, card.channels);
    EXPECT_EQ(back.input_size, card.input_size);
    EXPECT_EQ(back.mean, card.mean);  // floats, bit for bit
    EXPECT_EQ(back.std, card.std);
    EXPECT_EQ(back.overlap, card.overlap);
    EXPECT_EQ(back.window_batch, card.window_batch);
    EXPECT_EQ(back.unet.dims, card.unet.dims);
    EXPECT_EQ(back.unet.depth, card.unet.depth);
    EXPECT_EQ(back.unet.base_width, card.unet.base_width);
    EXPECT_EQ(back.unet.decoder, card.unet.decoder);
    EXPECT_EQ(back.unet.norm, card.unet.norm);
    EXPECT_EQ(back.describe(), card.describe());
  }
  const auto meta = model_card_metadata(segmenter());
  EXPECT_EQ(meta.at("model.task"), "segmentation");
  EXPECT_EQ(meta.at("preprocess.input_size"), "8x16x16");
  EXPECT_EQ(meta.at("model.unet.decoder"), "interpolate");
  EXPECT_EQ(meta.count("preprocess.mean"), 0u);  // no normalisation
}

TEST(ModelCard, BadCardsAreNamedErrors) {
  auto bad = [](const std::string& key, const std::string& value, std::vector<std::string> parts,
                const ModelCard& card = segmenter()) {
    auto meta = model_card_metadata(card);
    if (value == "<erase>")
      meta.erase(key);
    else
      meta[key] = value;
    parts.insert(parts.begin(), "checkpoint 'c.safetensors'");
    return throws_error([&] { read_model_card(meta, "c.safetensors"); }, parts);
  };
  EXPECT_TRUE(bad("model.card", "2", {"version \"2\""}));
  EXPECT_TRUE(bad("model.task", "detection", {"'model.task'", "detection"}));
  EXPECT_TRUE(bad("model.outputs", "<erase>", {"no 'model.outputs'"}));
  EXPECT_TRUE(bad("model.outputs", "3x", {"'model.outputs'", "whole number in [1, 256]"}));
  EXPECT_TRUE(bad("model.outputs", "300", {"'model.outputs'", "[1, 256]"}));
  EXPECT_TRUE(bad("model.outputs", "3", {"3 outputs need 3 class names, got 2"}));
  EXPECT_TRUE(bad("model.classes", "[\"a\", [\"b\"]]", {"'model.classes'", "nests"}));
  EXPECT_TRUE(bad("model.classes", std::string(100000, '[') + std::string(100000, ']'),
                  {"'model.classes'", "nests"}));
  EXPECT_TRUE(bad("model.classes", "[\"a\", 2]", {"'model.classes'", "number elements"}));
  EXPECT_TRUE(bad("model.classes", "{\"a\"", {"'model.classes'", "a JSON array"}));
  EXPECT_TRUE(bad("model.unet.depth", "9", {"'model.unet.depth'", "[1, 8]"}));
  EXPECT_TRUE(bad("model.unet.decoder", "pixelshuffle", {"'model.unet.decoder'"}));
  EXPECT_TRUE(bad("model.unet.dims", "2", {"2-D UNet with an input size of 3 sides"}));
  EXPECT_TRUE(bad("preprocess.input_size", "8x0x16", {"'preprocess.input_size'", "[1, 16384]"}));
  EXPECT_TRUE(bad("inference.overlap", "1", {"overlap must be in [0, 1)"}));
  EXPECT_TRUE(bad("inference.overlap", "nan", {"'inference.overlap'", "a number"}));
  EXPECT_TRUE(bad("preprocess.std", "[1, 0, 1]", {"std must be > 0"}, classifier()));
  EXPECT_TRUE(bad("preprocess.std", "<erase>", {"no 'preprocess.std'"}, classifier()));
  EXPECT_TRUE(
      bad("preprocess.mean", "[0.5]", {"one mean and one std per channel (3)"}, classifier()));
  EXPECT_TRUE(bad("model.name", "unet", {"segments; a classification card"}, classifier()));
  // A card naming a model no build knows: the error lists the known ones.
  ModelCard unknown = classifier();
  unknown.model = "resnet99";
  const ModelCard read = read_model_card(model_card_metadata(unknown), "c");
  EXPECT_TRUE(throws_error([&] { build_model(read); }, {"unknown model 'resnet99'", "resnet18"}));
}

TEST(ModelCard, BuildsItsModelAndPreprocessing) {
  const auto unet = build_model(segmenter());
  const auto* u = dynamic_cast<nn::UNet*>(unet.get());
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->config().in_channels, 2);
  EXPECT_EQ(u->config().num_classes, 1);
  EXPECT_EQ(u->config().decoder, nn::UNetDecoder::interpolate);
  EXPECT_EQ(build_model(classifier())->forward(zeros({1, 3, 32, 32})).shape(), (Shape{1, 3}));
  data::SampleRng rng(0, 0, 0);
  const Tensor x = full({3, 2, 2}, 255, {DType::u8});
  EXPECT_NEAR(preprocessing(classifier())->apply(x, rng).to_vector<float>()[0],
              (1 - 0.4914f) / 0.2470f, 1e-5);
}

TEST(ModelCard, CheckpointsWithoutACardNeedFlags) {
  std::map<std::string, std::string> old = {{"config", R"({"model": "resnet20@0.25"})"}};
  EXPECT_TRUE(
      throws_error([&] { checkpoint_model_card(old, {}, "old.safetensors", {}); },
                   {"old.safetensors", "does not record its model", "--model NAME --classes N",
                    "--model unet --input-size HxW", "names model 'resnet20@0.25'"}));
  old["config"] = "shapes2d binary 64x64 ch 1, 1024/256 samples, unet depth 3 width 16 ...";
  EXPECT_TRUE(throws_error([&] { checkpoint_model_card(old, {}, "old", {}); },
                           {"train_unet's: \"shapes2d binary 64x64"}));
  // A classifier: train_cifar's preprocessing.
  const ModelCard c = checkpoint_model_card(old, {}, "old", {.model = "resnet20", .classes = 10});
  EXPECT_EQ(c.task, ModelTask::classification);
  EXPECT_EQ(c.outputs, 10);
  EXPECT_EQ(c.input_size, (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(c.mean, data::kCifar10Mean);
  EXPECT_TRUE(throws_error([&] { checkpoint_model_card(old, {}, "old", {.model = "resnet20"}); },
                           {"--classes N"}));
  // A UNet: its architecture read from its weights.
  const nn::UNetConfig config{.dims = 3,
                              .in_channels = 2,
                              .num_classes = 3,
                              .depth = 2,
                              .base_width = 4,
                              .decoder = nn::UNetDecoder::interpolate,
                              .norm = nn::UNetNorm::none};
  const auto weights = nn::UNet(config).state_dict();
  const ModelCard u =
      checkpoint_model_card(old, weights, "old", {.model = "unet", .input_size = {8, 8, 8}});
  EXPECT_EQ(u.unet.dims, 3);
  EXPECT_EQ(u.channels, 2);
  EXPECT_EQ(u.outputs, 3);
  EXPECT_EQ(u.unet.depth, 2);
  EXPECT_EQ(u.unet.base_width, 4);
  EXPECT_EQ(u.unet.decoder, nn::UNetDecoder::interpolate);
  EXPECT_EQ(u.unet.norm, nn::UNetNorm::none);
  EXPECT_EQ(build_model(u)->state_dict().size(), weights.size());
  EXPECT_TRUE(throws_error([&] { checkpoint_model_card(old, weights, "old", {.model = "unet"}); },
                           {"--input-size"}));
  EXPECT_TRUE(throws_error(
      [&] {
        checkpoint_model_card(old, {}, "old", {.model = "unet", .input_size = {8, 8}});
      },
      {"does not hold a UNet"}));
  // A checkpoint with a card knows its model: flags are refused.
  EXPECT_TRUE(throws_error(
      [&] { checkpoint_model_card(model_card_metadata(classifier()), {}, "new", {.classes = 10}); },
      {"records its model", "--model, --classes, --input-size, --mean and --std"}));
}

TEST(ModelCard, Sizes) {
  EXPECT_EQ(parse_size("16x64x64", "s"), (std::vector<int64_t>{16, 64, 64}));
  EXPECT_EQ(size_text({32, 48}), "32x48");
  EXPECT_TRUE(throws_error([] { parse_size("64", "input_size"); }, {"input_size", "HxW"}));
  EXPECT_TRUE(throws_error([] { parse_size("64x-1", "s"); }, {"whole number"}));
  EXPECT_TRUE(throws_error([] { parse_size("64x20000", "s"); }, {"[1, 16384]"}));
}

}  // namespace
}  // namespace rg::train
