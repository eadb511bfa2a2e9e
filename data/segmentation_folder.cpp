#include "data/segmentation_folder.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/atomic_file.h"
#include "data/image_decode.h"
#include "data/mask_decode.h"
#include "data/npy.h"
#include "data/png_encode.h"

namespace rg::data {
namespace fs = std::filesystem;

namespace {

std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool is_image_file(const std::string& ext) {
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".npy";
}
bool is_mask_file(const std::string& ext) {
  return ext == ".png" || ext == ".npy";
}

// stem -> path of the files of `dir` that `accept` takes by extension; two files of one stem
// (a.png and a.npy) are ambiguous.
template <class Accept>
std::map<std::string, std::string> files_by_stem(const fs::path& dir, const char* role,
                                                 Accept accept) {
  std::error_code ec;
  RG_CHECK(fs::is_directory(dir, ec), "segmentation folder: the ", role, " folder '", dir.string(),
           "' does not exist");
  std::map<std::string, std::string> out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || !accept(lower_extension(it->path()))) continue;
    const std::string stem = it->path().stem().string();
    const auto [pos, fresh] = out.emplace(stem, it->path().string());
    RG_CHECK(fresh, "segmentation folder: ", role, "s '", pos->second, "' and '",
             it->path().string(), "' have the same name; which one is meant?");
  }
  RG_CHECK(!ec, "segmentation folder: cannot list '", dir.string(), "' (", ec.message(), ")");
  return out;
}

}  // namespace

Tensor read_mask_file(const std::string& path, int64_t num_classes) {
  Tensor mask;
  if (lower_extension(path) == ".npy") {
    Tensor stored = read_npy(path);
    RG_CHECK(stored.dtype() == DType::u8 || stored.dtype() == DType::i64, "mask '", path,
             "' holds ", dtype_name(stored.dtype()),
             " values; a mask holds integer class indices (u1, i1-i8 or b1)");
    RG_CHECK(stored.dim() == 2 || stored.dim() == 3, "mask '", path, "' has shape ",
             shape_str(stored.shape()), "; a mask is (H, W) or (D, H, W)");
    if (stored.dtype() == DType::i64) {
      // Each value checked before it is narrowed: 300 must not become class 44.
      mask = empty(stored.shape(), {DType::u8});
      const int64_t* v = stored.data<int64_t>();
      uint8_t* m = mask.data<uint8_t>();
      for (int64_t i = 0; i < stored.numel(); ++i) {
        RG_CHECK(v[i] >= 0 && v[i] < num_classes, "mask '", path, "': value ", v[i],
                 " is not a class (there are ", num_classes, ")");
        m[i] = static_cast<uint8_t>(v[i]);
      }
      return mask;
    }
    mask = stored;
  } else {
    mask = decode_mask_png(path);
  }
  const uint8_t* m = mask.data<uint8_t>();
  for (int64_t i = 0; i < mask.numel(); ++i)
    RG_CHECK(m[i] < num_classes, "mask '", path, "': value ", int{m[i]},
             " is not a class (there are ", num_classes, ")");
  return mask;
}

Tensor read_segmentation_image(const std::string& path, int64_t channels, int64_t mask_dims) {
  if (lower_extension(path) != ".npy") {
    Tensor rgb = decode_image(path);  // (3, H, W) u8
    if (channels == 3) return rgb;
    // Luma, BT.601 in integers (as PIL's convert("L")): grey images give their own values.
    const int64_t plane = rgb.size(1) * rgb.size(2);
    Tensor grey = empty({1, rgb.size(1), rgb.size(2)}, {DType::u8});
    const uint8_t* p = rgb.data<uint8_t>();
    uint8_t* g = grey.data<uint8_t>();
    for (int64_t i = 0; i < plane; ++i)
      g[i] = static_cast<uint8_t>((299 * p[i] + 587 * p[plane + i] + 114 * p[2 * plane + i] + 500) /
                                  1000);
    return grey;
  }
  Tensor image = read_npy(path);
  // A single-channel image may leave out its channel axis.
  if (image.dim() == mask_dims) image = image.unsqueeze(0);
  RG_CHECK(image.dim() == mask_dims + 1, "image '", path, "' has shape ", shape_str(image.shape()),
           "; for a mask of ", mask_dims, " dimensions it must be (C, ",
           mask_dims == 2 ? "H, W" : "D, H, W", ") or leave out C");
  if (image.dtype() == DType::u8 || image.dtype() == DType::f32) return image;
  return image.to(DType::f32);
}

bool is_segmentation_image_file(const std::string& path) {
  return is_image_file(lower_extension(path));
}

int64_t classes_in_masks(const std::vector<std::string>& mask_files) {
  int highest = 1;
  for (const std::string& path : mask_files) {
    const Tensor mask = read_mask_file(path, kMaxSegmentationClasses);
    const uint8_t* m = mask.data<uint8_t>();
    for (int64_t i = 0; i < mask.numel(); ++i) highest = std::max<int>(highest, m[i]);
  }
  return highest + 1;
}

void write_mask_file(const std::string& path, const Tensor& mask) {
  RG_CHECK(mask.defined() && mask.dtype() == DType::u8, "mask '", path,
           "': a mask to write is u8 class indices, got ",
           mask.defined() ? mask.describe() : std::string("nothing"));
  const Tensor host = mask.to(Device::cpu()).contiguous();
  if (lower_extension(path) == ".npy") return write_npy(path, host);
  RG_CHECK(lower_extension(path) == ".png", "mask '", path,
           "': masks are written as .png (2-D) or .npy (any rank)");
  RG_CHECK(host.dim() == 2, "mask '", path, "': a PNG holds a 2-D mask (H, W), not ",
           host.describe(), "; write volumes as .npy");
  write_file_atomically(path, encode_png(host.data<uint8_t>(), host.size(1), host.size(0), 1),
                        "mask");
}

SegmentationFolder::SegmentationFolder(const std::string& root,
                                       const SegmentationFolderOptions& options)
    : root_(root), options_(options) {
  RG_CHECK(options_.num_classes >= 1 && options_.num_classes <= kMaxSegmentationClasses,
           "segmentation folder '", root, "': num_classes must be in [1, ", kMaxSegmentationClasses,
           "], got ", options_.num_classes);
  RG_CHECK(options_.channels == 1 || options_.channels == 3, "segmentation folder '", root,
           "': channels must be 1 or 3, got ", options_.channels);
  RG_CHECK(options_.spatial_dims == 0 || options_.spatial_dims == 2 || options_.spatial_dims == 3,
           "segmentation folder '", root, "': spatial_dims must be 0, 2 or 3, got ",
           options_.spatial_dims);
  RG_CHECK(options_.npy_channels >= 0, "segmentation folder '", root,
           "': npy_channels must be >= 0, got ", options_.npy_channels);
  const auto images = files_by_stem(fs::path(root) / "images", "image", is_image_file);
  const auto masks = files_by_stem(fs::path(root) / "masks", "mask", is_mask_file);
  RG_CHECK(!images.empty(), "segmentation folder '", root,
           "': images/ holds no image (.png, .jpg, .jpeg, .bmp, .npy)");
  for (const auto& [stem, image] : images) {
    const auto mask = masks.find(stem);
    RG_CHECK(mask != masks.end(), "segmentation folder '", root, "': image '", image,
             "' has no mask (looked for masks/", stem, ".png and masks/", stem, ".npy)");
    images_.push_back(image);
    masks_.push_back(mask->second);
  }
  for (const auto& [stem, mask] : masks)
    RG_CHECK(images.count(stem), "segmentation folder '", root, "': mask '", mask,
             "' has no image of the same name in images/");
}

SegmentationExample SegmentationFolder::get(int64_t index) const {
  check_index(index);
  const std::string& image_path = images_[static_cast<std::size_t>(index)];
  const std::string& mask_path = masks_[static_cast<std::size_t>(index)];
  Tensor mask = read_mask_file(mask_path, options_.num_classes);
  RG_CHECK(options_.spatial_dims == 0 || mask.dim() == options_.spatial_dims,
           "segmentation folder '", root_, "': mask '", mask_path, "' is ", shape_str(mask.shape()),
           ", but this set holds ",
           options_.spatial_dims == 3 ? "volumes: masks (D, H, W) beside images (C, D, H, W)"
                                      : "2-D images: masks (H, W) beside images (C, H, W)");
  Tensor image = read_segmentation_image(image_path, options_.channels, mask.dim());
  RG_CHECK(options_.npy_channels == 0 || lower_extension(image_path) != ".npy" ||
               image.size(0) == options_.npy_channels,
           "segmentation folder '", root_, "': image '", image_path, "' has ", image.size(0),
           " channel(s) (", shape_str(image.shape()), "), but this set's images have ",
           options_.npy_channels);
  bool same = true;
  for (int64_t d = 0; d < mask.dim(); ++d) same &= image.size(d + 1) == mask.size(d);
  RG_CHECK(same, "segmentation folder '", root_, "': image '", image_path, "' is ",
           shape_str(image.shape()), " but its mask '", mask_path, "' is ", shape_str(mask.shape()),
           " (the sizes must agree)");
  return {image, mask};
}

}  // namespace rg::data
