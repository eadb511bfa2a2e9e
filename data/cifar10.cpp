#include "data/cifar10.h"

#include <algorithm>
#include <filesystem>

#include "data/files.h"
#include "data/image_list.h"

namespace rg::data {
namespace fs = std::filesystem;

namespace {
constexpr int64_t kRecordBytes = 1 + 3 * 32 * 32;
// An official batch holds 10,000 records (30.7 MB); ten times that is allowed, and nothing
// more is read (a batch named /dev/zero or a huge file is refused before it fills memory).
constexpr int64_t kMaxBatchBytes = 100'000 * kRecordBytes;

// Labels are class indices in sorted folder order, so train/ and test/ must list the same
// classes: an extra (even empty) folder in one of them shifts every label after it.
void check_same_classes(const fs::path& root) {
  const fs::path train = root / "train", test = root / "test";
  if (!fs::is_directory(train) || !fs::is_directory(test)) return;  // the open names it
  const std::vector<std::string> a = image_folder_classes(train.string());
  const std::vector<std::string> b = image_folder_classes(test.string());
  if (a == b) return;
  std::string only_train, only_test;
  for (const std::string& c : a)
    if (!std::binary_search(b.begin(), b.end(), c)) only_train += " '" + c + "'";
  for (const std::string& c : b)
    if (!std::binary_search(a.begin(), a.end(), c)) only_test += " '" + c + "'";
  fail("image folder '", root.string(), "': train/ and test/ hold different classes (", a.size(),
       " and ", b.size(), ").",
       only_train.empty() ? "" : " Only in train/:", clip_for_message(only_train, 400),
       only_test.empty() ? "" : " Only in test/:", clip_for_message(only_test, 400),
       ". Labels are class indices in sorted folder order, so they would not match between the "
       "two sets; make the class folders the same.");
}

std::vector<std::string> batch_files(Split split) {
  if (split == Split::test) return {"test_batch.bin"};
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
          "data_batch_5.bin"};
}

// The folder that holds the .bin files: root itself or root/cifar-10-batches-bin.
std::string binary_folder(const std::string& root) {
  for (const fs::path& dir : {fs::path(root), fs::path(root) / "cifar-10-batches-bin"})
    if (fs::exists(dir / "test_batch.bin") || fs::exists(dir / "data_batch_1.bin"))
      return dir.string();
  return "";
}

std::string split_name(Split split) {
  return split == Split::train ? "train" : "test";
}
}  // namespace

DataFormat parse_data_format(const std::string& text) {
  if (text == "auto") return DataFormat::automatic;
  if (text == "binary") return DataFormat::binary;
  if (text == "folder") return DataFormat::image_folder;
  if (text == "csv") return DataFormat::csv;
  fail("unknown data format '", text, "' (expected auto, binary, folder or csv)");
}

Cifar10Binary::Cifar10Binary(const std::string& root, Split split) {
  const std::string dir = binary_folder(root);
  RG_CHECK(!dir.empty(), "CIFAR-10 binary: no data_batch_*.bin or test_batch.bin in '", root,
           "' or '", root, "/cifar-10-batches-bin'");
  description_ = "CIFAR-10 binary '" + dir + "' (" + split_name(split) + ")";
  std::vector<std::string> contents;
  int64_t records = 0;
  for (const std::string& name : batch_files(split)) {
    const std::string path = (fs::path(dir) / name).string();
    RG_CHECK(fs::exists(path), "CIFAR-10 binary: missing file '", path, "'");
    contents.push_back(read_bounded_file(path, kMaxBatchBytes, "CIFAR-10 binary"));
    const int64_t size = static_cast<int64_t>(contents.back().size());
    RG_CHECK(size > 0 && size % kRecordBytes == 0, "CIFAR-10 binary: '", path, "' has ", size,
             " bytes, not a whole number of ", kRecordBytes,
             "-byte records (truncated or not a CIFAR-10 batch)");
    records += size / kRecordBytes;
  }
  images_ = empty({records, 3, 32, 32}, {DType::u8});
  uint8_t* dst = images_.data<uint8_t>();
  for (std::size_t f = 0; f < contents.size(); ++f) {
    const std::string& bytes = contents[f];
    for (std::size_t r = 0; r < bytes.size() / kRecordBytes; ++r) {
      const auto* rec = reinterpret_cast<const uint8_t*>(bytes.data()) + r * kRecordBytes;
      RG_CHECK(rec[0] < 10, "CIFAR-10 binary: '", batch_files(split)[f], "' record ", r,
               " has label ", int{rec[0]}, ", out of range [0, 10)");
      labels_.push_back(rec[0]);
      std::copy_n(rec + 1, kRecordBytes - 1, dst);
      dst += kRecordBytes - 1;
    }
  }
}

Example Cifar10Binary::get(int64_t index) const {
  check_index(index);
  return {images_.select(0, index), labels_[static_cast<std::size_t>(index)]};
}

std::vector<std::string> Cifar10Binary::class_names() const {
  return {std::begin(kCifar10Classes), std::end(kCifar10Classes)};
}

std::shared_ptr<Dataset> open_cifar10(const std::string& root, Split split, DataFormat format) {
  const std::string name = split_name(split);
  const fs::path folder = fs::path(root) / name;
  const fs::path csv = fs::path(root) / (name + ".csv");
  if (format == DataFormat::automatic) {
    if (!binary_folder(root).empty())
      format = DataFormat::binary;
    else if (fs::is_directory(folder))
      format = DataFormat::image_folder;
    else if (fs::exists(csv))
      format = DataFormat::csv;
    else
      fail("CIFAR-10 not found under '", root, "'. Looked for:\n  ", root,
           "/data_batch_1.bin .. test_batch.bin (binary, also in cifar-10-batches-bin/)\n  ",
           folder.string(), "/<class>/*.jpg (image folder)\n  ", csv.string(),
           " (CSV list of path,label)\nGet the data with scripts/download_cifar10.sh (needs "
           "internet) or point --data at a copy.");
  }
  switch (format) {
    case DataFormat::binary:
      return std::make_shared<Cifar10Binary>(root, split);
    case DataFormat::image_folder:
      check_same_classes(root);
      return std::make_shared<ImageFolder>(folder.string());
    case DataFormat::csv:
      return std::make_shared<CsvList>(csv.string());
    case DataFormat::automatic:
      break;
  }
  fail("open_cifar10: unreachable");
}

}  // namespace rg::data
