#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Upsample, GradcheckNearestAndBilinearBothAlignments) {
  auto check = [](Shape shape, int64_t s, UpsampleMode mode, AlignCorners align) {
    return gradcheck([=](const std::vector<Tensor>& in) { return upsample(in[0], s, mode, align); },
                     {grad_input(shape)});
  };
  EXPECT_TRUE(check({1, 2, 2, 3}, 2, UpsampleMode::nearest, AlignCorners::off));
  EXPECT_TRUE(check({1, 1, 2, 2}, 3, UpsampleMode::nearest, AlignCorners::off));
  EXPECT_TRUE(check({1, 2, 2, 3}, 2, UpsampleMode::bilinear, AlignCorners::off));
  EXPECT_TRUE(check({1, 2, 2, 3}, 2, UpsampleMode::bilinear, AlignCorners::on));
  EXPECT_TRUE(check({1, 1, 3, 2}, 3, UpsampleMode::bilinear, AlignCorners::off));
  EXPECT_TRUE(check({1, 1, 3, 2}, 3, UpsampleMode::bilinear, AlignCorners::on));
}

TEST(Upsample, GradcheckVolumesNearestAndTrilinear) {
  auto check = [](Shape shape, int64_t s, UpsampleMode mode, AlignCorners align) {
    return gradcheck([=](const std::vector<Tensor>& in) { return upsample(in[0], s, mode, align); },
                     {grad_input(shape)});
  };
  EXPECT_TRUE(check({1, 2, 2, 1, 3}, 2, UpsampleMode::nearest, AlignCorners::off));
  EXPECT_TRUE(check({1, 1, 2, 2, 1}, 3, UpsampleMode::nearest, AlignCorners::off));
  EXPECT_TRUE(check({1, 2, 2, 2, 3}, 2, UpsampleMode::trilinear, AlignCorners::off));
  EXPECT_TRUE(check({1, 1, 3, 2, 2}, 2, UpsampleMode::trilinear, AlignCorners::on));
  EXPECT_TRUE(check({1, 1, 1, 2, 3}, 3, UpsampleMode::trilinear, AlignCorners::off));
}

TEST(Upsample, MatchesPyTorch) {
  struct Case {
    const char* name;
    int64_t scale;
    UpsampleMode mode;
    AlignCorners align;
  };
  const Case cases[] = {
      {"nearest2", 2, UpsampleMode::nearest, AlignCorners::off},
      {"nearest3", 3, UpsampleMode::nearest, AlignCorners::off},
      {"bilinear2", 2, UpsampleMode::bilinear, AlignCorners::off},
      {"bilinear2_align", 2, UpsampleMode::bilinear, AlignCorners::on},
      {"bilinear3", 3, UpsampleMode::bilinear, AlignCorners::off},
      {"bilinear3_align", 3, UpsampleMode::bilinear, AlignCorners::on},
      {"nearest3d2", 2, UpsampleMode::nearest, AlignCorners::off},
      {"nearest3d3", 3, UpsampleMode::nearest, AlignCorners::off},
      {"trilinear2", 2, UpsampleMode::trilinear, AlignCorners::off},
      {"trilinear3", 3, UpsampleMode::trilinear, AlignCorners::off},
      {"trilinear2_align", 2, UpsampleMode::trilinear, AlignCorners::on},
  };
  Fixture f("upsample");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string n = c.name;
    Tensor x = f[n + ".x"].set_requires_grad(true);
    Tensor y = upsample(x, c.scale, c.mode, c.align);
    EXPECT_TRUE(all_close(y, f[n + ".y"]));
    y.backward(f[n + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[n + ".gx"]));
  }
}

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

TEST(Upsample, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        upsample(ones({2, 3}), 2);
      },
      {"upsample", "4-D", "[2, 3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        upsample(ones({1, 1, 2, 2}, {DType::i64}), 2);
      },
      {"upsample", "[1, 1, 2, 2] i64 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        upsample(ones({1, 1, 2, 2}), 0);
      },
      {"upsample", "scale_factor", "0", "[1, 1, 2, 2]"}));
  EXPECT_TRUE(throws_error(
      [] {
        upsample(ones({1, 1, 2, 2}), 2, UpsampleMode::nearest, AlignCorners::on);
      },
      {"upsample", "align_corners", "bilinear", "nearest"}));
  EXPECT_TRUE(throws_error(
      [] {
        upsample(ones({1, 1, 2, 2, 2}), 2, UpsampleMode::bilinear);
      },
      {"upsample", "bilinear", "4-D", "trilinear", "[1, 1, 2, 2, 2] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        upsample(ones({1, 1, 2, 2}), 2, UpsampleMode::trilinear);
      },
      {"upsample", "trilinear", "5-D", "[1, 1, 2, 2] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        upsample(ones({1, 1, 2, 0, 2}), 2, UpsampleMode::trilinear);
      },
      {"upsample", "non-empty", "[1, 1, 2, 0, 2]"}));
  EXPECT_TRUE(throws_error(
      [] {
        upsample(ones({1, 1, 2, 2, 2, 2}), 2);
      },
      {"upsample", "5-D", "[1, 1, 2, 2, 2, 2]"}));
}

}  // namespace
}  // namespace rg
