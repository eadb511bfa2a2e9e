#include "optim/checkpoint.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "core/rng.h"
#include "core/safetensors.h"
#include "nn/layers.h"
#include "optim/optim.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using testing::all_close;
using testing::throws_error;

std::shared_ptr<nn::Sequential> small_net() {
  return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(8, 3)});
}

// Trains `steps` SGD steps on fixed random data; the batch depends only on the step number.
void train(nn::Module& model, Optimizer& opt, LRScheduler& sched, int64_t first, int64_t steps) {
  for (int64_t s = first; s < first + steps; ++s) {
    manual_seed(1000 + static_cast<uint64_t>(s));
    Tensor x = randn({5, 4});
    Tensor target = from_vector<int64_t>({0, 1, 2, 1, 0}, {5}, {DType::i64});
    opt.zero_grad();
    cross_entropy(model.forward(x), target).backward();
    opt.step();
    sched.step();
  }
}

TEST(Checkpoint, ResumeEqualsUninterrupted) {
  manual_seed(0);
  auto straight = small_net();
  SGD opt_a(straight->parameters(), {.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4});
  CosineAnnealingLR sched_a(opt_a, 10);
  train(*straight, opt_a, sched_a, 0, 6);

  manual_seed(0);
  auto first = small_net();
  SGD opt_b(first->parameters(), {.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4});
  CosineAnnealingLR sched_b(opt_b, 10);
  train(*first, opt_b, sched_b, 0, 3);
  const std::string path = testing::temp_path("ckpt.safetensors");
  save_checkpoint(path, *first, &opt_b, &sched_b,
                  {.epoch = 3, .step = 3, .best_accuracy = 0.5, .extra = {{"config", "{}"}}});

  manual_seed(99);  // a different process: other weights, other generator state
  auto resumed = small_net();
  SGD opt_c(resumed->parameters(), {.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4});
  CosineAnnealingLR sched_c(opt_c, 10);
  TrainingState state = load_checkpoint(path, *resumed, &opt_c, &sched_c);
  EXPECT_EQ(state.epoch, 3);
  EXPECT_EQ(state.step, 3);
  EXPECT_DOUBLE_EQ(state.best_accuracy, 0.5);
  EXPECT_EQ(state.extra.at("config"), "{}");
  train(*resumed, opt_c, sched_c, 3, 3);
  for (auto& [name, t] : straight->state_dict())
    EXPECT_TRUE(all_close(resumed->state_dict().at(name), t, 0, 0)) << name;
}

TEST(Checkpoint, AnotherModelIsRefusedWithTheDifferences) {
  auto net = small_net();
  const std::string path = testing::temp_path("ckpt.safetensors");
  save_checkpoint(path, *net, nullptr, nullptr, {});
  auto other = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 6), std::make_shared<nn::ReLU>()});
  EXPECT_TRUE(throws_error([&] { load_checkpoint(path, *other, nullptr, nullptr); },
                           {path, "unexpected keys", "2.weight", "shape mismatches",
                            "0.weight: checkpoint [8, 4], model [6, 4]"}));
  SGD opt(net->parameters(), {.lr = 0.1});
  EXPECT_TRUE(throws_error([&] { load_checkpoint(path, *net, &opt, nullptr); },
                           {path, "no optimizer state"}));
  EXPECT_TRUE(throws_error([&] { load_checkpoint(path + ".missing", *net, nullptr, nullptr); },
                           {".missing"}));
}

// A checkpoint comes from a file: a counter that is not wholly a number (or a negative one) is
// a named error, never an exception of the standard library or a half-read value.
TEST(Checkpoint, CorruptMetadataIsANamedError) {
  auto net = small_net();
  const std::string path = testing::temp_path("ckpt_meta.safetensors");
  save_checkpoint(path, *net, nullptr, nullptr,
                  {.epoch = 3, .step = 30, .best_accuracy = 0.5, .extra = {}});
  SafetensorsFile file = load_safetensors(path);
  const auto rewritten = [&](const std::string& key, const std::string& value) {
    std::map<std::string, std::string> meta = file.metadata;
    meta[key] = value;
    save_safetensors(path, file.tensors, meta);
  };
  for (const auto& [key, value, words] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"train.epoch", "3abc", "is not an integer >= 0: \"3abc\""},
           {"train.epoch", "-1", "is not an integer >= 0"},
           {"train.step", "99999999999999999999", "is not an integer"},
           {"rng.seed", "", "is not an integer"},
           {"train.best_accuracy", "0.5x", "is not a number: \"0.5x\""}}) {
    rewritten(key, value);
    EXPECT_TRUE(
        throws_error([&] { load_checkpoint(path, *net, nullptr, nullptr); }, {path, key, words}))
        << key << "=" << value;
  }
  rewritten("train.best_accuracy", "0.25");
  EXPECT_EQ(load_checkpoint(path, *net, nullptr, nullptr).best_accuracy, 0.25);
}

}  // namespace
}  // namespace rg
