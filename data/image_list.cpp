#include "data/image_list.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/thread_pool.h"

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_NO_STDIO  // we read the bytes ourselves, so errors can name the file
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace rg::data {
namespace fs = std::filesystem;

namespace {
bool is_image(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RG_CHECK(in.good(), "image '", path, "': cannot open the file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}
}  // namespace

Tensor decode_image(const std::string& path) {
  const std::string bytes = read_file(path);
  int w = 0, h = 0, c = 0;
  unsigned char* pixels = stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                                                static_cast<int>(bytes.size()), &w, &h, &c, 3);
  RG_CHECK(pixels != nullptr, "image '", path, "' cannot be decoded (", stbi_failure_reason(),
           "); expected a jpg, png or bmp file");
  // stb gives (H, W, 3) interleaved; the model wants planar (3, H, W).
  Tensor out = empty({3, h, w}, {DType::u8});
  uint8_t* dst = out.data<uint8_t>();
  const int64_t plane = int64_t{h} * w;
  for (int64_t i = 0; i < plane; ++i)
    for (int ch = 0; ch < 3; ++ch) dst[ch * plane + i] = pixels[i * 3 + ch];
  stbi_image_free(pixels);
  return out;
}

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

ImageFolder::ImageFolder(const std::string& root, const ImageListOptions& options) {
  description_ = "image folder '" + root + "'";
  RG_CHECK(fs::is_directory(root), "dataset ", description_, ": the folder does not exist");
  std::vector<fs::path> classes;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory()) classes.push_back(entry.path());
  std::sort(classes.begin(), classes.end());
  RG_CHECK(!classes.empty(), "dataset ", description_,
           ": no class sub-folders (expected root/<class>/<image>.jpg)");
  for (std::size_t c = 0; c < classes.size(); ++c) {
    class_names_.push_back(classes[c].filename().string());
    std::vector<std::string> images;
    for (const auto& entry : fs::directory_iterator(classes[c]))
      if (entry.is_regular_file() && is_image(entry.path()))
        images.push_back(entry.path().string());
    std::sort(images.begin(), images.end());
    for (auto& f : images) {
      files_.push_back(std::move(f));
      labels_.push_back(static_cast<int64_t>(c));
    }
  }
  num_classes_ = static_cast<int64_t>(classes.size());
  finish(options);
}

CsvList::CsvList(const std::string& csv_path, const ImageListOptions& options) {
  description_ = "CSV list '" + csv_path + "'";
  std::ifstream in(csv_path);
  RG_CHECK(in.good(), "dataset ", description_, ": cannot open the file");
  const fs::path base = fs::path(csv_path).parent_path();
  std::string line;
  int64_t line_no = 0, max_label = -1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto comma = line.rfind(',');
    RG_CHECK(comma != std::string::npos, "dataset ", description_, ": line ", line_no,
             " is not 'path,label': \"", line, "\"");
    const std::string path = line.substr(0, comma), label_text = line.substr(comma + 1);
    int64_t label = 0;
    const char* end = label_text.data() + label_text.size();
    const auto [ptr, ec] = std::from_chars(label_text.data(), end, label);
    if (ec != std::errc() || ptr != end) {
      if (line_no == 1) continue;  // a header line such as "path,label"
      fail("dataset ", description_, ": line ", line_no, " has label \"", label_text,
           "\", not an integer");
    }
    const fs::path p(path);
    files_.push_back((p.is_absolute() ? p : base / p).string());
    labels_.push_back(label);
    max_label = std::max(max_label, label);
  }
  num_classes_ = options.num_classes > 0 ? options.num_classes : max_label + 1;
  finish(options);
}

}  // namespace rg::data
