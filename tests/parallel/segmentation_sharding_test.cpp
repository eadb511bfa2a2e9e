// The DistributedSampler shards a segmentation set as it shards a classification one: each rank
// loads its share, and a sample (image, mask and augmentation) is the same on whichever rank
// loads it, because the Shapes set and the loader's augmentation are functions of the index.
#include <gtest/gtest.h>

#include <map>

#include "data/dataloader.h"
#include "data/shapes.h"
#include "parallel/distributed_sampler.h"

namespace rg::parallel {
namespace {

std::shared_ptr<data::SegmentationTransform> augment() {
  return std::make_shared<data::ComposePair>(
      std::vector<std::shared_ptr<data::SegmentationTransform>>{
          std::make_shared<data::RandomCropPair>(std::vector<int64_t>{12, 12}, 2),
          std::make_shared<data::RandomFlipPair>(data::FlipAxis::horizontal)});
}

// index -> (image, mask) of every sample the loader delivers in `epoch`.
using Samples = std::map<int64_t, std::pair<std::vector<float>, std::vector<int64_t>>>;
Samples load(std::shared_ptr<data::Sampler> sampler, int workers, int64_t epoch) {
  auto shapes = std::make_shared<data::Shapes>(
      data::ShapesOptions{.size = 21, .image_size = {16, 16}, .seed = 3});
  data::DataLoader loader(shapes, std::move(sampler), augment(),
                          {.batch_size = 4, .num_workers = workers, .seed = 8});
  loader.start_epoch(epoch);
  Samples out;
  while (auto b = loader.next()) {
    const int64_t n = static_cast<int64_t>(b->indices.size());
    for (int64_t k = 0; k < n; ++k)
      out[b->indices[k]] = {b->images.select(0, k).to_vector<float>(),
                            b->masks.select(0, k).to_vector<int64_t>()};
  }
  return out;
}

TEST(SegmentationSharding, RanksShareTheEpochAndAgreeOnEverySample) {
  const Samples whole = load(std::make_shared<data::SequentialSampler>(21), 0, 2);
  ASSERT_EQ(whole.size(), 21u);
  Samples seen;
  for (int rank = 0; rank < 3; ++rank) {
    auto sampler = std::make_shared<DistributedSampler>(21, 3, rank, DistributedSamplerOptions{});
    const Samples mine = load(sampler, rank, 2);  // 0, 1 and 2 workers
    EXPECT_EQ(mine.size(), 7u);
    for (const auto& [index, sample] : mine) {
      EXPECT_EQ(sample, whole.at(index)) << "sample " << index << " on rank " << rank;
      seen[index] = sample;
    }
  }
  EXPECT_EQ(seen.size(), 21u);  // every sample on exactly one of the 3 ranks
}

}  // namespace
}  // namespace rg::parallel
