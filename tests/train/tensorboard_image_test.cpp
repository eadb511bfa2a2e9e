// TensorBoard image summaries: the PNG inside decodes (with stb_image, a decoder independent of
// ours) to the image's pixels, and the event carries Summary.Image's fields.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "data/png_encode.h"
#include "tests/support/fixtures.h"
#include "train/tensorboard.h"

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace rg::train {
namespace {
using rg::testing::throws_error;

// Summary.Image as read back from an event file.
struct ImageField {
  std::string tag;
  int64_t step = -1, height = -1, width = -1, colorspace = -1;
  std::string png;
};

uint64_t varint(const std::string& s, std::size_t& at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<uint8_t>(s.at(at++));
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return v;
  }
}

// Calls visit(field, wire, varint value, bytes) for each field of the message `s`.
template <class Visit>
void fields(const std::string& s, Visit visit) {
  for (std::size_t at = 0; at < s.size();) {
    const uint64_t key = varint(s, at);
    const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    if (wire == 0) {
      visit(field, wire, varint(s, at), std::string());
    } else if (wire == 2) {
      const auto n = static_cast<std::size_t>(varint(s, at));
      visit(field, wire, 0, s.substr(at, n));
      at += n;
    } else {
      at += wire == 1 ? 8 : 4;  // fixed64 (wall_time) or fixed32 (simple_value)
    }
  }
}

// The image events of the file at `path` (records checked as in tensorboard_test.cpp).
std::vector<ImageField> read_images(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  std::vector<ImageField> images;
  for (std::size_t at = 0; at < bytes.size();) {
    uint64_t len;
    uint32_t data_crc;
    std::memcpy(&len, bytes.data() + at, 8);
    const std::string event = bytes.substr(at + 12, len);
    std::memcpy(&data_crc, bytes.data() + at + 12 + len, 4);
    EXPECT_EQ(data_crc, masked_crc32c(event.data(), event.size()));
    at += 12 + len + 4;
    ImageField image;
    fields(event, [&](int f, int, uint64_t v, const std::string& summary) {
      if (f == 2) image.step = static_cast<int64_t>(v);
      if (f != 5) return;
      fields(summary, [&](int, int, uint64_t, const std::string& value) {
        fields(value, [&](int g, int, uint64_t, const std::string& b) {
          if (g == 1) image.tag = b;
          if (g != 4) return;
          fields(b, [&](int h, int, uint64_t x, const std::string& png) {
            if (h == 1) image.height = static_cast<int64_t>(x);
            if (h == 2) image.width = static_cast<int64_t>(x);
            if (h == 3) image.colorspace = static_cast<int64_t>(x);
            if (h == 4) image.png = png;
          });
        });
      });
    });
    if (!image.png.empty()) images.push_back(image);
  }
  return images;
}

// Pixels decoded by stb_image, interleaved; checks the decoded size and channel count.
std::vector<uint8_t> decode(const std::string& png, int width, int height, int channels) {
  int w = 0, h = 0, c = 0;
  uint8_t* pixels = stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(png.data()),
                                          static_cast<int>(png.size()), &w, &h, &c, 0);
  EXPECT_NE(pixels, nullptr) << stbi_failure_reason();
  if (!pixels) return {};
  EXPECT_EQ(w, width);
  EXPECT_EQ(h, height);
  EXPECT_EQ(c, channels);
  std::vector<uint8_t> out(pixels, pixels + static_cast<std::size_t>(w) * h * c);
  stbi_image_free(pixels);
  return out;
}

TEST(TensorBoardImage, ChecksumsKnownAnswers) {
  EXPECT_EQ(data::crc32("123456789", 9), 0xCBF43926u);    // the CRC-32 check value
  EXPECT_EQ(data::adler32("Wikipedia", 9), 0x11E60398u);  // zlib's Adler-32 example
  // The CRC of PNG's IEND chunk (its type, no data), present at the end of every PNG.
  EXPECT_EQ(data::crc32("IEND", 4), 0xAE426082u);
}

TEST(TensorBoardImage, RgbFloatImageDecodesToItsPixels) {
  const std::string dir = rg::testing::temp_path("tb_images");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const int64_t C = 3, H = 5, W = 7;
  std::vector<float> values;
  for (int64_t i = 0; i < C * H * W; ++i) values.push_back(static_cast<float>(i % 17) / 16.0f);
  const Tensor image = from_vector<float>(values, {C, H, W});
  std::string path;
  {
    TensorBoardWriter writer(dir);
    writer.add_scalar("loss", 1.0, 4);
    writer.add_image("val/input", image, 4);
    path = writer.path();
  }
  const std::vector<ImageField> images = read_images(path);
  ASSERT_EQ(images.size(), 1u);
  const ImageField& got = images[0];
  EXPECT_EQ(got.tag, "val/input");
  EXPECT_EQ(got.step, 4);
  EXPECT_EQ(got.height, H);
  EXPECT_EQ(got.width, W);
  EXPECT_EQ(got.colorspace, 3);
  const std::vector<uint8_t> pixels = decode(got.png, W, H, 3);
  ASSERT_EQ(pixels.size(), static_cast<std::size_t>(C * H * W));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t p = 0; p < H * W; ++p)
      EXPECT_EQ(pixels[p * C + c], std::lround(values[c * H * W + p] * 255)) << c << " " << p;
}

// 300 rows of 251 bytes (filter byte included): more than one stored deflate block of 65535.
TEST(TensorBoardImage, LargeGreyImageSpansSeveralDeflateBlocks) {
  const std::string dir = rg::testing::temp_path("tb_grey");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const int64_t H = 300, W = 250;
  std::vector<uint8_t> values;
  for (int64_t i = 0; i < H * W; ++i) values.push_back(static_cast<uint8_t>((i * 7 + i / W) % 256));
  std::string path;
  {
    TensorBoardWriter writer(dir);
    writer.add_image("mask", from_vector<uint8_t>(values, {1, H, W}, {DType::u8}), 9);
    path = writer.path();
  }
  const std::vector<ImageField> images = read_images(path);
  ASSERT_EQ(images.size(), 1u);
  EXPECT_EQ(images[0].colorspace, 1);
  EXPECT_EQ(images[0].step, 9);
  EXPECT_EQ(decode(images[0].png, W, H, 1), values);
}

TEST(TensorBoardImage, RefusesWhatIsNotAnImage) {
  const std::string dir = rg::testing::temp_path("tb_bad");
  std::filesystem::create_directories(dir);
  TensorBoardWriter writer(dir);
  EXPECT_TRUE(throws_error(
      [&] {
        writer.add_image("x", zeros({2, 4, 4}), 0);
      },
      {"add_image 'x'", "C = 1 or 3", "[2, 4, 4]"}));
  EXPECT_TRUE(throws_error([&] { writer.add_image("x", zeros({4, 4}), 0); }, {"(C, H, W)"}));
  EXPECT_TRUE(throws_error(
      [&] {
        writer.add_image("x", zeros({1, 4, 4}, {DType::i64}), 0);
      },
      {"u8, or f32", "i64"}));
  EXPECT_TRUE(throws_error(
      [&] {
        writer.add_image("x", full({3, 2, 2}, 1.5), 0);
      },
      {"1.5", "outside [0, 1]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        writer.add_image("x", full({1, 2, 2}, std::numeric_limits<double>::quiet_NaN()), 0);
      },
      {"nan", "outside [0, 1]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        writer.add_image("x", zeros({3, 0, 4}), 0);
      },
      {"add_image 'x'", "empty", "[3, 0, 4]"}));
}

}  // namespace
}  // namespace rg::train
