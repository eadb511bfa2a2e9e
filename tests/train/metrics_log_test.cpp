#include "train/metrics_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/fixtures.h"

namespace rg::train {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CsvLog, HeaderOnceAndAppendsAcrossRestarts) {
  const std::string path = rg::testing::temp_path("metrics.csv");
  std::filesystem::remove(path);
  {
    CsvLog log(path);
    log.write({{"epoch", 1}, {"loss", 0.5}});
  }
  {
    CsvLog log(path);  // a resumed run
    log.write({{"epoch", 2}, {"loss", 0.25}});
    EXPECT_TRUE(testing::throws_error(
        [&] {
          log.write({{"epoch", 3}});
        },
        {"1 values for 2 columns"}));
    EXPECT_TRUE(testing::throws_error(
        [&] {
          log.write({{"epoch", 3}, {"acc", 1}});
        },
        {"column 1 is 'loss'", "'acc'"}));
  }
  EXPECT_EQ(slurp(path), "epoch,loss\n1,0.5\n2,0.25\n");
}

TEST(ProgressBar, DurationsAndRates) {
  EXPECT_EQ(format_duration(62), "1:02");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  ProgressBar bar("test", 10, /*enabled=*/false);
  bar.update(1, 100, {});
  EXPECT_GT(bar.items_per_second(), 0);
  bar.finish();
}

}  // namespace
}  // namespace rg::train
