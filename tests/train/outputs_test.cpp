// train/outputs.h on files alone: cutting metrics.csv and event files back to an epoch, and
// leaving alone what this library did not write. (Whole runs that resume and overwrite are in
// tests/apps/outputs_test.cpp and trainer_test.cpp.)
#include "train/outputs.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/fixtures.h"
#include "train/tensorboard.h"

namespace rg::train {
namespace {
namespace fs = std::filesystem;
using rg::testing::throws_error;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TrainOutputs, LeavesFilesItCannotReadAlone) {
  const std::string path = rg::testing::temp_path("events.out.tfevents.1.other");
  std::ofstream(path) << "not an event file";
  EXPECT_EQ(truncate_event_file(path, 0), 0);
  EXPECT_EQ(read(path), "not an event file");
}

TEST(TrainOutputs, TruncatesTheCsvAtTheEpoch) {
  const std::string path = rg::testing::temp_path("metrics.csv");
  std::ofstream(path) << "epoch,lr\n1,0.1\n2,0.1\n3,0.1\n2,0.0";  // the last line cut short
  EXPECT_EQ(truncate_metrics_csv(path, 2), 2);
  EXPECT_EQ(read(path), "epoch,lr\n1,0.1\n2,0.1\n");
  EXPECT_EQ(truncate_metrics_csv(path, 0), 2);
  EXPECT_EQ(read(path), "epoch,lr\n");
  EXPECT_EQ(truncate_metrics_csv(rg::testing::temp_path("none.csv"), 1), 0);
}

// On resume loss_scale.csv is cut back to the checkpoint's optimizer step, metrics.csv to its
// epoch; both count as an earlier run's files.
TEST(TrainOutputs, TruncateLogsCutsTheLossScaleCsvAtTheStep) {
  const std::string dir = rg::testing::temp_path("logs_cut");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/metrics.csv") << "epoch,lr\n1,0.1\n2,0.1\n";
  std::ofstream(dir + "/" + kLossScaleCsv)
      << "step,loss_scale,skipped\n1,65536,0\n2,65536,1\n3,32768,0\n4,32768,0\n";
  EXPECT_EQ(earlier_run_files(dir), (std::vector<std::string>{"metrics.csv", kLossScaleCsv}));
  truncate_logs(dir, 1, 2);
  EXPECT_EQ(read(dir + "/metrics.csv"), "epoch,lr\n1,0.1\n");
  EXPECT_EQ(read(dir + "/" + kLossScaleCsv), "step,loss_scale,skipped\n1,65536,0\n2,65536,1\n");
}

TEST(TrainOutputs, TruncatesAnEventFileAtTheStep) {
  const std::string dir = rg::testing::temp_path("events_cut");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string path;
  {
    TensorBoardWriter writer(dir);
    for (int step = 1; step <= 3; ++step) {
      writer.add_scalar("loss", 1.0 / step, step);
      writer.add_image("input", full({1, 2, 2}, 0.25), step);  // images are cut alike
    }
    path = writer.path();
  }
  ASSERT_EQ(read_event_records(path).size(), 1u + 6u);  // file_version, then the summaries
  EXPECT_EQ(truncate_event_file(path, 2), 2);
  const std::vector<EventRecord> kept = read_event_records(path);
  ASSERT_EQ(kept.size(), 5u);
  EXPECT_EQ(kept[3].tag, "loss");
  EXPECT_EQ(kept[3].step, 2);
  EXPECT_FLOAT_EQ(kept[3].value, 0.5f);
  EXPECT_EQ(kept[4].tag, "input");
  EXPECT_EQ(kept[4].step, 2);
}

TEST(TrainOutputs, ResumeAndOverwriteContradictEachOther) {
  const OutputOptions options{.program = "tiny",
                              .out = rg::testing::temp_path("contradict"),
                              .resume = "auto",
                              .overwrite = true};
  EXPECT_TRUE(
      throws_error([&] { prepare_output_folder(options); }, {"tiny", "--overwrite", "contradict"}));
}

// A run that died before its first checkpoint (or on a full disk) leaves metrics.csv and
// best.safetensors but no last.safetensors: --resume auto has nothing to resume, and starting a
// new run there would replace that run's files without a word.
TEST(TrainOutputs, ResumeAutoWithoutACheckpointRefusesAnEarlierRunsFiles) {
  const std::string out = rg::testing::temp_path("resume_nothing");
  fs::remove_all(out);
  fs::create_directories(out);
  std::ofstream(out + "/metrics.csv") << "epoch,lr\n1,0.1\n";
  std::ofstream(out + "/best.safetensors") << "weights";
  const OutputOptions options{.program = "tiny", .out = out, .resume = "auto"};
  EXPECT_TRUE(throws_error([&] { prepare_output_folder(options); },
                           {"tiny", out, "best.safetensors", "metrics.csv", "no last.safetensors",
                            "--overwrite instead of --resume auto"}));
  EXPECT_EQ(read(out + "/best.safetensors"), "weights");
  EXPECT_EQ(resume_path(options), "");
  // --overwrite starts over, deleting them.
  prepare_output_folder({.program = "tiny", .out = out, .overwrite = true});
  EXPECT_FALSE(fs::exists(out + "/metrics.csv"));
  EXPECT_FALSE(fs::exists(out + "/best.safetensors"));
  // An empty folder (or one without a run's files) is simply a fresh start.
  prepare_output_folder(options);
}

// An elastic job (scripts/mpirun.sh --elastic) restarts its command with --resume auto; an
// attempt that ended before its first checkpoint left files of the job's own: the next attempt
// starts over — but files older than the job are another run's, refused as above.
TEST(TrainOutputs, AnElasticJobStartsOverOnlyOverItsOwnFiles) {
  const std::string out = rg::testing::temp_path("elastic_own");
  fs::remove_all(out);
  fs::create_directories(out);
  std::ofstream(out + "/metrics.csv") << "epoch,lr\n";
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_TRUE(written_since(out + "/metrics.csv", now - 60));
  EXPECT_FALSE(written_since(out + "/metrics.csv", now + 60));
  EXPECT_FALSE(written_since(out + "/metrics.csv", 0));
  EXPECT_FALSE(written_since(out + "/missing.csv", now - 60));
  // The job began after the file was written: not its own.
  EXPECT_TRUE(throws_error(
      [&] {
        prepare_output_folder(
            {.program = "tiny", .out = out, .resume = "auto", .own_files_since = now + 60});
      },
      {"metrics.csv", "no last.safetensors"}));
  EXPECT_TRUE(fs::exists(out + "/metrics.csv"));
  // The job began before: an earlier attempt's, removed.
  prepare_output_folder(
      {.program = "tiny", .out = out, .resume = "auto", .own_files_since = now - 60});
  EXPECT_FALSE(fs::exists(out + "/metrics.csv"));
}

TEST(TrainOutputs, TheElasticJobStartIsReadFromTheEnvironment) {
  ::unsetenv(kElasticJobStartVariable);
  EXPECT_EQ(elastic_job_start(), 0);
  ::setenv(kElasticJobStartVariable, "1700000000.25", 1);
  EXPECT_EQ(elastic_job_start(), 1700000000.25);
  ::setenv(kElasticJobStartVariable, "soon", 1);
  EXPECT_TRUE(throws_error([] { elastic_job_start(); }, {kElasticJobStartVariable, "soon"}));
  ::unsetenv(kElasticJobStartVariable);
}

}  // namespace
}  // namespace rg::train
