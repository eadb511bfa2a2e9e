#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of upsample are in its spec
// (ops/upsample/upsample_spec.cpp).

TEST(Upsample, ScaleOneIsIdentityAndNonContiguousInput) {
  Tensor x = rand({2, 2, 3, 4});
  EXPECT_TRUE(all_close(upsample(x, 1, UpsampleMode::bilinear), x, 0, 0));
  EXPECT_TRUE(all_close(upsample(x, 1, UpsampleMode::bilinear, AlignCorners::on), x, 1e-6, 0));
  Tensor xt = x.transpose(2, 3);
  EXPECT_TRUE(all_close(upsample(xt, 2, UpsampleMode::bilinear),
                        upsample(xt.contiguous(), 2, UpsampleMode::bilinear), 0, 0));
}

TEST(Upsample, VolumesNonContiguousAndScaleOne) {
  Tensor x = rand({2, 3, 3, 4, 5});
  EXPECT_TRUE(all_close(upsample(x, 1, UpsampleMode::trilinear), x, 0, 0));
  EXPECT_TRUE(all_close(upsample(x, 1), x, 0, 0));
  Tensor xt = x.transpose(2, 4);  // (2, 3, 5, 4, 3), strided
  for (UpsampleMode mode : {UpsampleMode::nearest, UpsampleMode::trilinear})
    EXPECT_TRUE(all_close(upsample(xt, 2, mode), upsample(xt.contiguous(), 2, mode), 0, 0));
}

TEST(Upsample, TrilinearOfAVolumeConstantAlongDepthIsBilinearPerSlice) {
  // With D copies of one image, trilinear interpolation along D mixes equal values, so every
  // output slice must be the bilinear upsample of the image (up to rounding of 1·a + 0·a).
  Tensor img = rand({1, 2, 3, 5}, {DType::f64});
  Tensor vol = img.unsqueeze(2).expand({1, 2, 4, 3, 5}).contiguous();
  Tensor y = upsample(vol, 2, UpsampleMode::trilinear);
  Tensor expected = upsample(img, 2, UpsampleMode::bilinear);
  for (int64_t d = 0; d < 8; ++d) EXPECT_TRUE(all_close(y.select(2, d), expected, 1e-12, 1e-12));
}

}  // namespace
}  // namespace rg
