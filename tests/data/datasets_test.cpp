#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/cifar10.h"
#include "data/image_list.h"
#include "tests/data/data_test_util.h"
#include "tests/support/fixtures.h"

namespace rg::data {
namespace {
namespace fs = std::filesystem;
using rg::testing::throws_error;
using testing::write_bmp;
using testing::write_cifar_batch;

std::string fresh_dir(const std::string& name) {
  const std::string dir = rg::testing::temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_all_batches(const std::string& dir) {
  for (int i = 1; i <= 5; ++i)
    write_cifar_batch(dir + "/data_batch_" + std::to_string(i) + ".bin", {uint8_t(i), 0});
  write_cifar_batch(dir + "/test_batch.bin", {9, 3, 4});
}

TEST(Cifar10Binary, ReadsRecordsInChwOrder) {
  const std::string dir = fresh_dir("bin");
  write_all_batches(dir);
  Cifar10Binary train(dir, Split::train);
  EXPECT_EQ(train.size(), 10);
  EXPECT_EQ(train.get(0).label, 1);
  EXPECT_EQ(train.get(2).label, 2);
  EXPECT_EQ(train.get(1).image.shape(), (Shape{3, 32, 32}));
  EXPECT_EQ(train.get(1).image.to_vector<int64_t>()[3071], 2);  // record 1 of its file
  Cifar10Binary test(dir, Split::test);
  EXPECT_EQ(test.size(), 3);
  EXPECT_EQ(test.get(0).label, 9);
  EXPECT_EQ(open_cifar10(dir, Split::test)->describe(), test.describe());
}

TEST(Cifar10Binary, BadFilesNameTheFile) {
  const std::string dir = fresh_dir("bin_bad");
  write_all_batches(dir);
  { std::ofstream(dir + "/data_batch_3.bin", std::ios::binary | std::ios::app).put('x'); }
  EXPECT_TRUE(throws_error(
      [&] {
        Cifar10Binary{dir, Split::train};
      },
      {"data_batch_3.bin", "not a whole number", "truncated"}));
  write_cifar_batch(dir + "/data_batch_3.bin", {12});
  EXPECT_TRUE(throws_error(
      [&] {
        Cifar10Binary{dir, Split::train};
      },
      {"data_batch_3.bin", "label 12", "out of range"}));
  fs::remove(dir + "/data_batch_3.bin");
  EXPECT_TRUE(throws_error(
      [&] {
        Cifar10Binary{dir, Split::train};
      },
      {"missing file", "data_batch_3.bin"}));
}

TEST(ImageFolder, ClassesSortedAndPixelsPlanar) {
  const std::string dir = fresh_dir("folder");
  fs::create_directories(dir + "/cat");
  fs::create_directories(dir + "/airplane");
  write_bmp(dir + "/cat/b.bmp", 4, 3, 10, 20, 30);
  write_bmp(dir + "/cat/a.bmp", 4, 3, 40, 50, 60);
  write_bmp(dir + "/airplane/z.bmp", 4, 3, 70, 80, 90);
  std::ofstream(dir + "/cat/notes.txt") << "ignored";
  ImageFolder ds(dir);
  ASSERT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.class_names(), (std::vector<std::string>{"airplane", "cat"}));
  EXPECT_EQ(ds.get(0).label, 0);
  EXPECT_EQ(ds.get(1).label, 1);
  Example a = ds.get(1);  // cat/a.bmp
  EXPECT_EQ(a.image.shape(), (Shape{3, 3, 4}));
  const std::vector<int64_t> px = a.image.to_vector<int64_t>();
  EXPECT_EQ(px[0], 40);       // R at (0, 0)
  EXPECT_EQ(px[1], 41);       // R at (x=1, y=0)
  EXPECT_EQ(px[12 + 4], 51);  // G at (0, 1)
  EXPECT_EQ(px[24], 60);      // B plane
  EXPECT_TRUE(ds.cached());
  ImageFolder lazy(dir, {.cache_budget_bytes = 0});
  EXPECT_FALSE(lazy.cached());
  EXPECT_EQ(lazy.get(1).image.to_vector<int64_t>(), px);
}

TEST(ImageFolder, BadDataIsAClearError) {
  EXPECT_TRUE(
      throws_error([] { ImageFolder{"/no/such/folder"}; }, {"/no/such/folder", "does not exist"}));
  const std::string dir = fresh_dir("folder_bad");
  fs::create_directories(dir + "/a");
  write_bmp(dir + "/a/good.bmp", 4, 4, 1, 2, 3);
  std::ofstream(dir + "/a/x_broken.jpg") << "this is not a jpeg";
  EXPECT_TRUE(throws_error([&] { ImageFolder{dir}; }, {"x_broken.jpg", "cannot be decoded"}));
  fs::remove(dir + "/a/x_broken.jpg");
  write_bmp(dir + "/a/y_big.bmp", 8, 8, 1, 2, 3);
  EXPECT_TRUE(throws_error([&] { ImageFolder{dir}; }, {"y_big.bmp", "8x8", "4x4"}));
  const std::string empty_dir = fresh_dir("folder_empty");
  EXPECT_TRUE(throws_error([&] { ImageFolder{empty_dir}; }, {"no class sub-folders"}));
}

TEST(CsvList, RelativePathsHeaderAndErrors) {
  const std::string dir = fresh_dir("csv");
  fs::create_directories(dir + "/img");
  write_bmp(dir + "/img/0.bmp", 2, 2, 1, 1, 1);
  write_bmp(dir + "/img/1.bmp", 2, 2, 9, 9, 9);
  std::ofstream(dir + "/train.csv") << "path,label\nimg/0.bmp,1\r\nimg/1.bmp,0\n";
  CsvList ds(dir + "/train.csv");
  EXPECT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.num_classes(), 2);
  EXPECT_EQ(ds.get(0).label, 1);
  EXPECT_EQ(ds.get(1).image.to_vector<int64_t>()[0], 9);
  EXPECT_EQ(open_cifar10(dir, Split::train)->size(), 2);  // detected as CSV
  EXPECT_TRUE(throws_error(
      [&] {
        CsvList{dir + "/train.csv", {.num_classes = 1}};
      },
      {"label 1", "img/0.bmp", "out of range [0, 1)"}));
  std::ofstream(dir + "/bad.csv") << "img/0.bmp,1\nimg/1.bmp,cat\n";
  EXPECT_TRUE(throws_error([&] { CsvList{dir + "/bad.csv"}; }, {"bad.csv", "line 2", "cat"}));
  std::ofstream(dir + "/missing.csv") << "img/nope.bmp,0\n";
  EXPECT_TRUE(
      throws_error([&] { CsvList{dir + "/missing.csv"}; }, {"img/nope.bmp", "cannot open"}));
}

// A label of 10^12 made the loader build a model with 10^12 outputs (256 TB); INT64_MAX
// overflowed max_label + 1. Labels are checked line by line, before anything is allocated.
TEST(CsvList, LabelsOutOfRangeAreNamedErrors) {
  const std::string dir = fresh_dir("csv_labels");
  write_bmp(dir + "/0.bmp", 2, 2, 1, 1, 1);
  for (const char* label : {"1000000000000", "9223372036854775807", "-1", "1048576"}) {
    std::ofstream(dir + "/l.csv") << "0.bmp,0\n0.bmp," << label << "\n";
    EXPECT_TRUE(throws_error(
        [&] { CsvList{dir + "/l.csv"}; },
        {"l.csv", "line 2", std::string("label ") + label, "0.bmp", "out of range [0, 1048576)"}));
  }
  std::ofstream(dir + "/l.csv") << "0.bmp,0\n0.bmp,9223372036854775808\n";  // > INT64_MAX
  EXPECT_TRUE(throws_error([&] { CsvList{dir + "/l.csv"}; }, {"line 2", "not an integer"}));
  std::ofstream(dir + "/l.csv") << "0.bmp,0\n0.bmp,1048575\n";
  EXPECT_EQ(CsvList(dir + "/l.csv").num_classes(), 1048576);  // the largest inferred count
  EXPECT_TRUE(throws_error([&] { CsvList(dir + "/l.csv", {.num_classes = 10}); },
                           {"label 1048575", "out of range [0, 10)"}));
}

// /dev/zero has no end; the list and every image must be regular files of bounded size.
TEST(CsvList, ReadsOnlyRegularFiles) {
  EXPECT_TRUE(throws_error([] { CsvList{"/dev/zero"}; }, {"/dev/zero", "not a regular file"}));
  const std::string dir = fresh_dir("csv_dev");
  std::ofstream(dir + "/l.csv") << "/dev/zero,0\n";
  EXPECT_TRUE(throws_error([&] { CsvList{dir + "/l.csv"}; }, {"/dev/zero", "not a regular file"}));
  for (const std::string& line : {std::string(100000, 'x'), std::string(100000, 'x') + ",0"}) {
    std::ofstream(dir + "/l.csv") << line << "\n";
    try {
      CsvList{dir + "/l.csv"};
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_LT(std::string(e.what()).size(), 400u);  // the line is quoted clipped
    }
  }
}

// An empty train/aardvark/ took label 0 and shifted the other ten classes against the test set:
// the run trained to 10 % with no word.
TEST(ImageFolder, EmptyClassFolderIsRefused) {
  const std::string dir = fresh_dir("folder_empty_class");
  fs::create_directories(dir + "/aardvark");
  fs::create_directories(dir + "/bird");
  write_bmp(dir + "/bird/0.bmp", 2, 2, 1, 1, 1);
  EXPECT_TRUE(throws_error([&] { ImageFolder{dir}; },
                           {"class folder 'aardvark'", "holds no images", "shift the labels"}));
}

TEST(OpenCifar10, TrainAndTestClassesMustMatch) {
  const std::string root = fresh_dir("folder_mismatch");
  for (const char* split : {"train", "test"})
    for (const char* c : {"bird", "cat"}) {
      fs::create_directories(root + "/" + split + "/" + c);
      write_bmp(root + "/" + split + "/" + c + "/0.bmp", 2, 2, 1, 1, 1);
    }
  EXPECT_EQ(open_cifar10(root, Split::test)->num_classes(), 2);
  fs::create_directories(root + "/train/aardvark");
  write_bmp(root + "/train/aardvark/0.bmp", 2, 2, 1, 1, 1);
  fs::create_directories(root + "/test/dog");
  write_bmp(root + "/test/dog/0.bmp", 2, 2, 1, 1, 1);
  for (Split split : {Split::train, Split::test})
    EXPECT_TRUE(throws_error([&] { open_cifar10(root, split); },
                             {"train/ and test/ hold different classes",
                              "Only in train/: 'aardvark'", "Only in test/: 'dog'"}));
}

TEST(Cifar10Binary, ReadsOnlyRegularFiles) {
  const std::string dir = fresh_dir("bin_dev");
  write_all_batches(dir);
  fs::remove(dir + "/test_batch.bin");
  fs::create_symlink("/dev/zero", dir + "/test_batch.bin");
  EXPECT_TRUE(throws_error([&] { Cifar10Binary(dir, Split::test); },
                           {"test_batch.bin", "not a regular file"}));
}

TEST(OpenCifar10, NothingFoundSaysWhereItLooked) {
  const std::string dir = fresh_dir("none");
  EXPECT_TRUE(throws_error([&] { open_cifar10(dir, Split::train); },
                           {"CIFAR-10 not found", "data_batch_1.bin", "train/<class>", "train.csv",
                            "download_cifar10.sh"}));
  EXPECT_TRUE(throws_error([] { parse_data_format("zip"); }, {"zip", "auto, binary"}));
}

TEST(OpenCifar10, RealImageFolderWhenPresent) {
  const std::string root = std::string(RG_SOURCE_DIR) + "/../shared/data/cifar10-jpg";
  if (!fs::exists(root)) GTEST_SKIP() << "no CIFAR-10 copy at " << root;
  auto test = open_cifar10(root, Split::test);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(test->num_classes(), 10);
  EXPECT_EQ(test->class_names(),
            std::vector<std::string>(std::begin(kCifar10Classes), std::end(kCifar10Classes)));
  EXPECT_EQ(test->get(9999).label, 9);
  EXPECT_EQ(test->get(0).image.shape(), (Shape{3, 32, 32}));
}

}  // namespace
}  // namespace rg::data
