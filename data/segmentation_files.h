#pragma once
// A user's segmentation data on disk, opened for training (train_unet --data folder|npy DIR):
//
//   DIR/images/, DIR/masks/              one set of pairs; an evenly spaced share of them
//                                        (val_fraction) is held out for validation
//   DIR/train/{images,masks}/ and        or the user's own split
//   DIR/val/{images,masks}/
//   DIR/classes.txt                      optional class map (class_map.h); without one, the
//                                        classes are the values the masks hold (0 .. highest)
//
// Pairs are segmentation_folder.h's (paired by file stem). 2-D sets hold images with PNG or
// .npy masks (H, W); volume sets hold .npy volumes (C, D, H, W) or (D, H, W) with .npy masks
// (D, H, W): a pair of the other rank is an error naming the file. Every image must have the
// channels of the first training image (the model's input).

#include <memory>
#include <string>
#include <vector>

#include "data/segmentation.h"

namespace rg::data {

struct SegmentationFilesOptions {
  int64_t spatial_dims = 2;   // 2: images and masks (H, W); 3: volumes and masks (D, H, W)
  int64_t channels = 3;       // decoded PNG/JPEG/BMP images: 3 (RGB) or 1 (luma)
  std::string class_map{};    // a class map; empty: DIR/classes.txt when there is one
  double val_fraction = 0.2;  // of a single set, held out for validation (in (0, 1))
};

struct SegmentationFiles {
  std::shared_ptr<SegmentationDataset> train, val;
  std::vector<std::string> class_names;  // the class map's, or "0", "1", ... (mask values)
  int64_t channels = 0;                  // of every image: the model's input channels
  std::string layout;                    // where the pairs came from, for the log
};

SegmentationFiles open_segmentation_files(const std::string& root,
                                          const SegmentationFilesOptions& options);

// The samples `indices` of `dataset`, in that order.
std::shared_ptr<SegmentationDataset> subset(std::shared_ptr<SegmentationDataset> dataset,
                                            std::vector<int64_t> indices);
// `dataset` `times` times over (sample i is sample i % size): each copy of a sample gets its
// own augmentation draws (they are keyed by the sample index), so a set of a few large volumes
// yields several random crops of each per epoch.
std::shared_ptr<SegmentationDataset> repeat(std::shared_ptr<SegmentationDataset> dataset,
                                            int64_t times);

}  // namespace rg::data
