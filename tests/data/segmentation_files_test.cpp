// A user's segmentation files: class maps, the train/val layouts and the split, the rank and
// channel checks, subset/repeat, writing masks and .npy arrays, the crop that pads small
// samples, and the preprocessing a checkpoint records.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/class_map.h"
#include "data/mask_decode.h"
#include "data/npy.h"
#include "data/png_encode.h"
#include "data/segmentation_files.h"
#include "data/segmentation_folder.h"
#include "data/segmentation_transforms.h"
#include "data/transforms.h"
#include "tests/support/fixtures.h"

namespace rg::data {
namespace {
namespace fs = std::filesystem;
using rg::testing::all_close;
using rg::testing::throws_error;

void write(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string fresh(const std::string& name) {
  const std::string dir = rg::testing::temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A grey image and its mask of w x h under dir/images and dir/masks; the mask holds `value`
// in its first pixel and 0 elsewhere, the image holds `seed` + its index.
void pair(const std::string& dir, const std::string& stem, int w, int h, uint8_t value,
          uint8_t seed = 0) {
  std::vector<uint8_t> image(static_cast<std::size_t>(w * h)), mask(image.size(), 0);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(seed + i);
  mask[0] = value;
  write(dir + "/images/" + stem + ".png", data::encode_png(image.data(), w, h, 1));
  write(dir + "/masks/" + stem + ".png", data::encode_png(mask.data(), w, h, 1));
}

TEST(ClassMap, OneNamePerLineForMaskValuesFromZero) {
  EXPECT_EQ(parse_class_map("background\nroad\r\ncar\n", "m"),
            (std::vector<std::string>{"background", "road", "car"}));
  EXPECT_EQ(parse_class_map("a\nb", "m"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(parse_class_map("bg\nroad-sign_2.0+\n", "m")[1], "road-sign_2.0+");
}

TEST(ClassMap, BadFilesAreNamedErrorsWithTheLine) {
  auto bad = [](const std::string& text, std::vector<std::string> parts) {
    parts.insert(parts.begin(), "class map 'm.txt'");
    return throws_error([&] { parse_class_map(text, "m.txt"); }, parts);
  };
  EXPECT_TRUE(bad("a\n\nb\n", {"line 2 is empty"}));
  EXPECT_TRUE(bad("a\nroad sign\n", {"line 2", "' '", "column 5", "letters, digits"}));
  EXPECT_TRUE(bad("a\nst\xc3\xa9\n", {"line 2", "the byte 0xc3", "column 3"}));
  EXPECT_TRUE(bad("a\nb\na\n", {"line 3 repeats 'a'"}));
  EXPECT_TRUE(bad("only\n", {"1 class(es)", "at least 2"}));
  EXPECT_TRUE(bad("", {"0 class(es)"}));
  EXPECT_TRUE(bad("a\n" + std::string(65, 'x') + "\n", {"line 2", "65 characters"}));
  std::string many;
  for (int i = 0; i < 257; ++i) many += "c" + std::to_string(i) + "\n";
  EXPECT_TRUE(bad(many, {"more than 256 lines"}));
  EXPECT_TRUE(bad(std::string(kMaxClassMapBytes + 1, 'a'), {"bytes, more than"}));
  const std::string dir = fresh("class_map_file");
  write(dir + "/big.txt", std::string(kMaxClassMapBytes + 1, 'a'));
  EXPECT_TRUE(throws_error([&] { read_class_map(dir + "/big.txt"); },
                           {"class map", "big.txt", "more than the limit"}));
  EXPECT_TRUE(throws_error([&] { read_class_map(dir); }, {"not a regular file"}));
}

TEST(NpyWriting, HeaderAsNumpyWritesItAndDataBack) {
  const Tensor m = from_vector<uint8_t>({1, 2, 3, 4, 5, 6}, {2, 3}, {DType::u8});
  const std::string bytes = npy_bytes(m);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(bytes.substr(10, header.size()), header);
  EXPECT_EQ((10 + static_cast<uint8_t>(bytes[8]) + 256 * static_cast<uint8_t>(bytes[9])) % 64, 0);
  EXPECT_EQ(bytes.substr(bytes.size() - 7), std::string("\n\x01\x02\x03\x04\x05\x06", 7));
  EXPECT_TRUE(all_close(read_npy_bytes(bytes, "u8"), m, 0, 0));
  for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::f16}) {
    const Tensor t = arange(-3, 9, 1, {dtype}).reshape({2, 2, 3}).transpose(0, 2);  // strided
    const Tensor back = read_npy_bytes(npy_bytes(t), "t");
    EXPECT_EQ(back.dtype(), dtype);
    EXPECT_TRUE(all_close(back, t, 0, 0)) << dtype_name(dtype);
  }
  EXPECT_NE(npy_bytes(zeros({5})).find("'shape': (5,), }"), std::string::npos);
  EXPECT_NE(npy_bytes(scalar_tensor(1.0)).find("'shape': (), }"), std::string::npos);
  EXPECT_TRUE(throws_error([] { npy_bytes(zeros({2}, {DType::bf16})); }, {"bf16", "NumPy"}));
}

TEST(MaskWriting, PngAndNpyMasksReadBackExactly) {
  const std::string dir = fresh("mask_writing");
  std::vector<uint8_t> values;
  for (int i = 0; i < 20; ++i) values.push_back(static_cast<uint8_t>(i * 13));
  const Tensor plane = from_vector<uint8_t>(values, {4, 5}, {DType::u8});
  write_mask_file(dir + "/m.png", plane);
  EXPECT_TRUE(all_close(decode_mask_png(dir + "/m.png"), plane, 0, 0));
  EXPECT_TRUE(all_close(read_mask_file(dir + "/m.png", 256), plane, 0, 0));
  const Tensor volume = plane.reshape({2, 2, 5});
  write_mask_file(dir + "/v.npy", volume);
  EXPECT_TRUE(all_close(read_mask_file(dir + "/v.npy", 256), volume, 0, 0));
  EXPECT_TRUE(throws_error([&] { write_mask_file(dir + "/v.png", volume); },
                           {"v.png", "2-D mask", "as .npy"}));
  EXPECT_TRUE(throws_error([&] { write_mask_file(dir + "/m.png", plane.to(DType::i64)); },
                           {"m.png", "u8 class indices"}));
  EXPECT_TRUE(throws_error([&] { write_mask_file(dir + "/m.tif", plane); }, {".png", ".npy"}));
  // Nothing of a write is left beside the file.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 2);
}

TEST(SegmentationFiles, OneSetHoldsOutAnEvenlySpacedShare) {
  const std::string root = fresh("files_single");
  for (int i = 0; i < 10; ++i)
    pair(root, "p" + std::to_string(i), 4, 3, static_cast<uint8_t>(i % 3), static_cast<uint8_t>(i));
  const SegmentationFiles files = open_segmentation_files(root, {.val_fraction = 0.2});
  EXPECT_EQ(files.class_names, (std::vector<std::string>{"0", "1", "2"}));  // mask values 0..2
  EXPECT_EQ(files.channels, 3);                                             // decoded as RGB
  ASSERT_EQ(files.train->size(), 8);
  ASSERT_EQ(files.val->size(), 2);
  EXPECT_EQ(files.val->num_classes(), 3);
  // Held out: pairs 0 and 5; the image's first pixel is the pair's number.
  EXPECT_EQ(files.val->get(0).image.to_vector<int64_t>()[0], 0);
  EXPECT_EQ(files.val->get(1).image.to_vector<int64_t>()[0], 5);
  EXPECT_EQ(files.train->get(0).image.to_vector<int64_t>()[0], 1);
  EXPECT_EQ(files.train->get(4).image.to_vector<int64_t>()[0], 6);
  EXPECT_NE(files.layout.find("8 pairs to train, 2 evenly spaced"), std::string::npos);
  const SegmentationFiles grey =
      open_segmentation_files(root, {.channels = 1, .val_fraction = 0.5});
  EXPECT_EQ(grey.channels, 1);
  EXPECT_EQ(grey.val->size(), 5);
}

TEST(SegmentationFiles, TrainAndValFoldersAndAClassMap) {
  const std::string root = fresh("files_split");
  pair(root + "/train", "a", 4, 3, 1);
  pair(root + "/train", "b", 4, 3, 0);
  pair(root + "/val", "c", 6, 5, 3);  // validation holds the highest value
  SegmentationFiles files = open_segmentation_files(root, {});
  EXPECT_EQ(files.class_names.size(), 4u);
  EXPECT_EQ(files.train->size(), 2);
  EXPECT_EQ(files.val->size(), 1);
  EXPECT_EQ(files.val->get(0).mask.shape(), (Shape{5, 6}));
  write(root + "/classes.txt", "background\nx\ny\nz\nw\n");
  files = open_segmentation_files(root, {});
  EXPECT_EQ(files.class_names.back(), "w");
  EXPECT_EQ(files.val->class_names().size(), 5u);
  EXPECT_NE(files.layout.find("classes.txt"), std::string::npos);
  write(root + "/other.txt", "bg\nfg\n");
  files = open_segmentation_files(root, {.class_map = root + "/other.txt"});
  EXPECT_EQ(files.class_names, (std::vector<std::string>{"bg", "fg"}));
  // The mask value 3 is outside the two classes the map names.
  EXPECT_TRUE(throws_error([&] { files.val->get(0); }, {"c.png", "value 3", "there are 2"}));
}

TEST(SegmentationFiles, LayoutErrorsNameTheFolder) {
  const std::string root = fresh("files_layout");
  EXPECT_TRUE(throws_error([&] { open_segmentation_files(root, {}); },
                           {root, "neither images/ and masks/ nor train/ and val/"}));
  EXPECT_TRUE(throws_error([&] { open_segmentation_files(root + "/none", {}); },
                           {"none", "is not a folder"}));
  pair(root + "/train", "a", 4, 3, 1);
  EXPECT_TRUE(throws_error([&] { open_segmentation_files(root, {}); }, {"train/ but no val/"}));
  pair(root, "a", 4, 3, 1);
  EXPECT_TRUE(throws_error([&] { open_segmentation_files(root, {}); }, {"both images/", "train/"}));
  fs::remove_all(root + "/train");
  EXPECT_TRUE(throws_error([&] { open_segmentation_files(root, {}); }, {"1 pair", "at least 2"}));
  EXPECT_TRUE(
      throws_error([&] { open_segmentation_files(root, {.val_fraction = 1}); }, {"val_fraction"}));
  EXPECT_TRUE(
      throws_error([&] { open_segmentation_files(root, {.spatial_dims = 4}); }, {"spatial_dims"}));
}

TEST(SegmentationFiles, RankAndChannelsOfEveryPairAreChecked) {
  const std::string root = fresh("files_rank");
  fs::create_directories(root + "/images");
  fs::create_directories(root + "/masks");
  // Volumes: (2, 3, 4) f32 images without their channel axis, (2, 3, 4) masks; then c is a
  // 2-D pair and d an image of 2 channels.
  for (const char* stem : {"a", "b", "c", "d"}) {
    write_npy(root + "/images/" + std::string(stem) + ".npy", zeros({2, 3, 4}));
    write_npy(root + "/masks/" + std::string(stem) + ".npy", zeros({2, 3, 4}, {DType::u8}));
  }
  write_npy(root + "/images/c.npy", zeros({3, 4}));
  write_npy(root + "/masks/c.npy", zeros({3, 4}, {DType::u8}));
  write_npy(root + "/images/d.npy", zeros({2, 2, 3, 4}));
  const SegmentationFiles files =
      open_segmentation_files(root, {.spatial_dims = 3, .val_fraction = 0.25});
  EXPECT_EQ(files.channels, 1);  // the first training image's (a is held out)
  auto all = [&] {
    for (int64_t i = 0; i < files.train->size(); ++i) files.train->get(i);
  };
  EXPECT_TRUE(throws_error(all, {"c.npy", "[3, 4]", "this set holds volumes"}));
  write_npy(root + "/images/c.npy", zeros({2, 3, 4}));
  write_npy(root + "/masks/c.npy", zeros({2, 3, 4}, {DType::u8}));
  EXPECT_TRUE(throws_error(all, {"d.npy", "2 channel(s)", "this set's images have 1"}));
  // The same set read as 2-D images: every mask is a volume there.
  EXPECT_TRUE(throws_error([&] { open_segmentation_files(root, {.spatial_dims = 2}); },
                           {"a.npy", "[2, 3, 4]", "2-D images"}));
}

TEST(SegmentationFiles, SubsetAndRepeat) {
  const std::string root = fresh("files_subset");
  for (int i = 0; i < 3; ++i)
    pair(root, "p" + std::to_string(i), 2, 2, 1, static_cast<uint8_t>(10 * i));
  auto folder = std::make_shared<SegmentationFolder>(root);
  const auto twice = repeat(folder, 2);
  ASSERT_EQ(twice->size(), 6);
  EXPECT_EQ(twice->get(4).image.to_vector<int64_t>()[0], 10);
  EXPECT_EQ(repeat(folder, 1), folder);
  EXPECT_TRUE(throws_error([&] { repeat(folder, 0); }, {"times", "got 0"}));
  const auto picked = subset(folder, {2, 0});
  EXPECT_EQ(picked->get(0).image.to_vector<int64_t>()[0], 20);
  EXPECT_TRUE(throws_error([&] { subset(folder, {3}); }, {"index 3"}));
  EXPECT_TRUE(throws_error([&] { picked->get(2); }, {"index 2"}));
}

// A sample smaller than the crop: refused by default, padded (the mask with its fill class)
// under SmallerThanCrop::pad, with the sample whole inside the crop.
TEST(SegmentationFiles, CropPadsSamplesSmallerThanItWhenAsked) {
  const Tensor image = from_vector<uint8_t>({1, 2, 3, 4, 5, 6}, {1, 2, 3}, {DType::u8});
  const Tensor mask = from_vector<uint8_t>({1, 1, 1, 2, 2, 2}, {2, 3}, {DType::u8});
  SampleRng rng(1, 0, 0);
  EXPECT_TRUE(throws_error(
      [&] {
        RandomCropPair({4, 4}).apply({image, mask}, rng);
      },
      {"does not fit"}));
  for (uint64_t s = 0; s < 8; ++s) {
    SampleRng r(s, 0, 0);
    const SegmentationExample out =
        RandomCropPair({4, 5}, 0, 0, SmallerThanCrop::pad).apply({image, mask}, r);
    ASSERT_EQ(out.image.shape(), (Shape{1, 4, 5}));
    const std::vector<int64_t> px = out.image.to_vector<int64_t>();
    const std::vector<int64_t> m = out.mask.to_vector<int64_t>();
    int64_t sum = 0, ones = 0;
    for (std::size_t i = 0; i < px.size(); ++i) {
      sum += px[i];
      ones += m[i] == 1;
      EXPECT_EQ(px[i] == 0, m[i] == 0) << i;  // padding is background in the mask
    }
    EXPECT_EQ(sum, 21);  // the whole sample is inside: padding of 1 a side, crop 4x5 of 4x5
    EXPECT_EQ(ones, 3);
  }
}

// The preprocessing a checkpoint records computes the CIFAR test transform's floats exactly,
// passes f32 volumes through, and pairs its mean and std.
TEST(SegmentationFiles, PreprocessIsTheTestTransform) {
  Tensor image = empty({3, 4, 5}, {DType::u8});
  for (int64_t i = 0; i < image.numel(); ++i)
    image.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7);
  SampleRng rng(0, 0, 0);
  EXPECT_TRUE(all_close(Preprocess(kCifar10Mean, kCifar10Std).apply(image, rng),
                        cifar10_test_transform()->apply(image, rng), 0, 0));
  EXPECT_TRUE(all_close(Preprocess().apply(image, rng), ToFloat().apply(image, rng), 0, 0));
  const Tensor volume = randn({1, 2, 3, 4});
  EXPECT_TRUE(all_close(Preprocess().apply(volume, rng), volume, 0, 0));
  EXPECT_TRUE(throws_error([] { Preprocess({0.5f}, {}); }, {"mean and std"}));
  EXPECT_TRUE(throws_error([&] { Preprocess().apply(image.to(DType::i64), rng); }, {"u8", "f32"}));
}

}  // namespace
}  // namespace rg::data
