#include "data/segmentation_files.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "data/class_map.h"
#include "data/segmentation_folder.h"

namespace rg::data {
namespace fs = std::filesystem;

namespace {

class Subset final : public SegmentationDataset {
 public:
  Subset(std::shared_ptr<SegmentationDataset> base, std::vector<int64_t> indices, std::string what)
      : base_(std::move(base)), indices_(std::move(indices)), what_(std::move(what)) {}
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  SegmentationExample get(int64_t index) const override {
    check_index(index);
    return base_->get(indices_[static_cast<std::size_t>(index)]);
  }
  int64_t num_classes() const override { return base_->num_classes(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }
  std::string describe() const override { return base_->describe() + ", " + what_; }

 private:
  std::shared_ptr<SegmentationDataset> base_;
  std::vector<int64_t> indices_;
  std::string what_;
};

class Repeated final : public SegmentationDataset {
 public:
  Repeated(std::shared_ptr<SegmentationDataset> base, int64_t times)
      : base_(std::move(base)), times_(times) {}
  int64_t size() const override { return base_->size() * times_; }
  SegmentationExample get(int64_t index) const override {
    check_index(index);
    return base_->get(index % base_->size());
  }
  int64_t num_classes() const override { return base_->num_classes(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }
  std::string describe() const override {
    return base_->describe() + ", " + std::to_string(times_) + " times over";
  }

 private:
  std::shared_ptr<SegmentationDataset> base_;
  int64_t times_;
};

// A SegmentationFolder with names for its classes.
class NamedFolder final : public SegmentationDataset {
 public:
  NamedFolder(const std::string& root, const SegmentationFolderOptions& options,
              std::vector<std::string> names)
      : folder_(root, options), names_(std::move(names)) {}
  int64_t size() const override { return folder_.size(); }
  SegmentationExample get(int64_t index) const override { return folder_.get(index); }
  int64_t num_classes() const override { return folder_.num_classes(); }
  std::vector<std::string> class_names() const override { return names_; }
  std::string describe() const override { return folder_.describe(); }
  const SegmentationFolder& folder() const { return folder_; }

 private:
  SegmentationFolder folder_;
  std::vector<std::string> names_;
};

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

}  // namespace

std::shared_ptr<SegmentationDataset> subset(std::shared_ptr<SegmentationDataset> dataset,
                                            std::vector<int64_t> indices) {
  RG_CHECK(dataset != nullptr, "subset: a data set is required");
  for (int64_t i : indices)
    RG_CHECK(i >= 0 && i < dataset->size(), "subset: index ", i, " is outside ",
             dataset->describe(), " (", dataset->size(), " samples)");
  const std::string what = std::to_string(indices.size()) + " of its samples";
  return std::make_shared<Subset>(std::move(dataset), std::move(indices), what);
}

std::shared_ptr<SegmentationDataset> repeat(std::shared_ptr<SegmentationDataset> dataset,
                                            int64_t times) {
  RG_CHECK(dataset != nullptr, "repeat: a data set is required");
  RG_CHECK(times >= 1 && times <= 1'000'000, "repeat: times must be in [1, 1000000], got ", times);
  if (times == 1) return dataset;
  return std::make_shared<Repeated>(std::move(dataset), times);
}

SegmentationFiles open_segmentation_files(const std::string& root,
                                          const SegmentationFilesOptions& options) {
  RG_CHECK(options.spatial_dims == 2 || options.spatial_dims == 3,
           "segmentation files: spatial_dims must be 2 or 3, got ", options.spatial_dims);
  RG_CHECK(options.val_fraction > 0 && options.val_fraction < 1,
           "segmentation files: val_fraction must be in (0, 1), got ", options.val_fraction);
  RG_CHECK(is_dir(root), "segmentation data '", root, "' is not a folder");
  const fs::path base(root);
  const bool split = is_dir(base / "train") || is_dir(base / "val");
  const bool single = is_dir(base / "images") || is_dir(base / "masks");
  RG_CHECK(split || single, "segmentation data '", root,
           "' holds neither images/ and masks/ nor train/ and val/ (each with images/ and "
           "masks/); see data/README.md for the layout");
  RG_CHECK(!(split && single), "segmentation data '", root,
           "' holds both images/ (one set to split) and train/ or val/ (a split); which is meant?");
  RG_CHECK(!split || (is_dir(base / "train") && is_dir(base / "val")), "segmentation data '", root,
           "' holds ", is_dir(base / "train") ? "train/ but no val/" : "val/ but no train/",
           "; a split needs both");

  SegmentationFiles out;
  std::string class_map = options.class_map;
  if (class_map.empty() && fs::exists(base / "classes.txt"))
    class_map = (base / "classes.txt").string();
  SegmentationFolderOptions folder{.num_classes = kMaxSegmentationClasses,
                                   .channels = options.channels,
                                   .spatial_dims = options.spatial_dims};
  const std::string train_root = split ? (base / "train").string() : root;
  const std::string val_root = split ? (base / "val").string() : root;
  // Listing first (cheap, and it names a missing mask before anything is decoded).
  const SegmentationFolder train_list(train_root, folder);
  const SegmentationFolder val_list(val_root, folder);
  if (!class_map.empty()) {
    out.class_names = read_class_map(class_map);
  } else {
    std::vector<std::string> masks = train_list.mask_files();
    if (split)
      masks.insert(masks.end(), val_list.mask_files().begin(), val_list.mask_files().end());
    const int64_t classes = classes_in_masks(masks);
    for (int64_t c = 0; c < classes; ++c) out.class_names.push_back(std::to_string(c));
  }
  folder.num_classes = static_cast<int64_t>(out.class_names.size());
  // The first training image fixes the channels; every other .npy image must have them.
  out.channels = train_list.get(0).image.size(0);
  folder.npy_channels = out.channels;
  auto train = std::make_shared<NamedFolder>(train_root, folder, out.class_names);
  const std::string classes_from =
      class_map.empty() ? "classes from the mask values" : "classes from " + class_map;
  if (split) {
    out.train = train;
    out.val = std::make_shared<NamedFolder>(val_root, folder, out.class_names);
    out.layout = "train/ and val/ of " + root + ": " + std::to_string(out.train->size()) + " + " +
                 std::to_string(out.val->size()) + " pairs, " + classes_from;
    return out;
  }
  const int64_t n = train->size();
  RG_CHECK(n >= 2, "segmentation data '", root, "' holds ", n,
           " pair; holding some out for validation needs at least 2 (or make train/ and val/)");
  const int64_t n_val =
      std::clamp<int64_t>(std::llround(options.val_fraction * static_cast<double>(n)), 1, n - 1);
  // Evenly spaced, as take() picks: folders sorted by name often group similar cases.
  std::vector<bool> held(static_cast<std::size_t>(n), false);
  std::vector<int64_t> val, kept;
  for (int64_t i = 0; i < n_val; ++i) held[static_cast<std::size_t>(i * n / n_val)] = true;
  for (int64_t i = 0; i < n; ++i) (held[static_cast<std::size_t>(i)] ? val : kept).push_back(i);
  out.train = subset(train, std::move(kept));
  out.val = subset(train, std::move(val));
  out.layout = "images/ and masks/ of " + root + ": " + std::to_string(out.train->size()) +
               " pairs to train, " + std::to_string(out.val->size()) +
               " evenly spaced held out for validation, " + classes_from;
  return out;
}

}  // namespace rg::data
