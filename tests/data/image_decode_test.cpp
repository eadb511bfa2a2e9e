// Image decoding: JPEG through libjpeg-turbo, PNG through libpng, BMP through stb_image, sizes
// checked before any pixel buffer exists, and files that broke stb_image refused cleanly.
#include "data/image_decode.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "data/files.h"
#include "tests/data/data_test_util.h"
#include "tests/data/image_writers.h"
#include "tests/support/fixtures.h"

namespace rg::data {
namespace {
using rg::testing::throws_error;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

uint32_t crc32(const std::string& bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

void put_be(std::string& s, std::size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + i] = static_cast<char>(v >> (8 * (bytes - 1 - i)));
}

TEST(DecodeImage, JpegThroughLibjpeg) {
  const Tensor img = decode_image_bytes(testing::jpeg_bytes(5, 4, 200, 100, 50), "a.jpg");
  ASSERT_EQ(img.shape(), (Shape{3, 4, 5}));
  const std::vector<int64_t> v = img.to_vector<int64_t>();
  for (int64_t i = 0; i < 20; ++i) {
    EXPECT_NEAR(v[i], 200, 2);
    EXPECT_NEAR(v[20 + i], 100, 2);
    EXPECT_NEAR(v[40 + i], 50, 2);
  }
}

TEST(DecodeImage, PngThroughLibpngDropsAlphaAndWidensGrey) {
  for (int channels : {1, 3, 4}) {
    const Tensor img = decode_image_bytes(testing::png_bytes(3, 2, channels), "a.png");
    ASSERT_EQ(img.shape(), (Shape{3, 2, 3})) << channels;
    const std::vector<int64_t> v = img.to_vector<int64_t>();
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 3; ++x)
          EXPECT_EQ(v[c * 6 + y * 3 + x], 10 * (channels == 1 ? 0 : c) + x + 3 * y)
              << channels << " " << c;
  }
}

TEST(DecodeImage, FormatComesFromTheBytesNotTheName) {
  EXPECT_EQ(decode_image_bytes(testing::png_bytes(2, 2, 3), "really_a_png.jpg").size(2), 2);
  EXPECT_TRUE(throws_error([] { decode_image_bytes("GIF89a....", "x.gif"); },
                           {"x.gif", "not a JPEG, PNG or BMP"}));
  EXPECT_TRUE(throws_error([] { decode_image_bytes("", "empty.jpg"); }, {"empty.jpg"}));
}

// A 436-byte JPEG declaring 590 million pixels took train_cifar to 1.7 GB before failing: the
// size is read from the header and refused before anything is allocated.
TEST(DecodeImage, SizesOverTheLimitAreRefusedFromTheHeader) {
  std::string jpeg = testing::jpeg_bytes(8, 8, 1, 2, 3);
  const std::size_t sof = jpeg.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  put_be(jpeg, sof + 5, 9000, 2);   // height
  put_be(jpeg, sof + 7, 65000, 2);  // width
  EXPECT_TRUE(throws_error([&] { decode_image_bytes(jpeg, "huge.jpg"); },
                           {"huge.jpg", "JPEG", "65000x9000", "over the limit"}));

  std::string png = testing::png_bytes(2, 2, 3);
  put_be(png, 16, 5000, 4);  // IHDR width
  put_be(png, 20, 5000, 4);  // IHDR height: 25 Mpixel, each side allowed
  put_be(png, 29, crc32(png.substr(12, 17)), 4);
  EXPECT_TRUE(throws_error([&] { decode_image_bytes(png, "huge.png"); },
                           {"huge.png", "PNG", "5000x5000", "over the limit"}));

  const std::string path = rg::testing::temp_path("huge.bmp");
  testing::write_bmp(path, 2, 2, 1, 2, 3);
  std::string bmp = read(path);
  for (int i = 0; i < 4; ++i) bmp[18 + i] = static_cast<char>((20000u >> (8 * i)) & 0xFF);
  EXPECT_TRUE(
      throws_error([&] { decode_image_bytes(bmp, "huge.bmp"); }, {"huge.bmp", "over the limit"}));

  // A negative height means a top-down BMP; stbi_info reports it negative, so the cap must
  // use its magnitude (a fuzzer found 10026 x -65533 passing a plain w * h check).
  bmp = read(path);
  for (int i = 0; i < 4; ++i) bmp[22 + i] = static_cast<char>((uint32_t(-65533) >> (8 * i)) & 0xFF);
  for (int i = 0; i < 4; ++i) bmp[18 + i] = static_cast<char>((10026u >> (8 * i)) & 0xFF);
  EXPECT_TRUE(throws_error([&] { decode_image_bytes(bmp, "tall.bmp"); },
                           {"tall.bmp", "10026x65533", "over the limit"}));
}

// The fuzz target lowers the pixel limit; each format must honour the caller's figure, and a
// figure above the app's own limit is refused rather than widening it.
TEST(DecodeImage, ALowerPixelLimitIsHonouredByEveryFormat) {
  const std::string path = rg::testing::temp_path("five_by_four.bmp");
  testing::write_bmp(path, 5, 4, 1, 2, 3);
  const std::string bmp = read(path);
  const std::string jpeg = testing::jpeg_bytes(5, 4, 200, 100, 50);
  const std::string png = testing::png_bytes(5, 4, 3);
  const std::vector<std::pair<std::string, std::string>> images = {
      {jpeg, "JPEG"}, {png, "PNG"}, {bmp, "BMP"}};
  for (const auto& image : images) {
    // References, not a structured binding: clang 14 cannot capture one in a lambda.
    const std::string& bytes = image.first;
    const std::string& format = image.second;
    EXPECT_EQ(decode_image_bytes(bytes, "img", 20).size(2), 5) << format;
    EXPECT_TRUE(throws_error([&] { decode_image_bytes(bytes, "img", 19); },
                             {"img", format, "5x4", "over the limit", "19 in all"}))
        << format;
  }
  EXPECT_TRUE(throws_error([&] { decode_image_bytes(png, "img", kMaxImagePixels + 1); },
                           {"max_pixels", "outside"}));
}

TEST(DecodeImage, TopDownBmpDecodes) {
  const std::string path = rg::testing::temp_path("a.bmp");
  testing::write_bmp(path, 3, 2, 10, 20, 30);  // bottom-up rows
  const std::string bmp = read(path);
  // The same pixels top-down: negative height, rows swapped.
  const int row = 12;
  std::string flipped = bmp;
  for (int i = 0; i < 4; ++i) flipped[22 + i] = static_cast<char>((uint32_t(-2) >> (8 * i)) & 0xFF);
  flipped.replace(54, row, bmp.substr(54 + row, row));
  flipped.replace(54 + row, row, bmp.substr(54, row));
  const Tensor a = decode_image_bytes(bmp, "up.bmp"), b = decode_image_bytes(flipped, "down.bmp");
  EXPECT_EQ(b.shape(), (Shape{3, 2, 3}));
  EXPECT_EQ(a.to_vector<int64_t>(), b.to_vector<int64_t>());
}

// stb_image 2.27 wrote past its Huffman size table (index 257 of 257) on this file, which a
// fuzzer made from a CIFAR JPEG within 40 executions. libjpeg-turbo refuses it with its own words.
TEST(DecodeImage, JpegThatBrokeStbIsRefusedByLibjpeg) {
  const std::string bytes =
      read(std::string(RG_SOURCE_DIR) + "/tests/data/images/stb_huffman_oob.jpg");
  ASSERT_EQ(bytes.size(), 866u);
  EXPECT_TRUE(throws_error([&] { decode_image_bytes(bytes, "oob.jpg"); },
                           {"oob.jpg", "cannot be decoded as JPEG", "Huffman"}));
}

// A zero-length IDAT chunk before the image data is valid PNG; stb_image 2.27 offset and then
// copied from its still-NULL data buffer on it (UBSan: "applying zero offset to null pointer",
// then a memcpy from NULL: issue 14's 72-byte PNG). libpng decodes it like the plain file.
TEST(DecodeImage, PngWithAnEmptyIdatChunkDecodes) {
  const std::string png = testing::png_bytes(4, 4, 3);
  const std::size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  std::string empty_chunk(12, '\0');  // length 0, type, CRC of the type alone
  empty_chunk.replace(4, 4, "IDAT");
  put_be(empty_chunk, 8, crc32("IDAT"), 4);
  const std::string with_empty = png.substr(0, idat - 4) + empty_chunk + png.substr(idat - 4);
  const Tensor a = decode_image_bytes(png, "plain.png");
  const Tensor b = decode_image_bytes(with_empty, "empty_idat.png");
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.to_vector<int64_t>(), b.to_vector<int64_t>());
}

// stb_image reads past the end of a BMP's data as zeros. This 68-byte file, which the fuzzer
// found (a 14-s timeout under ASan), declares 11779x512 pixels of 24 bits: 18 MB decoded from
// nothing. A BMP too short for the pixels its header declares is refused before stb runs.
TEST(DecodeImage, BmpShorterThanItsPixelsIsAnError) {
  const std::string bomb =
      read(std::string(RG_SOURCE_DIR) + "/tests/data/images/bmp_pixels_missing.bmp");
  ASSERT_EQ(bomb.size(), 68u);
  EXPECT_TRUE(throws_error([&] { decode_image_bytes(bomb, "bomb.bmp"); },
                           {"bomb.bmp", "cannot be decoded as BMP", "11779x512 at 24 bits",
                            "needs 18094134 bytes", "the file has 68"}));
  const std::string path = rg::testing::temp_path("whole.bmp");
  testing::write_bmp(path, 3, 2, 10, 20, 30);
  const std::string whole = read(path);
  EXPECT_EQ(decode_image_bytes(whole, "whole.bmp").shape(), (Shape{3, 2, 3}));
  EXPECT_TRUE(
      throws_error([&] { decode_image_bytes(whole.substr(0, whole.size() - 1), "cut.bmp"); },
                   {"cut.bmp", "truncated", "3x2 at 24 bits"}));
  // A header cut short (the fuzzer's 30 bytes of a 40-byte header declaring 11092x1032).
  const std::string cut_header =
      read(std::string(RG_SOURCE_DIR) + "/tests/data/images/bmp_header_cut.bmp");
  ASSERT_EQ(cut_header.size(), 30u);
  EXPECT_TRUE(throws_error([&] { decode_image_bytes(cut_header, "cut_header.bmp"); },
                           {"cut_header.bmp", "truncated", "40-byte header ends at byte 30"}));
  EXPECT_TRUE(throws_error([&] { decode_image_bytes(whole.substr(0, 40), "short.bmp"); },
                           {"short.bmp", "truncated", "40-byte header ends at byte 40"}));
}

// libjpeg only warns about a file that ends early and fills the rest with grey; a training
// image silently damaged is refused instead.
TEST(DecodeImage, TruncatedJpegIsAnError) {
  const std::string jpeg = testing::jpeg_bytes(16, 16, 9, 9, 9);
  EXPECT_TRUE(throws_error([&] { decode_image_bytes(jpeg.substr(0, jpeg.size() - 40), "cut.jpg"); },
                           {"cut.jpg", "cannot be decoded as JPEG", "Premature end"}));
  const std::string png = testing::png_bytes(4, 4, 3);
  EXPECT_TRUE(throws_error([&] { decode_image_bytes(png.substr(0, png.size() - 20), "cut.png"); },
                           {"cut.png", "cannot be decoded as PNG"}));
}

TEST(ReadBoundedFile, OnlyRegularFilesUpToTheLimit) {
  EXPECT_TRUE(throws_error([] { decode_image("/dev/zero"); }, {"/dev/zero", "not a regular file"}));
  EXPECT_TRUE(throws_error([] { read_bounded_file("/no/such", 10, "thing"); },
                           {"thing '/no/such'", "cannot open"}));
  const std::string path = rg::testing::temp_path("eleven");
  std::ofstream(path) << "hello world";
  EXPECT_EQ(read_bounded_file(path, 11, "thing"), "hello world");
  EXPECT_TRUE(
      throws_error([&] { read_bounded_file(path, 10, "thing"); }, {"11 bytes", "limit of 10"}));
}

}  // namespace
}  // namespace rg::data
