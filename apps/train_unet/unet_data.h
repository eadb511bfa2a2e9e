#pragma once
// What train_unet trains and validates on: generated shapes (data/shapes.h) or the user's
// files (data/segmentation_files.h), with their augmentations and preprocessing.

#include <memory>
#include <string>
#include <vector>

#include "apps/train_unet/config.h"
#include "data/segmentation.h"
#include "data/segmentation_transforms.h"

namespace rg::apps {

struct UnetData {
  std::shared_ptr<data::SegmentationDataset> train, test;
  std::shared_ptr<data::SegmentationTransform> augment;     // training: crops, flips, preprocess
  std::shared_ptr<data::SegmentationTransform> preprocess;  // validation: preprocess only
  std::vector<std::string> class_names;                     // the data set's classes
  // Files: validation images of any size, one per batch, segmented by sliding windows of the
  // crop. Shapes: every image is the crop, in batches.
  bool whole_images = false;
  std::string describe;
};

// For files, fills in cfg.file_classes and cfg.channels (of .npy images) from the data.
// Throws rg::Error naming a bad file, or --classes binary over masks of more classes.
UnetData unet_data(UnetConfig& cfg);

}  // namespace rg::apps
