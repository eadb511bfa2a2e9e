// train_cifar's output folder: an earlier run is never overwritten unasked, stale checkpoint
// temporaries go, and after a resume the CSV and TensorBoard curves equal an uninterrupted run's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "apps/train_cifar/run.h"
#include "core/rng.h"
#include "tests/apps/tiny_cifar.h"
#include "tests/support/fixtures.h"
#include "train/outputs.h"

namespace rg::apps {
namespace {
namespace fs = std::filesystem;
using rg::testing::throws_error;
using train::EventRecord;
using train::read_event_records;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The CSV's rows without the timing columns, which differ between any two runs.
std::vector<std::string> csv_rows(const std::string& path) {
  std::istringstream in(read(path));
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream cols(line);
    for (std::string c; std::getline(cols, c, ',');) cells.push_back(c);
    // epoch, lr, train_loss, train_accuracy, test_loss, test_accuracy | images/s, seconds
    std::string row;
    for (std::size_t i = 0; i < 6 && i < cells.size(); ++i) row += cells[i] + ",";
    rows.push_back(row);
  }
  return rows;
}

// tag -> (step -> values logged at that step), over every event file of `out`.
std::map<std::string, std::map<int64_t, std::vector<float>>> curves(const std::string& out) {
  std::map<std::string, std::map<int64_t, std::vector<float>>> c;
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().filename().string().starts_with("events.out.tfevents."))
      for (const EventRecord& r : read_event_records(e.path().string()))
        // Timing and memory are measurements: they differ between any two runs.
        if (!r.tag.empty() && r.tag != "images_per_second" && r.tag != "peak_memory_mib")
          c[r.tag][r.step].push_back(r.value);
  return c;
}

// A kill after epoch 2 was logged but before its checkpoint was renamed into place: the run
// resumes from epoch 1 and runs epoch 2 again. The logs must not hold epoch 2 twice.
TEST(TrainCifarOutputs, ResumedLogsEqualAnUninterruptedRun) {
  const std::string data = tiny_cifar("data", 8);
  const std::string straight = rg::testing::temp_path("straight");
  const std::string resumed = rg::testing::temp_path("resumed");
  fs::remove_all(straight);
  fs::remove_all(resumed);
  ASSERT_EQ(run(tiny_config(data, straight)), 0);

  TrainConfig cfg = tiny_config(data, resumed);
  cfg.stop_after_epochs = 1;
  ASSERT_EQ(run(cfg), 0);
  fs::copy_file(resumed + "/last.safetensors", resumed + "/epoch1.safetensors");
  cfg.resume = "auto";
  ASSERT_EQ(run(cfg), 0);  // epoch 2, logged and saved
  fs::copy_file(resumed + "/epoch1.safetensors", resumed + "/last.safetensors",
                fs::copy_options::overwrite_existing);  // as if its save never finished
  std::ofstream(resumed + "/.last.safetensors.tmp.4242.0") << "half a checkpoint";
  {  // and a record cut short at the end of the event file
    for (const auto& e : fs::directory_iterator(resumed))
      if (e.path().filename().string().starts_with("events.out.tfevents."))
        std::ofstream(e.path(), std::ios::app | std::ios::binary) << "\x20";
  }
  manual_seed(999);
  cfg.stop_after_epochs = 0;
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(run(cfg), 0);  // epochs 2 and 3
  EXPECT_NE(::testing::internal::GetCapturedStdout().find("after epoch 1"), std::string::npos);

  EXPECT_EQ(csv_rows(resumed + "/metrics.csv"), csv_rows(straight + "/metrics.csv"));
  EXPECT_EQ(csv_rows(resumed + "/metrics.csv").size(), 1u + 3u);
  const auto a = curves(straight), b = curves(resumed);
  EXPECT_EQ(b, a);  // every tag once per step 1..3, with the uninterrupted run's values
  ASSERT_TRUE(b.count("train/loss"));
  EXPECT_EQ(b.at("train/loss").size(), 3u);

  EXPECT_FALSE(fs::exists(resumed + "/.last.safetensors.tmp.4242.0"));
  // Checkpoints get the umask's permissions like every other output (not mkstemp's 0600).
  EXPECT_EQ(fs::status(resumed + "/last.safetensors").permissions(),
            fs::status(resumed + "/metrics.csv").permissions());
}

TEST(TrainCifarOutputs, AnEarlierRunIsNeverOverwrittenUnasked) {
  const std::string data = tiny_cifar("data", 8);
  const std::string out = rg::testing::temp_path("out");
  fs::remove_all(out);
  TrainConfig cfg = tiny_config(data, out);
  cfg.epochs = 1;
  ASSERT_EQ(run(cfg), 0);
  const std::string before = read(out + "/last.safetensors");
  EXPECT_TRUE(throws_error([&] { run(cfg); }, {out, "holds an earlier run", "last.safetensors",
                                               "metrics.csv", "--resume auto", "--overwrite"}));
  EXPECT_EQ(read(out + "/last.safetensors"), before);

  cfg.overwrite = true;
  cfg.seed = 1;  // another run, other weights
  ASSERT_EQ(run(cfg), 0);
  EXPECT_NE(read(out + "/last.safetensors"), before);
  EXPECT_EQ(csv_rows(out + "/metrics.csv").size(), 1u + 1u);  // the old row went with the run
  for (const auto& [tag, steps] : curves(out))
    for (const auto& [step, values] : steps) EXPECT_EQ(values.size(), 1u) << tag << " " << step;

  cfg.resume = "auto";
  EXPECT_TRUE(throws_error([&] { run(cfg); }, {"--overwrite", "--resume", "contradict"}));
}

// A run that died before its first checkpoint left its logs and best.safetensors (issue 53:
// --resume auto then started a new run over them without a word).
TEST(TrainCifarOutputs, ResumeAutoWithNothingToResumeRefusesAnEarlierRunsFiles) {
  const std::string data = tiny_cifar("data", 8);
  const std::string out = rg::testing::temp_path("out_nothing_to_resume");
  fs::remove_all(out);
  TrainConfig cfg = tiny_config(data, out);
  cfg.epochs = 1;
  ASSERT_EQ(run(cfg), 0);
  fs::remove(out + "/last.safetensors");  // as if it never got there
  const std::string best = read(out + "/best.safetensors");
  cfg.resume = "auto";
  EXPECT_TRUE(throws_error([&] { run(cfg); }, {out, "no last.safetensors", "best.safetensors",
                                               "metrics.csv", "--overwrite instead of --resume"}));
  EXPECT_EQ(read(out + "/best.safetensors"), best);
  cfg.resume = "";
  cfg.overwrite = true;  // starting over is asked for by name
  ASSERT_EQ(run(cfg), 0);
  EXPECT_TRUE(fs::exists(out + "/last.safetensors"));
}

}  // namespace
}  // namespace rg::apps
