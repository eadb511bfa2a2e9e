#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/segmentation_folder.h"
#include "tests/data/data_test_util.h"
#include "tests/data/image_writers.h"
#include "tests/support/fixtures.h"

namespace rg::data {
namespace {
namespace fs = std::filesystem;
using rg::testing::throws_error;

std::string fresh_root(const std::string& name) {
  const std::string dir = rg::testing::temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir + "/images");
  fs::create_directories(dir + "/masks");
  return dir;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// An 8-bit greyscale PNG of w x h holding `values` row by row.
std::string grey_png(int w, int h, const std::vector<uint8_t>& values) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(w);
  image.height = static_cast<png_uint_32>(h);
  image.format = PNG_FORMAT_GRAY;
  png_alloc_size_t size = 0;
  png_image_write_to_memory(&image, nullptr, &size, 0, values.data(), 0, nullptr);
  std::string bytes(size, '\0');
  png_image_write_to_memory(&image, bytes.data(), &size, 0, values.data(), 0, nullptr);
  png_image_free(&image);
  bytes.resize(size);
  return bytes;
}

// A version 1.0 .npy file of `descr` and `shape` holding `data` (raw little-endian bytes).
std::string npy(const std::string& descr, const std::string& shape, const std::string& data) {
  const std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }\n";
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

TEST(SegmentationFolder, PairsImagesAndPngMasksByName) {
  const std::string root = fresh_root("png");
  write(root + "/images/b.png", testing::png_bytes(3, 2, 3));
  write(root + "/masks/b.png", grey_png(3, 2, {0, 1, 2, 2, 1, 0}));
  testing::write_bmp(root + "/images/a.bmp", 3, 2, 200, 100, 50);
  write(root + "/masks/a.png", grey_png(3, 2, {0, 0, 0, 1, 1, 1}));
  write(root + "/images/notes.txt", "not an image");
  SegmentationFolder ds(root, {.num_classes = 3});
  ASSERT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.num_classes(), 3);
  const auto a = ds.get(0);  // sorted by name: a, b
  EXPECT_EQ(a.image.shape(), (Shape{3, 2, 3}));
  EXPECT_EQ(a.mask.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(a.image.to_vector<int64_t>()[0], 200);
  const auto b = ds.get(1);
  EXPECT_EQ(b.mask.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 2, 1, 0}));
  // One channel: BT.601 luma of (200, 100, 50) = 124.3.
  SegmentationFolder grey(root, {.num_classes = 3, .channels = 1});
  EXPECT_EQ(grey.get(0).image.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(grey.get(0).image.to_vector<int64_t>()[0], 124);
}

TEST(SegmentationFolder, MaskValuesOverTheClassCountNameFileAndValue) {
  const std::string root = fresh_root("classes");
  write(root + "/images/x.png", testing::png_bytes(2, 2, 3));
  write(root + "/masks/x.png", grey_png(2, 2, {0, 1, 255, 1}));
  SegmentationFolder ds(root, {.num_classes = 2});
  EXPECT_TRUE(throws_error([&] { ds.get(0); }, {"masks/x.png", "value 255", "there are 2"}));
  EXPECT_EQ(SegmentationFolder(root, {.num_classes = 256}).get(0).mask.to_vector<int64_t>()[2],
            255);
}

TEST(SegmentationFolder, MissingEmptyAndMismatchedFiles) {
  const std::string root = fresh_root("bad");
  EXPECT_TRUE(throws_error([&] { SegmentationFolder ds(root); }, {"images/", "holds no image"}));
  EXPECT_TRUE(throws_error([&] { SegmentationFolder ds(root + "/nowhere"); },
                           {"nowhere/images", "does not exist"}));
  write(root + "/images/one.png", testing::png_bytes(4, 3, 3));
  EXPECT_TRUE(throws_error([&] { SegmentationFolder ds(root); },
                           {"images/one.png", "has no mask", "masks/one.png"}));
  write(root + "/masks/one.png", grey_png(3, 3, std::vector<uint8_t>(9, 0)));
  write(root + "/masks/two.png", grey_png(3, 3, std::vector<uint8_t>(9, 0)));
  EXPECT_TRUE(
      throws_error([&] { SegmentationFolder ds(root); }, {"masks/two.png", "has no image"}));
  fs::remove(root + "/masks/two.png");
  SegmentationFolder ds(root);
  EXPECT_TRUE(
      throws_error([&] { ds.get(0); }, {"images/one.png", "[3, 3, 4]", "masks/one.png", "[3, 3]"}));
  write(root + "/masks/one.png", testing::png_bytes(4, 3, 3));  // a colour mask
  EXPECT_TRUE(throws_error([&] { ds.get(0); }, {"masks/one.png", "RGB", "greyscale"}));
  write(root + "/masks/one.npy", npy("<f4", "(3, 4)", std::string(48, '\0')));
  EXPECT_TRUE(throws_error([&] { SegmentationFolder d(root); }, {"same name"}));
  EXPECT_TRUE(throws_error([&] { SegmentationFolder d(root, {.num_classes = 0}); },
                           {"num_classes", "got 0"}));
  EXPECT_TRUE(throws_error([&] { SegmentationFolder d(root, {.num_classes = 300}); },
                           {"num_classes", "got 300"}));
  EXPECT_TRUE(throws_error([&] { SegmentationFolder d(root, {.channels = 2}); }, {"channels"}));
}

TEST(SegmentationFolder, VolumesAsNpyPairs) {
  const std::string root = fresh_root("npy");
  // A (2, 2, 3) f4 volume without its channel axis, and an i8 mask of 0..2.
  std::string image, mask;
  for (int i = 0; i < 12; ++i) {
    const float v = 0.5f * static_cast<float>(i);
    image.append(reinterpret_cast<const char*>(&v), 4);
    const int64_t m = i % 3;
    mask.append(reinterpret_cast<const char*>(&m), 8);
  }
  write(root + "/images/vol.npy", npy("<f4", "(2, 2, 3)", image));
  write(root + "/masks/vol.npy", npy("<i8", "(2, 2, 3)", mask));
  SegmentationFolder ds(root, {.num_classes = 3});
  const auto ex = ds.get(0);
  EXPECT_EQ(ex.image.shape(), (Shape{1, 2, 2, 3}));
  EXPECT_EQ(ex.image.dtype(), DType::f32);
  EXPECT_EQ(ex.image.to_vector<float>()[5], 2.5f);
  EXPECT_EQ(ex.mask.dtype(), DType::u8);
  EXPECT_EQ(ex.mask.to_vector<int64_t>()[5], 2);
  // A value over the class count, checked before it is narrowed to u8 (300 is not class 44).
  std::string wide = mask;
  const int64_t big = 300;
  std::memcpy(wide.data() + 8, &big, 8);
  write(root + "/masks/vol.npy", npy("<i8", "(2, 2, 3)", wide));
  EXPECT_TRUE(throws_error([&] { ds.get(0); }, {"masks/vol.npy", "value 300"}));
  write(root + "/masks/vol.npy", npy("<f4", "(2, 2, 3)", image));
  EXPECT_TRUE(throws_error([&] { ds.get(0); }, {"masks/vol.npy", "f32", "integer class"}));
  // Against a 2-D mask, the volume reads as (C, H, W) = (2, 2, 3): two channels of 2 x 3.
  write(root + "/masks/vol.npy", npy("|u1", "(2, 6)", std::string(12, '\1')));
  EXPECT_TRUE(throws_error([&] { ds.get(0); }, {"images/vol.npy", "[2, 2, 3]", "[2, 6]", "agree"}));
  write(root + "/images/vol.npy", npy("<f4", "(12,)", image));
  EXPECT_TRUE(throws_error([&] { ds.get(0); }, {"images/vol.npy", "[12]", "for a mask of 2"}));
  write(root + "/images/vol.npy", npy("<f4", "(2, 2, 3)", image));
  write(root + "/masks/vol.npy", npy("|u1", "(2, 2, 2)", std::string(8, '\1')));
  EXPECT_TRUE(throws_error([&] { ds.get(0); }, {"images/vol.npy", "masks/vol.npy", "must agree"}));
  write(root + "/masks/vol.npy", npy("|u1", "(12,)", std::string(12, '\1')));
  EXPECT_TRUE(throws_error([&] { ds.get(0); }, {"masks/vol.npy", "(H, W) or (D, H, W)"}));
}

}  // namespace
}  // namespace rg::data
