#include "apps/train_unet/unet_data.h"

#include "data/segmentation_files.h"
#include "data/shapes.h"

namespace rg::apps {
namespace {

std::shared_ptr<data::Shapes> shapes(const UnetConfig& cfg, int64_t size, uint64_t seed) {
  return std::make_shared<data::Shapes>(
      data::ShapesOptions{.size = size,
                          .image_size = cfg.resolved_image_size(),
                          .channels = cfg.channels,
                          .seed = seed,
                          .classes = cfg.classes == "binary" ? data::ShapeClasses::binary
                                                             : data::ShapeClasses::per_kind});
}

}  // namespace

UnetData unet_data(UnetConfig& cfg) {
  UnetData d;
  // Preprocess: u8 images to [0, 1], f32 volumes as stored — what the checkpoint records.
  d.preprocess = std::make_shared<data::ImageOnly>(std::make_shared<data::Preprocess>());
  std::vector<std::shared_ptr<data::SegmentationTransform>> augment;
  if (cfg.files()) {
    data::SegmentationFiles files =
        data::open_segmentation_files(cfg.data_root, {.spatial_dims = cfg.volumes() ? 3 : 2,
                                                      .channels = cfg.channels,
                                                      .class_map = cfg.class_map,
                                                      .val_fraction = cfg.val_fraction});
    cfg.file_classes = static_cast<int64_t>(files.class_names.size());
    cfg.channels = files.channels;
    RG_CHECK(cfg.classes != "binary" || cfg.file_classes == 2, "train_unet: --classes binary ",
             "needs masks of two classes (0 and 1); ", files.layout, " gives ", cfg.file_classes,
             " (use --classes multiclass)");
    d.train = data::repeat(files.train, cfg.crops_per_image);
    d.test = files.val;
    d.class_names = files.class_names;
    d.whole_images = true;
    d.describe = files.layout;
    // A random crop of the network's input size, images smaller than it padded (mask:
    // background, class 0).
    augment.push_back(std::make_shared<data::RandomCropPair>(cfg.resolved_image_size(), 0, 0,
                                                             data::SmallerThanCrop::pad));
  } else {
    const auto seed = static_cast<uint64_t>(cfg.seed);
    d.train = shapes(cfg, cfg.train_size, seed);
    d.test = shapes(cfg, cfg.test_size, seed + 1);  // other samples than training's
    d.class_names = d.train->class_names();
    d.describe = d.train->describe();
  }
  augment.push_back(std::make_shared<data::RandomFlipPair>(data::FlipAxis::horizontal));
  augment.push_back(std::make_shared<data::RandomFlipPair>(data::FlipAxis::vertical));
  // Volumes of the user's are flipped front to back too; generated ones train as they did.
  if (cfg.data == "npy")
    augment.push_back(std::make_shared<data::RandomFlipPair>(data::FlipAxis::depth));
  augment.push_back(d.preprocess);
  d.augment = std::make_shared<data::ComposePair>(augment);
  return d;
}

}  // namespace rg::apps
