#include "data/segmentation.h"

#include "data/evenly_spaced.h"

namespace rg::data {

void SegmentationDataset::check_index(int64_t index) const {
  RG_CHECK(index >= 0 && index < size(), "dataset ", describe(), ": index ", index,
           " is out of range [0, ", size(), ")");
}

std::shared_ptr<SegmentationDataset> take(std::shared_ptr<SegmentationDataset> dataset,
                                          int64_t limit) {
  return detail::take_evenly_spaced(std::move(dataset), limit);
}

void check_segmentation_example(const SegmentationExample& ex, int64_t num_classes,
                                const std::string& who) {
  RG_CHECK(ex.image.defined() && ex.mask.defined(), who, ": an image and a mask are required");
  const Tensor& image = ex.image;
  const Tensor& mask = ex.mask;
  RG_CHECK(mask.dim() == 2 || mask.dim() == 3, who, ": expected a mask (H, W) or (D, H, W), got ",
           mask.describe());
  RG_CHECK(image.dim() == mask.dim() + 1, who, ": the image ", image.describe(), " should be (C, ",
           mask.dim() == 2 ? "H, W" : "D, H, W", ") for its mask ", mask.describe());
  for (int64_t d = 0; d < mask.dim(); ++d)
    RG_CHECK(image.size(d + 1) == mask.size(d), who, ": image ", image.describe(), " and mask ",
             mask.describe(), " differ in size");
  RG_CHECK(mask.dtype() == DType::u8, who, ": the mask must be u8 class indices, got ",
           mask.describe());
  RG_CHECK(image.dtype() == DType::u8 || image.dtype() == DType::f32, who,
           ": the image must be u8 or f32, got ", image.describe());
  if (num_classes >= kMaxSegmentationClasses) return;  // every u8 value is a class
  const Tensor m = mask.contiguous();
  const uint8_t* v = m.data<uint8_t>();
  for (int64_t i = 0; i < m.numel(); ++i)
    RG_CHECK(v[i] < num_classes, who, ": mask value ", int{v[i]}, " is not a class (there are ",
             num_classes, ")");
}

}  // namespace rg::data
