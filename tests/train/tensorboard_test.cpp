#include "train/tensorboard.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/fixtures.h"

namespace rg::train {
namespace {

TEST(TensorBoard, Crc32cKnownAnswer) {
  // The CRC-32C check value (RFC 3720 test vector "123456789").
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
}

TEST(TensorBoard, RecordsAreFramedAndChecksummed) {
  const std::string dir = rg::testing::temp_path("tb");
  std::filesystem::create_directories(dir);
  std::string path;
  {
    TensorBoardWriter w(dir);
    w.add_scalar("train/loss", 0.5, 3);
    w.flush();
    path = w.path();
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  std::size_t at = 0;
  int records = 0;
  while (at < bytes.size()) {
    uint64_t len;
    uint32_t len_crc, data_crc;
    std::memcpy(&len, bytes.data() + at, 8);
    std::memcpy(&len_crc, bytes.data() + at + 8, 4);
    EXPECT_EQ(len_crc, masked_crc32c(&len, 8));
    const std::string data = bytes.substr(at + 12, len);
    std::memcpy(&data_crc, bytes.data() + at + 12 + len, 4);
    EXPECT_EQ(data_crc, masked_crc32c(data.data(), data.size()));
    if (records == 0) {
      EXPECT_NE(data.find("brain.Event:2"), std::string::npos);
    }
    if (records == 1) {
      EXPECT_NE(data.find("train/loss"), std::string::npos);
      const float half = 0.5f;
      EXPECT_NE(data.find(std::string(reinterpret_cast<const char*>(&half), 4)), std::string::npos);
    }
    at += 12 + len + 4;
    ++records;
  }
  EXPECT_EQ(records, 2);
  EXPECT_EQ(at, bytes.size());
}

}  // namespace
}  // namespace rg::train
