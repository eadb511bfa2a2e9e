#include "data/image_list.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <sstream>

#include "core/thread_pool.h"
#include "data/files.h"

namespace rg::data {
namespace fs = std::filesystem;

namespace {
bool is_image(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp";
}

}  // namespace

Tensor ImageList::decode(int64_t index) const {
  Tensor img = decode_image(files_[static_cast<std::size_t>(index)]);
  RG_CHECK(img.size(1) == height_ && img.size(2) == width_, "image '",
           files_[static_cast<std::size_t>(index)], "' is ", img.size(2), "x", img.size(1),
           " but the data set's images are ", width_, "x", height_, " (from '", files_[0], "')");
  return img;
}

void ImageList::finish(const ImageListOptions& options) {
  RG_CHECK(!files_.empty(), "dataset ", description_, ": no images found");
  for (std::size_t i = 0; i < labels_.size(); ++i)
    RG_CHECK(labels_[i] >= 0 && labels_[i] < num_classes_, "dataset ", description_, ": label ",
             labels_[i], " of '", files_[i], "' is out of range [0, ", num_classes_, ")");
  Tensor first = decode_image(files_[0]);
  channels_ = first.size(0);
  height_ = first.size(1);
  width_ = first.size(2);
  const int64_t bytes = size() * channels_ * height_ * width_;
  if (bytes > options.cache_budget_bytes) return;
  Tensor cache = empty({size(), channels_, height_, width_}, {DType::u8});
  const int64_t image_bytes = channels_ * height_ * width_;
  uint8_t* dst = cache.data<uint8_t>();
  parallel_for(size(), 64, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      Tensor img = decode(i);
      std::copy_n(img.data<uint8_t>(), image_bytes, dst + i * image_bytes);
    }
  });
  cache_ = cache;
}

Example ImageList::get(int64_t index) const {
  check_index(index);
  Tensor image = cache_.defined() ? cache_.select(0, index) : decode(index);
  return {image, labels_[static_cast<std::size_t>(index)]};
}

std::vector<std::string> image_folder_classes(const std::string& root) {
  std::vector<std::string> classes;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory()) classes.push_back(entry.path().filename().string());
  std::sort(classes.begin(), classes.end());
  return classes;
}

ImageFolder::ImageFolder(const std::string& root, const ImageListOptions& options) {
  description_ = "image folder '" + root + "'";
  RG_CHECK(fs::is_directory(root), "dataset ", description_, ": the folder does not exist");
  class_names_ = image_folder_classes(root);
  RG_CHECK(!class_names_.empty(), "dataset ", description_,
           ": no class sub-folders (expected root/<class>/<image>.jpg)");
  for (std::size_t c = 0; c < class_names_.size(); ++c) {
    std::vector<std::string> images;
    for (const auto& entry : fs::directory_iterator(fs::path(root) / class_names_[c]))
      if (entry.is_regular_file() && is_image(entry.path()))
        images.push_back(entry.path().string());
    // An empty class still takes a label, shifting those of the classes after it; the model
    // then trains towards labels another split numbers differently (torchvision refuses too).
    RG_CHECK(!images.empty(), "dataset ", description_, ": class folder '", class_names_[c],
             "' holds no images (.jpg, .jpeg, .png, .bmp); remove it or fill it, since an empty "
             "class would shift the labels of the classes after it");
    std::sort(images.begin(), images.end());
    for (auto& f : images) {
      files_.push_back(std::move(f));
      labels_.push_back(static_cast<int64_t>(c));
    }
  }
  num_classes_ = static_cast<int64_t>(class_names_.size());
  finish(options);
}

CsvList::CsvList(const std::string& csv_path, const ImageListOptions& options) {
  description_ = "CSV list '" + csv_path + "'";
  RG_CHECK(options.num_classes >= 0 && options.num_classes <= kMaxClasses, "dataset ", description_,
           ": num_classes must be in [0, ", kMaxClasses, "], got ", options.num_classes);
  const int64_t max_classes = options.num_classes > 0 ? options.num_classes : kMaxClasses;
  std::istringstream in(read_bounded_file(csv_path, kMaxCsvBytes, "dataset " + description_));
  const fs::path base = fs::path(csv_path).parent_path();
  std::string line;
  int64_t line_no = 0, max_label = -1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto comma = line.rfind(',');
    RG_CHECK(comma != std::string::npos, "dataset ", description_, ": line ", line_no,
             " is not 'path,label': \"", clip_for_message(line), "\"");
    const std::string path = line.substr(0, comma), label_text = line.substr(comma + 1);
    int64_t label = 0;
    const char* end = label_text.data() + label_text.size();
    const auto [ptr, ec] = std::from_chars(label_text.data(), end, label);
    if (ec == std::errc() && ptr == end) {
      // Checked here, line by line: an unchecked label of 10^12 or INT64_MAX would become a
      // model with that many outputs, or overflow as max_label + 1.
      const bool in_range = label >= 0 && label < max_classes;
      const char* hint = options.num_classes > 0 ? "" : " (the most classes a list may infer)";
      RG_CHECK(in_range, "dataset ", description_, ": line ", line_no, " has label ", label,
               " for '", clip_for_message(path), "', out of range [0, ", max_classes, ")", hint);
    } else {
      if (line_no == 1) continue;  // a header line such as "path,label"
      fail("dataset ", description_, ": line ", line_no, " has label \"",
           clip_for_message(label_text), "\", not an integer in [0, ", max_classes, ")");
    }
    // Longer than any path the system opens (PATH_MAX); refused here so that no message ever
    // quotes it whole.
    RG_CHECK(path.size() <= 4096, "dataset ", description_, ": line ", line_no, " names a path of ",
             path.size(), " bytes (\"", clip_for_message(path), "\"), longer than any file name");
    const fs::path p(path);
    files_.push_back((p.is_absolute() ? p : base / p).string());
    labels_.push_back(label);
    max_label = std::max(max_label, label);
  }
  num_classes_ = options.num_classes > 0 ? options.num_classes : max_label + 1;
  finish(options);
}

}  // namespace rg::data
